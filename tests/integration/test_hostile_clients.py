"""Hostile clients: malformed or abusive input gets an error reply or a close, for that client only.

After each attack the proxy must still be alive, its open fd count back near its baseline, and a
well-behaved client (the "witness") must keep getting exactly the replies it expects.
"""
import os
import resource
import socket
import time

import pytest

import ncproxy
import ncutil
from ncutil import HOST

IO_TIMEOUT = 10.0


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def rss_kb(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def resp(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def read_until_closed(sock, timeout=IO_TIMEOUT, limit=1 << 20):
    """Everything the proxy sends until it closes the connection (bounded in time and size)."""
    sock.settimeout(timeout)
    data = b""
    deadline = time.time() + timeout
    while time.time() < deadline and len(data) < limit:
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, socket.timeout):
            break
        if not chunk:
            break
        data += chunk
    return data


class Witness:
    """A well-behaved redis client on its own connection: SET then GET must round-trip."""

    def __init__(self, port):
        self.port = port
        self.n = 0

    def check(self):
        with socket.create_connection((HOST, self.port), timeout=IO_TIMEOUT) as s:
            self.n += 1
            key, val = f"witness:{self.n}".encode(), os.urandom(16).hex().encode()
            s.sendall(resp("SET", key, val) + resp("GET", key))
            want = b"+OK\r\n$%d\r\n%s\r\n" % (len(val), val)
            got = b""
            s.settimeout(IO_TIMEOUT)
            while len(got) < len(want):
                chunk = s.recv(65536)
                assert chunk, f"witness: connection closed after {got!r}"
                got += chunk
            assert got == want


@pytest.fixture
def redis_proxy(redis_server, write_conf, nutcrackers):
    ports = [redis_server()[0] for _ in range(2)]
    conf = write_conf({"hostile": {
        "listen": f"{HOST}:{ncutil.free_port()}", "redis": True, "timeout": 5000,
        "servers": [f"{HOST}:{p}:1" for p in ports]}})
    proxy = nutcrackers(conf, "-T", "2")
    port = int(conf.read_text().split("listen: ")[1].split()[0].rsplit(":", 1)[1])
    time.sleep(0.2)
    return proxy, port


def settle_fds(pid, baseline, slack=4, timeout=5.0):
    ncutil.wait_until(lambda: fd_count(pid) <= baseline + slack, timeout,
                      what=f"fd count back to {baseline}(+{slack}), now {fd_count(pid)}")


@pytest.mark.parametrize("attack, want_prefix", [
    (b"*1\r\n$9223372036854775808\r\n", b"-ERR Protocol error"),
    (b"*1\r\n$-5\r\n", b"-ERR Protocol error"),
    (b"*1\r\n$abc\r\n", b"-ERR Protocol error"),
    (b"*2\r\n*1\r\n$3\r\nGET\r\n", b"-ERR Protocol error"),
    (b"*x\r\n", b"-ERR Protocol error"),
])
def test_bad_lengths_get_protocol_error_and_close(redis_proxy, attack, want_prefix):
    proxy, port = redis_proxy
    witness = Witness(port)
    witness.check()
    base = fd_count(proxy.pid)
    with socket.create_connection((HOST, port), timeout=IO_TIMEOUT) as s:
        s.sendall(resp("PING") + attack)
        got = read_until_closed(s)
    assert got.startswith(b"+PONG\r\n" + want_prefix), got[:200]
    witness.check()
    settle_fds(proxy.pid, base)


def test_billion_element_array_declared(redis_proxy):
    proxy, port = redis_proxy
    rss0 = rss_kb(proxy.pid)
    with socket.create_connection((HOST, port), timeout=IO_TIMEOUT) as s:
        s.sendall(b"*1000000000\r\n$3\r\nDEL\r\n$1\r\na\r\n")
        time.sleep(0.3)
        Witness(port).check()
        assert rss_kb(proxy.pid) < rss0 + 64 * 1024, "the declared size must not be allocated up front"
    Witness(port).check()


def test_announced_512mb_value_never_sent(redis_proxy):
    proxy, port = redis_proxy
    rss0 = rss_kb(proxy.pid)
    with socket.create_connection((HOST, port), timeout=IO_TIMEOUT) as s:
        s.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$536870912\r\n" + b"x" * 65536)
        time.sleep(0.3)
        Witness(port).check()
        assert rss_kb(proxy.pid) < rss0 + 64 * 1024, "an announced value must not be allocated up front"
    Witness(port).check()


def test_binary_keys_with_nul_and_crlf_round_trip(redis_proxy):
    _, port = redis_proxy
    with socket.create_connection((HOST, port), timeout=IO_TIMEOUT) as s:
        for key in (b"a\x00b", b"line\r\nbreak", b"\r\n", b"\x00", b"\xff\xfe{tag}\r"):
            s.sendall(resp("SET", key, b"v\r\n\x00") + resp("GET", key))
            want = b"+OK\r\n$4\r\nv\r\n\x00\r\n"
            got = b""
            while len(got) < len(want):
                got += s.recv(4096)
            assert got == want, key


def test_key_larger_than_a_buffer_is_refused_cleanly(redis_proxy):
    proxy, port = redis_proxy
    base = fd_count(proxy.pid)
    with socket.create_connection((HOST, port), timeout=IO_TIMEOUT) as s:
        reset = False
        try:
            s.sendall(resp("GET", b"k" * (1 << 20)))
        except (ConnectionResetError, BrokenPipeError):
            # the proxy answered and closed while we were still sending the rest of the key: the
            # unread bytes make its close a reset, which may discard the reply on our side
            reset = True
        got = read_until_closed(s)
    assert got.startswith(b"-ERR Protocol error") or (reset and got == b""), got[:200]
    Witness(port).check()
    settle_fds(proxy.pid, base)


def test_mget_of_100000_keys(redis_proxy):
    _, port = redis_proxy
    n = 100000
    with socket.create_connection((HOST, port), timeout=30) as s:
        s.sendall(resp("MSET", *[x for i in range(0, n, 1000) for x in (f"mk{i}", f"v{i}")]))
        assert s.recv(100) == b"+OK\r\n"
        s.sendall(resp("MGET", *[f"mk{i}" for i in range(n)]))
        buf = b""
        s.settimeout(30)
        deadline = time.time() + 30
        # every 1000th key has a value, the others are nil; key order is kept across servers
        want = b"*%d\r\n" % n + b"".join(
            (b"$%d\r\nv%d\r\n" % (len(f"v{i}"), i)) if i % 1000 == 0 else b"$-1\r\n"
            for i in range(n))
        while len(buf) < len(want) and time.time() < deadline:
            chunk = s.recv(1 << 20)
            assert chunk
            buf += chunk
    assert buf == want


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
    with socket.create_connection((HOST, port), timeout=IO_TIMEOUT) as s:
        s.sendall(resp("PING") + head)
        got = read_until_closed(s, limit=256)
    assert got == b"+PONG\r\n" + reply, got
    Witness(port).check()


@pytest.mark.parametrize("cmd", ["DEL", "MGET"])
def test_request_of_more_keys_than_the_cap_sent_whole_is_refused(redis_proxy, cmd):
    """The same request sent whole: refused the same, the connection closed. The proxy closes
    with the client's unread keys in its socket: a reset, which may cost the client the reply."""
    proxy, port = redis_proxy
    n = MSG_KEYS_MAX + 1
    with socket.create_connection((HOST, port), timeout=30) as s:
        try:
            s.sendall(b"*%d\r\n$%d\r\n%s\r\n" % (n + 1, len(cmd), cmd.encode()) + b"$1\r\na\r\n" * n)
        except (ConnectionResetError, BrokenPipeError):
            pass
        got = read_until_closed(s, timeout=30, limit=64)
    assert got in (TOO_MANY_KEYS, b""), got
    Witness(port).check()


def test_connect_and_close_storm(redis_proxy):
    proxy, port = redis_proxy
    base = fd_count(proxy.pid)
    for i in range(1500):
        s = socket.create_connection((HOST, port), timeout=IO_TIMEOUT)
        if i % 3 == 0:
            s.sendall(resp("GET", "x"))  # closed with a request in flight
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
                     if i % 2 else b"\x00" * 8)  # every other one with a reset
        s.close()
    Witness(port).check()
    settle_fds(proxy.pid, base)


def hog_of(port):
    """Sets "big" to 1 MB and returns a client socket with a tiny receive buffer, for a client that
    does not read (skips under TSan: pushing hundreds of MB through it takes minutes; the plain and
    ASan stages run these tests)."""
    if ncproxy.tsan_binary():
        pytest.skip("pushing hundreds of MB through a TSan build takes minutes")
    with socket.create_connection((HOST, port), timeout=IO_TIMEOUT) as s:
        s.sendall(resp("SET", "big", b"x" * (1 << 20)))
        assert s.recv(100) == b"+OK\r\n"
    hog = socket.create_connection((HOST, port), timeout=IO_TIMEOUT)
    hog.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    return hog


def test_request_sent_one_byte_at_a_time_pins_no_buffer_per_byte(redis_proxy):
    """A value dripped a byte per packet: each read used to start a fresh 16 kB buffer while the
    unfinished request kept the previous ones, about 4 kB of RSS per byte sent (20 MB for 5000
    bytes). The buffer of an unfinished request is now filled on."""
    if ncproxy.sanitized_binary():
        pytest.skip("a sanitizer's allocator makes RSS meaningless here")
    proxy, port = redis_proxy
    Witness(port).check()
    rss0 = rss_kb(proxy.pid)
    n = 3000
    with socket.create_connection((HOST, port), timeout=IO_TIMEOUT) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.sendall(b"*3\r\n$3\r\nSET\r\n$4\r\ndrip\r\n$%d\r\n" % n)
        for _ in range(n):
            s.send(b"x")
            time.sleep(0.0002)  # one read per byte on an idle proxy
        grown = rss_kb(proxy.pid) - rss0
        s.sendall(b"\r\n")
        s.settimeout(IO_TIMEOUT)
        assert s.recv(100) == b"+OK\r\n"
    assert grown < 4096, f"the proxy's RSS grew {grown} kB for a {n}-byte value sent a byte at a time"
    Witness(port).check()


def test_client_that_never_reads_is_dropped_not_the_proxy(redis_proxy):
    """Pipelines GETs of a 1 MB value without reading: the proxy drops it once it holds more than
    256 MB besides its largest request; its memory comes back; others are served."""
    proxy, port = redis_proxy
    hog = hog_of(port)
    rss0 = rss_kb(proxy.pid)
    hog.sendall(resp("GET", "big") * 400)
    proxy.wait_log("dropping the client", timeout=30)
    Witness(port).check()
    if not ncproxy.sanitized_binary():  # a sanitizer's allocator keeps freed memory
        ncutil.wait_until(lambda: rss_kb(proxy.pid) < rss0 + 32 * 1024, 10,
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
    Witness(port).check()


@pytest.mark.parametrize("limit", [0, 11000])
def test_10000_idle_connections(redis_server, write_conf, nutcrackers, limit):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard < 10500:
        pytest.skip(f"the hard open-file limit ({hard}) is below 10500")
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    port_b = redis_server()[0]
    listen = ncutil.free_port()
    conf = write_conf({"idle": {"listen": f"{HOST}:{listen}", "redis": True,
                                "client_connections": limit, "servers": [f"{HOST}:{port_b}:1"]}})
    proxy = nutcrackers(conf, "-T", "2")
    socks = []
    try:
        for _ in range(10000):
            socks.append(socket.create_connection((HOST, listen), timeout=IO_TIMEOUT))
        Witness(listen).check()
        ncutil.wait_until(lambda: fd_count(proxy.pid) >= 10000, 10, what="10000 clients accepted")
    finally:
        for s in socks:
            s.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    ncutil.wait_until(lambda: fd_count(proxy.pid) < 100, 15, what="fds released")
    Witness(listen).check()


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
    Witness(port).check()
    hog.close()


def test_out_of_fds_pauses_accepts_without_spinning(redis_server, write_conf, nutcrackers):
    """Clients past the process's open-file limit: accept() fails with EMFILE while the listening
    socket stays readable. The master and the stats thread must rest (not spin on the event logging
    a line each time), and accept again once fds are free."""
    port_b = redis_server()[0]
    listen = ncutil.free_port()
    conf = write_conf({"fds": {"listen": f"{HOST}:{listen}", "redis": True,
                               "servers": [f"{HOST}:{port_b}:1"]}})
    proxy = nutcrackers(conf, "-T", "1")
    Witness(listen).check()
    limit = fd_count(proxy.pid) + 8
    resource.prlimit(proxy.pid, resource.RLIMIT_NOFILE, (limit, limit))
    socks = [socket.create_connection((HOST, listen), timeout=IO_TIMEOUT) for _ in range(20)]
    try:
        proxy.wait_log("Too many open files", timeout=10)
        # fds closed late (the witness's client) go to the clients still in the backlog first
        ncutil.wait_until(lambda: fd_count(proxy.pid) >= limit, 10, what=f"{limit} fds in use")
        time.sleep(0.5)
        # the manage port's listener (the stats thread) too
        socks.append(socket.create_connection((HOST, proxy.manage_port), timeout=IO_TIMEOUT))
        proxy.wait_log("manage port: accept failed", timeout=10)
        time.sleep(0.5)

        def cpu_ticks():
            fields = open(f"/proc/{proxy.pid}/stat").read().rsplit(")", 1)[1].split()
            return int(fields[11]) + int(fields[12])

        log0, cpu0 = len(proxy.log()), cpu_ticks()
        time.sleep(2)
        grown, used = len(proxy.log()) - log0, cpu_ticks() - cpu0
        assert grown < 1000, f"the log grew {grown} bytes in 2 s while out of fds"
        assert used < 40, f"the proxy used {used} ticks of CPU in 2 s while out of fds"
    finally:
        for s in socks:
            s.close()
    proxy.wait_log("pool 'fds': accepting again", timeout=10)
    Witness(listen).check()
    with socket.create_connection((HOST, proxy.manage_port), timeout=IO_TIMEOUT) as m:
        m.sendall(b"status\r\n")
        m.settimeout(IO_TIMEOUT)
        assert m.recv(1).startswith(b"{")
    proxy.wait_log("manage port: accepting again", timeout=10)
