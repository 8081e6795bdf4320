"""memcached's meta commands through the proxy (a pool of 3 real memcacheds, -T 2): each command
on its key's server, quiet pipelines over every server answered in request order with mn's MN
last, errors inside them in order, opaque and key echoed, base64 keys stored on their decoded
key's server, what a text client and a meta client see of each other's items (cross-protocol),
a server down, a server that times out, a reload between requests, the counters and a big value.
The byte-for-byte comparison with memcached is test_memcache_meta_diff.py; the parser's cases are
tests/unit/test_memcache_meta.c.
"""
import time
import uuid

import pytest

from nctest import cluster, manage, procs
from nctest.codec import mc_store, mc_value
from nctest.conn import RawConn
from nctest.keys import spread_keys
from nctest.mcmeta import b64, split_replies

THREADED = True  # the TSan stage runs these too (conftest.py)

SERVERS = 3


@pytest.fixture(scope="module")
def mc(module_memcached_server, module_write_conf, module_nutcrackers):
    c = cluster.start_cluster("memcache", SERVERS, 2, module_memcached_server, module_write_conf,
                              module_nutcrackers, name=f"meta-{uuid.uuid4().hex[:6]}")
    yield c
    assert c.stop() == 0


def by_server(c, prefix, per_server):
    """per_server fresh keys on each server, as the proxy routes them."""
    out = [[] for _ in range(SERVERS)]
    for k in spread_keys(f"{prefix}{uuid.uuid4().hex[:6]}", 100 * per_server):
        where = c.server_of(k)
        if len(out[where]) < per_server:
            out[where].append(k)
    assert all(len(ks) == per_server for ks in out), out
    return out


def test_each_command_on_its_keys_server(mc):
    (a,), (b,), (c,) = by_server(mc, "cmd", 1)
    with mc.raw() as r:
        for i, k in enumerate((a, b, c)):
            r.exchange(b"ms %s 2 T0 F%d\r\nv%d\r\n" % (k.encode(), i, i), b"HD\r\n")
            assert mc.holder(k) == [i]
            r.exchange(b"mg %s v f k\r\n" % k.encode(), b"VA 2 f%d k%s\r\nv%d\r\n" % (i, k.encode(), i))
        r.exchange(b"ma %s N0 J7 v\r\n" % (a + "n").encode(), b"VA 1\r\n7\r\n")
        r.exchange(b"ma %s MD v\r\n" % (a + "n").encode(), b"VA 1\r\n6\r\n")
        r.exchange(b"md %s\r\nmd %s\r\n" % (b.encode(), b.encode()), b"HD\r\nNF\r\n")
        r.send(b"me %s\r\n" % c.encode())
        assert r.line().startswith(b"ME %s exp=-1 la=" % c.encode())
        r.exchange(b"mn\r\n", b"MN\r\n")
    assert mc.holder(b) == []


def test_quiet_pipeline_over_servers_ends_with_mn(mc):
    """Quiet requests over every server, errors among them: the replies memcached does not leave
    out, in request order, and mn's MN after all of them."""
    keys = [k for ks in by_server(mc, "qp", 3) for k in ks]
    req, want = b"", b""
    for i, k in enumerate(keys):
        req += b"ms %s 1 q\r\n%d\r\n" % (k.encode(), i % 10)   # stored: nothing
    for i, k in enumerate(keys):
        kb = k.encode()
        if i % 3 == 0:
            req += b"mg %s v q k O%d\r\n" % (kb, i)            # a hit: shown
            want += b"VA 1 k%s O%d\r\n%d\r\n" % (kb, i, i % 10)
        elif i % 3 == 1:
            req += b"mg %sx v q\r\n" % kb                      # a miss: nothing
            req += b"md %sx q O%d\r\n" % (kb, i)               # NF: shown
            want += b"NF O%d\r\n" % i
        else:
            req += b"mg %s q q\r\n" % kb                       # an error: shown, in its place
            want += b"CLIENT_ERROR duplicate flag\r\n"
    req += b"mn\r\n"
    want += b"MN\r\n"
    with mc.raw() as r:
        for _ in range(3):  # whole, then the pipeline again on the same connection
            r.exchange(req, want)
        r.exchange(b"mn\r\nmn x\r\n", b"MN\r\nMN\r\n")


def test_many_quiet_misses_then_mn(mc):
    keys = spread_keys(f"qm{uuid.uuid4().hex[:6]}", 2000)
    with mc.raw() as r:
        r.exchange(b"".join(b"mg %s v q\r\n" % k.encode() for k in keys) + b"mn\r\n", b"MN\r\n")


def test_base64_keys_live_on_the_decoded_keys_server(mc):
    keys = [k for ks in by_server(mc, "b64", 2) for k in ks]
    with mc.raw() as r:
        for k in keys:
            r.exchange(b"ms %s 3 b q\r\nbar\r\nmn\r\n" % b64(k), b"MN\r\n")
            assert mc.holder(k) == [mc.server_of(k)]
            r.exchange(f"get {k}\r\n".encode(), mc_value(k, "bar") + b"END\r\n")
            r.exchange(b"mg %s b v k\r\n" % b64(k), b"VA 3 k%s b\r\nbar\r\n" % b64(k))
            r.exchange(mc_store("set", k, "text"), b"STORED\r\n")
            r.exchange(b"mg %s b v\r\n" % b64(k), b"VA 4\r\ntext\r\n")
        # not decodable: any server says so
        r.exchange(b"mg %s b v\r\n" % b64(keys[0])[:-1], b"CLIENT_ERROR error decoding key\r\n")


def test_cross_protocol(mc):
    """Set by ms, read by get/gets (flags, value, the CAS mg reads); set by text, read by mg;
    a cas through each protocol with the CAS read through the other."""
    k, t = (f"x{uuid.uuid4().hex[:8]}" for _ in range(2))
    kb, tb = k.encode(), t.encode()
    with mc.raw() as r:
        r.exchange(b"ms %s 5 F42 T300\r\nhello\r\n" % kb, b"HD\r\n")
        r.send(b"mg %s c f t\r\n" % kb)
        line = r.line()
        cas = int(line.split(b" c")[1].split()[0])
        assert line.startswith(b"HD c") and b" f42" in line, line
        r.exchange(b"gets %s\r\n" % kb, b"VALUE %s 42 5 %d\r\nhello\r\nEND\r\n" % (kb, cas))
        r.exchange(b"cas %s 1 0 3 %d\r\nnew\r\n" % (kb, cas), b"STORED\r\n")
        r.exchange(b"ms %s 1 C%d\r\nx\r\n" % (kb, cas), b"EX\r\n")   # the old CAS: refused
        r.send(b"gets %s\r\n" % kb)
        cas2 = int(r.line().split()[4])
        r.recv_until(b"END\r\n")
        r.exchange(b"ms %s 2 C%d\r\nok\r\n" % (kb, cas2), b"HD\r\n")
        r.exchange(b"get %s\r\n" % kb, b"VALUE %s 0 2\r\nok\r\nEND\r\n" % kb)
        r.exchange(mc_store("set", t, "text", flags=7), b"STORED\r\n")
        r.exchange(b"mg %s v f s\r\n" % tb, b"VA 4 f7 s4\r\ntext\r\n")
        r.exchange(b"md %s q\r\nget %s\r\nmn\r\n" % (tb, tb), b"END\r\nMN\r\n")


def test_server_down_and_timeout(memcached_server, write_conf, nutcrackers, stopped):
    """A server that refuses connections, then one that does not answer (timeout): quiet
    requests to it get the error anyway, in their place; the others are answered."""
    live, _ = memcached_server()
    slow, slow_proc = memcached_server()
    dead = procs.free_port()
    c = cluster.start_cluster("memcache", 3, 1, None, write_conf, nutcrackers, "metadown",
                              ports=[live, dead, slow], timeout=500)
    keys = {i: [] for i in range(3)}
    for k in spread_keys("down", 200):
        keys[c.server_of(k)].append(k.encode())
    (l0, l1), (d0,), (s0,) = keys[0][:2], keys[1][:1], keys[2][:1]
    refused = b"SERVER_ERROR Connection refused\r\n"
    with c.raw() as r:
        r.exchange(b"ms %s 1 q\r\n1\r\nmg %s v q\r\nmg %s v q\r\nmg %s v\r\nmn\r\n" % (l0, d0, l1, l0),
                   refused + b"VA 1\r\n1\r\nMN\r\n")
        stopped(slow_proc)
        t0 = time.monotonic()
        r.exchange(b"mg %s v q\r\nmg %s v q\r\nmn\r\n" % (s0, l0),
                   b"SERVER_ERROR Connection timed out\r\nVA 1\r\n1\r\nMN\r\n")
        assert time.monotonic() - t0 >= 0.45
        stopped.resume()
        r.exchange(b"ms %s 1\r\n2\r\nmg %s v\r\n" % (s0, s0), b"HD\r\nVA 1\r\n2\r\n")
    assert c.stop() == 0


def test_reload_between_requests(memcached_server, write_conf, nutcrackers):
    ports = [memcached_server()[0] for _ in range(2)]
    c = cluster.start_cluster("memcache", 2, 2, None, write_conf, nutcrackers, "metareload",
                              ports=ports, timeout=2000)
    k = b"r" + uuid.uuid4().hex.encode()
    with c.raw() as r:
        r.exchange(b"ms %s 2 q\r\nv1\r\nmg %s v q\r\n" % (k, k), b"VA 2\r\nv1\r\n")
        c.reload_conf("timeout: 2000", "timeout: 3000")
        r.exchange(b"mg %s v q\r\nmd %s q\r\nmg %s v q\r\nmn\r\n" % (k, k, k), b"VA 2\r\nv1\r\nMN\r\n")
    assert c.stop() == 0


def test_counters(mc):
    """A meta request counts once on its server: its bytes with the terminator the proxy adds,
    its reply's without the terminator's; memcached's own counters count the real commands."""
    (k, miss), _, _ = by_server(mc, "st", 2)
    before = server_stats(mc, 0)
    stats0 = direct_stats(mc, 0)
    with mc.raw() as r:
        reqs = [b"mg %s v q\r\n" % miss.encode(), b"ms %s 2 q\r\nhi\r\n" % k.encode(), b"mg %s v\r\n" % k.encode()]
        r.exchange(b"".join(reqs) + b"mn\r\n", b"VA 2\r\nhi\r\nMN\r\n")
    stats1 = direct_stats(mc, 0)
    assert int(stats1["cmd_get"]) - int(stats0["cmd_get"]) == 2  # mn is none
    assert int(stats1["cmd_set"]) - int(stats0["cmd_set"]) == 1
    after = manage.wait_status(mc.proxy.manage_port,
                               lambda d: server_stats_of(d, mc, 0)["responses"] >= before["responses"] + 3)
    got = server_stats_of(after, mc, 0)
    assert got["requests"] - before["requests"] == 3
    assert got["request_bytes"] - before["request_bytes"] == sum(len(x) for x in reqs) + 8
    assert got["response_bytes"] - before["response_bytes"] == len(b"VA 2\r\nhi\r\n")


def direct_stats(c, i):
    with RawConn(c.ports[i]) as r:
        return r.mc_stats()


def server_stats_of(doc, c, i):
    port = c.ports[i]
    return [s for n, s in doc[c.name].items() if isinstance(s, dict) and f":{port}" in n][0]


def server_stats(c, i):
    return server_stats_of(manage.status(c.proxy.manage_port), c, i)


def test_big_value_quiet(mc):
    k = f"big{uuid.uuid4().hex[:8]}".encode()
    value = bytes(range(256)) * 2048  # 512 kB, every byte value, "\r\n" and "MN\r\n" among them
    value += b"\r\nMN\r\n"
    with mc.raw() as r:
        r.exchange(b"ms %s %d q\r\n%s\r\nmg %s s v q\r\nmn\r\n" % (k, len(value), value, k),
                   b"VA %d s%d\r\n%s\r\nMN\r\n" % (len(value), len(value), value))
    assert split_replies(b"VA 1\r\nx\r\nMN\r\n") == [b"VA 1\r\nx\r\n", b"MN\r\n"]
