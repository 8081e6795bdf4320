"""The hold of a pipeline's first replies (core/client_hold.h over core/flush_hold.h), with
real redis-servers and memcacheds: when a client's first replies are ready while a later request
of its pipeline is still with a server, the worker holds them so that the pipeline leaves in
one write, for at most 20 times -W (1 ms at the default; never with -W 0).

- A pipeline of a request to one server and one to a stopped server: the first reply is held
  (reply_holds counts it), and it still comes while the other server stays stopped (the hold
  ends); once that server runs again, its reply follows, in order.
- With -W 0 nothing is held: the first reply comes all the same, reply_holds stays 0.
- The counter is in the stats JSON (summed and per worker) and in /metrics.
Clients that pipeline over two servers at once, every reply checked in order with the hold on:
test_batch_wait.py (pipelined_round).
"""
import pytest

from nctest import manage, procs
from nctest.codec import bulk, mc_get, mc_store, mc_value, resp
from nctest.conn import RawConn
from nctest.procs import HOST

POOL = "hold"


def start(nutcrackers, write_conf, backend, redis, *flags):
    servers = [backend() for _ in range(2)]
    listen = procs.free_port()
    conf = write_conf({POOL: {"listen": f"{HOST}:{listen}", "redis": redis, "hash": "fnv1a_64",
                              "distribution": "ketama", "timeout": 30000,
                              "servers": [f"{HOST}:{port}:1" for port, _ in servers]}})
    proxy = nutcrackers(conf, "-T", "1", *flags, wait_manage=True)
    return proxy, listen, servers


def key_per_server(proxy, servers):
    """One key routed to each server, in the servers' order (the manage port's find_keys)."""
    routed = manage.find_keys(proxy.manage_port, POOL, [f"{i}:hold" for i in range(200)])
    return [next(k for k, name in routed.items() if name == f"{HOST}:{port}:1") for port, _ in servers]


class Redis:
    redis = True

    @staticmethod
    def set(c, key, value):
        assert c.call("SET", key, value) == "OK"

    @staticmethod
    def get(key):
        return resp("GET", key)

    @staticmethod
    def reply(key, value):
        return bulk(value)


class Memcache:
    redis = False

    @staticmethod
    def set(c, key, value):
        c.send(mc_store("set", key, value))
        c.expect(b"STORED\r\n")

    @staticmethod
    def get(key):
        return mc_get(key)

    @staticmethod
    def reply(key, value):
        return mc_value(key, value) + b"END\r\n"


PROTOS = {"redis": Redis, "memcache": Memcache}


def backend_factory(proto, redis_server, memcached_server):
    return redis_server if proto is Redis else memcached_server


def expect(proto, c, key, value):
    c.expect(proto.reply(key, value))


@pytest.mark.parametrize("flags,held", [((), True), (("-W", "0"), False)], ids=["default", "W0"])
@pytest.mark.parametrize("name", sorted(PROTOS))
def test_first_replies_wait_for_the_rest_but_not_for_a_stopped_server(
        nutcrackers, write_conf, redis_server, memcached_server, stopped, name, flags, held):
    proto = PROTOS[name]
    proxy, port, servers = start(nutcrackers, write_conf, backend_factory(proto, redis_server, memcached_server),
                                 proto.redis, *flags)
    first, second = key_per_server(proxy, servers)
    with RawConn(port) as c:
        proto.set(c, first, "one")
        proto.set(c, second, "two")
        stopped(servers[1][1])
        c.send(proto.get(first) + proto.get(second))
        # the second server cannot answer: the first reply comes once its hold ends
        expect(proto, c, first, "one")
        stopped.resume()
        expect(proto, c, second, "two")
    doc = manage.status(proxy.manage_port)
    assert (doc["reply_holds"] >= 1) if held else doc["reply_holds"] == 0, doc["reply_holds"]
    workers = manage.status(proxy.manage_port, "workers")["workers"]
    assert sum(w["reply_holds"] for w in workers) == doc["reply_holds"]
    status, _, body = manage.http_get(proxy.manage_port, "/metrics")
    assert status == 200
    line = [x for x in body.decode().splitlines() if x.startswith("nutcrackers_reply_holds_total ")]
    assert line and int(line[0].split()[1]) == doc["reply_holds"], line
