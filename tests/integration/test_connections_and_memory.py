"""Resources of the proxy process (1 and 4 backends, -T 1 and -T 4): clients that leave with
requests in flight leak no descriptor (the open fd count returns to its baseline), and after a
64 MB burst the resident memory returns near its baseline (free buffers are trimmed every
second)."""
import socket
import struct
import uuid

import pytest

from nctest import procfs, procs, wait
from nctest.keys import big_value, digest, spread_keys
from nctest.codec import bulk, resp
from nctest.conn import BIG_TIMEOUT

THREADED = True  # the TSan stage runs these too (conftest.py)
MB = 1 << 20
MEMCACHED_ARGS = ("-I", "128m", "-m", "2048")
SETTLE = 8.0          # seconds the proxy gets to close and trim after the clients left
RSS_SLACK_KB = 12 * 1024


def requests(cluster, keys, value=b"v"):
    """One write of set+get+multi-get requests on keys, in the cluster's protocol."""
    if cluster.redis:
        return b"".join(resp("SET", k, value) + resp("GET", k) for k in keys) + resp("MGET", *keys)
    return (b"".join(b"set %s 0 0 %d\r\n%s\r\nget %s\r\n" % (k.encode(), len(value), value,
                                                             k.encode()) for k in keys) +
            b"get %s\r\n" % " ".join(keys).encode())


def warm_up(cluster, clients=16):
    """Enough clients at once that every worker has opened its connection to every server; then
    the fd count no longer depends on which worker gets the next client."""
    keys = [k for group in cluster.place_keys(f"warm{uuid.uuid4().hex[:6]}", 1) for k in group]
    ping, pong = (resp("PING"), b"+PONG\r\n") if cluster.redis else (b"version\r\n", b"VERSION ")
    conns = [cluster.raw() for _ in range(clients)]
    for c in conns:
        c.send(requests(cluster, keys) + ping)
    for c in conns:
        c.recv_until(pong)
        c.close()


def fd_baseline(cluster):
    """The proxy's fd count once no client is connected (bounded wait for it to be stable)."""
    pid = cluster.pid()
    warm_up(cluster)
    return wait.steady(lambda: procfs.fd_count(pid), SETTLE, "a stable fd count", samples=3,
                       interval=0.3)


def rst_close(sock):
    """Closes with a reset (SO_LINGER 0) instead of a FIN."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def check_no_fd_leak(cluster, stopped):
    pid = cluster.pid()
    baseline = fd_baseline(cluster)
    keys = spread_keys(f"leak{uuid.uuid4().hex[:6]}", 20)
    burst = requests(cluster, keys, b"x" * 2000) * 20   # ~1 MB, not read back
    # 1. a pipeline the client never reads: it leaves while replies are being produced
    for _ in range(10):
        c = cluster.raw()
        c.send(burst)
        c.close()
    # 2. the same, leaving with a reset
    for _ in range(10):
        c = cluster.raw()
        c.send(burst)
        rst_close(c.sock)
    # 3. half a request, then gone
    for _ in range(10):
        c = cluster.raw()
        c.send(requests(cluster, keys)[:-7])
        c.close()
    # 4. requests held by a stopped server when the client leaves; it answers after
    stopped(cluster.procs[0])
    for _ in range(10):
        c = cluster.raw()
        c.send(requests(cluster, keys))
        c.close()
    stopped.resume()
    # 5. connection churn
    for _ in range(100):
        cluster.raw().close()
    wait.settle(lambda: procfs.fd_count(pid), baseline, SETTLE,
                   what=f"the proxy's fd count back to {baseline}")
    assert cluster.alive()
    # and it still answers correctly
    with cluster.raw() as c:
        if cluster.redis:
            c.exchange(resp("SET", keys[0], "after") + resp("GET", keys[0]),
                       b"+OK\r\n" + bulk("after"))
        else:
            c.exchange(b"set %s 0 0 5\r\nafter\r\nget %s\r\n" % (keys[0].encode(), keys[0].encode()),
                       b"STORED\r\nVALUE %s 0 5\r\nafter\r\nEND\r\n" % keys[0].encode())


def test_redis_clients_leaving_with_requests_in_flight_leak_no_fd(redis_cluster, stopped):
    check_no_fd_leak(redis_cluster, stopped)


def test_memcache_clients_leaving_with_requests_in_flight_leak_no_fd(mc_cluster, stopped):
    check_no_fd_leak(mc_cluster, stopped)


def check_memory_after_burst(cluster, client):
    if procs.sanitized_binary():
        pytest.skip("RSS is not meaningful under a sanitizer")
    pid = cluster.pid()
    warm_up(cluster)
    # the baseline: the lowest RSS over a trim period (earlier tests may have left free buffers)
    baseline = min(wait.sample(lambda: procfs.rss_kb(pid), 13))
    value = big_value(64 * MB, seed=b"burst")
    key = f"burst:{uuid.uuid4().hex}"
    assert client.set(key, value)
    assert digest(client.get(key)) == digest(value)
    peak = procfs.rss_kb(pid)
    client.delete(key)
    client.close()
    wait.settle(lambda: procfs.rss_kb(pid), baseline + RSS_SLACK_KB, SETTLE,
                   what=f"RSS back near {baseline} kB (peak {peak} kB)")


def test_redis_memory_returns_near_baseline_after_64mb_burst(redis_cluster):
    check_memory_after_burst(redis_cluster,
                             redis_cluster.client(socket_timeout=BIG_TIMEOUT))


def test_memcache_memory_returns_near_baseline_after_64mb_burst(mc_cluster):
    check_memory_after_burst(mc_cluster, mc_cluster.client(timeout=BIG_TIMEOUT))
