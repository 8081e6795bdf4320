"""memcached's binary protocol through the proxy as an operator sees it, as for text (issue 29):
a server that stops answering (the pool's timeout: status 0x0086 "Connection timed out" for its
requests, quiet ones included, in their place, while the others are answered), a reload between
requests of a binary client (its connection keeps its protocol and its binary server
connections), and the counters (a request counts once on its server: its bytes with the noop the
proxy appends to a quiet one, its reply's without that noop's reply; memcached's own counters
count the real commands). The protocol's behaviour: test_memcache_binary.py.
"""
import time
import uuid

from nctest import cluster, manage
from nctest import mcbin as b
from nctest.conn import RawConn
from nctest.keys import spread_keys
from nctest.mcbin import Op, Status

THREADED = True  # the TSan stage runs these too (conftest.py)


def keys_by_server(c, prefix, n):
    out = {i: [] for i in range(n)}
    for k in spread_keys(f"{prefix}{uuid.uuid4().hex[:6]}", 300):
        out[c.server_of(k)].append(k.encode())
    return out


def test_timeout_answers_in_place(memcached_server, write_conf, nutcrackers, stopped):
    live, _ = memcached_server()
    slow, slow_proc = memcached_server()
    c = cluster.start_cluster("memcache", 2, 1, None, write_conf, nutcrackers, "bintimeout",
                              ports=[live, slow], timeout=500)
    keys = keys_by_server(c, "to", 2)
    l0, s0 = keys[0][0], keys[1][0]
    timed_out = b.response(Op.GETQ, Status.TEMPORARY, value=b"Connection timed out", opaque=2)
    with c.raw() as r:
        b.exchange(r, b.store(Op.SET, l0, b"1", opaque=1), b.response(Op.SET, opaque=1, cas=1))
        stopped(slow_proc)
        t0 = time.monotonic()
        r.send(b.get(Op.GETQ, s0, opaque=2) + b.get(Op.GETQ, l0, opaque=3) + b.noop(4))
        got = b.read_raw(r, 3, timeout=10)
        assert time.monotonic() - t0 >= 0.45
        b.assert_same(got, timed_out + b.response(Op.GETQ, extras=b.flags_extras(0), value=b"1", opaque=3, cas=1) +
                      b.response(Op.NOOP, opaque=4))
        stopped.resume()
        b.exchange(r, b.store(Op.SET, s0, b"2", opaque=5), b.response(Op.SET, opaque=5, cas=1))
    assert c.stop() == 0


def test_reload_keeps_the_binary_connection(memcached_server, write_conf, nutcrackers):
    ports = [memcached_server()[0] for _ in range(2)]
    c = cluster.start_cluster("memcache", 2, 2, None, write_conf, nutcrackers, "binreload",
                              ports=ports, timeout=2000)
    k = b"r" + uuid.uuid4().hex.encode()
    with c.raw() as r:
        b.exchange(r, b.store(Op.SETQ, k, b"v1") + b.get(Op.GETK, k, opaque=1),
                   b.response(Op.GETK, key=k, extras=b.flags_extras(0), value=b"v1", opaque=1, cas=1))
        c.reload_conf("timeout: 2000", "timeout: 3000")
        b.exchange(r, b.get(Op.GETQ, k, opaque=2) + b.delete(Op.DELETEQ, k) + b.get(Op.GETQ, k) + b.noop(3),
                   b.response(Op.GETQ, extras=b.flags_extras(0), value=b"v1", opaque=2, cas=1) +
                   b.response(Op.NOOP, opaque=3))
    assert c.stop() == 0


def server_stats(doc, c, i):
    port = c.ports[i]
    return [s for n, s in doc[c.name].items() if isinstance(s, dict) and f":{port}" in n][0]


def test_counters(memcached_server, write_conf, nutcrackers):
    ports = [memcached_server()[0]]
    c = cluster.start_cluster("memcache", 1, 1, None, write_conf, nutcrackers, "bincount", ports=ports)
    k, miss = (b"c" + uuid.uuid4().hex.encode() for _ in range(2))
    before = server_stats(manage.status(c.proxy.manage_port), c, 0)
    with RawConn(ports[0]) as d:
        stats0 = d.mc_stats()
    reqs = [b.get(Op.GETQ, miss), b.store(Op.SETQ, k, b"hi"), b.get(Op.GET, k, opaque=1)]
    reply = b.response(Op.GET, extras=b.flags_extras(0), value=b"hi", opaque=1, cas=1)
    with c.raw() as r:
        b.exchange(r, b"".join(reqs) + b.noop(2), reply + b.response(Op.NOOP, opaque=2))
    with RawConn(ports[0]) as d:
        stats1 = d.mc_stats()
    assert int(stats1["cmd_get"]) - int(stats0["cmd_get"]) == 2  # the noops are none
    assert int(stats1["cmd_set"]) - int(stats0["cmd_set"]) == 1
    after = manage.wait_status(c.proxy.manage_port,
                               lambda d: server_stats(d, c, 0)["responses"] >= before["responses"] + 3)
    got = server_stats(after, c, 0)
    assert got["requests"] - before["requests"] == 3  # the client's noop is the proxy's
    assert got["request_bytes"] - before["request_bytes"] == sum(len(x) for x in reqs) + 2 * b.HEADER_LEN
    assert got["response_bytes"] - before["response_bytes"] == len(reply)
    assert c.stop() == 0
