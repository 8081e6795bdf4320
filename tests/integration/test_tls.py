"""TLS through the proxy (issue 26): the pool keys `tls: true` (the listener speaks TLS only, with
tls_cert_file / tls_key_file, tls_ca_cert_file and tls_auth_clients no|yes|optional for client
certificates) and `server_tls: true` (TLS to the servers, verified against
server_tls_ca_cert_file, server_tls_verify default true), with real redis-servers and memcacheds
(plain or TLS, tls_fixtures.py) and real clients (redis-py with ssl, pymemcache with a
tls_context, raw sockets for the bytes that are no TLS).

Covered: each side alone and both at once; client certificates required and optional; a server
whose certificate does not verify (a failing server: an error reply, fast, never plain text); a
server that never answers the handshake (the pool's timeout) and a plain-text one behind
server_tls (an error, never plain text); plain text and garbage on a TLS
listener (closed, other clients unaffected); pipelining, MGET over 3 servers, MULTI/EXEC, pub/sub,
an 8 MB value, 200 concurrent TLS clients, and memcached get_many over TLS. The config check (-t)
and reload of certificates are in test_tls_conf.py.
"""
import concurrent.futures
import os
import threading
import time

import pytest

from nctest import manage, tls
from nctest.codec import Err
from nctest.conn import RawConn, mc_client, no_retry, redis_client
from nctest.fake import FakeBackend, serve_on_release
from nctest.keys import big_value, digest, owners, spread_keys
from nctest.procs import HOST, free_port
from nctest.wait import scale, wait_for, wait_log

POOL = "tls"
TIMEOUT_MS = 10000      # the pool's timeout where a test does not wait for it
FAST = 5.0              # seconds: an error reply this fast did not wait for the pool's timeout
HANDSHAKE_LIMIT = 10.0  # seconds a client's handshake may take (CLIENT_HANDSHAKE_LIMIT_MS)
CLIENTS = 200
ROUNDS = 3              # SET + GET rounds per concurrent client


def start_proxy(nutcrackers, write_conf, ports, redis=True, tls_keys=(), timeout=TIMEOUT_MS,
                threads=None, wait="listen"):
    """A proxy with one pool POOL over servers ports (hash_tag "{}"), with the given TLS keys;
    returns (proxy, listen port). wait: the fixture's ("log": no start-up probe connects)."""
    listen = free_port()
    pool = {"listen": f"{HOST}:{listen}", "hash": "fnv1a_64", "distribution": "ketama",
            "hash_tag": "{}", "timeout": timeout}
    if redis:
        pool["redis"] = True
    for keys in tls_keys:
        pool.update(keys)
    pool["servers"] = [f"{HOST}:{p}:1" for p in ports]
    flags = ("-T", str(threads)) if threads else ()
    return nutcrackers(write_conf({POOL: pool}), *flags, wait=wait), listen


def tls_client(certs, port, client_cert=False, **kw):
    return redis_client(port, **tls.redis_ssl_kwargs(certs, client_cert), **kw)


def direct(certs, port, tls_backend):
    """A redis-py client straight to a backend (over TLS when it is a TLS one)."""
    return tls_client(certs, port) if tls_backend else redis_client(port)


def set_get_checked(r, prefix, n=20):
    for i in range(n):
        assert r.set(f"{prefix}:{i}", f"v{i}-{prefix}") is True
    for i in range(n):
        assert r.get(f"{prefix}:{i}") == f"v{i}-{prefix}".encode()


# --- each side, both sides ----------------------------------------------------------------------

@pytest.mark.parametrize("sides", ["client", "server", "both"])
def test_set_get_over_tls(nutcrackers, write_conf, redis_server, tls_redis_server, tls_certs,
                          sides):
    """SET/GET through a pool with TLS on the client side, the server side or both; the values
    are on the backends (asked directly), and the client side takes no plain text."""
    tls_backend = sides != "client"
    start = tls_redis_server if tls_backend else redis_server
    ports = [start()[0] for _ in range(2)]
    keys = []
    if sides != "server":
        keys.append(tls.listener_keys(tls_certs))
    if tls_backend:
        keys.append(tls.server_keys(tls_certs))
    proxy, listen = start_proxy(nutcrackers, write_conf, ports, tls_keys=keys)
    r = tls_client(tls_certs, listen) if sides != "server" else redis_client(listen)
    set_get_checked(r, f"s-{sides}", 40)
    found = {}
    for p in ports:
        d = direct(tls_certs, p, tls_backend)
        found.update({k.decode(): d.get(k) for k in d.keys(f"s-{sides}:*")})
        d.close()
    assert found == {f"s-{sides}:{i}": f"v{i}-s-{sides}".encode() for i in range(40)}
    r.close()


def test_client_tls_listener_refuses_plain_text_keeps_tls_clients(nutcrackers, write_conf,
                                                                   redis_server, tls_certs):
    """A plain-text client on a TLS listener gets no reply and is closed after its failed
    handshake; a TLS client connected before and one connected after are served."""
    port, _ = redis_server()
    proxy, listen = start_proxy(nutcrackers, write_conf, [port],
                                tls_keys=[tls.listener_keys(tls_certs)])
    before = tls_client(tls_certs, listen)
    assert before.set("pt:before", "1") is True
    with RawConn(listen, timeout=FAST) as plain:
        plain.send(b"*1\r\n$4\r\nPING\r\n")
        got = plain.read_until_closed()  # Hang if the proxy keeps it open
    assert b"PONG" not in got and not got.startswith(b"+"), got
    assert before.get("pt:before") == b"1"
    after = tls_client(tls_certs, listen)
    assert after.ping() is True
    before.close()
    after.close()


@pytest.mark.parametrize("garbage", [b"\x00" * 64, os.urandom(512), b"GET / HTTP/1.1\r\n\r\n",
                                     b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc" + b"\xee" * 100],
                         ids=["zeros", "random", "http", "bad-client-hello"])
def test_garbage_before_handshake_is_closed(nutcrackers, write_conf, redis_server, tls_certs,
                                            garbage):
    port, _ = redis_server()
    proxy, listen = start_proxy(nutcrackers, write_conf, [port],
                                tls_keys=[tls.listener_keys(tls_certs)])
    bystander = tls_client(tls_certs, listen)
    assert bystander.set("g:k", "v") is True
    with RawConn(listen, timeout=HANDSHAKE_LIMIT + 5) as c:
        c.send(garbage)
        # garbage is refused at once; a record that never ends (bad-client-hello announces 512
        # bytes and sends 109) stalls the handshake, which is closed after the handshake limit
        got = c.read_until_closed()
    assert not got.startswith((b"+", b"-", b"$")), got  # a TLS alert at most, no RESP
    assert bystander.get("g:k") == b"v"
    assert tls_client(tls_certs, listen).ping() is True
    bystander.close()


# --- client certificates ------------------------------------------------------------------------

def test_client_certificate_required(nutcrackers, write_conf, redis_server, tls_certs):
    import redis

    port, _ = redis_server()
    proxy, listen = start_proxy(nutcrackers, write_conf, [port],
                                tls_keys=[tls.listener_keys(tls_certs, auth_clients="yes")])
    # refusals: seen at once (redis-py's retries would only repeat them)
    with pytest.raises(redis.exceptions.ConnectionError):
        tls_client(tls_certs, listen, retry=no_retry()).ping()
    other = tls.redis_ssl_kwargs(tls_certs)
    other.update(ssl_certfile=str(tls_certs.other_client_cert),
                 ssl_keyfile=str(tls_certs.other_client_key))
    with pytest.raises(redis.exceptions.ConnectionError):
        redis_client(listen, retry=no_retry(), **other).ping()
    ok = tls_client(tls_certs, listen, client_cert=True)
    assert ok.set("mtls:k", "yes") is True and ok.get("mtls:k") == b"yes"
    ok.close()


def test_client_certificate_optional(nutcrackers, write_conf, redis_server, tls_certs):
    port, _ = redis_server()
    proxy, listen = start_proxy(nutcrackers, write_conf, [port],
                                tls_keys=[tls.listener_keys(tls_certs, auth_clients="optional")])
    anonymous = tls_client(tls_certs, listen)
    assert anonymous.set("opt:k", "a") is True
    with_cert = tls_client(tls_certs, listen, client_cert=True)
    assert with_cert.get("opt:k") == b"a"
    anonymous.close()
    with_cert.close()


def test_servers_requiring_a_client_certificate(nutcrackers, write_conf, tls_redis_server,
                                                tls_certs):
    """server_tls_cert_file / server_tls_key_file: the proxy's certificate toward servers that
    require one (redis --tls-auth-clients yes)."""
    ports = [tls_redis_server(auth_clients="yes")[0] for _ in range(2)]
    keys = tls.server_keys(tls_certs, server_tls_cert_file=str(tls_certs.client_cert),
                           server_tls_key_file=str(tls_certs.client_key))
    proxy, listen = start_proxy(nutcrackers, write_conf, ports, tls_keys=[keys])
    set_get_checked(redis_client(listen), "srvcert")


# --- failing servers ----------------------------------------------------------------------------

def test_server_certificate_from_the_wrong_ca_is_a_failing_server(nutcrackers, write_conf,
                                                                   tls_redis_server, tls_certs):
    """The servers' certificates do not chain to server_tls_ca_cert_file: each request gets an
    error reply at once (no wait for the pool's timeout), and nothing reaches the server."""
    port, _ = tls_redis_server()
    proxy, listen = start_proxy(nutcrackers, write_conf, [port],
                                tls_keys=[tls.server_keys(tls_certs, ca=tls_certs.other_ca)])
    with RawConn(listen, timeout=FAST * scale()) as c:
        for i in range(3):
            t0 = time.monotonic()
            reply = c.call("SET", f"wrongca:{i}", "v")
            assert isinstance(reply, Err) and reply.startswith("ERR"), reply
            assert time.monotonic() - t0 < FAST * scale()
    d = tls_client(tls_certs, port)
    assert d.keys("wrongca:*") == []
    d.close()


def test_server_name_mismatch_is_a_failing_server(nutcrackers, write_conf, tls_redis_server,
                                                  tls_certs):
    """server_tls_server_name names a host the certificate does not: verification fails."""
    port, _ = tls_redis_server()
    keys = tls.server_keys(tls_certs, server_tls_server_name="not-this-host.example")
    proxy, listen = start_proxy(nutcrackers, write_conf, [port], tls_keys=[keys])
    with RawConn(listen, timeout=FAST * scale()) as c:
        reply = c.call("GET", "name:k")
    assert isinstance(reply, Err) and reply.startswith("ERR"), reply


def test_server_verify_false_accepts_the_wrong_ca(nutcrackers, write_conf, tls_redis_server,
                                                  tls_certs):
    port, _ = tls_redis_server()
    keys = tls.server_keys(tls_certs, ca=tls_certs.other_ca, server_tls_verify=False)
    proxy, listen = start_proxy(nutcrackers, write_conf, [port], tls_keys=[keys])
    set_get_checked(redis_client(listen), "noverify", 5)


def test_silent_server_behind_server_tls_times_out(nutcrackers, write_conf, tls_certs):
    """A server that reads the ClientHello and never answers: the request fails by the pool's
    timeout (1 s), with an error reply, not before and not a hang."""
    never = threading.Event()
    fake = FakeBackend(serve_on_release(never, b"+OK\r\n"))
    try:
        proxy, listen = start_proxy(nutcrackers, write_conf, [fake.port], timeout=1000,
                                    tls_keys=[tls.server_keys(tls_certs)])
        with RawConn(listen, timeout=10 * scale()) as c:
            t0 = time.monotonic()
            reply = c.call("GET", "silent:k")
            took = time.monotonic() - t0
        assert isinstance(reply, Err) and reply.startswith("ERR"), reply
        assert 0.8 <= took < 8 * scale(), took
        assert fake.counts()[0] >= 1 and fake.received > 0  # a handshake was begun
    finally:
        fake.stop()


def test_plain_server_behind_server_tls_fails(nutcrackers, write_conf, redis_server, tls_certs):
    """A plain-text redis-server cannot complete the handshake (it waits for a line, or answers
    the ClientHello with a RESP error): the request gets an error reply within the pool's timeout
    (1 s) and a margin, never a hang, and nothing reaches the server as plain text."""
    port, _ = redis_server()
    proxy, listen = start_proxy(nutcrackers, write_conf, [port], timeout=1000,
                                tls_keys=[tls.server_keys(tls_certs)])
    with RawConn(listen, timeout=10 * scale()) as c:
        t0 = time.monotonic()
        reply = c.call("SET", "plainsrv:k", "v")
        took = time.monotonic() - t0
    assert isinstance(reply, Err) and reply.startswith("ERR"), reply
    assert took < 8 * scale(), took
    assert redis_client(port).get("plainsrv:k") is None


# --- every feature over TLS (both sides) --------------------------------------------------------

@pytest.fixture
def both_sides(nutcrackers, write_conf, tls_redis_server, tls_certs):
    """3 TLS redis-servers behind a pool with TLS on both sides: (listen port, backend ports)."""
    ports = [tls_redis_server()[0] for _ in range(3)]
    proxy, listen = start_proxy(nutcrackers, write_conf, ports,
                                tls_keys=[tls.listener_keys(tls_certs), tls.server_keys(tls_certs)])
    return listen, ports


def test_pipeline_of_1000_commands(both_sides, tls_certs):
    listen, _ = both_sides
    r = tls_client(tls_certs, listen)
    p = r.pipeline(transaction=False)
    for i in range(500):
        p.set(f"pipe:{i}", f"value-{i}")
    for i in range(500):
        p.get(f"pipe:{i}")
    replies = p.execute()
    assert replies[:500] == [True] * 500
    assert replies[500:] == [f"value-{i}".encode() for i in range(500)]
    r.close()


def test_mget_across_three_servers(nutcrackers, write_conf, redis_server, tls_certs):
    """Client-side TLS over 3 plain servers (so their contents can be read directly): the keys
    spread over all three, one MGET gets every value in order."""
    ports = [redis_server()[0] for _ in range(3)]
    proxy, listen = start_proxy(nutcrackers, write_conf, ports,
                                tls_keys=[tls.listener_keys(tls_certs)])
    r = tls_client(tls_certs, listen)
    keys = spread_keys("mget", 60)
    assert r.mset({k: f"val-{k}" for k in keys}) is True
    assert set(owners(ports, True, keys).values()) == {0, 1, 2}
    assert r.mget(keys + ["mget:absent"]) == [f"val-{k}".encode() for k in keys] + [None]
    assert r.delete(*keys) == len(keys)
    r.close()


def test_mget_across_three_tls_servers(both_sides, tls_certs):
    listen, ports = both_sides
    r = tls_client(tls_certs, listen)
    keys = spread_keys("mgettls", 60)
    assert r.mset({k: f"val-{k}" for k in keys}) is True
    assert r.mget(keys) == [f"val-{k}".encode() for k in keys]
    held = 0
    for p in ports:
        d = tls_client(tls_certs, p)
        n = len(d.keys("mgettls:*"))
        assert n > 0, f"no key on the server on port {p}"
        held += n
        d.close()
    assert held == len(keys)
    r.close()


def test_multi_exec(both_sides, tls_certs):
    listen, _ = both_sides
    r = tls_client(tls_certs, listen)
    p = r.pipeline(transaction=True)
    p.set("{tx}:a", "1").incr("{tx}:a").get("{tx}:a").set("{tx}:b", "x")
    assert p.execute() == [True, 2, b"2", True]
    assert r.mget("{tx}:a", "{tx}:b") == [b"2", b"x"]
    r.close()


def test_pubsub(both_sides, tls_certs):
    listen, _ = both_sides
    sub = tls_client(tls_certs, listen)
    pub = tls_client(tls_certs, listen)
    ps = sub.pubsub()
    ps.subscribe("tls-news")
    first = ps.get_message(timeout=FAST * scale())
    assert first and first["type"] == "subscribe", first
    wait_for(lambda: pub.publish("tls-news", "hello") == 1, 10, "the subscriber to count")
    got = None
    deadline = time.monotonic() + 10 * scale()
    while got is None and time.monotonic() < deadline:
        got = ps.get_message(ignore_subscribe_messages=True, timeout=1)
    assert got and got["data"] == b"hello", got
    ps.close()
    pub.close()


def test_8mb_value_round_trip(both_sides, tls_certs):
    listen, ports = both_sides
    value = big_value(8 << 20)
    r = tls_client(tls_certs, listen, socket_timeout=60 * scale())
    assert r.set("big:8mb", value) is True
    got = r.get("big:8mb")
    assert got is not None and len(got) == len(value) and digest(got) == digest(value)
    assert r.strlen("big:8mb") == len(value)
    r.close()


def test_200_concurrent_tls_clients(nutcrackers, write_conf, tls_redis_server, tls_certs):
    ports = [tls_redis_server()[0] for _ in range(2)]
    proxy, listen = start_proxy(nutcrackers, write_conf, ports, threads=2,
                                tls_keys=[tls.listener_keys(tls_certs), tls.server_keys(tls_certs)])
    start = threading.Barrier(CLIENTS)

    def one(i):
        r = tls_client(tls_certs, listen, socket_timeout=30 * scale())
        try:
            assert r.ping() is True
            start.wait(timeout=60 * scale())
            for n in range(ROUNDS):
                assert r.set(f"crowd:{i}:{n}", f"{i}-{n}") is True
                assert r.get(f"crowd:{i}:{n}") == f"{i}-{n}".encode()
        finally:
            r.close()
        return i

    with concurrent.futures.ThreadPoolExecutor(max_workers=CLIENTS) as pool:
        futures = [pool.submit(one, i) for i in range(CLIENTS)]
        done = [f.result(timeout=120 * scale()) for f in futures]
    assert sorted(done) == list(range(CLIENTS))


# --- memcached ----------------------------------------------------------------------------------

@pytest.mark.parametrize("sides", ["client", "both"])
def test_memcached_get_many_over_tls(nutcrackers, write_conf, memcached_server,
                                     tls_memcached_server, tls_certs, sides):
    tls_backend = sides == "both"
    start = tls_memcached_server if tls_backend else memcached_server
    ports = [start()[0] for _ in range(3)]
    keys = [tls.listener_keys(tls_certs)] + ([tls.server_keys(tls_certs)] if tls_backend else [])
    proxy, listen = start_proxy(nutcrackers, write_conf, ports, redis=False, tls_keys=keys)
    m = mc_client(listen, tls_context=tls.client_context(tls_certs))
    names = spread_keys("mcget", 30)
    for k in names:
        assert m.set(k, f"mv-{k}".encode()) is True
    assert m.get_many(names + ["mcget:absent"]) == {k: f"mv-{k}".encode() for k in names}
    ctx = tls.client_context(tls_certs) if tls_backend else None
    per_server = []
    for p in ports:
        d = mc_client(p, tls_context=ctx) if ctx else mc_client(p)
        per_server.append(len(d.get_many(names)))
        d.close()
    assert sum(per_server) == len(names) and all(per_server), per_server
    m.close()


# --- handshake counters and the failed client's log line ----------------------------------------

HANDSHAKE_COUNTERS = {"pool": ["client_tls_handshakes", "client_tls_handshake_failures"],
                      "server": ["server_tls_handshakes", "server_tls_handshake_failures"]}


def handshake_metrics(proxy):
    """The handshake counters of /metrics: {(name, labels): value}."""
    return manage.metric_samples(proxy.manage_port, "tls_handshake")


def test_client_handshakes_counted_and_failure_logged(nutcrackers, write_conf, redis_server,
                                                      tls_certs):
    """N TLS clients: client_tls_handshakes == N; a plain client on the TLS listener:
    client_tls_handshake_failures == 1 and a notice line naming the pool, the client's address
    and the reason (no start-up probe connects: wait="log"). The JSON (summed over 2 workers)
    and /metrics agree; the server counters of this plain-server pool stay 0."""
    n = 6
    port, _ = redis_server()
    proxy, listen = start_proxy(nutcrackers, write_conf, [port], threads=2, wait="log",
                                tls_keys=[tls.listener_keys(tls_certs)])
    mark = proxy.log_mark()
    for i in range(n):
        r = tls_client(tls_certs, listen)
        assert r.ping() is True
        r.close()
    with RawConn(listen, timeout=FAST) as plain:
        plain.send(b"*1\r\n$4\r\nPING\r\n")
        plain.read_until_closed()
    doc = manage.wait_status(proxy.manage_port,
                             lambda d: d[POOL]["client_tls_handshakes"] >= n
                             and d[POOL]["client_tls_handshake_failures"] >= 1)
    pool, server = doc[POOL], doc[POOL][f"{HOST}:{port}:1"]
    assert (pool["client_tls_handshakes"], pool["client_tls_handshake_failures"]) == (n, 1), pool
    assert server["server_tls_handshakes"] == 0 and server["server_tls_handshake_failures"] == 0
    prom = handshake_metrics(proxy)
    for f in HANDSHAKE_COUNTERS["pool"]:
        assert prom[(f"nutcrackers_pool_{f}_total", (("pool", POOL),))] == pool[f], f
    wait_log(proxy.log, "tls handshake failed:", 10, start=mark)
    lines = [l for l in proxy.log()[mark:].splitlines() if "tls handshake failed:" in l]
    assert any(f"pool '{POOL}': client " in l and f"({HOST}:" in l for l in lines), lines


def test_server_handshakes_counted(nutcrackers, write_conf, tls_redis_server, redis_server,
                                   tls_certs):
    """A TLS server verified: server_tls_handshakes > 0; one whose certificate is from another
    CA: server_tls_handshake_failures > 0 (and no handshake done); a plain pool: every handshake
    counter 0 (in the JSON and /metrics)."""
    good_port, _ = tls_redis_server()
    bad_port, _ = tls_redis_server()
    plain_port, _ = redis_server()
    good, good_listen = start_proxy(nutcrackers, write_conf, [good_port],
                                    tls_keys=[tls.server_keys(tls_certs)])
    bad, bad_listen = start_proxy(nutcrackers, write_conf, [bad_port],
                                  tls_keys=[tls.server_keys(tls_certs, ca=tls_certs.other_ca)])
    plain, plain_listen = start_proxy(nutcrackers, write_conf, [plain_port])
    set_get_checked(redis_client(good_listen), "hsgood", 3)
    set_get_checked(redis_client(plain_listen), "hsplain", 3)
    with RawConn(bad_listen, timeout=FAST * scale()) as c:
        assert isinstance(c.call("GET", "hsbad:k"), Err)
    for proxy, port, done, failed in ((good, good_port, True, False), (bad, bad_port, False, True)):
        name = f"{HOST}:{port}:1"
        doc = manage.wait_status(proxy.manage_port, lambda d: d[POOL][name][
            "server_tls_handshakes" if done else "server_tls_handshake_failures"] > 0)
        s = doc[POOL][name]
        assert (s["server_tls_handshakes"] > 0, s["server_tls_handshake_failures"] > 0) == \
            (done, failed), s
        assert doc[POOL]["client_tls_handshakes"] == 0  # its clients speak plain text
        prom = handshake_metrics(proxy)
        labels = (("pool", POOL), ("server", name))
        for f in HANDSHAKE_COUNTERS["server"]:  # a later reconnect may add to the failures
            assert prom[(f"nutcrackers_{f}_total", labels)] >= s[f], f
    doc = manage.status(plain.manage_port)
    counters = [doc[POOL][f] for f in HANDSHAKE_COUNTERS["pool"]]
    counters += [doc[POOL][f"{HOST}:{plain_port}:1"][f] for f in HANDSHAKE_COUNTERS["server"]]
    assert counters == [0, 0, 0, 0], counters
    assert all(v == 0 for v in handshake_metrics(plain).values())
