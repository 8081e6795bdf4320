"""-W (--batch-wait), with real redis-servers: a loop pass that writes to a server still busy with
earlier requests waits first (notes/batch-wait.md), and one that writes to an idle server never
does.

One client that waits for each reply always finds its server idle: the batch_waits counter stays
0. Several such clients make the worker wait for a busy server, never longer (no pipeline in
part: batch_waits_longer stays 0). A client
whose pipeline is answered in part (one server has answered, another still works) makes the
worker wait again, up to 4 times -W, before writing the first replies (batch_waits_longer counts
those passes). Clients that pipeline at
once make the worker wait (the counter moves, within a bounded number of rounds of load), and
every reply is still the right one, in order, for the right client, at the longest wait (-W 1000)
too; with -W 0 the counters never move. The counters are in the stats JSON (summed and per
worker) and in /metrics. Each wait is half of -W while the busy servers keep up (one or two
requests unanswered at the waits), the whole of it once a server is behind (a queue of requests
at the recent waits): batch_waits_full counts the whole ones.
"""
import threading

import pytest

from nctest import manage, procs
from nctest.codec import bulk, resp
from nctest.conn import RawConn
from nctest.procs import HOST, START_TIMEOUT

POOL = "bw"
CLIENTS = 8
PIPELINE = 64
ROUNDS = 30  # rounds of concurrent load at most, until the worker has waited once


def start(nutcrackers, write_conf, redis_server, *flags, servers=2, with_backends=False):
    """A proxy (-T 1) over fresh redis-servers: (proxy, listen port), and with_backends their
    (port, Popen) pairs too."""
    backends = [redis_server() for _ in range(servers)]
    ports = [port for port, _ in backends]
    listen = procs.free_port()
    conf = write_conf({POOL: {"listen": f"{HOST}:{listen}", "redis": True, "hash": "fnv1a_64",
                              "distribution": "ketama", "timeout": 30000,
                              "servers": [f"{HOST}:{p}:1" for p in ports]}})
    proxy = nutcrackers(conf, "-T", "1", *flags, wait_manage=True)
    return (proxy, listen, backends) if with_backends else (proxy, listen)


def key_per_server(proxy, server_ports):
    """One key routed to each server (the manage port's find_keys), in server_ports' order. The
    keys differ at their start: fnv1a_64 keeps keys that differ only in their last bytes close
    together on the ring."""
    routed = manage.find_keys(proxy.manage_port, POOL, [f"{i}:owner" for i in range(200)])
    return [next(k for k, name in routed.items() if name == f"{HOST}:{sp}:1") for sp in server_ports]


def waits(proxy, field="batch_waits"):
    return manage.status(proxy.manage_port)[field]


def pipelined_round(port, rnd):
    """CLIENTS clients at once, each pipelining PIPELINE SETs of its own keys and values, then the
    GETs of them: every reply checked. Returns the errors seen (empty: all right)."""
    errors = []
    start = threading.Barrier(CLIENTS)

    def one(i):
        try:
            names = [f"bw:{rnd}:{i}:{k}" for k in range(PIPELINE)]
            values = [f"v{rnd}-{i}-{k}-" + "x" * (k % 7) for k in range(PIPELINE)]
            with RawConn(port) as c:
                start.wait(timeout=30)
                c.send(b"".join(resp("SET", n, v) for n, v in zip(names, values)))
                c.expect(b"+OK\r\n" * PIPELINE)
                c.send(b"".join(resp("GET", n) for n in names))
                c.expect(b"".join(bulk(v) for v in values))
        except Exception as e:  # noqa: BLE001 - reported by the test below
            errors.append(f"client {i}: {e!r}")

    threads = [threading.Thread(target=one, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return errors


def test_one_client_waiting_for_each_reply_never_waits(nutcrackers, write_conf, redis_server):
    proxy, port = start(nutcrackers, write_conf, redis_server)
    with RawConn(port) as c:
        for i in range(200):
            assert c.call("SET", f"seq:{i}", f"v{i}") == "OK"
            assert c.call("GET", f"seq:{i}") == f"v{i}".encode()
    assert waits(proxy) == 0


LONE_CLIENTS = 8
LONE_ROUNDS = 40  # rounds of the clients at once, at most, until the worker has waited


def test_clients_waiting_for_each_reply_never_wait_for_a_pipeline(nutcrackers, write_conf, redis_server):
    """Clients that each wait for their reply, at once on one server: a pass that writes to the
    server while it still answers another client waits (-W), but no client ever has part of a
    pipeline answered, so no wait is a pipeline's."""
    proxy, port = start(nutcrackers, write_conf, redis_server, servers=1)
    errors = []

    def one(i, rnd):
        try:
            with RawConn(port) as c:
                for k in range(50):
                    name = f"lone:{rnd}:{i}:{k}"
                    if c.call("SET", name, name) != "OK" or c.call("GET", name) != name.encode():
                        errors.append(f"client {i}: wrong reply for {name}")
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(f"client {i}: {e!r}")

    for rnd in range(LONE_ROUNDS):
        threads = [threading.Thread(target=one, args=(i, rnd)) for i in range(LONE_CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert errors == []
        if waits(proxy) > 0:
            break
    assert waits(proxy) > 0, f"no pass waited in {LONE_ROUNDS} rounds of {LONE_CLIENTS} clients"
    assert waits(proxy, "batch_waits_longer") == 0


# a script that keeps its server busy for some milliseconds
SLOW_SCRIPT = "local i = 0 while i < 1000000 do i = i + 1 end return i"
MAX_PARTIAL_ROUNDS = 120  # a few seconds of scripts at most


@pytest.mark.parametrize("flags,waited", [((), True), (("-W", "0"), False)], ids=["default", "W0"])
def test_a_pipeline_answered_in_part_waits_before_its_first_replies(nutcrackers, write_conf, redis_server,
                                                                    flags, waited):
    """Each round pipelines a GET to one server and a slow script to the other, both idle: the
    requests are written at once (no server is busy), the GET's reply comes first, and the
    client still waits for the script's: the pass that has the GET's reply waits before writing
    it."""
    proxy, port, backends = start(nutcrackers, write_conf, redis_server, *flags, with_backends=True)
    fast, slow = key_per_server(proxy, [p for p, _ in backends])
    wanted = 4
    rounds = 0
    with RawConn(port) as c:
        assert c.call("SET", fast, "x") == "OK"
        # a round waits unless both replies came in one pass (the proxy's thread held off its CPU
        # for the script's milliseconds), and waits again unless the script's reply came during
        # the first wait; a host short of CPUs (a sanitizer's build) turns the waits off for
        # 200 ms (batch_wait_offs): rounds go on until enough did both, a bounded number
        while rounds < (MAX_PARTIAL_ROUNDS if waited else 8):
            rounds += 1
            c.send(resp("GET", fast) + resp("EVAL", SLOW_SCRIPT, "1", slow))
            assert c.read() == b"x"
            assert c.read() == 1000000
            if waited and waits(proxy, "batch_waits_longer") >= wanted:
                break
    # the waits that held the GET's reply while the client waited for the script's went on
    longer = waits(proxy, "batch_waits_longer")
    assert (longer >= wanted) if waited else longer == 0, (longer, rounds)
    assert (waits(proxy) >= longer) if waited else waits(proxy) == 0, (waits(proxy), rounds)


@pytest.mark.parametrize("flags", [(), ("-W", "1000")], ids=["default", "W1000"])
def test_pipelining_clients_make_it_wait_and_get_their_own_replies(nutcrackers, write_conf, redis_server,
                                                                   flags):
    proxy, port = start(nutcrackers, write_conf, redis_server, *flags)
    for rnd in range(ROUNDS):
        assert pipelined_round(port, rnd) == []
        if waits(proxy) > 0:
            break
    doc = manage.status(proxy.manage_port)
    assert doc["batch_waits"] > 0, f"no pass waited in {ROUNDS} rounds of {CLIENTS} pipelining clients"
    workers = manage.status(proxy.manage_port, "workers")["workers"]
    assert sum(w["batch_waits"] for w in workers) == doc["batch_waits"]
    assert sum(w["batch_waits_longer"] for w in workers) == doc["batch_waits_longer"]
    assert doc["batch_waits_longer"] <= doc["batch_waits"]
    assert doc["batch_wait_offs"] >= 0
    status, _, body = manage.http_get(proxy.manage_port, "/metrics")
    assert status == 200
    line = [x for x in body.decode().splitlines() if x.startswith("nutcrackers_batch_waits_total ")]
    assert line and int(line[0].split()[1]) >= doc["batch_waits"], line


def test_zero_never_waits(nutcrackers, write_conf, redis_server):
    proxy, port = start(nutcrackers, write_conf, redis_server, "-W", "0")
    for rnd in range(3):
        assert pipelined_round(port, rnd) == []
    doc = manage.status(proxy.manage_port)
    assert doc["batch_waits"] == 0 and doc["batch_wait_offs"] == 0 and doc["batch_waits_longer"] == 0


BEHIND_PIPELINE = 100  # requests one client queues at the stopped server at once
BEHIND_LONE = 8        # lone requests after it: each one wait with the server's queue deep


def test_a_server_behind_makes_the_waits_whole(nutcrackers, write_conf, redis_server, stopped):
    """A stopped server: lone requests, each from its own client and in its own pass, find it busy
    with one and then two requests (half waits); after a pipeline of BEHIND_PIPELINE its queue is
    deep at every wait, and within a few waits they are whole. Every reply is the right one once
    it runs again."""
    proxy, listen, [(port, proc)] = start(nutcrackers, write_conf, redis_server, servers=1,
                                          with_backends=True)
    with RawConn(listen) as c:
        assert c.call("SET", "behind", "v") == "OK"
    stopped(proc)
    server = f"{HOST}:{port}:1"
    conns = []

    def send(data, replies, queued):
        """data from a client of its own; returns once the proxy has written it to the stopped
        server (queued requests unanswered there: out_queue)"""
        c = RawConn(listen)
        conns.append((c, bulk(b"v") * replies))
        c.send(data)
        manage.wait_server_stat(proxy.manage_port, POOL, server, "out_queue", lambda v: v == queued,
                                timeout=START_TIMEOUT)

    try:
        for i in range(3):  # found the server with 0 (no wait), 1 and 2 requests unanswered
            send(resp("GET", "behind"), 1, i + 1)
        assert waits(proxy) == 2 and waits(proxy, "batch_waits_full") == 0
        send(b"".join(resp("GET", "behind") for _ in range(BEHIND_PIPELINE)), BEHIND_PIPELINE,
             3 + BEHIND_PIPELINE)
        for i in range(BEHIND_LONE):
            send(resp("GET", "behind"), 1, 4 + BEHIND_PIPELINE + i)
        total, full = waits(proxy), waits(proxy, "batch_waits_full")
        assert total >= 3 + BEHIND_LONE  # the pipeline's part of it may have come in two reads
        assert 1 <= full <= total - 3, (full, total)  # the three waits before the pipeline's were half
        stopped.resume()
        for c, want in conns:
            c.expect(want)
    finally:
        stopped.resume()
        for c, _ in conns:
            c.close()
