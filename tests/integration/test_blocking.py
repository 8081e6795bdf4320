"""redis blocking commands through the proxy (BLPOP, BRPOP, BRPOPLPUSH, BLMOVE, BLMPOP, BZPOPMIN,
BZPOPMAX, BZMPOP, XREAD and XREADGROUP with BLOCK), against real redis-servers: each is served on
a dedicated server connection of its client, woken by another client's write or timing out with
redis's own reply (RESP2 and RESP3, byte for byte against a redis-server answering the same
sequence); the pool's `timeout` does not cut a block short; keys over two servers get an error;
a client that leaves while blocked frees its server connection at once (the proxy's fds and the
backend's clients back to what they were); an exhausted dedicated set answers at once; a blocked
client that never reads does not stop the others; a reload keeps blocked clients served.

notes/blocking-commands.md says why it works this way."""
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from nctest import procfs
from nctest.cluster import start_cluster
from nctest.codec import resp
from nctest.conn import RawConn, redis_blocked, redis_client, redis_clients
from nctest.keys import spread_keys
from nctest.manage import command as manage_command, find_keys, status
from nctest.wait import steady, wait_for

THREADED = True  # the TSan stage runs these too (conftest.py)

POOL_TIMEOUT = 200  # ms: every block in this file outlives it


@pytest.fixture(scope="module")
def blk(module_redis_server, module_write_conf, module_nutcrackers):
    """2 redis-servers behind a proxy (-T 2, hash_tag "{}", timeout 200 ms), shared by the
    module's tests."""
    cluster = start_cluster("redis", 2, 2, module_redis_server, module_write_conf, module_nutcrackers,
                            name="blk", hash_tag="{}", timeout=POOL_TIMEOUT)
    yield cluster
    rc = cluster.stop()
    assert rc == 0, f"the proxy exited with status {rc}"


@pytest.fixture(scope="module")
def oracle(module_redis_server):
    """A redis-server of its own, for the replies redis gives to the same sequence."""
    port, _ = module_redis_server()
    return port


def tagged(*names):
    """Fresh keys under one hash tag (one server)."""
    tag = uuid.uuid4().hex[:10]
    return [f"{{{tag}}}:{n}" for n in names]


def stats_name(cluster, i):
    return f"127.0.0.1:{cluster.ports[i]}:1"


def server_of(cluster, key):
    """The index of the server the proxy routes key to."""
    name = find_keys(cluster.proxy.manage_port, cluster.name, [key])[key]
    return [stats_name(cluster, i) for i in range(len(cluster.ports))].index(name)


def keys_apart(cluster):
    """Two fresh keys the proxy routes to two different servers, with those servers' indexes."""
    keys = spread_keys(f"apart:{uuid.uuid4().hex[:8]}", 64)
    where = find_keys(cluster.proxy.manage_port, cluster.name, keys)
    first = keys[0]
    for k in keys[1:]:
        if where[k] != where[first]:
            names = [stats_name(cluster, i) for i in range(len(cluster.ports))]
            return first, k, names.index(where[first]), names.index(where[k])
    raise AssertionError("no two keys on different servers")


def nblocked(ports):
    return sum(len(redis_blocked(p)) for p in ports)


def gauge(cluster):
    """dedicated_connections (held) of each server, from the stats."""
    st = status(cluster.proxy.manage_port)[cluster.name]
    return [st[stats_name(cluster, i)]["dedicated_connections"] for i in range(len(cluster.ports))]


# ---------------------------------------------------------------------------------------------
# each command: woken by a write, and timing out (redis-server is the oracle)

L, D, Z, S = range(4)  # the keys of a case: a list, a destination list, a sorted set, a stream

CASES = {
    "blpop": (("BLPOP", L, "{t}"), "list"),
    "brpop": (("BRPOP", L, "{t}"), "list"),
    "brpoplpush": (("BRPOPLPUSH", L, D, "{t}"), "list"),
    "blmove": (("BLMOVE", L, D, "LEFT", "RIGHT", "{t}"), "list"),
    "blmpop": (("BLMPOP", "{t}", "1", L, "LEFT"), "list"),
    "bzpopmin": (("BZPOPMIN", Z, "{t}"), "zset"),
    "bzpopmax": (("BZPOPMAX", Z, "{t}"), "zset"),
    "bzmpop": (("BZMPOP", "{t}", "1", Z, "MIN"), "zset"),
    "xread": (("XREAD", "BLOCK", "{ms}", "STREAMS", S, "$"), "stream"),
    "xreadgroup": (("XREADGROUP", "GROUP", "g", "c", "BLOCK", "{ms}", "STREAMS", S, ">"), "stream"),
}


def case_request(name, keys, seconds):
    """The request of a case with its keys and timeout (seconds; 0: for ever)."""
    args, _ = CASES[name]
    ms = str(int(seconds * 1000))
    return [keys[a] if isinstance(a, int) else a.replace("{t}", str(seconds)).replace("{ms}", ms)
            for a in args]


def prepare(r, name, keys):
    if name == "xreadgroup":
        r.xgroup_create(keys[S], "g", id="$", mkstream=True)


def wake(r, name, keys):
    kind = CASES[name][1]
    if kind == "list":
        r.rpush(keys[L], "v")
    elif kind == "zset":
        r.zadd(keys[Z], {"m": 1})
    else:
        r.xadd(keys[S], {"f": "v"}, id="1-1")


def run_case(port, backends, name, keys, proto, seconds, push_port):
    """Sends the case's request on a raw connection to port (HELLO 3 first for RESP3); when it
    blocks forever, waits until a backend (of `backends`) holds it blocked, then writes what wakes
    it through push_port. Returns the reply's bytes."""
    with RawConn(port, timeout=30) as c:
        if proto == 3:
            c.send(resp("HELLO", "3"))
            c.reply()
        before = nblocked(backends)
        c.send(resp(*case_request(name, keys, seconds)))
        if seconds == 0:
            wait_for(lambda: nblocked(backends) > before, 10, f"{name} blocked on the server")
            pusher = redis_client(push_port)
            wake(pusher, name, keys)
            pusher.close()
        return c.reply()


@pytest.mark.parametrize("proto", [2, 3])
@pytest.mark.parametrize("name", sorted(CASES))
def test_woken_by_a_write(blk, oracle, name, proto):
    keys = tagged("l", "d", "z", "s")
    where = server_of(blk, keys[L])
    prepare(blk.client(), name, keys)
    prepare(redis_client(oracle), name, keys)
    got = run_case(blk.port, blk.ports, name, keys, proto, 0, blk.port)
    want = run_case(oracle, [oracle], name, keys, proto, 0, oracle)
    assert got == want
    assert b"v" in got or b"m" in got
    if name in ("brpoplpush", "blmove"):
        assert blk.client().lrange(keys[D], 0, -1) == [b"v"]
        assert blk.holder(keys[D]) == [where]
    wait_for(lambda: gauge(blk) == [0, 0], 10, "the dedicated connection back in its set")


@pytest.mark.parametrize("proto", [2, 3])
@pytest.mark.parametrize("name", sorted(CASES))
def test_times_out_with_redis_reply(blk, oracle, name, proto):
    """A timeout longer than the pool's (500 ms against 200): redis's own null, no proxy error."""
    keys = tagged("l", "d", "z", "s")
    prepare(blk.client(), name, keys)
    prepare(redis_client(oracle), name, keys)
    got = run_case(blk.port, blk.ports, name, keys, proto, 0.5, blk.port)
    want = run_case(oracle, [oracle], name, keys, proto, 0.5, oracle)
    assert got == want
    assert got in (b"*-1\r\n", b"_\r\n")


@pytest.mark.parametrize("protocol", [2, 3])
def test_redis_py_blocking_calls(blk, protocol):
    """redis-py's own calls, as a worker loop makes them: blpop/brpop with a timeout, bzpopmin,
    xread with block, on one connection that other requests share."""
    k, z, s = tagged("k", "z", "s")
    r = blk.client(protocol=protocol)
    with ThreadPoolExecutor(1) as pool:
        job = pool.submit(r.blpop, [k], timeout=0)
        wait_for(lambda: nblocked(blk.ports) == 1, 10, "blpop blocked")
        blk.client().rpush(k, "job1")
        assert list(job.result(timeout=30)) == [k.encode(), b"job1"]
    assert r.brpop([k], timeout=1) is None  # redis's null after a second (the pool's timeout: 200 ms)
    assert r.set(f"{k}:x", "1") and r.get(f"{k}:x") == b"1"
    blk.client().zadd(z, {"m": 2})
    got = r.bzpopmin([z], timeout=1)
    assert tuple(got) == (z.encode(), b"m", 2.0)
    blk.client().xadd(s, {"f": "v"}, id="5-1")
    assert r.xread({s: "0"}, block=100, count=1) in ([[s.encode(), [(b"5-1", {b"f": b"v"})]]],
                                                     {s.encode(): [[(b"5-1", {b"f": b"v"})]]})
    assert r.xread({s: "$"}, block=300) in ([], {}, None)
    r.close()


def test_block_forever_outlives_the_pool_timeout(blk):
    """BLPOP 0 is still blocked a second later (the pool's timeout is 200 ms), then served."""
    (k,) = tagged("k")
    where = server_of(blk, k)
    with blk.raw(timeout=30) as c:
        c.send(resp("BLPOP", k, "0"))
        # redis's idle= counts the seconds since the blocked command came: a second has passed
        wait_for(lambda: any(int(x["idle"]) >= 1 for x in redis_blocked(blk.ports[where])), 10,
                 "BLPOP blocked for a second")
        blk.client().rpush(k, "late")
        c.expect(resp(k, "late"))


def test_pipelined_requests_after_a_block_keep_their_order(blk):
    """What a client sends after BLPOP runs once BLPOP is answered: GET sees what another client
    wrote just before waking it, and the replies come in order."""
    k, x = tagged("k", "x")
    with blk.raw(timeout=30) as c:
        c.send(resp("BLPOP", k, "0") + resp("GET", x) + resp("SET", x, "mine") + resp("GET", x) +
               resp("LLEN", k))
        wait_for(lambda: nblocked(blk.ports) == 1, 10, "BLPOP blocked")
        other = blk.client()
        other.set(x, "theirs")
        other.rpush(k, "v1", "v2")
        c.expect(resp(k, "v1") + b"$6\r\ntheirs\r\n" + b"+OK\r\n" + b"$4\r\nmine\r\n" + b":1\r\n")
        # and again, on the same connection
        c.send(resp("BRPOP", k, "0") + resp("PING"))
        c.expect(resp(k, "v2") + b"+PONG\r\n")


def test_keys_over_two_servers_get_an_error(blk):
    a, b, sa, sb = keys_apart(blk)
    err = (b"-ERR keys of one blocking command on two servers, '%s' and '%s' (hash tags keep them "
           b"on one)\r\n" % (stats_name(blk, sa).encode(), stats_name(blk, sb).encode()))
    with blk.raw() as c:
        c.exchange(resp("BLPOP", a, b, "0"), err)
        c.exchange(resp("BLMPOP", "0", "2", a, b, "LEFT"), err)
        c.exchange(resp("BRPOPLPUSH", a, b, "0"), err)
        c.exchange(resp("XREAD", "BLOCK", "0", "STREAMS", a, b, "$", "$"), err)
        c.exchange(resp("PING"), b"+PONG\r\n")
    assert nblocked(blk.ports) == 0


def test_inside_multi_redis_runs_it_without_blocking(blk):
    k, j = tagged("k", "j")
    with blk.raw() as c:
        c.exchange(resp("MULTI") + resp("BLPOP", k, "0") + resp("SET", j, "1") + resp("EXEC"),
                   b"+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n*-1\r\n+OK\r\n")
        c.exchange(resp("DEL", j), b":1\r\n")


def test_while_watching_the_block_uses_the_watch_connection(blk):
    """BLPOP on the WATCH's server goes on the WATCH's connection (one held, not two); the WATCH
    is still in place afterwards. On another server it takes a connection of its own."""
    k, w = tagged("k", "w")
    where = server_of(blk, k)
    a, b, sa, sb = keys_apart(blk)
    other_key, other_server = (a, sa) if sa != where else (b, sb)
    with blk.raw(timeout=30) as c:
        c.exchange(resp("WATCH", w), b"+OK\r\n")
        c.send(resp("BLPOP", k, "0"))
        wait_for(lambda: nblocked(blk.ports) == 1, 10, "BLPOP blocked")
        assert gauge(blk)[where] == 1
        blk.client().rpush(k, "v")
        c.expect(resp(k, "v"))
        c.send(resp("BLPOP", other_key, "0"))
        wait_for(lambda: nblocked(blk.ports) == 1, 10, "BLPOP blocked on the other server")
        held = gauge(blk)
        assert held[where] == 1 and held[other_server] == 1
        blk.client().rpush(other_key, "o")
        c.expect(resp(other_key, "o"))
        blk.client().set(w, "changed")
        c.exchange(resp("MULTI") + resp("SET", w, "mine") + resp("EXEC"), b"+OK\r\n+QUEUED\r\n*-1\r\n")
    wait_for(lambda: gauge(blk) == [0, 0], 10, "the dedicated connections back")


# ---------------------------------------------------------------------------------------------
# clients that leave, that never read, that find the set exhausted; a reload


def own_cluster(redis_server, write_conf, nutcrackers, name, threads=1, **pool):
    return start_cluster("redis", 2, threads, redis_server, write_conf, nutcrackers, name=name,
                         hash_tag="{}", timeout=POOL_TIMEOUT, **pool)


def test_client_leaving_while_blocked_frees_its_connection(redis_server, write_conf, nutcrackers):
    cl = own_cluster(redis_server, write_conf, nutcrackers, "leave", threads=2)
    k, j = tagged("k", "j")
    where = server_of(cl, k)
    with cl.raw() as warm:  # the shared connections to both servers, open from now on
        for key in keys_apart(cl)[:2]:
            warm.exchange(resp("GET", key), b"$-1\r\n")
    pid = cl.proxy.proc.pid
    base_fds = steady(lambda: procfs.fd_count(pid), 10, "a stable fd count")
    base_clients = [len(redis_clients(p)) for p in cl.ports]
    for _ in range(3):
        c = cl.raw(timeout=30)
        c.send(resp("BLPOP", k, "0") + resp("SET", j, "after"))
        wait_for(lambda: len(redis_blocked(cl.ports[where])) == 1, 10, "BLPOP blocked")
        c.close()
        wait_for(lambda: procfs.fd_count(pid) == base_fds, 10, "the proxy's fds back to the baseline")
        wait_for(lambda: [len(redis_clients(p)) for p in cl.ports] == base_clients, 10,
                 "the blocked connection gone from the backend")
        assert redis_blocked(cl.ports[where]) == []
        assert gauge(cl) == [0, 0]
    with cl.raw() as c:
        c.exchange(resp("RPUSH", k, "v"), b":1\r\n")
        c.exchange(resp("LLEN", k), b":1\r\n")  # nobody took it: the abandoned BLPOPs are gone
        c.exchange(resp("EXISTS", j), b":0\r\n")  # what they held back never ran
        c.exchange(resp("BLPOP", k, "0"), resp(k, "v"))  # its own reply, at once
        c.exchange(resp("GET", j), b"$-1\r\n")


@pytest.mark.parametrize("leaving", ["close", "reset"])
def test_client_leaving_with_a_long_pipeline_behind_its_block(redis_server, write_conf, nutcrackers, leaving):
    """A blocked client with more requests pipelined behind its block than the proxy reads ahead
    (4096: its reading is paused) is still seen leaving (the peer's close is watched while it
    does not read, a FIN as a reset): its blocked connection is closed at once, not when the block
    would end."""
    cl = own_cluster(redis_server, write_conf, nutcrackers, "leave-pipelined")
    k, j = tagged("k", "j")
    where = server_of(cl, k)
    with cl.raw() as warm:
        for key in keys_apart(cl)[:2]:
            warm.exchange(resp("GET", key), b"$-1\r\n")
    pid = cl.proxy.proc.pid
    base_fds = steady(lambda: procfs.fd_count(pid), 10, "a stable fd count")
    c = cl.raw(timeout=30)
    c.send(resp("BLPOP", k, "0") + resp("GET", j) * 4200)
    wait_for(lambda: len(redis_blocked(cl.ports[where])) == 1, 10, "BLPOP blocked")
    wait_for(lambda: status(cl.proxy.manage_port)[cl.name]["client_connections"] == 1, 10, "the client in")
    if leaving == "reset":
        c.reset()
    else:
        c.close()
    wait_for(lambda: redis_blocked(cl.ports[where]) == [], 10, "the blocked connection gone from the backend")
    wait_for(lambda: procfs.fd_count(pid) == base_fds, 10, "the proxy's fds back to the baseline")
    assert gauge(cl) == [0, 0]
    with cl.raw() as c2:  # the list is still there for the next one
        c2.exchange(resp("RPUSH", k, "v") + resp("BLPOP", k, "0"), b":1\r\n" + resp(k, "v"))


def test_exhausted_set_answers_at_once(redis_server, write_conf, nutcrackers):
    cl = own_cluster(redis_server, write_conf, nutcrackers, "busy", dedicated_connections=2)
    k, j = tagged("k", "j")
    where = server_of(cl, k)
    busy = (b"-ERR no dedicated connection free to server '%s' (dedicated_connections: 2)\r\n"
            % stats_name(cl, where).encode())
    blocked = [cl.raw(timeout=30) for _ in range(2)]
    try:
        for c in blocked:
            c.send(resp("BLPOP", k, "0"))
        wait_for(lambda: len(redis_blocked(cl.ports[where])) == 2, 10, "two clients blocked")
        with cl.raw() as c:
            c.exchange(resp("BLPOP", j, "0"), busy)
            c.exchange(resp("XREAD", "BLOCK", "0", "STREAMS", j, "$"), busy)
            c.exchange(resp("SET", j, "1") + resp("GET", j), b"+OK\r\n$1\r\n1\r\n")
            c.exchange(resp("RPUSH", k, "a", "b"), b":2\r\n")
        replies = sorted(c.reply() for c in blocked)
        assert replies == sorted([resp(k, "a"), resp(k, "b")])
    finally:
        for c in blocked:
            c.close()
    wait_for(lambda: gauge(cl) == [0, 0], 10, "the gauges back to 0")
    with cl.raw() as c:  # free again
        c.exchange(resp("RPUSH", k, "c") + resp("BLPOP", k, "0"), b":1\r\n" + resp(k, "c"))


def test_blocked_client_that_never_reads(redis_server, write_conf, nutcrackers):
    """A client blocks, then pipelines much behind it and never reads a byte: its reply and the
    others' go to its socket, while the other clients keep working on every server."""
    cl = own_cluster(redis_server, write_conf, nutcrackers, "hostile")
    k, x = tagged("k", "x")
    hostile = cl.raw(timeout=30)
    try:
        hostile.send(resp("BLPOP", k, "0") + resp("GET", x) * 2000)
        wait_for(lambda: nblocked(cl.ports) == 1, 10, "BLPOP blocked")
        r = cl.client()
        for i in range(200):
            key = f"other:{i}"
            assert r.set(key, i) and r.get(key) == str(i).encode()
        r.rpush(k, "v")
        for i in range(200):
            assert r.incr(f"other:{i}") == i + 1
        # a second blocker on the same key is served as well, beside the one that does not read
        with cl.raw(timeout=30) as c:
            c.send(resp("BLPOP", k, "0"))
            wait_for(lambda: nblocked(cl.ports) == 1, 10, "the second BLPOP blocked")
            r.rpush(k, "w")
            c.expect(resp(k, "w"))
        wait_for(lambda: gauge(cl) == [0, 0], 10, "the dedicated connections back")
        hostile.expect(resp(k, "v") + b"$-1\r\n" * 2000)
    finally:
        hostile.close()


def test_reload_keeps_blocked_clients_served(redis_server, write_conf, nutcrackers):
    cl = own_cluster(redis_server, write_conf, nutcrackers, "reload", threads=2)
    a, b, sa, sb = keys_apart(cl)
    keys = [a, b, a, b]
    conns = [cl.raw(timeout=30) for _ in keys]
    try:
        for c, k in zip(conns, keys):
            c.send(resp("BLPOP", k, "0") + resp("PING"))
        wait_for(lambda: nblocked(cl.ports) == 4, 10, "four clients blocked")
        text = cl.proxy.conf_path.read_text()
        new = text.replace(f"timeout: {POOL_TIMEOUT}", f"timeout: {POOL_TIMEOUT + 100}")
        assert new != text
        cl.proxy.conf_path.write_text(new)
        assert manage_command(cl.proxy.manage_port, "reload").startswith("OK generation 2")
        with cl.raw(timeout=30) as late:  # a client of the new generation blocks too
            late.send(resp("BLPOP", a, "0"))
            wait_for(lambda: nblocked(cl.ports) == 5, 10, "a fifth client blocked")
            r = cl.client()
            r.rpush(a, "a1", "a2", "a3")
            r.rpush(b, "b1", "b2")
            got = sorted(c.reply() for c in conns)
            assert got == sorted([resp(a, "a1"), resp(a, "a2"), resp(b, "b1"), resp(b, "b2")])
            for c in conns:
                c.expect(b"+PONG\r\n")
            late.expect(resp(a, "a3"))
    finally:
        for c in conns:
            c.close()
    wait_for(lambda: gauge(cl) == [0, 0], 10, "the dedicated connections back")
    assert nblocked(cl.ports) == 0


def test_server_failure_ends_a_block(redis_server, write_conf, nutcrackers, stopped):
    """A block for ever ends when its connection does (the server closes it: the client gets the
    error); a timed block on a server that stopped answering fails after its own timeout plus the
    margin, with the usual timeout error. Either way the client goes on."""
    cl = own_cluster(redis_server, write_conf, nutcrackers, "fail")
    k, j = tagged("k", "j")
    where = server_of(cl, k)
    with cl.raw(timeout=30) as c:
        c.send(resp("BLPOP", k, "0"))
        wait_for(lambda: len(redis_blocked(cl.ports[where])) == 1, 10, "BLPOP blocked")
        with RawConn(cl.ports[where]) as admin:
            assert admin.call("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes") >= 1
        assert c.reply().startswith(b"-ERR ")
        c.exchange(resp("RPUSH", k, "v") + resp("BLPOP", k, "0"), b":1\r\n" + resp(k, "v"))
        stopped(cl.procs[where])
        c.exchange(resp("BLPOP", j, "0.3"), b"-ERR Connection timed out\r\n")
        stopped.resume()
        c.exchange(resp("BLPOP", j, "0.3"), b"*-1\r\n")
    wait_for(lambda: gauge(cl) == [0, 0], 10, "the dedicated connections back")
