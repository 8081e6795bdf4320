"""Pool options that change how the proxy talks to clients and servers: redis_auth, redis_db,
timeout (a SIGSTOPped backend), preconnect, client_connections (across workers),
server_connections (per worker), and listening on a unix socket with permissions."""
import os
import signal
import stat
import time
import uuid

import pytest

from nctest import codec, load, manage, wait
from nctest.keys import spread_keys
from nctest.cluster import start_cluster
from nctest.codec import bulk, resp
from nctest.conn import RawConn, backend_connections as kind_connections, redis_client


def start(kind, n, threads, servers, write_conf, nutcrackers, name="pool", **pool):
    return start_cluster(kind, n, threads, servers, write_conf, nutcrackers, name, **pool)


# --- redis_auth


@pytest.fixture
def auth_cluster(redis_server, write_conf, nutcrackers):
    """Two redis-servers that require a password the proxy knows; -T 2; redis_db 2 as well, so
    both set-up commands (AUTH, SELECT) go first on each server connection; preconnect, so they
    are queued before any request."""
    return start("redis", 2, 2, redis_server, write_conf, nutcrackers,
                 backend_args=("--requirepass", "s3cret"), redis_auth="s3cret", redis_db=2,
                 preconnect=True)


def test_redis_auth_required_before_anything(auth_cluster):
    with auth_cluster.raw() as c:
        for args in [("GET", "k"), ("SET", "k", "v"), ("MGET", "a", "b"), ("PING",),
                     ("EVAL", "return 1", "1", "k")]:
            c.exchange(resp(*args), b"-NOAUTH Authentication required.\r\n")
        # as redis itself, an unknown command or a wrong arity is reported before NOAUTH
        c.exchange(resp("SLOWLOG", "GET"), b"-ERR unsupported command 'slowlog'\r\n")
        c.exchange(resp("GET"), b"-ERR wrong number of arguments for 'get' command\r\n")
        c.exchange(b"GET k\r\n", b"-NOAUTH Authentication required.\r\n")
        c.exchange(resp("AUTH", "wrong"), b"-ERR invalid password\r\n")
        c.exchange(resp("GET", "k"), b"-NOAUTH Authentication required.\r\n")
        c.exchange(resp("AUTH", "s3cret"), b"+OK\r\n")
        c.exchange(resp("PING"), b"+PONG\r\n")
        # a wrong password later takes the authentication back, as redis does
        c.exchange(resp("AUTH", "wrong"), b"-ERR invalid password\r\n")
        c.exchange(resp("PING"), b"-NOAUTH Authentication required.\r\n")


def test_redis_auth_proxy_authenticates_its_server_connections(auth_cluster):
    """The backends require a password: only the proxy's own AUTH lets the requests through, and
    its reply is not passed on. redis_db: the keys land in db 2 on the backends."""
    keys = spread_keys(f"auth:{uuid.uuid4().hex[:6]}", 20)
    with auth_cluster.raw() as c:
        c.exchange(resp("AUTH", "s3cret"), b"+OK\r\n")
        for key in keys:
            c.exchange(resp("SET", key, key), b"+OK\r\n")
        c.exchange(resp("MGET", *keys), codec.array(*[bulk(k) for k in keys]))
    client = auth_cluster.client(password="s3cret")
    assert client.get(keys[0]) == keys[0].encode()
    seen = set()
    for i, port in enumerate(auth_cluster.ports):
        db2 = redis_client(port, password="s3cret", db=2)
        db0 = redis_client(port, password="s3cret", db=0)
        for key in keys:
            if db2.exists(key):
                seen.add(key)
            assert not db0.exists(key), "the key must be in db 2, not db 0"
    assert seen == set(keys)


def test_redis_db_selects_on_every_server_connection(redis_server, write_conf, nutcrackers):
    cluster = start("redis", 2, 4, redis_server, write_conf, nutcrackers, redis_db=5,
                    server_connections=2)
    keys = spread_keys(f"db:{uuid.uuid4().hex[:6]}", 30)
    # many clients: every worker and every server connection carries some of the writes
    for key in keys:
        client = cluster.client()
        assert client.set(key, "v")
        client.close()
    for key in keys:
        where = [i for i, p in enumerate(cluster.ports)
                 if redis_client(p, db=5).exists(key)]
        assert len(where) == 1, key
        assert not redis_client(cluster.ports[where[0]], db=0).exists(key)


# --- timeout


TIMEOUT_MS = 600


class Speaker:
    """The few requests and replies the option tests need, in either protocol."""

    def __init__(self, kind):
        self.redis = kind == "redis"

    def set(self, key, value="v"):
        if self.redis:
            return resp("SET", key, value)
        return codec.mc_store("set", key, value)

    def get(self, *keys):
        return resp("MGET" if len(keys) > 1 else "GET", *keys) if self.redis else \
            b"get %s\r\n" % " ".join(keys).encode()

    def stored(self):
        return b"+OK\r\n" if self.redis else b"STORED\r\n"

    def value(self, key, value="v"):
        if self.redis:
            return bulk(value)
        return codec.mc_value(key, value) + b"END\r\n"

    def error(self, text):
        return (b"-ERR %s\r\n" if self.redis else b"SERVER_ERROR %s\r\n") % text.encode()

    def read(self, conn):
        return conn.reply() if self.redis else conn.mc_get_reply()

    def ping(self):
        return resp("PING") if self.redis else b"version\r\n"


@pytest.mark.parametrize("kind", ["redis", "memcache"])
def test_timeout_on_a_stopped_server(kind, redis_server, memcached_server, write_conf,
                                     nutcrackers, stopped):
    servers = redis_server if kind == "redis" else memcached_server
    # five round trips to the live server must fit well inside it, in a TSan build too
    timeout_ms = 1500
    cluster = start(kind, 2, 2, servers, write_conf, nutcrackers, timeout=timeout_ms)
    say = Speaker(kind)
    keys = spread_keys(f"to{uuid.uuid4().hex[:6]}", 40)
    with cluster.raw() as c:
        for key in keys:
            c.exchange(say.set(key), say.stored())
    stale = [k for k in keys if cluster.holder(k) == [0]]
    live = [k for k in keys if cluster.holder(k) == [1]]
    assert stale and live
    timed_out = say.error("Connection timed out")
    limit = timeout_ms / 1000

    stopped(cluster.procs[0])
    with cluster.raw() as a, cluster.raw() as b:
        t0 = time.monotonic()
        a.send(say.get(stale[0]))
        # meanwhile the other server answers at once
        for key in live[:5]:
            b.exchange(say.get(key), say.value(key))
        assert time.monotonic() - t0 < limit * 0.8, "the live server was held up"
        a.expect(timed_out)
        elapsed = time.monotonic() - t0
        assert limit * 0.9 <= elapsed < limit + 2.0, elapsed
        # pipelined behind a stuck request, a live server's reply waits for its turn (replies
        # keep request order), then comes
        a.send(say.get(stale[1]) + say.get(live[0]))
        a.expect(timed_out + say.value(live[0]))
        # a multi-key request touching the stopped server fails as a whole
        a.exchange(say.get(live[0], stale[0]), timed_out)
    stopped.resume()

    def back():
        with cluster.raw() as c:
            c.send(say.get(stale[0]))
            return say.read(c) == say.value(stale[0])

    wait.wait_for(back, 5, interval=0.1, what="the server to answer again after SIGCONT")


# regression: write-stall timeout. A request too big for the socket buffers of a stopped server
# was never fully written, so its timeout never started: it, and every request queued behind it
# on that connection, waited forever. Now a connection whose socket takes no byte for `timeout`
# fails too.


@pytest.mark.parametrize("kind", ["redis", "memcache"])
def test_timeout_write_stall_on_a_stopped_server(kind, redis_server, memcached_server, write_conf,
                                                 nutcrackers, stopped):
    servers = redis_server if kind == "redis" else memcached_server
    cluster = start(kind, 1, 1, servers, write_conf, nutcrackers, timeout=TIMEOUT_MS,
                    backend_args=() if kind == "redis" else ("-I", "128m", "-m", "256"))
    say = Speaker(kind)
    timed_out = say.error("Connection timed out")
    limit = TIMEOUT_MS / 1000
    stopped(cluster.procs[0])
    with cluster.raw(timeout=30) as big, cluster.raw() as small:
        t0 = time.monotonic()
        # the proxy takes it all; the stopped server's socket cannot (64 MB is more than the
        # largest TCP receive plus send buffers Linux gives by default: 32 MB + 4 MB)
        big.send(say.set("big", "x" * (64 << 20)))
        small.send(say.get("small"))  # queued behind it on the one server connection
        small.expect(timed_out)
        big.expect(timed_out)
        elapsed = time.monotonic() - t0
        assert limit * 0.9 <= elapsed < limit + 3.0, elapsed
    stopped.resume()
    with cluster.raw() as c:
        c.exchange(say.set("after", "v"), say.stored())


# --- preconnect


def backend_connections(cluster, i):
    return kind_connections(cluster.kind, cluster.ports[i])


@pytest.mark.parametrize("kind", ["redis", "memcache"])
def test_preconnect(kind, redis_server, memcached_server, write_conf, nutcrackers):
    """With preconnect, each worker opens its server_connections to every server at start."""
    servers = redis_server if kind == "redis" else memcached_server
    cluster = start(kind, 2, 4, servers, write_conf, nutcrackers, preconnect=True,
                    server_connections=2)
    for i in range(2):
        wait.wait_for(lambda i=i: backend_connections(cluster, i) == 8, 5,
                          what=f"8 connections (4 threads x 2) on backend {i} before any request")
    # without it, a second proxy on the same servers opens none until it has requests: once each
    # of its 4 workers has served a request (the workers take new clients in turn), only server
    # 0, which holds the key asked for, has more connections
    say = Speaker(kind)
    (key, *_), _ = cluster.place_keys(f"pre{uuid.uuid4().hex[:6]}", 1)
    lazy = start(kind, 2, 4, None, write_conf, nutcrackers, name="lazy", ports=cluster.ports)
    for _ in range(4):
        with lazy.raw() as c:
            c.exchange(say.get(key), say.value(key, key))
    assert backend_connections(cluster, 0) > 8
    assert backend_connections(cluster, 1) == 8, "the proxy without preconnect connected at start"


# --- client_connections


@pytest.mark.parametrize("kind", ["redis", "memcache"])
def test_client_connections_limit_across_workers(kind, redis_server, memcached_server,
                                                 write_conf, nutcrackers):
    servers = redis_server if kind == "redis" else memcached_server
    say = Speaker(kind)
    limit = 6
    cluster = start(kind, 1, 4, servers, write_conf, nutcrackers, client_connections=limit)
    # the start-up probe's connection holds a slot until the proxy has seen it close: a count of
    # 0 alone may be read before a worker has even taken the probe; its close counted proves it
    manage.wait_status(cluster.proxy.manage_port,
                       lambda d: cluster.name in d and
                       d[cluster.name]["client_eof"] + d[cluster.name]["client_err"] >= 1 and
                       d[cluster.name]["client_connections"] == 0,
                       what="the start-up probe's close seen, no client connected")
    refused = (b"-ERR ", b"SERVER_ERROR ")
    clients = []
    for _ in range(limit):
        c = cluster.raw()
        c.send(say.ping())
        assert not c.line().startswith(refused)
        clients.append(c)
    # the next ones, whichever worker they would go to, are refused with an error, then closed
    for _ in range(4):
        with cluster.raw() as extra:
            line = extra.line()
            assert line.startswith(b"-ERR " if say.redis else b"SERVER_ERROR "), line
            assert extra.is_closed()
    # a client leaves: its place is free again (its worker releases it asynchronously)
    clients.pop().close()

    def admitted():
        with cluster.raw() as c:
            c.send(say.ping())
            try:
                return not c.line().startswith(refused)
            except ConnectionError:
                return False

    wait.wait_for(admitted, 5, interval=0.1, what="a free client slot")
    for c in clients:
        c.send(say.ping())
        assert not c.line().startswith(refused)
        c.close()


# --- server_connections


@pytest.mark.parametrize("kind", ["redis", "memcache"])
def test_server_connections_per_worker(kind, redis_server, memcached_server, write_conf,
                                       nutcrackers):
    """A backend sees up to threads x server_connections connections: with enough clients, that
    many."""
    servers = redis_server if kind == "redis" else memcached_server
    say = Speaker(kind)
    threads, per_server = 4, 3
    cluster = start(kind, 1, threads, servers, write_conf, nutcrackers,
                    server_connections=per_server)
    key = f"sc{uuid.uuid4().hex}"
    miss = b"$-1\r\n" if say.redis else b"END\r\n"
    scripts = [(say.get(key) * 3, miss * 3)] * 60
    assert load.run_clients(cluster.port, scripts) == {}
    assert backend_connections(cluster, 0) == threads * per_server
    assert load.run_clients(cluster.port, scripts) == {}
    assert backend_connections(cluster, 0) == threads * per_server


# --- unix socket listen


@pytest.mark.parametrize("kind, perm", [("redis", 0o600), ("redis", 0o666), ("memcache", 0o640)])
def test_listen_on_unix_socket(kind, perm, redis_server, memcached_server, write_conf,
                               nutcrackers, tmp_path):
    servers = redis_server if kind == "redis" else memcached_server
    say = Speaker(kind)
    path = tmp_path / f"{kind}.sock"
    cluster = start(kind, 2, 2, servers, write_conf, nutcrackers, listen=f"{path} {perm:o}")
    assert stat.S_ISSOCK(os.stat(path).st_mode)
    assert stat.S_IMODE(os.stat(path).st_mode) == perm
    keys = spread_keys("unix", 10)
    client = cluster.client()
    for key in keys:
        assert client.set(key, key)
    if say.redis:
        assert client.mget(keys) == [k.encode() for k in keys]
    else:
        assert client.get_many(keys) == {k: k.encode() for k in keys}
    client.close()
    with RawConn(path=path) as c:
        c.exchange(say.get(keys[0]), say.value(keys[0], keys[0]))
    cluster.proxy.signal(signal.SIGTERM)
    assert cluster.proxy.wait_exit() == 0
    assert not path.exists(), "the socket file is removed on exit"
