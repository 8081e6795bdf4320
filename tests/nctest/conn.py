"""Client connections: RawConn, a plain socket to the proxy, a backend or the manage port for
byte-exact exchanges (every read bounded; bytes sent and consumed counted), KvConn (the same with
set/get/mset/mget in either protocol), and redis-py / pymemcache clients set up for the proxy.

A read that times out raises Hang (a TimeoutError); a peer that closes or resets raises Closed (a
ConnectionError); bytes that are no reply raise codec.Garbled.

Threads: one connection belongs to one thread.
"""
import socket
import struct
import time

from . import codec, procfs, wait
from .codec import Err
from .procs import HOST

IO_TIMEOUT = 10.0     # seconds a test waits for one reply
BIG_TIMEOUT = 60.0    # seconds for a 64 MB transfer on a busy machine


class Hang(TimeoutError):
    """No (complete) reply within the connection's timeout."""


class Closed(ConnectionError):
    """The peer closed (or reset) the connection."""


class RawConn:
    """A client socket with a read buffer. `timeout` bounds each call in all (not each recv)."""

    def __init__(self, port=None, path=None, timeout=IO_TIMEOUT, nodelay=True, host=HOST):
        if path is not None:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(timeout)
            try:
                self.sock.connect(str(path))
            except OSError:
                self.sock.close()
                raise
        else:
            self.sock = socket.create_connection((host, port), timeout=timeout)
            if nodelay:
                self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout
        self.buf = bytearray()
        self.sent = 0       # bytes sent
        self.received = 0   # bytes consumed by the reads (not what sits in the buffer)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self.sock.close()

    def reset(self):
        """Closes with a reset (SO_LINGER 0) instead of a FIN: the peer sees the client gone at
        once, not a client that sent everything and waits for its replies."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()

    @property
    def local_port(self):
        return self.sock.getsockname()[1]

    def wait_consumed(self, timeout=IO_TIMEOUT):
        """Waits until the peer has read every byte sent so far: none unacknowledged on this
        side, none unread on the peer's socket (/proc/net/tcp). The event that a request the
        peer cannot answer yet (an incomplete one) has reached it. TCP only."""
        local, remote = self.sock.getsockname()[1], self.sock.getpeername()[1]

        def read_by_peer():
            mine, theirs = procfs.unread(local, remote), procfs.unread(remote, local)
            return mine is not None and theirs is not None and mine[1] == 0 and theirs[0] == 0

        wait.wait_for(read_by_peer, timeout, f"port {remote} to read all that {local} sent")

    def send(self, data):
        try:
            self.sock.sendall(data)
        except (ConnectionResetError, BrokenPipeError) as e:
            raise Closed(f"send failed: {e!r}") from e
        self.sent += len(data)

    def _deadline(self, timeout):
        return time.monotonic() + (timeout or self.timeout)

    def _fill(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise Hang(f"no reply in {self.timeout}s; have {bytes(self.buf[:200])!r}")
        self.sock.settimeout(left)
        try:
            chunk = self.sock.recv(1 << 20)
        except socket.timeout:
            raise Hang(f"no more bytes in {self.timeout}s; have {bytes(self.buf[:200])!r}") from None
        except ConnectionResetError as e:
            raise Closed(f"connection reset; have {bytes(self.buf[:200])!r}") from e
        if not chunk:
            raise Closed(f"connection closed; have {bytes(self.buf[:200])!r}")
        self.buf += chunk

    def _take(self, n):
        out = bytes(self.buf[:n])
        del self.buf[:n]
        self.received += len(out)
        return out

    def _until(self, end_of, timeout):
        """The bytes of one unit whose end end_of(buf) finds (None: incomplete)."""
        deadline = self._deadline(timeout)
        while True:
            if self.buf:
                end = end_of(self.buf)
                if end is not None:
                    return self._take(end)
            self._fill(deadline)

    def recv_exact(self, n, timeout=None):
        return self._until(lambda b: n if len(b) >= n else None, timeout)

    def recv_until(self, needle, timeout=None):
        """Bytes up to and including the first needle."""

        def end(b):
            i = b.find(needle)
            return None if i < 0 else i + len(needle)

        return self._until(end, timeout)

    def until_or_closed(self, needle, timeout=None):
        """(the bytes before the first needle, False), or when the peer closes (EOF or reset)
        before a needle comes, (every byte it sent, True); the needle is consumed. Raises Hang
        when neither comes within timeout seconds."""
        try:
            return self.recv_until(needle, timeout)[:-len(needle)], False
        except Closed:
            return self._take(len(self.buf)), True

    def line(self, timeout=None):
        """One line, with its CRLF."""
        return self.recv_until(b"\r\n", timeout)

    def reply(self, timeout=None):
        """The raw bytes of one RESP reply."""
        return self._until(codec.resp_end, timeout)

    def read(self, timeout=None):
        """One RESP reply, decoded."""
        return codec.decode(self.reply(timeout))

    def call(self, *args, timeout=None):
        """Sends one RESP command and returns its decoded reply."""
        self.send(codec.resp(*args))
        return self.read(timeout)

    def mc_get_reply(self, timeout=None):
        """The raw bytes of a memcached retrieval reply (VALUE blocks then END), or of an error
        line."""
        return self._until(codec.mc_retrieval_end, timeout)

    def mc_stats(self):
        """memcached's `stats`: {name: value text}."""
        self.send(b"stats\r\n")
        text = self.recv_until(b"END\r\n").decode()
        return {p[1]: p[2] for p in (line.split() for line in text.splitlines())
                if len(p) == 3 and p[0] == "STAT"}

    def expect(self, expected, timeout=None):
        """Reads len(expected) bytes and checks them (failing as soon as the bytes come apart:
        a shorter wrong reply does not wait for the timeout)."""
        n = len(expected)

        def end(b):
            if len(b) >= n:
                return n
            return None if b == expected[:len(b)] else len(b)

        got = self._until(end, timeout)
        assert got == expected, f"expected {expected[:300]!r}, got {got[:300]!r}"

    def exchange(self, request, expected, timeout=None):
        self.send(request)
        self.expect(expected, timeout)

    def read_until_closed(self, timeout=None, limit=1 << 30):
        """Everything the peer sends until it closes (EOF or reset), at most limit bytes; raises
        Hang if it does not close within timeout seconds."""
        deadline = self._deadline(timeout)
        while len(self.buf) < limit:
            try:
                self._fill(deadline)
            except Closed:
                break
        return self._take(len(self.buf))

    def is_closed(self, timeout=None):
        """True when the peer closes (EOF or reset) within timeout seconds with no further bytes;
        raises if bytes arrive."""
        deadline = self._deadline(timeout)
        if self.buf:
            raise AssertionError(f"unexpected bytes {bytes(self.buf[:200])!r}")
        while time.monotonic() < deadline:
            self.sock.settimeout(max(deadline - time.monotonic(), 0.001))
            try:
                chunk = self.sock.recv(4096)
            except (ConnectionResetError, BrokenPipeError):
                return True
            except socket.timeout:
                return False
            if not chunk:
                return True
            raise AssertionError(f"unexpected bytes {chunk[:200]!r}")
        return False


class KvConn(RawConn):
    """A RawConn that speaks key/value in either protocol: kv_set -> True or Err; kv_get -> bytes,
    None or Err; kv_mset -> True or Err (memcached: one set after the other); kv_mget -> list (None
    = missing) or Err."""

    def __init__(self, port, redis, timeout=IO_TIMEOUT, **kw):
        super().__init__(port, timeout=timeout, **kw)
        self.redis = redis

    def _mc_line(self):
        line = self.line()
        if line == b"STORED\r\n":
            return True
        err = codec.mc_error(line)
        if err is None:
            raise codec.Garbled(f"unexpected memcached reply line {line!r}")
        return err

    def kv_set(self, key, value):
        if self.redis:
            r = self.call("SET", key, value)
            return True if r == "OK" else r
        self.send(codec.mc_store("set", key, value))
        return self._mc_line()

    def kv_mget(self, keys):
        if self.redis:
            return self.call("MGET", *keys)
        self.send(codec.mc_get(*keys))
        found = codec.mc_values(self.mc_get_reply())
        if isinstance(found, Err):
            return found
        return [found[k][1] if k in found else None for k in keys]

    def kv_get(self, key):
        if self.redis:
            return self.call("GET", key)
        r = self.kv_mget([key])
        return r if isinstance(r, Err) else r[0]

    def kv_mset(self, pairs):
        if self.redis:
            r = self.call("MSET", *[x for kv in pairs for x in kv])
            return True if r == "OK" else r
        for k, v in pairs:
            r = self.kv_set(k, v)
            if r is not True:
                return r
        return True


def no_retry():
    """A redis-py Retry that does not retry: redis-py 8 retries a failed connection three times
    with a backoff of seconds (a refused or wrong password too), where a test wants to see the
    failure (and its waits poll anyway)."""
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    return Retry(NoBackoff(), 0)


def redis_client(port=None, path=None, **kw):
    """redis-py with bounded waits, speaking RESP2 unless told otherwise (protocol=3; protocol=None:
    the library's default, RESP3 for redis-py 8)."""
    import redis

    kw.setdefault("socket_timeout", IO_TIMEOUT)
    kw.setdefault("socket_connect_timeout", IO_TIMEOUT)
    kw.setdefault("protocol", 2)
    if kw["protocol"] is None:
        del kw["protocol"]
    if path is not None:
        return redis.Redis(unix_socket_path=str(path), **kw)
    return redis.Redis(host=HOST, port=port, **kw)


def mc_client(port=None, path=None, **kw):
    """pymemcache waiting for (and checking) every reply, with bounded waits."""
    import pymemcache.client.base

    kw.setdefault("timeout", IO_TIMEOUT)
    kw.setdefault("connect_timeout", IO_TIMEOUT)
    kw.setdefault("default_noreply", False)
    server = str(path) if path is not None else (HOST, port)
    return pymemcache.client.base.Client(server, **kw)


def redis_clients(port):
    """The client connections a redis-server has (CLIENT LIST), without the one asking."""
    with RawConn(port) as c:
        text = c.call("CLIENT", "LIST").decode()
    return [line for line in text.splitlines() if "cmd=client|list" not in line]


def redis_client_fields(port):
    """The client connections of a redis-server (CLIENT LIST, without the one asking), each a dict
    of its fields (id, addr, age, idle, flags, cmd, ...)."""
    return [dict(f.split("=", 1) for f in line.split()) for line in redis_clients(port)]


def redis_blocked(port):
    """The client connections of a redis-server blocked in a command (CLIENT LIST flags 'b')."""
    return [c for c in redis_client_fields(port) if "b" in c["flags"]]


def mc_connections(port):
    """memcached's client connections, without the one asking for them."""
    with RawConn(port) as c:
        return int(c.mc_stats()["curr_connections"]) - 1


def backend_connections(kind, port):
    """The client connections of a backend (redis or memcached), without the one asking."""
    return len(redis_clients(port)) if kind == "redis" else mc_connections(port)
