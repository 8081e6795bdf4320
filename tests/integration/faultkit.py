"""Fault-injection kit for test_faults.py: raw protocol clients, a concurrent self-checking load,
which backend holds which key, raw-socket fake backends, and the proxy's open descriptors.

The clients speak the wire protocols over plain sockets (redis RESP2, memcached ASCII): no hidden
retries, no HELLO, no reconnects but the ones a test asks for, and every read bounded by a socket
timeout, so "what the proxy sent back" is exactly what a test sees.

Threads: a Load runs one thread per client; a FakeBackend one accept thread plus one per
connection. Every thread stops on its object's stop() and is joined with a bound. Only 127.0.0.1.
"""
import collections
import os
import socket
import threading
import time

import ncmanage
from ncutil import HOST

CLIENT_TIMEOUT = 5.0  # seconds without a reply that count as a hang (> any test's timeout)


class Err(str):
    """An error reply: its line without CRLF ('-ERR x' reads as 'ERR x'; 'SERVER_ERROR x')."""


class Closed(Exception):
    """The proxy closed the connection."""


class Hang(Exception):
    """No (complete) reply within the client's timeout."""


class Garbled(Exception):
    """Bytes that are not a reply of the protocol."""


class _Conn(ncmanage.Conn):
    """ncmanage's raw client socket, with this module's outcomes: Hang for a read that times out,
    Closed for a connection the proxy closed or reset."""

    def __init__(self, port, timeout=CLIENT_TIMEOUT):
        super().__init__(port, timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _fill(self):
        try:
            super()._fill()
        except socket.timeout as e:
            raise Hang("no reply") from e
        except ConnectionError as e:  # EOF (ncmanage's) or a reset
            raise Closed(str(e)) from e

    def line(self):
        return self._line()

    def exact(self, n):
        return self._exact(n)

    def send(self, data):
        try:
            super().send(data)
        except ConnectionError as e:
            raise Closed("send failed") from e


resp_encode = ncmanage.resp


class RespConn(_Conn):
    """A redis (RESP2) client: call(*args) -> str (status), Err, int, bytes, None or list."""

    def read(self):
        line = self.line()
        kind, rest = line[:1], line[1:]
        try:
            if kind == b"+":
                return rest.decode()
            if kind == b"-":
                return Err(rest.decode(errors="replace"))
            if kind == b":":
                return int(rest)
            if kind == b"$":
                n = int(rest)
                if n < 0:
                    return None
                data = self.exact(n + 2)
                if data[-2:] != b"\r\n":
                    raise Garbled(f"bulk of {n} bytes not followed by CRLF")
                return data[:-2]
            if kind == b"*":
                n = int(rest)
                return None if n < 0 else [self.read() for _ in range(n)]
        except ValueError as e:
            raise Garbled(f"bad length in {line!r}") from e
        raise Garbled(f"not a RESP reply: {line!r}")

    def call(self, *args):
        self.send(resp_encode(*args))
        return self.read()

    # the interface a Load client uses: set -> True or Err; get -> bytes, None or Err;
    # mset -> True or Err; mget -> list or Err
    def kv_set(self, key, value):
        r = self.call("SET", key, value)
        return True if r == "OK" else r

    def kv_get(self, key):
        return self.call("GET", key)

    def kv_mset(self, pairs):
        r = self.call("MSET", *[x for kv in pairs for x in kv])
        return True if r == "OK" else r

    def kv_mget(self, keys):
        return self.call("MGET", *keys)


MC_ERRORS = (b"SERVER_ERROR", b"CLIENT_ERROR", b"ERROR")


class McConn(_Conn):
    """A memcached ASCII client with the same kv_* interface as RespConn (kv_mset: one set each)."""

    def _error_or_garbled(self, line):
        if line.startswith(MC_ERRORS):
            return Err(line.decode(errors="replace"))
        raise Garbled(f"unexpected memcached reply line {line!r}")

    def kv_set(self, key, value):
        value = value if isinstance(value, bytes) else value.encode()
        self.send(b"set %s 0 0 %d\r\n%s\r\n" % (key.encode(), len(value), value))
        line = self.line()
        return True if line == b"STORED" else self._error_or_garbled(line)

    def kv_mget(self, keys):
        """A list of values (None = missing) in key order, or Err. An error after some values
        (a partial reply) is Garbled: the proxy must answer a failed multi-get with one error."""
        self.send(b"get %s\r\n" % b" ".join(k.encode() for k in keys))
        found = {}
        while True:
            line = self.line()
            if line == b"END":
                return [found.get(k) for k in keys]
            if line.startswith(b"VALUE "):
                parts = line.split()
                if len(parts) < 4:
                    raise Garbled(f"bad VALUE line {line!r}")
                data = self.exact(int(parts[3]) + 2)
                if data[-2:] != b"\r\n":
                    raise Garbled("value not followed by CRLF")
                found[parts[1].decode()] = data[:-2]
                continue
            err = self._error_or_garbled(line)
            if found:
                raise Garbled(f"{len(found)} values, then {line!r}")
            return err

    def kv_get(self, key):
        r = self.kv_mget([key])
        return r if isinstance(r, Err) else r[0]

    def kv_mset(self, pairs):
        for k, v in pairs:
            r = self.kv_set(k, v)
            if r is not True:
                return r
        return True


def client_class(redis):
    return RespConn if redis else McConn


Event = collections.namedtuple("Event", "t0 t1 cid op keys kind detail it0")
# t0, t1: the command's start and end; it0: the start of the loop it belongs to (a GET after a
# failed SET belongs with that SET when events are selected by time)
# kind: ok | error (an error reply) | miss (nil: the key is not where it is read) | stale (an older
# value this client wrote to the key, or the value of a SET that failed) | wrong (a value this
# client never wrote to the key, or a reply of the wrong type) | hang | closed | connfail


class Load:
    """`nclients` concurrent clients, each on its own connection with its own keys. Each loop: SET
    key to a value never used before, GET it back; every `multi_every` loops a multi-key write and
    read of all its keys. Every reply is checked against what the client wrote and recorded as an
    Event; a hang or a closed connection is recorded and the client reconnects."""

    def __init__(self, port, redis, nclients=50, nkeys=8, multi_every=0, pause=0.0,
                 prefix="k"):
        self.port, self.redis, self.nclients, self.nkeys = port, redis, nclients, nkeys
        self.multi_every, self.pause, self.prefix = multi_every, pause, prefix
        self.events = [[] for _ in range(nclients)]
        self.written = [collections.defaultdict(set) for _ in range(nclients)]  # key -> values
        self.confirmed = [dict() for _ in range(nclients)]  # key -> last value whose SET said OK
        self.current = [("", (), 0.0)] * nclients  # per client: (op, keys, t0) of the command
        self.it0 = [0.0] * nclients  # per client: when its current loop began
        self.stop_flag = threading.Event()
        self.threads = []

    def keys_of(self, cid):
        return [f"{self.prefix}{cid}-{i}" for i in range(self.nkeys)]

    def all_keys(self):
        return [k for cid in range(self.nclients) for k in self.keys_of(cid)]

    def start(self):
        self.stop_flag.clear()
        self.threads = [threading.Thread(target=self._run, args=(cid,), daemon=True)
                        for cid in range(self.nclients)]
        for t in self.threads:
            t.start()
        return self

    def stop(self):
        self.stop_flag.set()
        for t in self.threads:
            t.join(CLIENT_TIMEOUT + 2)
        alive = [t for t in self.threads if t.is_alive()]
        assert not alive, f"{len(alive)} load clients did not stop"

    def run_for(self, seconds):
        self.start()
        time.sleep(seconds)
        self.stop()

    def fill(self):
        """Writes every key once (one connection, sequential) and checks it reads back."""
        with client_class(self.redis)(self.port) as c:
            for cid in range(self.nclients):
                for k in self.keys_of(cid):
                    v = f"{cid}.fill.{k}"
                    assert c.kv_set(k, v) is True, f"fill: SET {k} failed"
                    self.written[cid][k].add(v.encode())
                    self.confirmed[cid][k] = v.encode()
                    assert c.kv_get(k) == v.encode(), f"fill: {k} does not read back"

    def _classify(self, cid, key, got, expect, set_ok):
        if isinstance(got, Err):
            return "error", str(got)
        if got is None:
            return "miss", None
        if not isinstance(got, bytes):
            return "wrong", repr(got)
        if got == expect and set_ok:
            return "ok", None
        if got in self.written[cid][key]:
            return "stale", got.decode(errors="replace")
        return "wrong", got.decode(errors="replace")

    def _run(self, cid):
        conn = None
        keys = self.keys_of(cid)
        seq = 0
        while not self.stop_flag.is_set():
            if conn is None:
                t0 = time.monotonic()
                try:
                    conn = client_class(self.redis)(self.port)
                except OSError as e:
                    self.it0[cid] = t0
                    self._add(cid, t0, time.monotonic(), "connect", (), "connfail", str(e))
                    self.stop_flag.wait(0.05)
                    continue
            seq += 1
            self.it0[cid] = time.monotonic()
            try:
                if self.multi_every and seq % self.multi_every == 0:
                    self._multi(conn, cid, keys, seq)
                else:
                    self._single(conn, cid, keys[seq % len(keys)], seq)
            except (Hang, Closed, Garbled, OSError) as e:
                kind = {Hang: "hang", Closed: "closed", Garbled: "wrong"}.get(type(e), "closed")
                op, ckeys, t0 = self.current[cid]
                self._add(cid, t0, time.monotonic(), op, ckeys, kind, repr(e))
                conn.close()
                conn = None
            if self.pause:
                self.stop_flag.wait(self.pause)
        if conn is not None:
            conn.close()

    def _add(self, cid, t0, t1, op, keys, kind, detail):
        self.events[cid].append(Event(t0, t1, cid, op, keys, kind, detail, self.it0[cid]))

    def _begin(self, cid, op, keys):
        t0 = time.monotonic()
        self.current[cid] = (op, keys, t0)
        return t0

    def _single(self, conn, cid, key, seq):
        val = f"{cid}.{seq}.{key}".encode()
        self.written[cid][key].add(val)
        t0 = self._begin(cid, "set", (key,))
        r = conn.kv_set(key, val)
        t1 = time.monotonic()
        set_ok = r is True
        if set_ok:
            self.confirmed[cid][key] = val
            self._add(cid, t0, t1, "set", (key,), "ok", None)
        elif isinstance(r, Err):
            self._add(cid, t0, t1, "set", (key,), "error", str(r))
        else:
            self._add(cid, t0, t1, "set", (key,), "wrong", repr(r))
        t0 = self._begin(cid, "get", (key,))
        got = conn.kv_get(key)
        kind, detail = self._classify(cid, key, got, val, set_ok)
        self._add(cid, t0, time.monotonic(), "get", (key,), kind, detail)

    def _multi(self, conn, cid, keys, seq):
        vals = [f"{cid}.{seq}.{k}.m".encode() for k in keys]
        for k, v in zip(keys, vals):
            self.written[cid][k].add(v)
        t0 = self._begin(cid, "mset", tuple(keys))
        r = conn.kv_mset(list(zip(keys, vals)))
        t1 = time.monotonic()
        set_ok = r is True
        if set_ok:
            for k, v in zip(keys, vals):
                self.confirmed[cid][k] = v
        kind = "ok" if set_ok else ("error" if isinstance(r, Err) else "wrong")
        self._add(cid, t0, t1, "mset", tuple(keys), kind, None if set_ok else str(r))
        t0 = self._begin(cid, "mget", tuple(keys))
        got = conn.kv_mget(keys)
        t1 = time.monotonic()
        if isinstance(got, Err):
            self._add(cid, t0, t1, "mget", tuple(keys), "error", str(got))
            return
        if not isinstance(got, list) or len(got) != len(keys):
            self._add(cid, t0, t1, "mget", tuple(keys), "wrong", repr(got))
            return
        kinds = [self._classify(cid, k, g, v, set_ok) for k, g, v in zip(keys, got, vals)]
        order = ("wrong", "error", "stale", "miss", "ok")  # the worst element names the event
        worst = min(kinds, key=lambda kd: order.index(kd[0]))
        self._add(cid, t0, t1, "mget", tuple(keys), worst[0], worst[1])

    # --- reading the record
    def all_events(self):
        return sorted((e for evs in self.events for e in evs), key=lambda e: e.t0)

    def select(self, kinds=None, t_from=None, t_to=None, end_by=None, touching=None,
               not_touching=None):
        """Events by kind, by the start of their loop in [t_from, t_to), ended before end_by,
        and by whether they touch (any of) a set of keys."""
        out = []
        for e in self.all_events():
            if kinds is not None and e.kind not in kinds:
                continue
            if t_from is not None and e.it0 < t_from:
                continue
            if t_to is not None and e.it0 >= t_to:
                continue
            if end_by is not None and e.t1 >= end_by:
                continue
            if touching is not None and not any(k in touching for k in e.keys):
                continue
            if not_touching is not None and any(k in not_touching for k in e.keys):
                continue
            out.append(e)
        return out

    def count(self, **kw):
        return collections.Counter(e.kind for e in self.select(**kw))


def describe(events, limit=8):
    """A short text of some events for assertion messages."""
    lines = [f"{e.t0:.3f} {e.op} {','.join(e.keys)[:40]} {e.kind} {e.detail} "
             f"({(e.t1 - e.t0) * 1000:.0f} ms)"
             for e in events[:limit]]
    more = f"\n... and {len(events) - limit} more" if len(events) > limit else ""
    return "\n".join(lines) + more


def backend_keys(port, redis, candidates):
    """Which of `candidates` the backend on port holds, read directly (not through the proxy):
    {key: value}."""
    out = {}
    if redis:
        with RespConn(port) as c:
            present = {k.decode() for k in c.call("KEYS", "*")}
            wanted = [k for k in candidates if k in present]
            for i in range(0, len(wanted), 100):
                chunk = wanted[i:i + 100]
                out.update(zip(chunk, c.call("MGET", *chunk)))
    else:
        with McConn(port) as c:
            for i in range(0, len(candidates), 50):
                chunk = candidates[i:i + 50]
                out.update((k, v) for k, v in zip(chunk, c.kv_mget(chunk)) if v is not None)
    return out


def owners(ports, redis, keys):
    """{key: index in ports of the backend that holds it}; asserts each key is on exactly one."""
    where = {}
    for i, port in enumerate(ports):
        for k in backend_keys(port, redis, keys):
            assert k not in where, f"{k} is on two backends"
            where[k] = i
    missing = [k for k in keys if k not in where]
    assert not missing, f"keys on no backend: {missing[:5]}"
    return where


def open_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


TCP_STATES = {"01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1",
              "05": "FIN_WAIT2", "06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT",
              "09": "LAST_ACK", "0A": "LISTEN", "0B": "CLOSING"}


def _tcp_sockets():
    """{socket inode: (state, local port, remote port)} from /proc/net/tcp{,6}."""
    table = {}
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(path).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            table[f[9]] = (TCP_STATES.get(f[3], f[3]), int(f[1].rsplit(":", 1)[1], 16),
                           int(f[2].rsplit(":", 1)[1], 16))
    return table


def proxy_fds(pid):
    """The open descriptors of pid: [(fd, ("tcp", state, local port, remote port, inode))] for
    TCP sockets, [(fd, ("other", link target))] for the rest (pipes, eventfds, epoll, files)."""
    tcp = _tcp_sockets()
    out = []
    for fd in sorted(os.listdir(f"/proc/{pid}/fd"), key=int):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        inode = target[8:-1] if target.startswith("socket:[") else None
        out.append((int(fd), ("tcp", *tcp[inode], inode) if inode in tcp else ("other", target)))
    return out


class FakeBackend:
    """A raw-socket backend on 127.0.0.1 (port 0: a free one). `serve(sock, fake)` runs in a thread
    per accepted connection; accepted/closed_by_peer count connections."""

    def __init__(self, serve, port=0, rcvbuf=None):
        self.serve = serve
        self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if rcvbuf:
            self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.lsock.bind((HOST, port))
        self.lsock.listen(128)
        self.lsock.settimeout(0.05)
        self.port = self.lsock.getsockname()[1]
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.accepted = 0
        self.closed_by_peer = 0
        self.received = 0
        self.threads = []
        self.acceptor = threading.Thread(target=self._accept_loop, daemon=True)
        self.acceptor.start()

    def _accept_loop(self):
        while not self.stopping.is_set():
            try:
                s, _ = self.lsock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            with self.lock:
                self.accepted += 1
            s.settimeout(0.05)
            t = threading.Thread(target=self._serve_one, args=(s,), daemon=True)
            self.threads.append(t)
            t.start()

    def _serve_one(self, s):
        try:
            self.serve(s, self)
        except OSError:
            pass
        finally:
            s.close()

    def recv(self, s, n=65536):
        """One read: bytes, b"" at the peer's EOF (counted), None when nothing came."""
        try:
            data = s.recv(n)
        except socket.timeout:
            return None
        except ConnectionResetError:
            data = b""
        if not data:
            with self.lock:
                self.closed_by_peer += 1
            return b""
        with self.lock:
            self.received += len(data)
        return data

    def stop(self):
        self.stopping.set()
        self.acceptor.join(2)
        self.lsock.close()
        for t in self.threads:
            t.join(2)
        assert not self.acceptor.is_alive() and not any(t.is_alive() for t in self.threads), \
            "fake backend threads did not stop"


def serve_close_at_once(s, fake):
    """Accepts and closes at once."""


def serve_read_then_close(s, fake):
    """Reads a request, then closes without answering (EOF with a request outstanding)."""
    while not fake.stopping.is_set():
        data = fake.recv(s)
        if data is not None:
            return


def serve_garbage(reply):
    """Answers every read with `reply` (not a reply of the protocol); serves until the peer
    closes."""

    def serve(s, fake):
        while not fake.stopping.is_set():
            data = fake.recv(s)
            if data == b"":
                return
            if data:
                s.sendall(reply)

    return serve


def serve_paced(rate, unit, reply):
    """Reads at most `rate` bytes a second and answers `reply` for every `unit` bytes read (each
    request the test sends is exactly `unit` bytes long)."""

    def serve(s, fake):
        start = time.monotonic()
        got = 0
        answered = 0
        while not fake.stopping.is_set():
            allowed = int((time.monotonic() - start) * rate) - got
            if allowed <= 0:
                time.sleep(0.005)
                continue
            data = fake.recv(s, min(allowed, 65536))
            if data == b"":
                return
            if not data:
                continue
            got += len(data)
            done = got // unit
            if done > answered:
                s.sendall(reply * (done - answered))
                answered = done

    return serve
