"""Helpers for the tests of the proxy itself: a Cluster (N real backends behind one proxy), raw
sockets for byte-exact checks, RESP encoding and decoding, redis-py and pymemcache clients set up
for the proxy, keys placed on chosen servers, many concurrent pipelining clients, and the proxy's
process metrics (open fds, RSS).

The fixtures that build clusters are in conftest.py (`redis_cluster`, `mc_cluster`, ...); the test
modules use the rest directly. Every wait is bounded; every address is 127.0.0.1.
"""
import hashlib
import os
import selectors
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path

import pymemcache.client.base
import redis

import ncutil
from ncutil import HOST

# (backends, worker threads): the combinations the proxy-core tests run with
MATRIX = [(1, 1), (1, 4), (4, 1), (4, 4)]
IO_TIMEOUT = 10.0     # seconds a test waits for one reply
BIG_TIMEOUT = 60.0    # seconds for a 64 MB transfer on a busy machine


def matrix_id(param):
    backends, threads = param
    return f"b{backends}-T{threads}"


# ---------------------------------------------------------------------------------------------
# RESP


def resp(*args):
    """A RESP request (array of bulk strings) for args (str, bytes or int)."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, int):
            a = str(a)
        if isinstance(a, str):
            a = a.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def bulk(value):
    """A RESP bulk reply (None: the nil bulk)."""
    if value is None:
        return b"$-1\r\n"
    if isinstance(value, str):
        value = value.encode()
    return b"$%d\r\n%s\r\n" % (len(value), value)


def array(*items):
    """A RESP array reply of already-encoded items."""
    return b"*%d\r\n" % len(items) + b"".join(items)


def integer(n):
    return b":%d\r\n" % n


def mc_store(verb, key, value, flags=0, exptime=0, extra=""):
    """A memcached storage request (set, add, ..., cas with its unique in extra)."""
    if isinstance(value, str):
        value = value.encode()
    return f"{verb} {key} {flags} {exptime} {len(value)}{extra}\r\n".encode() + value + b"\r\n"


def mc_value(key, value, flags=0, cas=None):
    """A memcached VALUE block (without the END)."""
    if isinstance(value, str):
        value = value.encode()
    head = f"VALUE {key} {flags} {len(value)}" + (f" {cas}" if cas is not None else "")
    return head.encode() + b"\r\n" + value + b"\r\n"


class RespError(str):
    """A decoded RESP error reply (the text after '-')."""


def resp_end(buf, pos=0):
    """The end offset of the one RESP reply that starts at buf[pos], or None if incomplete."""
    nl = buf.find(b"\r\n", pos)
    if nl < 0:
        return None
    kind = buf[pos:pos + 1]
    if kind in (b"+", b"-", b":"):
        return nl + 2
    n = int(buf[pos + 1:nl])
    if kind == b"$":
        if n < 0:
            return nl + 2
        end = nl + 2 + n + 2
        return end if len(buf) >= end else None
    if kind == b"*":
        pos = nl + 2
        for _ in range(max(n, 0)):
            pos = resp_end(buf, pos)
            if pos is None:
                return None
        return pos
    raise ValueError(f"not a RESP reply at offset {pos}: {buf[pos:pos + 40]!r}")


def resp_decode(buf, pos=0):
    """(value, end) of the RESP reply at buf[pos]: bytes, int, None, RespError, list or str."""
    nl = buf.index(b"\r\n", pos)
    kind, line = buf[pos:pos + 1], buf[pos + 1:nl]
    if kind == b"+":
        return line.decode(), nl + 2
    if kind == b"-":
        return RespError(line.decode()), nl + 2
    if kind == b":":
        return int(line), nl + 2
    n = int(line)
    if kind == b"$":
        if n < 0:
            return None, nl + 2
        return bytes(buf[nl + 2:nl + 2 + n]), nl + 2 + n + 2
    if n < 0:
        return None, nl + 2
    items, pos = [], nl + 2
    for _ in range(n):
        item, pos = resp_decode(buf, pos)
        items.append(item)
    return items, pos


# ---------------------------------------------------------------------------------------------
# raw sockets


class RawConn:
    """A plain socket to the proxy (or a backend) for byte-exact exchanges. Every read is bounded
    by timeout seconds in all."""

    def __init__(self, port=None, path=None, timeout=IO_TIMEOUT):
        if path is not None:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(timeout)
            self.sock.connect(str(path))
        else:
            self.sock = socket.create_connection((HOST, port), timeout=timeout)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout
        self.buf = bytearray()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self.sock.close()

    def send(self, data):
        self.sock.sendall(data)

    def _fill(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no reply in {self.timeout}s; have {bytes(self.buf[:200])!r}")
        self.sock.settimeout(left)
        try:
            chunk = self.sock.recv(1 << 20)
        except socket.timeout:
            raise TimeoutError(f"no more bytes in {self.timeout}s; have {bytes(self.buf[:200])!r}") from None
        if not chunk:
            raise ConnectionError(f"connection closed; have {bytes(self.buf[:200])!r}")
        self.buf += chunk

    def _take(self, n):
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def recv_exact(self, n, timeout=None):
        deadline = time.monotonic() + (timeout or self.timeout)
        while len(self.buf) < n:
            self._fill(deadline)
        return self._take(n)

    def recv_until(self, needle, timeout=None):
        """Bytes up to and including the first needle."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            i = self.buf.find(needle)
            if i >= 0:
                return self._take(i + len(needle))
            self._fill(deadline)

    def line(self, timeout=None):
        return self.recv_until(b"\r\n", timeout)

    def reply(self, timeout=None):
        """The raw bytes of one RESP reply."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            if self.buf:
                end = resp_end(self.buf)
                if end is not None:
                    return self._take(end)
            self._fill(deadline)

    def call(self, *args):
        """Sends one RESP command and returns its decoded reply."""
        self.send(resp(*args))
        return resp_decode(self.reply())[0]

    def mc_get_reply(self, timeout=None):
        """The raw bytes of a memcached retrieval reply (VALUE blocks then END), or of an error line."""
        deadline = time.monotonic() + (timeout or self.timeout)
        out = bytearray()
        while True:
            left = max(deadline - time.monotonic(), 0.001)
            line = self.line(left)
            out += line
            if not line.startswith(b"VALUE "):
                return bytes(out)
            size = int(line.split()[3])
            out += self.recv_exact(size + 2, left)

    def expect(self, expected, timeout=None):
        """Reads len(expected) bytes and checks them."""
        got = self.recv_exact(len(expected), timeout)
        assert got == expected, f"expected {expected[:300]!r}, got {got[:300]!r}"

    def exchange(self, request, expected, timeout=None):
        self.send(request)
        self.expect(expected, timeout)

    def is_closed(self, timeout=None):
        """True when the peer closes (EOF or reset) within timeout seconds with no further bytes;
        raises if bytes arrive."""
        deadline = time.monotonic() + (timeout or self.timeout)
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


# ---------------------------------------------------------------------------------------------
# clients and clusters


def redis_client(port=None, path=None, **kw):
    """redis-py speaking RESP2 (the proxy, like twemproxy, has no HELLO) with bounded waits."""
    kw.setdefault("socket_timeout", IO_TIMEOUT)
    kw.setdefault("socket_connect_timeout", IO_TIMEOUT)
    if path is not None:
        return redis.Redis(unix_socket_path=str(path), protocol=2, **kw)
    return redis.Redis(host=HOST, port=port, protocol=2, **kw)


def mc_client(port=None, path=None, **kw):
    kw.setdefault("timeout", IO_TIMEOUT)
    kw.setdefault("connect_timeout", IO_TIMEOUT)
    kw.setdefault("default_noreply", False)  # wait for (and check) every reply
    server = str(path) if path is not None else (HOST, port)
    return pymemcache.client.base.Client(server, **kw)


def redis_clients(port):
    """The client connections a redis-server has (CLIENT LIST), without the one asking."""
    with RawConn(port) as c:
        text = c.call("CLIENT", "LIST").decode()
    return [line for line in text.splitlines() if "cmd=client|list" not in line]


def mc_stats(port):
    with RawConn(port) as c:
        c.send(b"stats\r\n")
        text = c.recv_until(b"END\r\n").decode()
    stats = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "STAT":
            stats[parts[1]] = parts[2]
    return stats


def mc_connections(port):
    """memcached's client connections, without the one asking for them."""
    return int(mc_stats(port)["curr_connections"]) - 1


def spread_keys(prefix, n):
    """n distinct keys that spread over the servers. Keys that differ only in a last digit
    ("k1", "k2", ...) have close fnv1a hashes and tend to land on one server; these differ in
    a hashed suffix. Deterministic for a prefix."""
    return [f"{prefix}:{hashlib.md5(f'{prefix}/{i}'.encode()).hexdigest()[:12]}" for i in range(n)]


@dataclass
class Cluster:
    """N backends of one kind ("redis" or "memcache") behind a one-pool proxy."""
    kind: str
    threads: int
    proxy: object
    ports: list
    procs: list
    pool: dict
    port: int = None       # the pool's listen port (None for a unix socket)
    path: Path = None      # the pool's unix socket
    backend_args: tuple = ()
    _direct: dict = field(default_factory=dict)

    @property
    def redis(self):
        return self.kind == "redis"

    def client(self, **kw):
        if self.redis:
            return redis_client(self.port, self.path, **kw)
        return mc_client(self.port, self.path, **kw)

    def raw(self, **kw):
        return RawConn(self.port, self.path, **kw)

    def direct(self, i):
        """A (cached) client straight to backend i, bypassing the proxy."""
        if i not in self._direct:
            self._direct[i] = (redis_client(self.ports[i], db=self.pool.get("redis_db", 0))
                               if self.redis else mc_client(self.ports[i]))
        return self._direct[i]

    def holder(self, key):
        """The indexes of the backends that hold key (memcached: asked with the meta command
        `mg`, which does not send the value back)."""
        if self.redis:
            return [i for i in range(len(self.ports)) if self.direct(i).exists(key)]
        return [i for i in range(len(self.ports)) if self.mc_size(i, key) is not None]

    def mc_size(self, i, key):
        """The size of key's value on memcached i, or None when it has no such key."""
        if ("raw", i) not in self._direct:
            self._direct[("raw", i)] = RawConn(self.ports[i])
        conn = self._direct[("raw", i)]
        conn.send(b"mg %s s\r\n" % key.encode())
        reply = conn.line()
        if reply == b"EN\r\n":
            return None
        assert reply.startswith(b"HD s"), reply
        return int(reply[4:-2])

    def place_keys(self, prefix, per_server):
        """per_server keys (written through the proxy) on each backend: a list, by server, of
        lists of keys. The keys hold their own name as value."""
        by_server = [[] for _ in self.ports]
        client = self.client()
        for key in spread_keys(prefix, 200 * len(self.ports) * per_server):
            if all(len(keys) >= per_server for keys in by_server):
                break
            client.set(key, key)
            (where,) = self.holder(key)
            if len(by_server[where]) < per_server:
                by_server[where].append(key)
        client.close()
        assert all(len(keys) == per_server for keys in by_server), by_server
        return by_server

    def pid(self):
        return self.proxy.pid

    def alive(self):
        return self.proxy.proc.poll() is None

    def stop(self):
        """Stops the proxy (SIGTERM) and the backends; returns the proxy's exit status."""
        for c in self._direct.values():
            c.close()
        self._direct.clear()
        rc = ncutil.stop_popen(self.proxy.proc)
        # the backends need no clean exit (memcached would take up to a second to notice SIGTERM)
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
        ncutil.stop_popens([self.proxy.proc, *self.procs])
        return rc


def start_cluster(kind, backends, threads, start_backend, write_conf, start_proxy, name,
                  backend_args=(), ports=None, listen=None, flags=(), **pool):
    """Starts `backends` backends with start_backend(args=backend_args) (or uses `ports`: backends
    already running or deliberately absent), writes a one-pool config (extra pool keys in
    **pool, listen on a free port or `listen`) and starts the proxy with -T threads."""
    procs = []
    if ports is None:
        ports = []
        for _ in range(backends):
            port, proc = start_backend(args=backend_args)
            ports.append(port)
            procs.append(proc)
    port = None
    path = None
    if listen is None:
        port = ncutil.free_port()
        listen = f"{HOST}:{port}"
    elif listen.startswith("/"):
        path = Path(listen.split()[0])
    conf = {"listen": listen, "redis": kind == "redis", **pool,
            "servers": [f"{HOST}:{p}:1" for p in ports]}
    conf_path = write_conf({name: conf}, name=f"{name}.yml")
    proxy = start_proxy(conf_path, "-T", str(threads), *flags, log_name=f"{name}.log")
    if path is not None:
        ncutil.wait_until(path.exists, ncutil.START_TIMEOUT, what=f"unix socket {path}")
    return Cluster(kind=kind, threads=threads, proxy=proxy, ports=ports, procs=procs, pool=pool,
                   port=port, path=path, backend_args=tuple(backend_args))


# ---------------------------------------------------------------------------------------------
# many clients at once


def run_clients(port, scripts, timeout=BIG_TIMEOUT):
    """Connects one socket per script (request bytes, expected reply bytes), then, all at once
    and without blocking, writes every request and reads until each client has as many bytes as
    expected. Returns {client index: bytes received} for each client whose bytes differ (a short
    or extra read included). Bounded by timeout seconds."""
    sel = selectors.DefaultSelector()
    states = []
    for i, (request, expected) in enumerate(scripts):
        s = socket.create_connection((HOST, port), timeout=IO_TIMEOUT)
        s.setblocking(False)
        st = {"i": i, "sock": s, "out": memoryview(request), "got": bytearray(),
              "want": len(expected), "eof": False}
        states.append(st)
        sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE, st)
    deadline = time.monotonic() + timeout
    open_count = len(states)
    try:
        while open_count and time.monotonic() < deadline:
            for key, events in sel.select(timeout=0.5):
                st = key.data
                s = st["sock"]
                if events & selectors.EVENT_WRITE and st["out"]:
                    try:
                        n = s.send(st["out"][:1 << 16])
                        st["out"] = st["out"][n:]
                    except BlockingIOError:
                        pass
                    if not st["out"]:
                        sel.modify(s, selectors.EVENT_READ, st)
                if events & selectors.EVENT_READ:
                    try:
                        chunk = s.recv(1 << 16)
                    except BlockingIOError:
                        continue
                    except ConnectionError:
                        chunk = b""
                    if chunk:
                        st["got"] += chunk
                    else:
                        st["eof"] = True
                    if st["eof"] or len(st["got"]) >= st["want"]:
                        sel.unregister(s)
                        open_count -= 1
    finally:
        for st in states:
            st["sock"].close()
        sel.close()
    return {st["i"]: bytes(st["got"]) for st in states
            if bytes(st["got"]) != scripts[st["i"]][1]}


def first_difference(got, expected, context=60):
    """A short description of where got departs from expected."""
    n = min(len(got), len(expected))
    i = next((k for k in range(n) if got[k] != expected[k]), n)
    return (f"at byte {i} of {len(expected)} (got {len(got)}): expected "
            f"{expected[max(i - context, 0):i + context]!r}, got {got[max(i - context, 0):i + context]!r}")


# ---------------------------------------------------------------------------------------------
# process metrics


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def rss_kb(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise KeyError("VmRSS")


def settle(measure, target, timeout, what):
    """Polls measure() (bounded) until it is <= target; returns the last value or raises."""
    last = {}

    def ok():
        last["v"] = measure()
        return last["v"] <= target

    try:
        ncutil.wait_until(ok, timeout, interval=0.1, what=what)
    except TimeoutError as e:
        raise AssertionError(f"{e}: last {last.get('v')}, target {target}") from None
    return last["v"]


def sanitized_binary():
    """True when the proxy under test is built with a sanitizer (RSS says little then: freed
    memory sits in quarantine)."""
    data = Path(ncutil.nutcrackers_bin()).read_bytes()
    return b"__asan_init" in data or b"__tsan_init" in data


def tsan_binary():
    """True when the proxy under test is a TSan build (hundreds of MB through it take minutes)."""
    return b"__tsan_init" in Path(ncutil.nutcrackers_bin()).read_bytes()


def digest(data):
    return hashlib.sha1(data).hexdigest()


def big_value(size, seed=b"nutcrackers"):
    """size bytes, deterministic and not compressible-looking, without CR/LF runs that matter."""
    block = hashlib.sha512(seed).digest() * 64  # 4 KiB
    reps = size // len(block) + 1
    return (block * reps)[:size]
