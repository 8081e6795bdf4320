"""What the README claims of an online reload that no other test drove end to end: a changed
`redis_auth` (clients must AUTH again with the new password; the backends get the new AUTH on new
connections), a changed `server_connections` (the backend sees the new number of connections per
worker), and a pool switching protocol on the same listen address (its existing clients are
closed once answered, new clients speak the new protocol). Real backends; the oracles are the
backends (their connections, their contents) and the bytes the clients get."""
import uuid

import pytest

from nctest import codec, load, manage, procfs, procs, wait
from nctest.codec import resp
from nctest.conn import RawConn, backend_connections
from nctest.procs import HOST


def reload(proxy, write_conf, spec, generation):
    write_conf(spec)
    reply = manage.command(proxy.manage_port, "reload", timeout=30)
    assert reply.startswith(f"OK generation {generation}"), reply


def one_pool(kind, backend, port, **opts):
    return {"alpha": {"listen": f"{HOST}:{port}", "redis": kind == "redis", **opts,
                      "servers": [f"{HOST}:{backend}:1 b0"]}}


def proxy_conns(proxy, backend):
    """The local ports of the proxy's established connections to the backend."""
    return {local for local, state in procfs.conns_to(proxy.pid, backend).items()
            if state == "ESTABLISHED"}


def ask(conn, *args):
    """The raw reply to one RESP command."""
    conn.send(resp(*args))
    return conn.reply()


NOAUTH = b"-NOAUTH Authentication required.\r\n"
BAD_PASSWORD = b"-ERR invalid password\r\n"


def test_reload_changed_redis_auth(redis_server, write_conf, nutcrackers):
    """redis_auth "old-pw" -> "new-pw", after the backend's requirepass changed the same way
    (its connections authenticated before stay so). A client authenticated before the reload must
    AUTH again, and only the new password does; so must a new client. The requests then succeed
    on server connections opened after the reload (the old ones are closed), which the backend
    accepts only with AUTH new-pw."""
    backend, _ = redis_server(args=("--requirepass", "old-pw"))
    port = procs.free_port()
    proxy = nutcrackers(write_conf(one_pool("redis", backend, port, redis_auth="old-pw")),
                        "-T", "2", wait_manage=True)
    with RawConn(port) as before:
        before.exchange(resp("AUTH", "old-pw"), b"+OK\r\n")
        before.exchange(resp("SET", "k", "v1"), b"+OK\r\n")
        old_conns = proxy_conns(proxy, backend)
        assert old_conns
        with RawConn(backend) as admin:
            admin.exchange(resp("AUTH", "old-pw"), b"+OK\r\n")
            admin.exchange(resp("CONFIG", "SET", "requirepass", "new-pw"), b"+OK\r\n")
        reload(proxy, write_conf, one_pool("redis", backend, port, redis_auth="new-pw"), 2)

        assert ask(before, "GET", "k") == NOAUTH
        assert ask(before, "AUTH", "old-pw") == BAD_PASSWORD
        assert ask(before, "GET", "k") == NOAUTH
        assert ask(before, "AUTH", "new-pw") == b"+OK\r\n"
        assert ask(before, "GET", "k") == codec.bulk("v1")
        with RawConn(port) as after:
            assert ask(after, "GET", "k") == NOAUTH
            assert ask(after, "AUTH", "old-pw") == BAD_PASSWORD
            assert ask(after, "AUTH", "new-pw") == b"+OK\r\n"
            assert ask(after, "SET", "k", "v2") == b"+OK\r\n"
            assert ask(before, "GET", "k") == codec.bulk("v2")
    wait.wait_for(lambda: proxy_conns(proxy, backend) and
                  not proxy_conns(proxy, backend) & old_conns, 10,
                  "the server connections of the old password closed, new ones open")


@pytest.mark.parametrize("kind", ["redis", "memcache"])
def test_reload_changed_server_connections(kind, redis_server, memcached_server, write_conf,
                                           nutcrackers):
    """server_connections 1 -> 3 with -T 2: under 60 clients the backend sees 2 connections, then
    after the reload 6 (the old ones closed)."""
    start = redis_server if kind == "redis" else memcached_server
    backend, _ = start()
    port = procs.free_port()
    proxy = nutcrackers(write_conf(one_pool(kind, backend, port, server_connections=1)),
                        "-T", "2", wait_manage=True)
    key = f"sc{uuid.uuid4().hex}"
    get = resp("GET", key) if kind == "redis" else codec.mc_get(key)
    miss = b"$-1\r\n" if kind == "redis" else b"END\r\n"
    scripts = [(get * 3, miss * 3)] * 60
    for generation, per_worker in ((1, 1), (2, 3)):
        if generation > 1:
            reload(proxy, write_conf, one_pool(kind, backend, port,
                                               server_connections=per_worker), generation)
        assert load.run_clients(port, scripts) == {}
        wait.wait_value(lambda: backend_connections(kind, backend),
                        lambda n: n == 2 * per_worker, 10,
                        f"{2 * per_worker} connections on the backend (2 workers x {per_worker})")


def test_reload_pool_switches_protocol(redis_server, memcached_server, write_conf, nutcrackers,
                                       stopped):
    """Pool alpha, redis -> memcached on the same listen address. Its idle redis client is closed
    at once; one whose GET waits for a stopped redis-server gets its reply once the server
    resumes, then is closed; meanwhile a new client speaks memcached, and its keys land on the
    memcached."""
    rport, rproc = redis_server()
    mport, _ = memcached_server()
    port = procs.free_port()
    proxy = nutcrackers(write_conf(one_pool("redis", rport, port)), "-T", "2", wait_manage=True)
    with RawConn(port) as idle, RawConn(port) as busy:
        idle.exchange(resp("SET", "k", "redis-v"), b"+OK\r\n")
        busy.exchange(resp("PING"), b"+PONG\r\n")
        stopped(rproc)
        busy.send(resp("GET", "k"))
        manage.wait_server_stat(proxy.manage_port, "alpha", "b0", "out_queue", lambda n: n >= 1)
        reload(proxy, write_conf, one_pool("memcache", mport, port), 2)

        assert idle.is_closed(), "the idle redis client of a pool now memcached stays open"
        with RawConn(port) as mc:
            mc.exchange(codec.mc_store("set", "k", "mc-v"), b"STORED\r\n")
            mc.exchange(codec.mc_get("k"), codec.mc_value("k", "mc-v") + b"END\r\n")
        with RawConn(mport) as direct:
            direct.exchange(codec.mc_get("k"), codec.mc_value("k", "mc-v") + b"END\r\n")

        stopped.resume()
        busy.expect(codec.bulk("redis-v"))
        assert busy.is_closed(), "the answered redis client of a pool now memcached stays open"
