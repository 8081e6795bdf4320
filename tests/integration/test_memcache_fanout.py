"""memcached commands sent to every server of a pool (4 real memcached, -T 2): `stats` answered
with the proxy's own lines and the servers' counters summed (pymemcache, pylibmc and, when
installed, python-memcached read it), `flush_all [delay] [noreply]` on every server with OK only
when all said OK, and what a server that is down changes (notes/fan-out.md)."""
import uuid

import pytest

from nctest import cluster
from nctest.codec import mc_store, mc_value
from nctest.conn import RawConn

THREADED = True  # the TSan stage runs these too (conftest.py)

SERVERS = 4
SUMMED = ["curr_items", "total_items", "cmd_get", "cmd_set", "get_hits", "get_misses", "bytes",
          "limit_maxbytes"]


@pytest.fixture
def mc(memcached_server, write_conf, nutcrackers):
    c = cluster.start_cluster("memcache", SERVERS, 2, memcached_server, write_conf, nutcrackers,
                              name=f"mcfan-{uuid.uuid4().hex[:6]}")
    yield c
    assert c.stop() == 0


def direct_stats(c, i):
    with RawConn(c.ports[i]) as r:
        return r.mc_stats()


def fill(c, n):
    client = c.client()
    keys = [f"f{uuid.uuid4().hex[:6]}:{i}" for i in range(n)]
    for k in keys:
        client.set(k, k)
    for k in keys[: n // 2]:
        assert client.get(k) == k.encode()
    for i in range(n // 4):
        assert client.get(f"missing:{i}") is None
    client.close()
    return keys


def test_stats_proxy_lines_and_summed_counters(mc):
    fill(mc, 200)
    with mc.raw() as r:
        got = r.mc_stats()
    backends = [direct_stats(mc, i) for i in range(SERVERS)]
    for name in SUMMED:
        assert int(got[name]) == sum(int(b[name]) for b in backends), name
    assert int(got["curr_items"]) == 200
    assert int(got["get_hits"]) == 100 and int(got["get_misses"]) == 50
    assert int(got["pid"]) == mc.pid()
    assert int(got["uptime"]) >= 0 and int(got["time"]) > 1_600_000_000
    assert got["version"] == min((b["version"] for b in backends))
    assert int(got["curr_connections"]) >= 1
    assert got["servers"] == str(SERVERS) and got["servers_answered"] == str(SERVERS)
    with mc.raw() as r:
        r.exchange(b"stats items\r\n",
                   b"CLIENT_ERROR stats with arguments is not supported by the proxy (only stats)\r\n")
        r.exchange(b"get nothing\r\n", b"END\r\n")


def test_stats_with_real_clients(mc):
    fill(mc, 40)
    import pylibmc

    pm = mc.client()
    stats = pm.stats()
    assert int(stats[b"curr_items"]) == 40 and int(stats[b"pid"]) == mc.pid()
    pm.close()
    lib = pylibmc.Client([f"127.0.0.1:{mc.port}"])
    ((_, lstats),) = lib.get_stats()
    assert int(lstats["curr_items"]) == 40 and int(lstats["pid"]) == mc.pid()
    lib.disconnect_all()
    import memcache  # python-memcached (requirements.txt pins it)
    pyc = memcache.Client([f"127.0.0.1:{mc.port}"], socket_timeout=10)
    ((_, pstats),) = pyc.get_stats()
    assert int(pstats["curr_items"]) == 40 and int(pstats["pid"]) == mc.pid()
    pyc.disconnect_all()


def test_flush_all_reaches_every_server(mc):
    keys = fill(mc, 80)
    with mc.raw() as r:
        r.exchange(b"flush_all\r\n", b"OK\r\n")
        assert all(int(direct_stats(mc, i)["cmd_flush"]) == 1 for i in range(SERVERS))
        r.exchange(f"get {keys[0]} {keys[-1]}\r\n".encode(), b"END\r\n")
        # noreply: nothing comes back, the next reply is the next request's
        r.exchange(mc_store("set", "a", "1") + b"flush_all noreply\r\nget a\r\n",
                   b"STORED\r\nEND\r\n")
        r.exchange(mc_store("set", "b", "2") + b"flush_all 0\r\nget b\r\n", b"STORED\r\nOK\r\nEND\r\n")
        # a delay: the servers flush later (not waited for here); a bad one: memcached's error
        r.exchange(b"flush_all 3600\r\n", b"OK\r\n")
        r.exchange(b"flush_all abc\r\n", b"CLIENT_ERROR invalid exptime argument\r\n")
        r.exchange(mc_store("set", "c", "3") + b"get c\r\n", b"STORED\r\n" + mc_value("c", "3") + b"END\r\n")
    for i in range(SERVERS):
        assert int(direct_stats(mc, i)["cmd_flush"]) == 5


def test_flush_all_with_real_clients(mc):
    import pylibmc

    keys = fill(mc, 20)
    pm = mc.client()
    assert pm.flush_all() is True
    assert pm.get_many(keys) == {}
    keys = fill(mc, 20)
    lib = pylibmc.Client([f"127.0.0.1:{mc.port}"])
    assert lib.flush_all() is True
    assert lib.get_multi(keys) == {}
    lib.disconnect_all()
    import memcache  # python-memcached (requirements.txt pins it)
    keys = fill(mc, 20)
    pyc = memcache.Client([f"127.0.0.1:{mc.port}"], socket_timeout=10)
    pyc.flush_all()
    assert pyc.get_multi(keys) == {}
    pyc.disconnect_all()
    pm.close()


def test_a_server_down(mc):
    fill(mc, 40)
    victim = mc.procs[1]
    victim.kill()
    victim.wait(timeout=10)
    with mc.raw() as r:
        got = r.mc_stats()
        assert got["servers"] == str(SERVERS) and got["servers_answered"] == str(SERVERS - 1)
        r.send(b"flush_all\r\n")
        assert r.line().startswith(b"SERVER_ERROR ")
