"""Hostile clients: malformed or abusive input gets an error reply or a close, for that client only.

After each attack the proxy must still be alive, its open fd count back near its baseline, and a
well-behaved client (the "witness") must keep getting exactly the replies it expects.
"""
import resource
import socket

import pytest

from nctest import load, manage, procs, wait
from nctest.codec import bulk, resp
from nctest.conn import IO_TIMEOUT, Closed, RawConn
from nctest.load import witness
from nctest.procfs import cpu_ticks, fd_count, rss_kb
from nctest.procs import HOST


def start_proxy(redis_server, write_conf, nutcrackers, workers):
    ports = [redis_server()[0] for _ in range(2)]
    conf = write_conf({"hostile": {
        "listen": f"{HOST}:{procs.free_port()}", "redis": True, "timeout": 5000,
        "servers": [f"{HOST}:{p}:1" for p in ports]}})
    proxy = nutcrackers(conf, "-T", str(workers), wait_manage=True)
    return proxy, proxy.listen_ports[0]


@pytest.fixture
def redis_proxy(redis_server, write_conf, nutcrackers):
    return start_proxy(redis_server, write_conf, nutcrackers, 2)


def idle_fd_count(proxy):
    """The proxy's fd count once it has seen every client leave (its stats say no client is
    connected: the start-up probe and the witnesses are gone)."""
    manage.wait_pool_stat(proxy.manage_port, "hostile", "client_connections", lambda n: n == 0)
    return fd_count(proxy.pid)


def settle_fds(pid, baseline, slack=4, timeout=5.0):
    wait.settle(lambda: fd_count(pid), baseline + slack, timeout,
                f"fd count back to {baseline}(+{slack})")


@pytest.mark.parametrize("attack, want_prefix", [
    (b"*1\r\n$9223372036854775808\r\n", b"-ERR Protocol error"),
    (b"*1\r\n$-5\r\n", b"-ERR Protocol error"),
    (b"*1\r\n$abc\r\n", b"-ERR Protocol error"),
    (b"*2\r\n*1\r\n$3\r\nGET\r\n", b"-ERR Protocol error"),
    (b"*x\r\n", b"-ERR Protocol error"),
])
def test_bad_lengths_get_protocol_error_and_close(redis_proxy, attack, want_prefix):
    proxy, port = redis_proxy
    witness(port)
    base = idle_fd_count(proxy)
    with RawConn(port) as c:
        c.send(resp("PING") + attack)
        got = c.read_until_closed()
    assert got.startswith(b"+PONG\r\n" + want_prefix), got[:200]
    witness(port)
    settle_fds(proxy.pid, base)


@pytest.mark.parametrize("announce", [
    # a billion elements; SADD, whose members are no keys: a count of keys over the cap is refused
    # as soon as it is read (test_count_over_the_key_cap_is_refused_when_read), this one is waited on
    b"*1000000000\r\n$4\r\nSADD\r\n$1\r\nk\r\n$1\r\na\r\n",
    b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$536870912\r\n" + b"x" * 65536,  # a 512 MB value
], ids=["billion-element-array", "512mb-value"])
def test_announced_size_is_not_allocated_up_front(redis_server, write_conf, nutcrackers, announce):
    """The start of a request that announces a huge size: once the proxy has read it (and waits
    for the rest), its memory has not grown by the size, and other clients are served. One
    worker: the witness it serves after the announce was read proves that the worker is done
    with the announce (a second worker could serve the witness while the first still works)."""
    proxy, port = start_proxy(redis_server, write_conf, nutcrackers, 1)
    rss0 = rss_kb(proxy.pid)
    with RawConn(port) as c:
        c.send(announce)
        c.wait_consumed()
        witness(port)
        grown = rss_kb(proxy.pid) - rss0
        assert grown < 64 * 1024, f"RSS grew {grown} kB: the announced size was allocated"
    witness(port)


def test_binary_keys_with_nul_and_crlf_round_trip(redis_proxy):
    _, port = redis_proxy
    with RawConn(port) as c:
        for key in (b"a\x00b", b"line\r\nbreak", b"\r\n", b"\x00", b"\xff\xfe{tag}\r"):
            c.exchange(resp("SET", key, b"v\r\n\x00") + resp("GET", key),
                       b"+OK\r\n" + bulk(b"v\r\n\x00"))


def test_key_larger_than_a_buffer_is_refused_cleanly(redis_proxy):
    proxy, port = redis_proxy
    base = idle_fd_count(proxy)
    with RawConn(port) as c:
        reset = False
        try:
            c.send(resp("GET", b"k" * (1 << 20)))
        except ConnectionError:
            # the proxy answered and closed while we were still sending the rest of the key: the
            # unread bytes make its close a reset, which may discard the reply on our side
            reset = True
        got = c.read_until_closed()
    assert got.startswith(b"-ERR Protocol error") or (reset and got == b""), got[:200]
    witness(port)
    settle_fds(proxy.pid, base)


def test_mget_of_100000_keys(redis_proxy):
    _, port = redis_proxy
    n = 100000
    with RawConn(port, timeout=30) as c:
        c.exchange(resp("MSET", *[x for i in range(0, n, 1000) for x in (f"mk{i}", f"v{i}")]),
                   b"+OK\r\n")
        # every 1000th key has a value, the others are nil; key order is kept across servers
        c.exchange(resp("MGET", *[f"mk{i}" for i in range(n)]),
                   b"*%d\r\n" % n + b"".join(bulk(f"v{i}" if i % 1000 == 0 else None)
                                              for i in range(n)))


MSG_KEYS_MAX = 1 << 20  # src/msg/msg.h


TOO_MANY_KEYS = b"-ERR Protocol error: too many keys\r\n"


@pytest.mark.parametrize("head, reply", [
    (b"*%d\r\n$3\r\nDEL\r\n" % (MSG_KEYS_MAX + 2), TOO_MANY_KEYS),
    (b"*%d\r\n$4\r\nMGET\r\n" % (MSG_KEYS_MAX + 2), TOO_MANY_KEYS),
    (b"*%d\r\n$4\r\nMSET\r\n" % (2 * MSG_KEYS_MAX + 3), TOO_MANY_KEYS),
    (b"*1000000000\r\n$3\r\nDEL\r\n", TOO_MANY_KEYS),
    (b"*%d\r\n$4\r\nEVAL\r\n$1\r\ns\r\n$7\r\n%d\r\n" % (MSG_KEYS_MAX + 4, MSG_KEYS_MAX + 1),
     TOO_MANY_KEYS),
    # refused anyway (wrong arity, unknown): its reply at once, not after a billion arguments
    (b"*1000000000\r\n$3\r\nGET\r\n", b"-ERR wrong number of arguments for 'get' command\r\n"),
    (b"*1000000000\r\n$6\r\nNOSUCH\r\n", b"-ERR unsupported command 'nosuch'\r\n"),
])
def test_count_over_the_key_cap_is_refused_when_read(redis_proxy, head, reply):
    """A request's keys cost the proxy ~70 bytes each (7 bytes to send "$1\r\na\r\n"): past
    MSG_KEYS_MAX keys the request is a protocol error for that client, which is then closed
    (tests/unit/test_msg.c checks that the cap itself passes). It is refused as soon as its count
    and name are read, not after its arguments: this client sends none and waits."""
    proxy, port = redis_proxy
    with RawConn(port) as c:
        c.send(resp("PING") + head)
        got = c.read_until_closed(limit=256)
    assert got == b"+PONG\r\n" + reply, got
    witness(port)


@pytest.mark.parametrize("cmd", ["DEL", "MGET"])
def test_request_of_more_keys_than_the_cap_sent_whole_is_refused(redis_proxy, cmd):
    """The same request sent whole: refused the same, the connection closed. The proxy closes
    with the client's unread keys in its socket: a reset, which may cost the client the reply."""
    proxy, port = redis_proxy
    n = MSG_KEYS_MAX + 1
    with RawConn(port, timeout=30) as c:
        try:
            c.send(b"*%d\r\n$%d\r\n%s\r\n" % (n + 1, len(cmd), cmd.encode()) + b"$1\r\na\r\n" * n)
        except Closed:
            pass
        got = c.read_until_closed(limit=64)
    assert got in (TOO_MANY_KEYS, b""), got
    witness(port)


def test_connect_and_close_storm(redis_proxy):
    proxy, port = redis_proxy
    base = idle_fd_count(proxy)
    for i in range(1500):
        s = socket.create_connection((HOST, port), timeout=IO_TIMEOUT)
        if i % 3 == 0:
            s.sendall(resp("GET", "x"))  # closed with a request in flight
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
                     if i % 2 else b"\x00" * 8)  # every other one with a reset
        s.close()
    witness(port)
    settle_fds(proxy.pid, base)


def hog_of(port):
    """Sets "big" to 1 MB and returns a client socket with a tiny receive buffer, for a client that
    does not read (skips under TSan: pushing hundreds of MB through it takes minutes; the plain and
    ASan stages run these tests)."""
    if procs.tsan_binary():
        pytest.skip("pushing hundreds of MB through a TSan build takes minutes")
    with RawConn(port) as c:
        c.exchange(resp("SET", "big", b"x" * (1 << 20)), b"+OK\r\n")
    hog = socket.create_connection((HOST, port), timeout=IO_TIMEOUT)
    hog.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    return hog


def test_request_sent_one_byte_at_a_time_pins_no_buffer_per_byte(redis_proxy):
    """A value dripped a byte per packet: each read used to start a fresh 16 kB buffer while the
    unfinished request kept the previous ones, about 4 kB of RSS per byte sent (20 MB for 5000
    bytes). The buffer of an unfinished request is now filled on."""
    if procs.sanitized_binary():
        pytest.skip("a sanitizer's allocator makes RSS meaningless here")
    proxy, port = redis_proxy
    witness(port)
    rss0 = rss_kb(proxy.pid)
    n = 3000
    with socket.create_connection((HOST, port), timeout=IO_TIMEOUT) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.sendall(b"*3\r\n$3\r\nSET\r\n$4\r\ndrip\r\n$%d\r\n" % n)
        load.drip(s.send, b"x" * n, pause=0.0002)  # one read per byte on an idle proxy
        grown = rss_kb(proxy.pid) - rss0
        s.sendall(b"\r\n")
        s.settimeout(IO_TIMEOUT)
        assert s.recv(100) == b"+OK\r\n"
    assert grown < 4096, f"the proxy's RSS grew {grown} kB for a {n}-byte value sent a byte at a time"
    witness(port)


def test_client_that_never_reads_is_dropped_not_the_proxy(redis_proxy):
    """Pipelines GETs of a 1 MB value without reading: the proxy drops it once it holds more than
    256 MB besides its largest request; its memory comes back; others are served."""
    proxy, port = redis_proxy
    hog = hog_of(port)
    rss0 = rss_kb(proxy.pid)
    hog.sendall(resp("GET", "big") * 400)
    proxy.wait_log("dropping the client", timeout=30)
    witness(port)
    if not procs.sanitized_binary():  # a sanitizer's allocator keeps freed memory
        wait.wait_for(lambda: rss_kb(proxy.pid) < rss0 + 32 * 1024, 10,
                          what="RSS back near its baseline after the hog was dropped")
    hog.close()


def test_one_large_value_behind_unread_replies_does_not_drop_its_client(redis_proxy):
    """The hard limit leaves a client's largest request out: a 300 MB SET (redis takes 512 MB)
    queued behind replies the client has not read yet is bounded by the protocol, not a reason to
    drop the client (when only the oldest request was left out, this client was dropped)."""
    proxy, port = redis_proxy
    hog = hog_of(port)  # sets "big" to 1 MB (its tiny receive buffer is not used here)
    hog.close()
    with socket.create_connection((HOST, port), timeout=60) as c:
        c.sendall(resp("GET", "big") * 64)  # 64 MB of replies, not read yet: most stay in the proxy
        value = b"v" * (300 << 20)
        c.sendall(resp("SET", "large", value) + resp("STRLEN", "large"))
        want = (b"$%d\r\n" % (1 << 20) + b"x" * (1 << 20) + b"\r\n") * 64 + b"+OK\r\n" + \
            b":%d\r\n" % len(value)
        c.settimeout(60)
        got = bytearray()
        while len(got) < len(want):
            chunk = c.recv(1 << 20)
            assert chunk, f"dropped after {len(got)} bytes of replies"
            got += chunk
        assert got == want
    assert "dropping the client" not in proxy.log()
    witness(port)


@pytest.mark.parametrize("limit", [0, 11000])
def test_10000_idle_connections(redis_server, write_conf, nutcrackers, limit):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard < 10500:
        pytest.skip(f"the hard open-file limit ({hard}) is below 10500")
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    port_b = redis_server()[0]
    listen = procs.free_port()
    conf = write_conf({"idle": {"listen": f"{HOST}:{listen}", "redis": True,
                                "client_connections": limit, "servers": [f"{HOST}:{port_b}:1"]}})
    proxy = nutcrackers(conf, "-T", "2")
    socks = []
    try:
        for _ in range(10000):
            socks.append(socket.create_connection((HOST, listen), timeout=IO_TIMEOUT))
        witness(listen)
        wait.wait_for(lambda: fd_count(proxy.pid) >= 10000, 10, what="10000 clients accepted")
    finally:
        for s in socks:
            s.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    wait.wait_for(lambda: fd_count(proxy.pid) < 100, 15, what="fds released")
    witness(listen)


def test_client_that_never_reads_cannot_pile_up_requests(redis_proxy):
    """Replies that wait for a client that does not read keep its *requests* in memory too (a
    request is freed when its reply is written). A client that blocks its replies with a few large
    ones, then sends 1 MB SETs (5-byte replies) without reading, must be dropped before the proxy
    holds 256 MB of its requests: the limit counts what the client holds, not only reply bytes."""
    proxy, port = redis_proxy
    hog = hog_of(port)
    rss0 = rss_kb(proxy.pid)
    hog.sendall(resp("GET", "big") * 8)  # 8 MB of replies stuck: below every limit
    setv = resp("SET", "hogkey", b"y" * (1 << 20))
    hog.settimeout(1.0)
    sent = 0
    try:
        for _ in range(320):
            hog.sendall(setv)
            sent += 1
    except OSError:
        pass  # dropped (or paused) mid-send: what we want
    peak = rss_kb(proxy.pid) - rss0
    try:
        proxy.wait_log("dropping the client", timeout=30)
    except TimeoutError:
        pytest.fail(f"not dropped: sent {sent} SETs of 1 MB, proxy RSS +{peak} kB")
    witness(port)
    hog.close()


def test_out_of_fds_pauses_accepts_without_spinning(redis_server, write_conf, nutcrackers):
    """Clients past the process's open-file limit: accept() fails with EMFILE while the listening
    socket stays readable. The master and the stats thread must rest (not spin on the event logging
    a line each time), and accept again once fds are free."""
    port_b = redis_server()[0]
    listen = procs.free_port()
    conf = write_conf({"fds": {"listen": f"{HOST}:{listen}", "redis": True,
                               "servers": [f"{HOST}:{port_b}:1"]}})
    proxy = nutcrackers(conf, "-T", "1")
    witness(listen)
    limit = fd_count(proxy.pid) + 8
    resource.prlimit(proxy.pid, resource.RLIMIT_NOFILE, (limit, limit))
    socks = [socket.create_connection((HOST, listen), timeout=IO_TIMEOUT) for _ in range(20)]
    try:
        proxy.wait_log("Too many open files", timeout=10)
        # fds closed late (the witness's client) go to the clients still in the backlog first
        wait.wait_for(lambda: fd_count(proxy.pid) >= limit, 10, what=f"{limit} fds in use")
        # the manage port's listener (the stats thread) too
        socks.append(socket.create_connection((HOST, proxy.manage_port), timeout=IO_TIMEOUT))
        proxy.wait_log("manage port: accept failed", timeout=10)
        log0, cpu0 = len(proxy.log()), cpu_ticks(proxy.pid)
        wait.hold(2, "a window to measure the CPU time and log lines of a proxy out of fds")
        grown, used = len(proxy.log()) - log0, cpu_ticks(proxy.pid) - cpu0
        assert grown < 1000, f"the log grew {grown} bytes in 2 s while out of fds"
        assert used < 40, f"the proxy used {used} ticks of CPU in 2 s while out of fds"
    finally:
        for s in socks:
            s.close()
    proxy.wait_log("pool 'fds': accepting again", timeout=10)
    witness(listen)
    with RawConn(proxy.manage_port) as m:
        m.exchange(b"status\r\n", b"{")
    proxy.wait_log("manage port: accepting again", timeout=10)
