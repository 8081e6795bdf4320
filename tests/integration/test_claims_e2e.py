"""What the README claims of the proxy and no other test drove end to end, each against real
backends on loopback: unix-socket backends, `distribution: random`, a connect that hangs failing
after `timeout`, backend replies that mean "cannot serve" (-NOAUTH, -MASTERDOWN, -LOADING from a
real redis-server) reaching the client and ejecting the server, `tcpkeepalive` and its three
timers, `reuseport`, IPv6 listen and backends, and the client that writes 400,000 GETs before
reading. Reload claims: test_reload_claims.py.

The oracles are outside the proxy: the backends' own contents and replies, the kernel's view of
the proxy's sockets (getsockopt on a copy of its descriptors, /proc/net/tcp)."""
import socket
import time
import uuid

import pytest

from nctest import codec, keys, load, manage, procfs, procs, wait
from nctest.codec import Err, resp
from nctest.conn import KvConn, RawConn
from nctest.fake import Unanswered
from nctest.procs import HOST

KINDS = ["redis", "memcache"]


def pool_conf(kind, servers, listen=None, **opts):
    """One pool "pool" of `kind` over the server lines; returns (spec, listen port or None)."""
    port = None
    if listen is None:
        port = procs.free_port()
        listen = f"{HOST}:{port}"
    return {"pool": {"listen": listen, "redis": kind == "redis", **opts,
                     "servers": list(servers)}}, port


def get_request(kind, key):
    return resp("GET", key) if kind == "redis" else codec.mc_get(key)


def error_line(kind, text):
    return (b"-ERR %s\r\n" if kind == "redis" else b"SERVER_ERROR %s\r\n") % text.encode()


def counts(held, n):
    """How many of the keys each of n backends holds ({key: index} -> list)."""
    out = [0] * n
    for i in held.values():
        out[i] += 1
    return out


# --- 1. unix-socket backends ---------------------------------------------------------------


def unix_backend(kind, path, tmp_path, reaper):
    with open(tmp_path / f"{path.name}.log", "ab") as log:
        proc = procs.start_backend(kind, None, path=path, cwd=tmp_path, log=log)
    assert proc is not None, f"{kind} did not start on {path} (see {path.name}.log)"
    return reaper.add_popen(proc)


def unix_holdings(kind, path, candidates):
    """{key: value} of the candidates the backend on the unix socket path holds, asked there."""
    with KvConn(None, kind == "redis", path=path) as c:
        values = c.kv_mget(candidates)
    assert not isinstance(values, Err), values
    return {k: v for k, v in zip(candidates, values) if v is not None}


@pytest.mark.parametrize("kind", KINDS)
def test_unix_socket_backends(kind, tmp_path, reaper, write_conf, nutcrackers):
    """`servers: - /path:weight name`: two backends that listen on unix sockets only (no TCP port
    at all) take the keys; every key is on one of them, each holds some, and the proxy reads
    them back, one by one and in a multi-key request."""
    paths = [tmp_path / f"{kind}{i}.sock" for i in range(2)]
    for path in paths:
        unix_backend(kind, path, tmp_path, reaper)
    spec, port = pool_conf(kind, [f"{p}:1 s{i}" for i, p in enumerate(paths)])
    nutcrackers(write_conf(spec), "-T", "2")
    names = keys.spread_keys(f"ux{uuid.uuid4().hex[:6]}", 40)
    with KvConn(port, kind == "redis") as c:
        for key in names:
            assert c.kv_set(key, key) is True, key
        for key in names[:5]:
            assert c.kv_get(key) == key.encode()
        assert c.kv_mget(names) == [k.encode() for k in names]
    held = [unix_holdings(kind, p, names) for p in paths]
    assert all(held), f"a unix-socket backend got no key: {[len(h) for h in held]}"
    assert not set(held[0]) & set(held[1]), "a key on both backends"
    assert {**held[0], **held[1]} == {k: k.encode() for k in names}


# --- 2. distribution: random ---------------------------------------------------------------

RANDOM_WRITES = 300


def write_fresh(kind, port, prefix, n):
    """n SETs of fresh keys on one connection; returns the keys (each must succeed)."""
    names = keys.spread_keys(prefix, n)
    with KvConn(port, kind == "redis") as c:
        for key in names:
            assert c.kv_set(key, "v") is True, key
    return names


@pytest.mark.parametrize("kind", KINDS)
def test_random_spreads_over_every_live_server(kind, redis_server, memcached_server, write_conf,
                                               nutcrackers):
    """distribution: random, weights 1, 1 and 20. Every server gets a share of the writes near a
    third (weights ignored: a weighted pick would give each light server about 1/22 of them);
    once a killed server is ejected, every write succeeds and its share goes to the two others.
    The shares are counted on the backends themselves. Bounds: a share below half its expected
    size is at least 6 standard deviations away."""
    start = redis_server if kind == "redis" else memcached_server
    backends = [start() for _ in range(3)]
    ports = [p for p, _ in backends]
    spec, port = pool_conf(kind, [f"{HOST}:{p}:{w} s{i}" for i, (p, w) in
                                  enumerate(zip(ports, (1, 1, 20)))],
                           distribution="random", auto_eject_hosts=True, server_failure_limit=1,
                           server_retry_timeout=600000)
    proxy = nutcrackers(write_conf(spec), "-T", "2", wait_manage=True)
    tag = uuid.uuid4().hex[:6]

    names = write_fresh(kind, port, f"rnd1{tag}", RANDOM_WRITES)
    shares = counts(keys.owners(ports, kind == "redis", names), 3)
    assert min(shares) >= RANDOM_WRITES / 3 / 2, f"shares of servers 0, 1, 2: {shares}"

    procs.kill_popen(backends[2][1])
    # writes until one reaches the dead server: it fails (the request is not retried), and that
    # one failure ejects the server (server_failure_limit 1)
    failed = None
    with KvConn(port, kind == "redis") as c:
        for key in keys.spread_keys(f"rnd2{tag}", 200):
            r = c.kv_set(key, "v")
            if r is not True:
                failed = r
                break
    assert isinstance(failed, Err), "no write reached the killed server in 200"
    manage.wait_pool_stat(proxy.manage_port, "pool", "server_ejects", lambda v: v >= 1)

    names = write_fresh(kind, port, f"rnd3{tag}", RANDOM_WRITES)
    shares = counts(keys.owners(ports[:2], kind == "redis", names), 2)
    assert min(shares) >= RANDOM_WRITES / 2 / 2, f"shares of the live servers 0, 1: {shares}"


# --- 3. a connect that hangs ---------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_hanging_connect_times_out(kind, write_conf, nutcrackers):
    """The only server's address never answers a SYN (a full accept queue): the proxy's connect
    stays in SYN_SENT, and after `timeout` the client gets `-ERR Connection timed out`
    (memcached: `SERVER_ERROR Connection timed out`). A second request makes a new connect that
    fails the same way."""
    timeout_ms = int(1000 * wait.scale())  # room to see the SYN_SENT socket before it fails
    with Unanswered() as hole:
        spec, port = pool_conf(kind, [f"{HOST}:{hole.port}:1"], timeout=timeout_ms)
        proxy = nutcrackers(write_conf(spec), "-T", "1")
        with RawConn(port, timeout=30 * wait.scale()) as c:
            for attempt in range(2):
                t0 = time.monotonic()
                c.send(get_request(kind, "k"))
                wait.wait_for(lambda: "SYN_SENT" in procfs.conns_to(proxy.pid, hole.port).values(),
                              timeout_ms / 1000, "the proxy's connect to hang in SYN_SENT")
                c.expect(error_line(kind, "Connection timed out"))
                elapsed = time.monotonic() - t0
                assert elapsed >= timeout_ms / 1000 * 0.9, \
                    f"attempt {attempt}: failed after {elapsed:.2f}s, before the timeout"


# --- 4. replies of a backend that cannot serve ---------------------------------------------

LOAD_KEYS = 50000        # keys of the dump a loading redis-server reads, each slowed down
LOAD_DELAY_US = 2000     # ... by this much: 100 s of loading, far more than the test takes


def loading_redis(redis_server, tmp_path):
    """A redis-server that stays loading its dataset (-LOADING) for LOAD_KEYS x LOAD_DELAY_US: a
    dump is written by a first server, then read by a second one that waits key-load-delay
    microseconds after each key and serves its clients every 1 KB of dump it reads."""
    where = tmp_path / "dump"
    where.mkdir()
    files = ("--dir", str(where), "--dbfilename", "seed.rdb")
    port, proc = redis_server(args=files)
    with RawConn(port, timeout=60) as c:
        for i in range(0, LOAD_KEYS, 1000):
            c.send(b"".join(resp("SET", f"seed:{j}", "v" * 16) for j in range(i, i + 1000)))
            for _ in range(1000):
                assert c.read() == "OK"
        assert c.call("SAVE") == "OK"
    procs.stop_popen(proc)
    return redis_server(args=(*files, "--key-load-delay", str(LOAD_DELAY_US),
                              "--loading-process-events-interval-bytes", "1024"))


def bad_backend(reply, redis_server, tmp_path, held):
    """A real redis-server that answers every GET with -<reply>; returns its port."""
    if reply == "NOAUTH":
        port, _ = redis_server(args=("--requirepass", "not-the-proxys"))
    elif reply == "MASTERDOWN":
        # a replica of a master that refuses connections (a port bound here, never listening)
        dead = socket.socket()
        dead.bind((HOST, 0))
        held.append(dead)
        port, _ = redis_server(args=("--replicaof", HOST, str(dead.getsockname()[1]),
                                     "--replica-serve-stale-data", "no"))
    else:
        port, _ = loading_redis(redis_server, tmp_path)
    return port


@pytest.fixture
def held_sockets():
    held = []
    yield held
    for s in held:
        s.close()


@pytest.mark.parametrize("reply", ["NOAUTH", "MASTERDOWN", "LOADING"])
def test_cannot_serve_replies_reach_the_client_and_eject(reply, redis_server, write_conf,
                                                         nutcrackers, tmp_path, held_sockets):
    """A server answering -NOAUTH (requirepass, no redis_auth), -MASTERDOWN (a replica whose
    master is down, replica-serve-stale-data no) or -LOADING (a real redis-server loading a slow
    dump): its reply reaches the client byte for byte (the same bytes the backend gives a direct
    client), and counts as a failure: with auto_eject_hosts, server_failure_limit 2, the second
    one ejects it; its keys then go to the other server."""
    good, _ = redis_server()
    bad = bad_backend(reply, redis_server, tmp_path, held_sockets)
    spec, port = pool_conf("redis", [f"{HOST}:{good}:1 good", f"{HOST}:{bad}:1 bad"],
                           auto_eject_hosts=True, server_failure_limit=2,
                           server_retry_timeout=600000)
    proxy = nutcrackers(write_conf(spec), "-T", "2", wait_manage=True)
    candidates = keys.spread_keys(f"cs{uuid.uuid4().hex[:6]}", 40)
    key = next(k for k, s in manage.find_keys(proxy.manage_port, "pool", candidates).items()
               if s == "bad")
    with RawConn(bad) as direct:
        direct.send(resp("GET", key))
        expected = direct.reply()
    assert expected.startswith(b"-" + reply.encode()), expected

    with RawConn(port) as c:
        c.exchange(resp("GET", key), expected)
        doc = manage.status(proxy.manage_port)
        assert doc["pool"]["server_ejects"] == 0, "ejected after one failure of a limit of 2"
        c.exchange(resp("GET", key), expected)
    doc = manage.wait_status(proxy.manage_port, lambda d: d["pool"]["server_ejects"] >= 1,
                             what="the server answering -" + reply + " to be ejected")
    assert doc["pool"]["bad"]["server_ejected_at"] > 0
    assert doc["pool"]["good"]["server_ejected_at"] == 0
    with RawConn(port) as c:
        c.exchange(resp("GET", key), b"$-1\r\n")
        c.exchange(resp("SET", key, "moved"), b"+OK\r\n")
    assert keys.backend_keys(good, True, [key]) == {key: b"moved"}


# --- 5. tcpkeepalive, reuseport ------------------------------------------------------------

KEEPALIVE = {"tcpkeepidle": 17, "tcpkeepcnt": 4, "tcpkeepintvl": 7}


def server_fds(pid, backend_port):
    """pid's established connections to backend_port: [(fd, socket inode)]."""
    return [(fd, d[4]) for fd, d in procfs.fds(pid)
            if d[0] == "tcp" and d[1] == "ESTABLISHED" and d[3] == backend_port]


def keepalive_options(pid, fd):
    with procfs.socket_of(pid, fd) as s:
        return (s.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE),
                s.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE),
                s.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT),
                s.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL))


def test_tcpkeepalive_sets_the_server_sockets_options(redis_server, write_conf, nutcrackers):
    """Pool "kept" (tcpkeepalive with idle 17 s, 4 probes, 7 s apart) and pool "plain" (no
    keepalive), both preconnect, -T 2: each of the proxy's two connections to the kept pool's
    server has SO_KEEPALIVE and the three values (read with getsockopt on a copy of the proxy's
    descriptor), and the kernel runs its keepalive timer, due within the 17 s idle time
    (/proc/net/tcp); the plain pool's connections have neither."""
    kept, _ = redis_server()
    plain, _ = redis_server()
    lports = procs.free_ports(2)
    spec = {"kept": {"listen": f"{HOST}:{lports[0]}", "redis": True, "preconnect": True,
                     "tcpkeepalive": True, **KEEPALIVE, "servers": [f"{HOST}:{kept}:1"]},
            "plain": {"listen": f"{HOST}:{lports[1]}", "redis": True, "preconnect": True,
                      "servers": [f"{HOST}:{plain}:1"]}}
    proxy = nutcrackers(write_conf(spec), "-T", "2")
    for port in (kept, plain):
        wait.wait_for(lambda p=port: len(server_fds(proxy.pid, p)) == 2, 10,
                      f"the proxy's two preconnected connections to {port}")
    for fd, inode in server_fds(proxy.pid, kept):
        assert keepalive_options(proxy.pid, fd) == (1, 17, 4, 7)
        timer, due = procfs.tcp_timer(inode)
        assert timer == "keepalive" and 0 < due <= 17, (timer, due)
    for fd, inode in server_fds(proxy.pid, plain):
        assert keepalive_options(proxy.pid, fd)[0] == 0
        assert procfs.tcp_timer(inode)[0] is None


def listener_fd(pid, port):
    (fd,) = [fd for fd, d in procfs.fds(pid) if d[0] == "tcp" and d[1] == "LISTEN"
             and d[2] == port]
    return fd


def test_reuseport_lets_two_proxies_share_a_port(redis_server, write_conf, nutcrackers):
    """reuseport: true in two proxies on one listen address: both start and listen there (with
    SO_REUSEPORT on their listening sockets), and the kernel hands connections to both: each
    proxy forwards some of the clients' requests."""
    backend, _ = redis_server()
    spec, port = pool_conf("redis", [f"{HOST}:{backend}:1 r0"], reuseport=True)
    proxies = [nutcrackers(write_conf(spec, name=f"{n}.yml"), "-T", "1", log_name=f"{n}.log",
                           wait_manage=True) for n in ("a", "b")]
    for proxy in proxies:
        with procfs.socket_of(proxy.pid, listener_fd(proxy.pid, port)) as s:
            assert s.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT) == 1

    def requests(proxy):
        return manage.status(proxy.manage_port)["pool"]["r0"]["requests"]

    for i in range(200):  # the kernel picks a listener by the client's port: both, soon
        with RawConn(port) as c:
            c.exchange(resp("SET", f"rp{i}", "v"), b"+OK\r\n")
        if all(requests(p) > 0 for p in proxies):
            break
    assert all(requests(p) > 0 for p in proxies), [requests(p) for p in proxies]


def test_without_reuseport_a_second_proxy_cannot_listen(redis_server, write_conf, nutcrackers):
    """The same two proxies without reuseport: the second cannot listen, says so, and exits 1."""
    backend, _ = redis_server()
    spec, port = pool_conf("redis", [f"{HOST}:{backend}:1 r0"])
    nutcrackers(write_conf(spec, name="a.yml"), "-T", "1", log_name="a.log")
    second = nutcrackers(write_conf(spec, name="b.yml"), "-T", "1", log_name="b.log", wait=None)
    assert second.wait_exit() == 1
    assert f"cannot listen on {HOST}:{port}" in second.log()


# --- 6. IPv6 -------------------------------------------------------------------------------


@pytest.fixture
def ipv6_loopback():
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
    except OSError as e:
        pytest.skip(f"this machine has no IPv6 loopback (::1): {e}")


IPV6_BACKEND_ARGS = {"redis": ("--bind", HOST, "::1"), "memcache": ("-l", "::1")}


def ipv6_clients(kind, port):
    """The backend's clients that came from ::1 (redis CLIENT LIST, memcached `stats conns`),
    asked over 127.0.0.1."""
    if kind == "redis":
        with RawConn(port) as c:
            text = c.call("CLIENT", "LIST").decode()
        return [line for line in text.splitlines() if " addr=[::1]:" in line]
    with RawConn(port) as c:
        c.send(b"stats conns\r\n")
        text = c.recv_until(b"END\r\n").decode()
    return [line for line in text.splitlines() if line.endswith(f":listen_addr tcp6:[::1]:{port}")]


@pytest.mark.parametrize("kind", KINDS)
def test_ipv6_listen_and_backends(kind, ipv6_loopback, redis_server, memcached_server,
                                  write_conf, nutcrackers):
    """listen: "[::1]:port", servers "[::1]:port:weight" and "::1:port:weight" (split from the
    right): the proxy listens on ::1 only (not on 127.0.0.1), serves a client that comes over
    IPv6, and reaches both backends over IPv6 (they see the proxy's connections come from ::1)."""
    start = redis_server if kind == "redis" else memcached_server
    ports = [start(args=IPV6_BACKEND_ARGS[kind])[0] for _ in range(2)]
    port = procs.free_port()
    spec, _ = pool_conf(kind, [f"[::1]:{ports[0]}:1 s0", f"::1:{ports[1]}:1 s1"],
                        listen=f"[::1]:{port}")
    nutcrackers(write_conf(spec), "-T", "2", wait="log")
    wait.wait_for(lambda: procs.port_accepts(port, host="::1"), 10, f"the proxy on [::1]:{port}")
    assert not procs.port_accepts(port), f"the proxy listens on {HOST}:{port} too"
    names = keys.spread_keys(f"v6{uuid.uuid4().hex[:6]}", 30)
    with KvConn(port, kind == "redis", host="::1") as c:
        for key in names:
            assert c.kv_set(key, key) is True, key
        assert c.kv_mget(names) == [k.encode() for k in names]
    where = keys.owners(ports, kind == "redis", names)
    assert sorted(set(where.values())) == [0, 1], "a backend got no key"
    for p in ports:
        assert ipv6_clients(kind, p), f"the backend on {p} has no client from ::1"


# --- 8. a client that writes 400,000 GETs before reading ------------------------------------

@pytest.mark.parametrize("gets", [400000])
def test_client_writing_gets_before_reading_is_dropped(gets, redis_server, write_conf,
                                                       nutcrackers):
    """README: a client that writes 400,000 GETs (of a 100-byte value) before reading any reply
    holds more than 256 MB of the proxy (about 1.2 KB each beyond the socket buffers) and is
    dropped. Dropped: closed before it got all its replies, counted in client_err; the proxy
    lives on and a client beside it is served while it holds the hog's memory and after. The
    proxy decides once its server has answered every request it read: the wait ends then, dropped
    or not."""
    backend, _ = redis_server()
    spec, port = pool_conf("redis", [f"{HOST}:{backend}:1 r0"])
    proxy = nutcrackers(write_conf(spec), "-T", "2", wait_manage=True)
    value = keys.big_value(100)
    with RawConn(port) as c:
        c.exchange(resp("SET", "hog", value), b"+OK\r\n")
    reply = codec.bulk(value)
    mark = proxy.log_mark()
    hog = RawConn(port, timeout=120 * wait.scale())
    try:
        request = resp("GET", "hog")
        try:
            for _ in range(gets // 1000):
                hog.send(request * 1000)
        except ConnectionError:
            pass  # dropped before it finished writing

        def decided():
            if "dropping the client" in proxy.log()[mark:]:
                return True
            return manage.status(proxy.manage_port)["pool"]["r0"]["responses"] > gets

        wait.wait_for(decided, 60, f"the drop of the hog, or the answers to its {gets} GETs")
        assert "dropping the client" in proxy.log()[mark:], \
            f"{gets} GETs answered, the client holding them was not dropped"
        load.witness(port)
        got = hog.read_until_closed(limit=gets * len(reply) + 1)
    finally:
        hog.close()
    assert len(got) < gets * len(reply), "the hog got every reply: it was not dropped"
    assert got == reply * (len(got) // len(reply)) + reply[:len(got) % len(reply)]
    manage.wait_pool_stat(proxy.manage_port, "pool", "client_err", lambda v: v >= 1)
    assert proxy.proc.poll() is None
    load.witness(port)
