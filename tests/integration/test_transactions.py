"""redis transactions through the proxy (MULTI, EXEC, DISCARD, WATCH, UNWATCH), against real
redis-servers, 2 of them behind -T 1 and -T 4: a transaction whose keys map to one server runs
there with redis's own semantics on a dedicated server connection; one whose keys cross servers
is refused whole (nothing reaches any backend, EXEC answers -EXECABORT); WATCH aborts EXEC when a
watched key changes; a client that leaves mid-transaction leaves nothing behind; an exhausted
dedicated set answers an error at once. The reply texts are checked byte for byte against a
redis-server answering the same sequence (redis is the oracle)."""
import uuid

import pytest
import redis

from nctest.cluster import matrix_id, start_cluster
from nctest.codec import resp
from nctest.conn import RawConn, redis_clients
from nctest.keys import spread_keys
from nctest.load import first_difference
from nctest.manage import command as manage_command, status
from nctest.procs import run
from nctest.wait import wait_for

THREADED = True  # the TSan stage runs these too (conftest.py)

TXN_MATRIX = [(2, 1), (2, 4)]


@pytest.fixture(scope="module", params=TXN_MATRIX, ids=matrix_id)
def txn(request, module_redis_server, module_write_conf, module_nutcrackers):
    """A Cluster: 2 redis-servers behind a proxy (-T 1 or -T 4, hash_tag "{}"), shared by the
    module's tests."""
    backends, threads = request.param
    cluster = start_cluster("redis", backends, threads, module_redis_server,
                                    module_write_conf, module_nutcrackers,
                                    name=f"txn-{matrix_id(request.param)}", hash_tag="{}")
    yield cluster
    rc = cluster.stop()
    assert rc == 0, f"the proxy exited with status {rc}"


def server_of(cluster, key):
    """The index of the server the proxy routes key to (asked from the manage port)."""
    line = manage_command(cluster.proxy.manage_port, f"find_key {cluster.proxy.conf_path.stem} {key}")
    addr = line.split()[0]
    port = int(addr.split(":")[1])
    return cluster.ports.index(port)


def keys_apart(cluster, prefix):
    """Two fresh keys that the proxy routes to two different servers: (key0, key1, name0, name1)
    with the servers' stats names."""
    keys = spread_keys(f"{prefix}:{uuid.uuid4().hex[:8]}", 64)
    first = keys[0]
    s0 = server_of(cluster, first)
    for k in keys[1:]:
        s1 = server_of(cluster, k)
        if s1 != s0:
            return first, k, stats_name(cluster, s0), stats_name(cluster, s1)
    raise AssertionError("no two keys on different servers")


def stats_name(cluster, i):
    return f"127.0.0.1:{cluster.ports[i]}:1"


def nowhere(cluster, *keys):
    """True when no backend holds any of keys."""
    return all(cluster.holder(k) == [] for k in keys)


def test_cross_server_pipeline_transaction_writes_nothing(txn):
    """redis-py's default pipeline is a MULTI/EXEC transaction: when its keys cross servers it
    must fail whole, with nothing written anywhere, and the connection stays usable."""
    a, b, name_a, name_b = keys_apart(txn, "cross")
    r = txn.client()
    pipe = r.pipeline(transaction=True)
    pipe.set(a, "1")
    pipe.set(b, "2")
    pipe.incr(a)
    with pytest.raises(redis.ResponseError):
        pipe.execute()
    assert nowhere(txn, a, b)
    assert r.ping()
    assert r.set(a, "x") and r.get(a) == b"x"
    r.delete(a)
    r.close()


def test_hash_tagged_pipeline_transaction_applies(txn):
    tag = uuid.uuid4().hex[:8]
    a, b = f"{{t{tag}}}:a", f"{{t{tag}}}:b"
    r = txn.client()
    pipe = r.pipeline(transaction=True)
    pipe.set(a, "1").incr(a).rpush(b, "x", "y").lrange(b, 0, -1).get(a)
    assert pipe.execute() == [True, 2, 2, [b"x", b"y"], b"2"]
    (where,) = txn.holder(a)
    assert txn.holder(b) == [where]
    assert txn.direct(where).get(a) == b"2"
    r.delete(a, b)
    r.close()


# ---------------------------------------------------------------------------------------------
# byte for byte against a redis-server answering the same sequence


@pytest.fixture(scope="module")
def oracle(module_redis_server):
    """A redis-server of its own, for the replies redis gives to a sequence."""
    port, _ = module_redis_server()
    return port


def run_sequence(port, requests, nreplies):
    """Sends the requests in one write; returns the bytes of the first nreplies replies."""
    with RawConn(port) as c:
        c.send(b"".join(requests))
        return b"".join(c.reply() for _ in range(nreplies))


def tagged(*names):
    """Keys of one hash tag (one server through the proxy), fresh for each call."""
    tag = uuid.uuid4().hex[:10]
    return [f"{{{tag}}}:{n}" for n in names]


def sequences():
    """name -> (function of keys k, j -> the requests, number of replies)."""
    return {
        "queued-results": (lambda k, j: [resp("MULTI"), resp("SET", k, "1"), resp("INCR", k),
                                         resp("RPUSH", j, "a", "b"), resp("GET", k), resp("EXEC")], 6),
        "inline": (lambda k, j: [b"MULTI\r\n", b"SET %s 7\r\n" % k.encode(),
                                 b"GET %s\r\n" % k.encode(), b"EXEC\r\n"], 4),
        "nested-multi": (lambda k, j: [resp("MULTI"), resp("MULTI"), resp("SET", k, "1"),
                                       resp("EXEC")], 4),
        "without-multi": (lambda k, j: [resp("EXEC"), resp("DISCARD"), resp("UNWATCH")], 3),
        "watch-inside-multi": (lambda k, j: [resp("MULTI"), resp("SET", k, "1"), resp("WATCH", j),
                                             resp("EXEC")], 4),
        "arity-aborts": (lambda k, j: [resp("MULTI"), resp("SET", k, "1"), resp("SET", j),
                                       resp("EXEC"), resp("EXISTS", k)], 5),
        "txn-arity-aborts": (lambda k, j: [resp("MULTI"), resp("DISCARD", "x"), resp("EXEC")], 3),
        "discard": (lambda k, j: [resp("MULTI"), resp("SET", k, "1"), resp("DISCARD"),
                                  resp("DISCARD"), resp("EXISTS", k)], 5),
        "discard-clears-abort": (lambda k, j: [resp("MULTI"), resp("GET"), resp("DISCARD"),
                                               resp("MULTI"), resp("SET", k, "2"), resp("EXEC")], 6),
        "empty": (lambda k, j: [resp("MULTI"), resp("EXEC")], 2),
        "error-inside-exec": (lambda k, j: [resp("MULTI"), resp("INCR", k), resp("SET", k, "x"),
                                            resp("INCR", k), resp("GET", k), resp("EXEC")], 6),
        "watch-then-exec": (lambda k, j: [resp("WATCH", k, j), resp("MULTI"), resp("SET", k, "1"),
                                          resp("EXEC"), resp("UNWATCH")], 5),
        "ping-unwatch-queued": (lambda k, j: [resp("MULTI"), resp("PING"), resp("PING", "m"),
                                              resp("UNWATCH"), resp("EXEC")], 5),
        "two-in-a-row": (lambda k, j: [resp("MULTI"), resp("INCR", k), resp("EXEC"), resp("MULTI"),
                                       resp("INCR", k), resp("EXEC"), resp("GET", k)], 7),
        "exec-then-read": (lambda k, j: [resp("SET", k, "1"), resp("MULTI"), resp("INCR", k),
                                         resp("EXEC"), resp("GET", k), resp("WATCH", k),
                                         resp("UNWATCH"), resp("GET", k)], 8),
    }


@pytest.mark.parametrize("name", sorted(sequences()))
def test_replies_are_redis_own(txn, oracle, name):
    build, n = sequences()[name]
    k, j = tagged("k", "j")
    expected = run_sequence(oracle, build(k, j), n)
    k, j = tagged("k", "j")
    got = run_sequence(txn.port, build(k, j), n)
    assert got == expected, first_difference(got, expected)


def test_quit_inside_multi_drops_the_transaction(txn, oracle):
    for port in (oracle, txn.port):
        (k,) = tagged("k")
        with RawConn(port) as c:
            c.send(resp("MULTI") + resp("SET", k, "1") + resp("QUIT") + resp("SET", k, "2"))
            c.expect(b"+OK\r\n+QUEUED\r\n+OK\r\n")
            assert c.is_closed()
        with RawConn(port) as c:
            c.exchange(resp("EXISTS", k), b":0\r\n")


# ---------------------------------------------------------------------------------------------
# keys on two servers


def test_cross_server_command_names_both_servers_and_aborts(txn):
    a, b, name_a, name_b = keys_apart(txn, "cross")
    cross = (b"-ERR keys of one transaction on two servers, '%s' and '%s' (hash tags keep them on one)\r\n"
             % (name_a.encode(), name_b.encode()))
    with txn.raw() as c:
        c.send(resp("MULTI") + resp("SET", a, "1") + resp("SET", b, "2") + resp("SET", a, "3") +
               resp("EXEC"))
        c.expect(b"+OK\r\n+QUEUED\r\n" + cross + b"+QUEUED\r\n" +
                 b"-EXECABORT Transaction discarded because of previous errors.\r\n")
        # one command whose own keys cross
        c.send(resp("MULTI") + resp("MGET", a, b) + resp("EXEC"))
        c.expect(b"+OK\r\n" + cross + b"-EXECABORT Transaction discarded because of previous errors.\r\n")
        # WATCH whose keys cross: refused, nothing watched
        c.exchange(resp("WATCH", a, b), cross)
        # the connection is still usable, in and out of transactions
        c.exchange(resp("SET", b, "x"), b"+OK\r\n")
        c.exchange(resp("MULTI") + resp("GET", a) + resp("GET", a) + resp("EXEC"),
                   b"+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n$-1\r\n$-1\r\n")
        c.exchange(resp("DEL", b), b":1\r\n")
    assert nowhere(txn, a, b)


def test_watch_then_multi_on_another_server_crosses(txn):
    a, b, name_a, name_b = keys_apart(txn, "wcross")
    cross = (b"-ERR keys of one transaction on two servers, '%s' and '%s' (hash tags keep them on one)\r\n"
             % (name_a.encode(), name_b.encode()))
    with txn.raw() as c:
        c.exchange(resp("WATCH", a), b"+OK\r\n")
        c.exchange(resp("WATCH", b), cross)
        c.exchange(resp("MULTI") + resp("SET", b, "1") + resp("EXEC"),
                   b"+OK\r\n" + cross + b"-EXECABORT Transaction discarded because of previous errors.\r\n")
        # EXECABORT released the WATCH: the other server is free again
        c.exchange(resp("WATCH", b), b"+OK\r\n")
        c.exchange(resp("UNWATCH"), b"+OK\r\n")
    assert nowhere(txn, a, b)


def test_redis_py_cross_server_error_then_usable(txn):
    a, b, name_a, name_b = keys_apart(txn, "pycross")
    r = txn.client()
    pipe = r.pipeline(transaction=True)
    pipe.set(a, "1").set(b, "2")
    with pytest.raises(redis.ResponseError) as err:
        pipe.execute()
    assert name_a in str(err.value) and name_b in str(err.value)
    assert nowhere(txn, a, b)
    pipe = r.pipeline(transaction=True)
    pipe.set(a, "1").get(a)
    assert pipe.execute() == [True, b"1"]
    r.delete(a)
    r.close()


# ---------------------------------------------------------------------------------------------
# WATCH


def test_watch_aborts_exec_when_the_key_changes(txn):
    k, other = tagged("k", "other")
    r = txn.client()
    r.set(k, "0")
    with r.pipeline(transaction=True) as pipe:
        pipe.watch(k)
        value = int(pipe.get(k))
        r2 = txn.client()
        r2.set(k, "100")  # another client, another connection
        pipe.multi()
        pipe.set(k, value + 1)
        pipe.set(other, "written")
        with pytest.raises(redis.WatchError):
            pipe.execute()
    assert r.get(k) == b"100"
    assert r.exists(other) == 0
    # without a concurrent change the same transaction applies
    with r.pipeline(transaction=True) as pipe:
        pipe.watch(k)
        value = int(pipe.get(k))
        pipe.multi()
        pipe.set(k, value + 1)
        assert pipe.execute() == [True]
    assert r.get(k) == b"101"
    r.delete(k)
    r.close()
    r2.close()


def test_watch_raw_null_exec_and_unwatch(txn):
    k, j = tagged("k", "j")
    with txn.raw() as c, txn.raw() as other:
        c.exchange(resp("WATCH", k, j), b"+OK\r\n")
        other.exchange(resp("SET", j, "x"), b"+OK\r\n")
        c.exchange(resp("MULTI") + resp("SET", k, "1") + resp("EXEC"), b"+OK\r\n+QUEUED\r\n*-1\r\n")
        # EXEC ended the WATCH: the same transaction now applies
        c.exchange(resp("MULTI") + resp("SET", k, "1") + resp("EXEC"), b"+OK\r\n+QUEUED\r\n*1\r\n+OK\r\n")
        # UNWATCH ends it too
        c.exchange(resp("WATCH", k), b"+OK\r\n")
        c.exchange(resp("UNWATCH"), b"+OK\r\n")
        other.exchange(resp("SET", k, "2"), b"+OK\r\n")
        c.exchange(resp("MULTI") + resp("INCR", k) + resp("EXEC"), b"+OK\r\n+QUEUED\r\n*1\r\n:3\r\n")
        # DISCARD ends it too
        c.exchange(resp("WATCH", k), b"+OK\r\n")
        c.exchange(resp("MULTI") + resp("DISCARD"), b"+OK\r\n+OK\r\n")
        other.exchange(resp("SET", k, "5"), b"+OK\r\n")
        c.exchange(resp("MULTI") + resp("INCR", k) + resp("EXEC"), b"+OK\r\n+QUEUED\r\n*1\r\n:6\r\n")
        c.exchange(resp("DEL", k, j), b":2\r\n")


def test_requests_keep_their_order_around_a_transaction(txn):
    """A client's requests before EXEC (on the shared connections) are answered before EXEC
    runs, and those after it run after it, as on one redis connection."""
    for _ in range(20):
        k, j = tagged("k", "j")
        untagged = f"plain:{uuid.uuid4().hex}"
        with txn.raw() as c:
            c.send(resp("SET", k, "1") + resp("SET", untagged, "5") + resp("MULTI") +
                   resp("INCR", k) + resp("EXEC") + resp("INCR", k) + resp("GET", k) +
                   resp("WATCH", j) + resp("SET", j, "own") + resp("MULTI") + resp("GET", j) +
                   resp("EXEC") + resp("DEL", k, j, untagged))
            c.expect(b"+OK\r\n+OK\r\n+OK\r\n+QUEUED\r\n*1\r\n:2\r\n:3\r\n$1\r\n3\r\n+OK\r\n+OK\r\n"
                     b"+OK\r\n+QUEUED\r\n*-1\r\n:3\r\n")


# ---------------------------------------------------------------------------------------------
# clients that leave in the middle


def test_disconnect_mid_multi_writes_nothing_and_leaves_no_state(txn):
    keys = []
    for _ in range(2 * txn.threads):  # consecutive clients go to every worker in turn
        (k,) = tagged("k")
        keys.append(k)
        with txn.raw() as c:
            c.exchange(resp("MULTI") + resp("SET", k, "1"), b"+OK\r\n+QUEUED\r\n")
    with txn.raw() as w:  # after them on the wire: they have left
        w.exchange(resp("PING"), b"+PONG\r\n")
    for k in keys:
        assert nowhere(txn, k)
    for _ in range(2 * txn.threads):
        (k,) = tagged("k")
        with txn.raw() as c:
            c.exchange(resp("SET", k, "1") + resp("EXEC") + resp("GET", k) + resp("DEL", k),
                       b"+OK\r\n-ERR EXEC without MULTI\r\n$1\r\n1\r\n:1\r\n")
    for port in txn.ports:
        for line in redis_clients(port):
            assert "flags=N " in line and "multi=-1" in line, line


# ---------------------------------------------------------------------------------------------
# the set of dedicated connections (a proxy of their own: the set's size is its setting)


def small_set(redis_server, write_conf, nutcrackers, size, threads=1, **pool):
    return start_cluster("redis", 2, threads, redis_server, write_conf, nutcrackers,
                                 name="small", hash_tag="{}", dedicated_connections=size, **pool)


def gauge(cluster):
    """dedicated_connections of each server, from the stats."""
    st = status(cluster.proxy.manage_port)["small"]
    return [st[stats_name(cluster, i)]["dedicated_connections"] for i in range(len(cluster.ports))]


def test_disconnect_mid_watch_leaves_the_connection_clean(redis_server, write_conf, nutcrackers):
    """With one dedicated connection per server, the next client gets the one a watching client
    left: its WATCH must not be in place any more (the proxy sent UNWATCH)."""
    cl = small_set(redis_server, write_conf, nutcrackers, 1)
    k, j = tagged("k", "j")
    where = server_of(cl, k)
    with cl.raw() as c:
        c.exchange(resp("WATCH", k), b"+OK\r\n")
        assert gauge(cl)[where] == 1
    wait_for(lambda: gauge(cl)[where] == 0, 10, "the dedicated connection to come back")
    with cl.raw() as other:
        other.exchange(resp("SET", k, "changed"), b"+OK\r\n")
    with cl.raw() as c:
        c.exchange(resp("WATCH", j), b"+OK\r\n")
        c.exchange(resp("MULTI") + resp("SET", j, "1") + resp("EXEC"), b"+OK\r\n+QUEUED\r\n*1\r\n+OK\r\n")
        c.exchange(resp("DEL", k, j), b":2\r\n")
    assert gauge(cl) == [0, 0]


def test_exhausted_set_answers_at_once(redis_server, write_conf, nutcrackers):
    cl = small_set(redis_server, write_conf, nutcrackers, 1)
    k, j = tagged("k", "j")
    where = server_of(cl, k)
    busy = (b"-ERR no dedicated connection free to server '%s' (dedicated_connections: 1)\r\n"
            % stats_name(cl, where).encode())
    with cl.raw(timeout=5) as holder, cl.raw(timeout=5) as c:
        holder.exchange(resp("WATCH", k), b"+OK\r\n")
        assert gauge(cl)[where] == 1
        c.exchange(resp("WATCH", j), busy)
        c.exchange(resp("MULTI") + resp("SET", j, "1") + resp("EXEC"), b"+OK\r\n+QUEUED\r\n" + busy)
        c.exchange(resp("GET", j), b"$-1\r\n")  # nothing written, the connection usable
        holder.exchange(resp("UNWATCH"), b"+OK\r\n")
        c.exchange(resp("MULTI") + resp("SET", j, "1") + resp("EXEC"), b"+OK\r\n+QUEUED\r\n*1\r\n+OK\r\n")
        c.exchange(resp("DEL", j), b":1\r\n")
    wait_for(lambda: gauge(cl) == [0, 0], 10, "the gauges back to 0")


def test_zero_dedicated_connections_refuses_transactions(redis_server, write_conf, nutcrackers):
    cl = small_set(redis_server, write_conf, nutcrackers, 0)
    (k,) = tagged("k")
    busy = (b"-ERR no dedicated connection free to server '%s' (dedicated_connections: 0)\r\n"
            % stats_name(cl, server_of(cl, k)).encode())
    with cl.raw() as c:
        c.exchange(resp("MULTI") + resp("SET", k, "1") + resp("EXEC"), b"+OK\r\n+QUEUED\r\n" + busy)
        c.exchange(resp("EXISTS", k), b":0\r\n")


def test_gauge_counts_held_connections_over_workers(redis_server, write_conf, nutcrackers):
    cl = small_set(redis_server, write_conf, nutcrackers, 10, threads=4)
    (k,) = tagged("k")
    where = server_of(cl, k)
    conns = [cl.raw() for _ in range(6)]
    try:
        for c in conns:
            c.exchange(resp("WATCH", k), b"+OK\r\n")
        assert gauge(cl)[where] == 6
        for c in conns[:4]:
            c.exchange(resp("UNWATCH"), b"+OK\r\n")
        wait_for(lambda: gauge(cl)[where] == 2, 10, "two held")
    finally:
        for c in conns:
            c.close()
    wait_for(lambda: gauge(cl) == [0, 0], 10, "the gauges back to 0")


def test_stopped_server_fails_the_transaction_without_hanging(redis_server, write_conf, nutcrackers,
                                                              stopped):
    cl = small_set(redis_server, write_conf, nutcrackers, 2, timeout=500)
    k, j = tagged("k", "j")
    where = server_of(cl, k)
    with cl.raw() as c:
        c.exchange(resp("WATCH", k), b"+OK\r\n")
        stopped(cl.procs[where])
        c.exchange(resp("MULTI") + resp("SET", k, "1") + resp("EXEC"),
                   b"+OK\r\n+QUEUED\r\n-ERR Connection timed out\r\n")
        stopped.resume()
        # the WATCH went with the connection that timed out: EXEC says so (nothing runs)
        c.exchange(resp("WATCH", j), b"+OK\r\n")
        c.exchange(resp("MULTI") + resp("SET", j, "1") + resp("EXEC"), b"+OK\r\n+QUEUED\r\n*1\r\n+OK\r\n")
    # (the timed-out EXEC may still have run: its bytes were in the stopped server's socket, as
    # for any request that times out)
    assert cl.holder(j) == [where]


def test_lost_watch_fails_exec(redis_server, write_conf, nutcrackers):
    """The dedicated connection holding a WATCH closes (the server kills it): the WATCH is gone,
    so EXEC fails with the connection's error instead of running unwatched."""
    cl = small_set(redis_server, write_conf, nutcrackers, 2)
    (k,) = tagged("k")
    where = server_of(cl, k)
    with cl.raw() as c:
        c.exchange(resp("WATCH", k), b"+OK\r\n")
        with RawConn(cl.ports[where]) as admin:
            assert admin.call("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes") >= 1
        c.send(resp("MULTI") + resp("SET", k, "1") + resp("EXEC"))
        c.expect(b"+OK\r\n+QUEUED\r\n")
        assert c.reply().startswith(b"-ERR ")
        c.exchange(resp("MULTI") + resp("SET", k, "1") + resp("EXEC"), b"+OK\r\n+QUEUED\r\n*1\r\n+OK\r\n")
        c.exchange(resp("DEL", k), b":1\r\n")


# ---------------------------------------------------------------------------------------------
# the pool key


@pytest.mark.parametrize("value, error", [
    ("-1", "key 'dedicated_connections': -1 is out of range (must be between 0 and 2147483647)"),
    ("many", "key 'dedicated_connections': expected an integer, got 'many'"),
    ("[1]", "key 'dedicated_connections': expected an integer, got a sequence"),
])
def test_test_conf_checks_dedicated_connections(write_conf, value, error):
    text = ("alpha:\n  listen: 127.0.0.1:22121\n  redis: true\n"
            f"  dedicated_connections: {value}\n  servers:\n   - 127.0.0.1:6379:1\n")
    path = write_conf(text)
    r = run(["-t", "-c", str(path)])
    assert r.returncode == 1
    assert f"{path}:4: pool 'alpha': {error}" in r.stderr, r.stderr


def test_test_conf_accepts_dedicated_connections(write_conf):
    path = write_conf("alpha:\n  listen: 127.0.0.1:22121\n  redis: true\n"
                      "  dedicated_connections: 0\n  servers:\n   - 127.0.0.1:6379:1\n")
    r = run(["-t", "-c", str(path)])
    assert r.returncode == 0, r.stderr


# ---------------------------------------------------------------------------------------------
# more of the dedicated connections' life


def test_client_gone_with_exec_in_flight_leaves_the_connection_usable(redis_server, write_conf,
                                                                       nutcrackers):
    cl = small_set(redis_server, write_conf, nutcrackers, 1)
    k, j = tagged("k", "j")
    with cl.raw() as c:  # leaves without reading a reply
        c.send(resp("WATCH", k) + resp("MULTI") + resp("SET", k, "1") + resp("EXEC") +
               resp("WATCH", j))
    wait_for(lambda: gauge(cl) == [0, 0], 10, "the dedicated connection back")
    with cl.raw() as other:
        other.exchange(resp("SET", j, "changed"), b"+OK\r\n")
    with cl.raw() as c:
        c.exchange(resp("WATCH", k), b"+OK\r\n")
        c.exchange(resp("MULTI") + resp("INCR", k) + resp("EXEC"), b"+OK\r\n+QUEUED\r\n*1\r\n:2\r\n")
        c.exchange(resp("DEL", k, j), b":2\r\n")


def test_reload_keeps_a_held_watch_and_takes_the_new_limit(redis_server, write_conf, nutcrackers):
    cl = small_set(redis_server, write_conf, nutcrackers, 1)
    k, j = tagged("k", "j")
    where = server_of(cl, k)
    with cl.raw() as holder, cl.raw() as c:
        holder.exchange(resp("WATCH", k), b"+OK\r\n")
        c.send(resp("WATCH", j))
        assert c.reply().startswith(b"-ERR no dedicated connection free")
        text = cl.proxy.conf_path.read_text().replace("dedicated_connections: 1", "dedicated_connections: 2")
        assert text != cl.proxy.conf_path.read_text()
        cl.proxy.conf_path.write_text(text)
        assert manage_command(cl.proxy.manage_port, "reload").startswith("OK generation 2")
        with cl.raw() as late:  # a client of the new generation
            late.exchange(resp("WATCH", j), b"+OK\r\n")
            assert gauge(cl)[where] == 2
            late.exchange(resp("UNWATCH"), b"+OK\r\n")
        with cl.raw() as other:
            other.exchange(resp("SET", k, "changed"), b"+OK\r\n")
        # the WATCH from before the reload is still in place
        holder.exchange(resp("MULTI") + resp("SET", k, "mine") + resp("EXEC"), b"+OK\r\n+QUEUED\r\n*-1\r\n")
        holder.exchange(resp("GET", k), b"$7\r\nchanged\r\n")
        holder.exchange(resp("DEL", k), b":1\r\n")
    wait_for(lambda: gauge(cl) == [0, 0], 10, "the gauges back to 0")


def test_dedicated_connections_authenticate_and_select(redis_server, write_conf, nutcrackers):
    cl = start_cluster("redis", 2, 2, redis_server, write_conf, nutcrackers, name="authdb",
                               hash_tag="{}", backend_args=("--requirepass", "s3cret"),
                               redis_auth="s3cret", redis_db=2)
    k, j = tagged("k", "j")
    with cl.raw() as c:
        c.exchange(resp("MULTI"), b"-NOAUTH Authentication required.\r\n")
        c.exchange(resp("AUTH", "s3cret"), b"+OK\r\n")
        c.exchange(resp("WATCH", j), b"+OK\r\n")
        c.exchange(resp("MULTI") + resp("SET", k, "1") + resp("AUTH", "s3cret") + resp("EXEC"),
                   b"+OK\r\n+QUEUED\r\n-ERR Command not allowed inside a transaction\r\n"
                   b"-EXECABORT Transaction discarded because of previous errors.\r\n")
        c.exchange(resp("MULTI") + resp("SET", k, "1") + resp("EXEC"), b"+OK\r\n+QUEUED\r\n*1\r\n+OK\r\n")
    where = [i for i, port in enumerate(cl.ports)
             if redis.Redis(port=port, host="127.0.0.1", password="s3cret", db=2, protocol=2).exists(k)]
    assert len(where) == 1
    assert not redis.Redis(port=cl.ports[where[0]], host="127.0.0.1", password="s3cret", db=0,
                           protocol=2).exists(k)


def test_long_transaction(txn):
    (k,) = tagged("k")
    r = txn.client()
    pipe = r.pipeline(transaction=True)
    for i in range(3000):
        pipe.rpush(k, i)
    pipe.llen(k)
    assert pipe.execute() == list(range(1, 3001)) + [3000]
    assert r.delete(k) == 1
    r.close()


def test_concurrent_optimistic_increments_are_exact(txn):
    """Clients add to one counter with WATCH / GET / MULTI / SET / EXEC, retrying on a WATCH
    abort: no increment is lost or doubled."""
    import threading
    (k,) = tagged("counter")
    nclients, each = 6, 15
    errors = []

    def work():
        try:
            r = txn.client()
            for _ in range(each):
                for _attempt in range(1000):
                    with r.pipeline(transaction=True) as pipe:
                        try:
                            pipe.watch(k)
                            value = int(pipe.get(k) or 0)
                            pipe.multi()
                            pipe.set(k, value + 1)
                            pipe.execute()
                            break
                        except redis.WatchError:
                            continue
                else:
                    raise AssertionError("no increment went through in 1000 attempts")
            r.close()
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(nclients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads)
    r = txn.client()
    assert int(r.get(k)) == nclients * each
    r.delete(k)
    r.close()


# ---------------------------------------------------------------------------------------------
# requests held behind a transaction's step, when the client ends


def test_quit_held_behind_watch_drops_what_follows(txn, oracle):
    for port in (oracle, txn.port):
        k, j = tagged("k", "j")
        with RawConn(port) as c:
            c.send(resp("WATCH", k) + resp("GET", j) + resp("QUIT") + resp("SET", j, "1"))
            c.expect(b"+OK\r\n$-1\r\n+OK\r\n")
            assert c.is_closed()
        with RawConn(port) as c:
            c.exchange(resp("EXISTS", j), b":0\r\n")


def test_half_close_with_held_requests_gets_every_reply(txn):
    import socket
    k, j = tagged("k", "j")
    with txn.raw() as c:
        c.send(resp("SET", j, "v") + resp("WATCH", k) + resp("GET", j) + resp("MULTI") +
               resp("GET", j) + resp("EXEC") + resp("DEL", j))
        c.sock.shutdown(socket.SHUT_WR)
        c.expect(b"+OK\r\n+OK\r\n$1\r\nv\r\n+OK\r\n+QUEUED\r\n*1\r\n$1\r\nv\r\n:1\r\n")
        assert c.is_closed()


def test_protocol_error_behind_held_requests(txn):
    k, j = tagged("k", "j")
    with txn.raw() as c:
        c.send(resp("WATCH", k) + resp("GET", j) + b"*x\r\n")
        c.expect(b"+OK\r\n$-1\r\n-ERR Protocol error: invalid multibulk length\r\n")
        assert c.is_closed()
