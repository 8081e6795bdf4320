"""A client's fair share of the shared server connections (core/fair.h, notes/fair-share.md),
with real redis-servers and memcacheds: one worker (-T 1) and one connection per server, so that
every client of the pool shares it.

- Order and correctness: a client pipelining 200 GETs of 256 kB values, or a pipeline of mixed
  sizes (a 2 MB SET that goes alone), MGETs across servers, replies the proxy gives itself,
  transactions and blocking commands, gets every reply right and in order, while bystanders on
  the same connections get theirs; QUIT at the end of a held pipeline comes after every reply
  before it, and nothing after it is sent; a client that leaves with requests held leaves
  nothing held, and the server never gets them (INFO commandstats).
- The share, seen without timing: against a stopped server, of a greedy client's pipeline of GETs
  of 1 MB values at most FAIR_BUDGET / 1 MB + a few are on the server connection (its in_queue +
  out_queue), the rest wait in the proxy, and a bystander's GET goes on the connection at once;
  once the server resumes every reply comes in order. A new client takes its pool's average reply
  as its first guess. A client of small requests is held at first (the 4 kB first guess: 254 in
  flight), not once its replies are known small: 2,000 pipelined GETs of 10-byte values all reach
  the server queue. Held requests go as earlier ones are answered, even while the client's first
  reply still waits on another server.
- memcached: the same for gets of 256 kB values.
- A server connection failing (timed out) while a client holds requests back: the requests it
  releases are not sent on that connection while it fails its own (reconnected then, it would
  have failed them too, and kept a socket that never had its set-up requests: redis_db's SELECT).
"""
import pytest

from nctest import cluster, keys, load, manage, procs, wait
from nctest.codec import Err, array, bulk, integer, mc_get, mc_store, mc_value, resp
from nctest.conn import redis_client
from nctest.procfs import rss_kb

KB = 1 << 10
MB = 1 << 20
BUDGET = 1 << 20  # core/fair.h FAIR_BUDGET: what a client may have in flight
FIRST_GUESS = 4 * KB  # core/fair.h FAIR_EST_START: a fresh pool's guess of a reply
POOL = "fair"
NEAR_ZERO = 256 * KB  # the client_memory gauge with no client holding anything (64 kB granularity)
RSS_BACK = 24 * MB    # the proxy's RSS over idle once what clients held is freed and trimmed


def start(kind, start_backend, write_conf, nutcrackers, servers=1, **pool):
    """A pool of `servers` backends (one connection each) behind a -T 1 proxy."""
    return cluster.start_cluster(kind, servers, 1, start_backend, write_conf, nutcrackers, name=POOL,
                                 server_connections=1, **pool)


def server_name(cl, i=0):
    return f"127.0.0.1:{cl.ports[i]}:1"


def status(cl):
    return manage.status(cl.proxy.manage_port)


def on_connection(cl, what):
    """What the server connections hold once it stops changing (the proxy read everything)."""
    return wait.steady(cl.queued, 20, f"the server connections' queues {what}")


def on_a_stopped_server(cl, stopped, c, request, replies, what):
    """Client c sends request to the pool's first server, stopped: returns how many of its requests
    the server connection holds once the proxy read them all; then resumes the server and checks
    that c gets replies."""
    stopped(cl.procs[0])
    c.send(request)
    c.wait_consumed()
    sent = on_connection(cl, what)
    stopped.resume()
    c.expect(replies)
    return sent


def get_calls(port):
    """GETs the redis-server on port ran (INFO commandstats)."""
    return redis_client(port).info("commandstats").get("cmdstat_get", {}).get("calls", 0)


def bystanders(cl, redis=True):
    """Well-behaved clients (SET then GET of their own keys, one request at a time, every reply
    checked), started."""
    return load.Load(cl.port, redis=redis, nclients=2, nkeys=4, pipeline=False).start()


def run_beside_bystanders(cl, warm, script, redis=True):
    """The greedy client first exchanges warm (request, reply): its estimate of its replies is
    theirs, so that its pipeline is held from its first request; then it writes its pipeline (the
    script's request) at once and reads every reply, while bystanders run; checks both."""
    by = bystanders(cl, redis)
    try:
        by.wait_progress(each=3)
        with cl.raw(timeout=60) as greedy:
            greedy.exchange(*warm)
            request, expected = script

            def pipeline(_):
                greedy.send(request)
                got = greedy.recv_exact(len(expected))
                assert got == expected, "the greedy client's replies: " + load.first_difference(got, expected)

            load.run_threads(1, pipeline, timeout=60)
        by.wait_progress(each=3)
    finally:
        by.stop()
    by.assert_clean("beside the greedy client")


def values(prefix, sizes):
    """{key: value} of the given sizes, keys of one hash tag (one server)."""
    return {f"{{{prefix}}}:{i}": keys.big_value(size, f"{prefix}{i}".encode())
            for i, size in enumerate(sizes)}


def test_greedy_gets_in_order_beside_bystanders(redis_server, write_conf, nutcrackers):
    """200 pipelined GETs of 256 kB values (four of them, in turn): every reply right and in
    order; the bystanders on the same connection get theirs."""
    cl = start("redis", redis_server, write_conf, nutcrackers)
    vals = values("g", [256 * KB] * 4)
    redis_client(cl.port).mset(vals)
    ks = list(vals) * 50
    run_beside_bystanders(cl, (resp("GET", ks[0]), bulk(vals[ks[0]])),
                          (b"".join(resp("GET", k) for k in ks), b"".join(bulk(vals[k]) for k in ks)))


def test_mixed_pipeline_in_order_beside_bystanders(redis_server, write_conf, nutcrackers):
    """A pipeline of values from 1 kB to 1 MB, each round with a 2 MB SET (more than the share:
    it goes alone) and its GET, an MGET across both servers, a PING the proxy answers between
    held requests, a transaction (MULTI/EXEC, on a dedicated connection) and a blocking command
    (BLPOP): every reply right and in order, the bystanders served."""
    cl = start("redis", redis_server, write_conf, nutcrackers, servers=2, hash_tag="{}")
    vals = values("m", [1 * KB, 64 * KB, 256 * KB, MB])
    near = list(vals)
    home = cl.server_of(near[0])
    far = next(k for k in keys.spread_keys("far", 64) if cl.server_of(k) != home)
    vals[far] = keys.big_value(256 * KB, b"far")
    redis_client(cl.port).mset(vals)
    huge = keys.big_value(2 * MB, b"huge")
    req, rep = [], []

    def add(request, reply):
        req.append(request)
        rep.append(reply)

    for r in range(6):
        for k in (near[r % 4], near[3], near[1], near[2], near[0], near[3]):
            add(resp("GET", k), bulk(vals[k]))
        add(resp("PING"), b"+PONG\r\n")
        add(resp("MGET", near[2], far, near[0]), array(bulk(vals[near[2]]), bulk(vals[far]), bulk(vals[near[0]])))
        add(resp("SET", f"{{m}}:huge{r}", huge), b"+OK\r\n")
        add(resp("GET", near[3]), bulk(vals[near[3]]))
        add(resp("GET", f"{{m}}:huge{r}"), bulk(huge))
        add(resp("MULTI") + resp("SET", f"{{m}}:t{r}", r) + resp("GET", near[1]) + resp("EXEC"),
            b"+OK\r\n+QUEUED\r\n+QUEUED\r\n" + array(b"+OK\r\n", bulk(vals[near[1]])))
        add(resp("GET", near[3]), bulk(vals[near[3]]))
        add(resp("RPUSH", f"{{m}}:l{r}", "x") + resp("BLPOP", f"{{m}}:l{r}", 5),
            integer(1) + array(bulk(f"{{m}}:l{r}"), bulk("x")))
        add(resp("GET", far), bulk(vals[far]))
    run_beside_bystanders(cl, (resp("GET", near[2]), bulk(vals[near[2]])), (b"".join(req), b"".join(rep)))


def test_share_of_a_greedy_client_on_a_stopped_server(redis_server, write_conf, nutcrackers, stopped):
    """A client that knows its replies are 1 MB (it read one) pipelines 60 GETs of that value to
    a stopped server: the proxy reads them all, puts at most FAIR_BUDGET / 1 MB + 2 on the server
    connection and holds the rest; a bystander's GET goes on the connection at once, behind only
    those. Once the server resumes, every reply comes, in order, the bystander's too."""
    cl = start("redis", redis_server, write_conf, nutcrackers)
    big = keys.big_value(MB, b"share")
    redis_client(cl.port).set("big", big)
    with cl.raw(timeout=60) as greedy, cl.raw(timeout=60) as by:
        greedy.exchange(resp("GET", "big"), bulk(big))
        by.exchange(resp("SET", "small", "s"), b"+OK\r\n")
        stopped(cl.procs[0])
        greedy.send(resp("GET", "big") * 60)
        greedy.wait_consumed()
        sent = on_connection(cl, "with the greedy client's requests")
        assert 1 <= sent <= BUDGET // MB + 2, f"{sent} of 60 GETs of 1 MB on the server connection"
        by.send(resp("GET", "small"))
        by.wait_consumed()
        assert on_connection(cl, "with the bystander's GET") == sent + 1, \
            "the bystander's GET did not go on the server connection at once"
        stopped.resume()
        greedy.expect(bulk(big) * 60)
        by.expect(bulk("s"))


def test_a_new_client_starts_from_its_pools_average(redis_server, write_conf, nutcrackers, stopped):
    """In a pool whose replies were 1 MB (another client read 32 of them), a new client that has
    had no reply yet meets its share from its first request: of its 40 pipelined GETs at most
    FAIR_BUDGET / 1 MB + 2 go to the stopped server (with a fresh pool's 4 kB first guess all 40
    would)."""
    cl = start("redis", redis_server, write_conf, nutcrackers)
    big = keys.big_value(MB, b"average")
    redis_client(cl.port).set("big", big)
    with cl.raw(timeout=60) as first:
        first.exchange(resp("GET", "big") * 32, bulk(big) * 32)
    with cl.raw(timeout=60) as c:
        stopped(cl.procs[0])
        c.send(resp("GET", "big") * 40)
        c.wait_consumed()
        sent = on_connection(cl, "with the new client's requests")
        assert 1 <= sent <= BUDGET // MB + 2, f"{sent} of 40 GETs of 1 MB on the server connection"
        stopped.resume()
        c.expect(bulk(big) * 40)


def test_small_requests_are_not_held_once_their_replies_are_known(redis_server, write_conf, nutcrackers,
                                                                  stopped):
    """Against a stopped server, a client's 2,000 pipelined GETs of a 10-byte value: on a fresh
    pool, before any reply, it has the 4 kB first guess (a few hundred go: 1 MB / (4 kB + the
    request)); once its replies came, all 2,000 of its next pipeline reach the server queue at once,
    and so do a new client's (its pool's average is small now)."""
    cl = start("redis", redis_server, write_conf, nutcrackers)
    redis_client(cl.ports[0]).set("small", "0123456789")  # not through the pool: no reply yet
    n = 2000
    pipeline, replies = resp("GET", "small") * n, bulk("0123456789") * n
    first_guess = BUDGET // (FIRST_GUESS + len(resp("GET", "small")))
    with cl.raw(timeout=60) as c:
        sent = on_a_stopped_server(cl, stopped, c, pipeline, replies, "with a fresh client's requests")
        assert first_guess - 2 <= sent <= first_guess + 2, f"{sent} of {n} GETs sent, before any reply"
        sent = on_a_stopped_server(cl, stopped, c, pipeline, replies, "with its second pipeline")
        assert sent == n, "its small requests were held"
    with cl.raw(timeout=60) as c:
        sent = on_a_stopped_server(cl, stopped, c, pipeline, replies, "with a new client's requests")
        assert sent == n, "a new client's small requests were held"


def test_held_requests_go_while_the_first_reply_waits(redis_server, write_conf, nutcrackers, stopped):
    """A client's first request waits on a stopped server; behind it 40 GETs of 256 kB values on
    the other server: they all get there and are answered meanwhile (its share frees as they are,
    though none of its replies can be written yet); once the first server resumes, every reply
    comes in order."""
    cl = start("redis", redis_server, write_conf, nutcrackers, servers=2)
    big = keys.big_value(256 * KB, b"behind")
    where = {k: cl.server_of(k) for k in keys.spread_keys("behind", 64)}
    slow = next(k for k, s in where.items() if s == 0)
    busy = next(k for k, s in where.items() if s == 1)
    redis_client(cl.port).mset({slow: "slow", busy: big})
    with cl.raw(timeout=60) as c:
        c.exchange(resp("GET", busy), bulk(big))  # its estimate: 256 kB a reply
        before = status(cl)[POOL][server_name(cl, 1)]["responses"]
        stopped(cl.procs[0])
        c.send(resp("GET", slow) + resp("GET", busy) * 40)
        manage.wait_server_stat(cl.proxy.manage_port, POOL, server_name(cl, 1), "responses",
                                lambda v: v >= before + 40, 30)
        stopped.resume()
        c.expect(bulk("slow") + bulk(big) * 40)


def test_quit_after_a_held_pipeline(redis_server, write_conf, nutcrackers, stopped):
    """QUIT at the end of a pipeline of which most is held: every reply before it comes, in
    order, then +OK and the close; the GETs after QUIT are never sent."""
    cl = start("redis", redis_server, write_conf, nutcrackers)
    big = keys.big_value(256 * KB, b"quit")
    redis_client(cl.port).set("big", big)
    with cl.raw(timeout=60) as c:
        c.exchange(resp("GET", "big"), bulk(big))
        calls = get_calls(cl.ports[0])
        stopped(cl.procs[0])
        c.send(resp("GET", "big") * 30 + resp("QUIT") + resp("GET", "big") * 10)
        c.wait_consumed()
        assert on_connection(cl, "with the pipeline before QUIT") < 30, "nothing of it was held"
        stopped.resume()
        c.expect(bulk(big) * 30 + b"+OK\r\n")
        assert c.read_until_closed() == b"", "bytes after QUIT's reply"
    assert get_calls(cl.ports[0]) == calls + 30, "the GETs after QUIT reached the server"


def test_leaving_with_requests_held(redis_server, write_conf, nutcrackers, stopped):
    """A client leaves (a reset) while most of its 100 GETs of 256 kB wait for its share (the
    server stopped): the proxy holds nothing for it any more, the server only ever gets those that
    were on its connection when it left, and the next client is served."""
    cl = start("redis", redis_server, write_conf, nutcrackers)
    big = keys.big_value(256 * KB, b"leave")
    redis_client(cl.port).set("big", big)
    c = cl.raw(timeout=60)
    c.exchange(resp("GET", "big"), bulk(big))
    calls = get_calls(cl.ports[0])
    answered = status(cl)[POOL][server_name(cl)]["responses"]
    stopped(cl.procs[0])
    c.send(resp("GET", "big") * 100)
    c.wait_consumed()
    sent = on_connection(cl, "with the client's requests")
    assert 1 <= sent <= BUDGET // (256 * KB) + 2, f"{sent} of 100 GETs on the server connection"
    assert status(cl)["client_memory"] > 100 * 512, "the proxy does not hold the client's requests"
    c.reset()
    manage.wait_pool_stat(cl.proxy.manage_port, POOL, "client_connections", lambda v: v == 0)
    wait.settle(lambda: status(cl)["client_memory"], NEAR_ZERO, 20, "client_memory once it left")
    stopped.resume()
    manage.wait_server_stat(cl.proxy.manage_port, POOL, server_name(cl), "responses",
                            lambda v: v >= answered + sent, 20)
    load.witness(cl.port)  # its GET goes behind anything sent on the connection until then
    assert get_calls(cl.ports[0]) == calls + sent + 1, "held requests of a client that left were sent"


def test_leaving_with_large_sets_held_gives_their_memory_back(redis_server, write_conf, nutcrackers,
                                                              stopped):
    """Four clients each pipeline 12 SETs of 1 MB to a stopped server: one of each goes, the rest
    (44 MB) waits in the proxy; they leave (a reset). The server only ever gets the four that
    went, and once they are answered the proxy's resident memory comes back within 24 MB of its
    idle level (a trim runs every second): what the held requests kept was freed."""
    if procs.sanitized_binary():
        pytest.skip("a sanitizer's allocator keeps what is freed: RSS says nothing there")
    cl = start("redis", redis_server, write_conf, nutcrackers)
    value = keys.big_value(MB, b"sets")
    load.witness(cl.port)
    pid = cl.proxy.pid
    idle = min(wait.sample(lambda: rss_kb(pid), 12)) * KB
    answered = status(cl)[POOL][server_name(cl)]["responses"]
    stopped(cl.procs[0])
    clients = [cl.raw(timeout=60) for _ in range(4)]
    for i, c in enumerate(clients):
        c.send(resp("SET", f"set{i}", value) * 12)
    for c in clients:
        c.wait_consumed()
    assert on_connection(cl, "with the clients' SETs") == 4, "not one SET of each client went alone"
    assert status(cl)["client_memory"] > 4 * 12 * MB, "the proxy does not hold the clients' SETs"
    for c in clients:
        c.reset()
    manage.wait_pool_stat(cl.proxy.manage_port, POOL, "client_connections", lambda v: v == 0)
    stopped.resume()
    manage.wait_server_stat(cl.proxy.manage_port, POOL, server_name(cl), "responses",
                            lambda v: v >= answered + 4, 20)
    assert redis_client(cl.ports[0]).info("commandstats")["cmdstat_set"]["calls"] == 1 + 4, \
        "held SETs of clients that left were sent"
    wait.settle(lambda: status(cl)["client_memory"], NEAR_ZERO, 20, "client_memory once they left")
    wait.settle(lambda: rss_kb(pid) * KB - idle, RSS_BACK, 20, "the proxy's RSS over idle once they left")


def test_memcache_large_gets(memcached_server, write_conf, nutcrackers, stopped):
    """memcached: 100 pipelined gets of 256 kB values in order beside bystanders; then, against
    the stopped server, of 40 gets at most FAIR_BUDGET / 256 kB + 2 on the connection, every reply
    in order once it resumes."""
    cl = start("memcache", memcached_server, write_conf, nutcrackers)
    vals = values("mc", [256 * KB] * 4)
    with cl.raw(timeout=60) as c:
        for k, v in vals.items():
            c.exchange(mc_store("set", k, v), b"STORED\r\n")
    ks = list(vals) * 25
    replies = {k: mc_value(k, v) + b"END\r\n" for k, v in vals.items()}
    run_beside_bystanders(cl, (mc_get(ks[0]), replies[ks[0]]),
                          (b"".join(mc_get(k) for k in ks), b"".join(replies[k] for k in ks)), redis=False)
    k, v = next(iter(vals.items()))
    with cl.raw(timeout=60) as c:
        c.exchange(mc_get(k), mc_value(k, v) + b"END\r\n")
        stopped(cl.procs[0])
        c.send(mc_get(k) * 40)
        c.wait_consumed()
        sent = on_connection(cl, "with the greedy client's gets")
        assert 1 <= sent <= BUDGET // (256 * KB) + 2, f"{sent} of 40 gets of 256 kB on the server connection"
        stopped.resume()
        c.expect((mc_value(k, v) + b"END\r\n") * 40)


def test_a_failed_connection_keeps_its_select_for_the_requests_it_released(
        redis_server, write_conf, nutcrackers, stopped):
    """A pool on redis_db 1: a client with 256 kB replies (3 requests of 40 in flight, the rest
    held) on a server that stops answering; the connection times out. Every reply it gets is the
    value or an error, never db 0's nil, and the connection the proxy opens next still selects
    db 1 (the key `probe` reads "one" there, "zero" in db 0)."""
    big = keys.big_value(256 * KB, b"select")
    port, proc = redis_server()
    direct = redis_client(port, db=1)
    direct.mset({"big": big, "probe": "one"})
    redis_client(port).set("probe", "zero")
    cl = start("redis", None, write_conf, nutcrackers, ports=[port], redis_db=1, timeout=500)
    with cl.raw(timeout=30) as c:
        c.exchange(resp("GET", "big"), bulk(big))  # its estimate: 256 kB a reply
        stopped(proc)
        c.send(resp("GET", "big") * 40)
        c.wait_consumed()
        manage.wait_server_stat(cl.proxy.manage_port, POOL, server_name(cl), "server_timedout",
                                lambda v: v >= 1, 20)
        stopped.resume()
        replies = [c.read() for _ in range(40)]
    wrong = [i for i, r in enumerate(replies) if r != big and not isinstance(r, Err)]
    assert not wrong, f"replies {wrong[:5]} are neither the value nor an error: " \
                      f"{replies[wrong[0]]!r:.80}"
    assert isinstance(replies[0], Err), "the first request in flight did not time out"
    with cl.raw() as p:
        assert p.call("GET", "probe") == b"one", "the reconnected server connection lost its SELECT"
