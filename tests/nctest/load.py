"""Load generation: Load, many self-checking clients of one pool driven by one selector thread
(cheap on a 2-core machine); run_clients(), many scripted clients sending fixed bytes at once;
run_threads(), a function run by n threads at once; drip(), a request sent a byte at a time;
storm(), many clients connecting at once, each with its own request.

Load: `nclients` connections to a pool (a TCP port, or a unix socket `path`), each with its own
keys. An exchange is SET key value + GET key (memcached: set + get), or `depth` such pairs on
different keys, or every `multi_every`-th exchange a multi-key write and read of all the client's
keys (MSET + MGET; memcached: the sets, then one get), with values no client ever used before.
pipeline=True sends an exchange in one write; pipeline=False sends each request after the reply
to the previous one (at most one request outstanding per client). A client pauses `pause`
seconds between exchanges.

Every reply is checked against what the client wrote and recorded as an Event: ok; error (an
error reply); miss (nil: the key is not where it is read); stale (an older value this client
wrote to the key, or the value of a SET that failed); wrong (a value this client never wrote to
the key, bytes that are no reply, a reply of the wrong type or with no request outstanding); hang
(no complete reply within `hang` seconds); closed (EOF or reset: `partial` says how many bytes of
the reply had come, `busy` whether a request was outstanding); connfail (a connect that failed).
strict=True (the default) takes only ok: any other outcome ends that client's connection, and
miss and stale count as wrong. strict=False lets errors, misses and stale values pass (a backend
fails on purpose); hang, closed and wrong still end the connection. An ended connection stays
closed (reconnects never hide a drop) unless reconnect=True; with churn=True every exchange uses
a fresh connection. Ok events are kept only with record_ok=True (a long strict run keeps only its
problems).

Bounded: every connect, reply and the stop have timeouts; stop() lets the exchanges in flight
finish (up to `hang` seconds), then closes every socket. Only 127.0.0.1.

Threads: a Load runs one thread; its record (events, per-client progress) is read from others
under its lock (problems_of, select, wait_progress ...). The clients' fields are written by that
thread only.
"""
import collections
import errno
import os
import random
import selectors
import socket
import threading
import time
import uuid

from . import codec, wait
from .codec import Err, Garbled
from .conn import IO_TIMEOUT, KvConn
from .keys import spread_keys
from .procs import HOST

HANG = 20.0           # seconds without the complete reply that count as a hang (sanitizer builds)
CONNECT_TIMEOUT = 10.0
RETRY_PAUSE = 0.05    # seconds before a client tries again after a failed connect

Event = collections.namedtuple("Event", "t0 t1 cid op keys kind detail it0 partial busy")
# t0, t1: the request's send and the end of its reply (or of the failure); it0: the start of the
# exchange it belongs to (a GET after a failed SET goes with that SET when events are selected
# by time); op: set, get, mset, mget, raw, connect, or None for an idle connection that ended

BAD = ("wrong", "hang", "closed", "connfail")


class _Op:
    """One request of an exchange and the replies it waits for."""
    __slots__ = ("name", "keys", "data", "ends", "vals", "t0", "replies")

    def __init__(self, name, keys, data, ends, vals):
        self.name, self.keys, self.data, self.ends, self.vals = name, keys, data, ends, vals
        self.t0 = 0.0
        self.replies = []


class _Client:
    def __init__(self, cid, keys, seed):
        self.cid = cid
        self.keys = keys
        self.rng = random.Random(seed)
        self.sock = None
        self.dead = False       # closed for good
        self.finished = False   # made its last exchange (exchanges limit)
        self.seq = 0
        self.busy = False       # an exchange is outstanding
        self.key = None         # the first key of the exchange outstanding (for messages)
        self.pairs = []         # its (key, value) writes
        self.set_ok = {}        # key -> whether its write in this exchange said OK
        self.clean = True       # every reply of this exchange so far was ok
        self.todo = collections.deque()      # requests not sent yet (pipeline=False)
        self.inflight = collections.deque()  # requests sent, replies awaited
        self.out = b""
        self.got = bytearray()
        self.raw = bytearray()  # every byte received (keep_bytes=True)
        self.t_sent = 0.0       # when the exchange outstanding began
        self.next_at = 0.0
        self.sent_at = []       # start of every exchange whose every reply was ok
        self.done_at = []       # start of every exchange that completed, whatever its replies
        self.connects = 0


class Load:
    def __init__(self, port=None, redis=True, nclients=50, nkeys=8, *, path=None, prefix="k",
                 pause=0.0, depth=1, multi_every=0, pipeline=True, strict=True, reconnect=False,
                 churn=False, hang=HANG, value_pad=0, record_ok=None, exchanges=None,
                 scripts=None, keep_bytes=False):
        self.port, self.path, self.redis = port, path, redis
        self.pause, self.depth, self.multi_every = pause, depth, multi_every
        self.pipeline, self.strict, self.reconnect, self.churn = pipeline, strict, reconnect, churn
        self.hang, self.value_pad, self.exchanges = hang, value_pad, exchanges
        self.record_ok = (not strict) if record_ok is None else record_ok
        self.scripts, self.keep_bytes = scripts, keep_bytes
        if scripts is not None:
            nclients, self.exchanges = len(scripts), 1
        self.tag = f"{prefix}{uuid.uuid4().hex[:6]}"
        self.clients = [_Client(cid, spread_keys(f"{self.tag}.{cid}", nkeys), cid)
                        for cid in range(nclients)]
        self.events = []
        self.written = [collections.defaultdict(set) for _ in range(nclients)]  # not strict
        self.confirmed = [dict() for _ in range(nclients)]  # key -> last value whose SET said OK
        self.latest = {}        # key -> the value of its last exchange that was all ok
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.thread = None
        self.sel = None
        self.where = f"port {port}" if path is None else f"socket {path}"

    # --- keys
    def keys_of(self, cid):
        return self.clients[cid].keys

    def all_keys(self):
        return [k for c in self.clients for k in c.keys]

    def fill(self):
        """Writes every key once (one connection, one request at a time) and checks it reads
        back; the values count as confirmed."""
        with KvConn(self.port, self.redis) as conn:
            for c in self.clients:
                for k in c.keys:
                    v = f"{self.tag}.{c.cid}.fill.{k}".encode()
                    assert conn.kv_set(k, v) is True, f"fill: SET {k} failed"
                    self.written[c.cid][k].add(v)
                    self.confirmed[c.cid][k] = v
                    assert conn.kv_get(k) == v, f"fill: {k} does not read back"
        return self

    # --- driving
    def start(self):
        self.sel = selectors.DefaultSelector()
        now = time.monotonic()
        for c in self.clients:
            c.next_at = now + self.pause * c.cid / len(self.clients)  # spread the first sends
            if not self.churn and not self._connect(c) and not self.reconnect:
                c.dead = True
        self.thread = threading.Thread(target=self._run, name=f"load:{self.where}", daemon=True)
        self.thread.start()
        return self

    def stop(self):
        """Lets the exchanges in flight finish (bounded), closes every connection."""
        self.stopping.set()
        if self.thread is not None:
            self.thread.join(self.hang + 10)
            assert not self.thread.is_alive(), f"the load on {self.where} did not stop"
        return self

    def _connect(self, c):
        t0 = time.monotonic()
        try:
            if self.path is None:
                s = socket.create_connection((HOST, self.port), timeout=CONNECT_TIMEOUT)
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            else:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.settimeout(CONNECT_TIMEOUT)
                try:
                    s.connect(str(self.path))
                except OSError:
                    s.close()
                    raise
        except OSError as e:
            self._record(c, Event(t0, time.monotonic(), c.cid, "connect", (), "connfail",
                                  repr(e), t0, 0, False))
            return False
        s.setblocking(False)
        c.sock = s
        c.connects += 1
        self.sel.register(s, selectors.EVENT_READ, c)
        return True

    def _close(self, c):
        if c.sock is not None:
            self.sel.unregister(c.sock)
            c.sock.close()
            c.sock = None
        c.busy = False
        c.todo.clear()
        c.inflight.clear()
        c.out = b""
        c.got = bytearray()

    def _record(self, c, event):
        if event.kind != "ok" or self.record_ok:
            with self.lock:
                self.events.append(event)

    def _fail(self, c, kind, detail):
        """A failure that ends the connection: recorded against the request awaited (if any)."""
        now = time.monotonic()
        op = c.inflight[0] if c.inflight else (c.todo[0] if c.todo else None)
        if self.scripts is not None and isinstance(detail, str):
            detail = bytes(c.raw)
        if op is None:
            event = Event(now, now, c.cid, None, (), kind, detail, now, len(c.got), c.busy)
        else:
            event = Event(op.t0 or now, now, c.cid, op.name, op.keys, kind, detail, c.t_sent,
                          len(c.got), c.busy)
        self._record(c, event)
        self._close(c)
        c.dead = not (self.reconnect or self.churn) or self.exchanges is not None
        c.next_at = now + self.pause

    # --- exchanges
    def _ops(self, c):
        """The requests of c's next exchange."""
        if self.scripts is not None:
            request, expected = self.scripts[c.cid]
            n = len(expected)
            return [_Op("raw", (), request, [lambda b, n=n: n if len(b) >= n else None],
                        (expected,))]
        c.seq += 1
        ops, pairs = [], []
        if self.multi_every and c.seq % self.multi_every == 0:
            pairs = [(k, self._value(c, j)) for j, k in enumerate(c.keys)]
            ks, vs = tuple(k for k, _ in pairs), tuple(v for _, v in pairs)
            if self.redis:
                ops.append(_Op("mset", ks, codec.resp("MSET", *[x for kv in pairs for x in kv]),
                               [codec.resp_end], vs))
                ops.append(_Op("mget", ks, codec.resp("MGET", *ks), [codec.resp_end], vs))
            else:
                ops.append(_Op("mset", ks, b"".join(codec.mc_store("set", k, v) for k, v in pairs),
                               [codec.mc_line_end] * len(pairs), vs))
                ops.append(_Op("mget", ks, codec.mc_get(*ks), [codec.mc_retrieval_end], vs))
        else:
            for j in range(self.depth):
                key = c.keys[(c.seq * self.depth + j) % len(c.keys)]
                value = self._value(c, j)
                pairs.append((key, value))
                if self.redis:
                    ops.append(_Op("set", (key,), codec.resp("SET", key, value),
                                   [codec.resp_end], (value,)))
                    ops.append(_Op("get", (key,), codec.resp("GET", key), [codec.resp_end],
                                   (value,)))
                else:
                    ops.append(_Op("set", (key,), codec.mc_store("set", key, value),
                                   [codec.mc_line_end], (value,)))
                    ops.append(_Op("get", (key,), codec.mc_get(key), [codec.mc_retrieval_end],
                                   (value,)))
        c.pairs = pairs
        if not self.strict:
            for k, v in pairs:
                self.written[c.cid][k].add(v)
        return ops

    def _value(self, c, j):
        value = f"{self.tag}.{c.cid}.{c.seq}.{j}."
        if self.value_pad:
            value += "x" * c.rng.randrange(self.value_pad)
        return value.encode()

    def _begin(self, c):
        ops = self._ops(c)
        c.key = ops[0].keys[0] if ops[0].keys else None
        c.set_ok = {}
        c.clean = True
        c.busy = True
        c.t_sent = time.monotonic()
        c.todo.extend(ops)
        self._send_next(c)

    def _send_next(self, c):
        """Sends the next request (pipeline=False) or all of them."""
        batch = list(c.todo) if self.pipeline else [c.todo[0]]
        now = time.monotonic()
        for op in batch:
            c.todo.popleft()
            op.t0 = now
            c.inflight.append(op)
        c.out += b"".join(op.data for op in batch)
        self._flush(c)

    def _flush(self, c):
        try:
            n = c.sock.send(c.out)
        except BlockingIOError:
            n = 0
        except OSError as e:
            self._fail(c, "closed", f"send: {e!r}")
            return
        c.out = c.out[n:]
        self.sel.modify(c.sock, selectors.EVENT_READ | (selectors.EVENT_WRITE if c.out else 0), c)

    def _readable(self, c):
        try:
            chunk = c.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError as e:
            self._fail(c, "closed", f"recv: {e!r}")
            return
        if not chunk:
            self._fail(c, "closed", "EOF")
            return
        if self.keep_bytes:
            c.raw += chunk
        c.got += chunk
        while c.got and c.sock is not None:
            if not c.inflight:
                self._fail(c, "wrong", f"bytes with no request outstanding: {bytes(c.got[:120])!r}")
                return
            op = c.inflight[0]
            try:
                end = op.ends[len(op.replies)](c.got)
            except Garbled as e:
                self._fail(c, "wrong", f"{op.name} {','.join(op.keys)[:60]}: {e}")
                return
            if end is None:
                return
            op.replies.append(bytes(c.got[:end]))
            del c.got[:end]
            if len(op.replies) == len(op.ends):
                c.inflight.popleft()
                if not self._done(c, op):
                    return

    def _done(self, c, op):
        """Judges a request whose replies are all in; False when that ended the connection."""
        now = time.monotonic()
        try:
            kind, detail = self._judge(c, op)
        except (Garbled, ValueError, IndexError) as e:
            kind, detail = "wrong", f"{op.name}: {e!r}"
        if kind != "ok":
            c.clean = False
        if self.strict and kind in ("miss", "stale"):
            kind = "wrong"
        self._record(c, Event(op.t0, now, c.cid, op.name, op.keys, kind, detail, c.t_sent,
                              len(c.got), True))
        if kind == "wrong" or (self.strict and kind != "ok"):
            self._close(c)
            c.dead = not (self.reconnect or self.churn) or self.exchanges is not None
            c.next_at = now + self.pause
            return False
        if c.todo and not c.inflight:
            self._send_next(c)
        elif not c.todo and not c.inflight:
            self._complete(c, now)
        return c.sock is not None

    def _complete(self, c, now):
        with self.lock:
            c.done_at.append(c.t_sent)
            if c.clean:
                c.sent_at.append(c.t_sent)
                self.latest.update(c.pairs)
        c.busy = False
        c.next_at = now + self.pause
        if self.exchanges is not None and len(c.done_at) >= self.exchanges:
            c.finished = True
            self._close(c)
            c.dead = True
        elif self.churn:
            self._close(c)

    def _judge(self, c, op):
        r = op.replies
        if op.name == "raw":
            return ("ok", None) if r[0] == op.vals[0] else ("wrong", r[0])
        if op.name in ("set", "mset"):
            if self.redis:
                got = codec.decode(r[0])
                ok = got == "OK"
                bad = got
            else:
                bad = next((line for line in r if line != b"STORED\r\n"), None)
                ok = bad is None
                bad = None if ok else (codec.mc_error(bad) or bad)
            for k, v in zip(op.keys, op.vals):
                c.set_ok[k] = ok
                if ok:
                    self.confirmed[c.cid][k] = v
            if ok:
                return "ok", None
            return ("error", str(bad)) if isinstance(bad, Err) else ("wrong", repr(bad))
        # get, mget
        if self.redis:
            got = codec.decode(r[0])
            if op.name == "get" and not isinstance(got, Err):
                got = [got]
        else:
            found = codec.mc_values(r[0])
            got = found if isinstance(found, Err) else \
                [found[k][1] if k in found else None for k in op.keys]
        if isinstance(got, Err):
            return "error", str(got)
        if not isinstance(got, list) or len(got) != len(op.keys):
            return "wrong", repr(got)[:200]
        kinds = [self._classify(c, k, g, v) for k, g, v in zip(op.keys, got, op.vals)]
        order = ("wrong", "error", "stale", "miss", "ok")  # the worst element names the event
        return min(kinds, key=lambda kd: order.index(kd[0]))

    def _classify(self, c, key, got, expect):
        if got is None:
            return "miss", f"{key}: nil"
        if not isinstance(got, bytes):
            return "wrong", f"{key}: {got!r}"
        if got == expect and c.set_ok.get(key):
            return "ok", None
        if got in self.written[c.cid][key]:
            return "stale", f"{key}: {got[:80].decode(errors='replace')}"
        return "wrong", f"{key}: expected {expect[:80]!r}, got {got[:80]!r}"

    def _run(self):
        stop_deadline = None
        try:
            while True:
                now = time.monotonic()
                if self.stopping.is_set() and stop_deadline is None:
                    stop_deadline = now + self.hang
                wake = now + 0.05
                busy = 0
                for c in self.clients:
                    if c.busy:
                        busy += 1
                        op = c.inflight[0] if c.inflight else None
                        if op is not None and now - op.t0 > self.hang:
                            self._fail(c, "hang", f"{op.name} {','.join(op.keys)[:60]}: "
                                                  f"{len(c.got)} bytes of the reply")
                    elif c.dead or stop_deadline is not None:
                        continue
                    elif c.next_at <= now:
                        if c.sock is not None or self._connect(c):
                            self._begin(c)
                            busy += c.busy
                        else:
                            c.next_at = now + max(self.pause, RETRY_PAUSE)
                    else:
                        wake = min(wake, c.next_at)
                if stop_deadline is not None and (busy == 0 or now > stop_deadline):
                    break
                if self.exchanges is not None and all(c.dead for c in self.clients):
                    break
                for key, events in self.sel.select(max(wake - time.monotonic(), 0)):
                    c = key.data
                    if c.sock is None:
                        continue
                    if events & selectors.EVENT_WRITE and c.out:
                        self._flush(c)
                    if c.sock is not None and events & selectors.EVENT_READ:
                        self._readable(c)
        finally:
            for c in self.clients:
                if c.busy:
                    self._fail(c, "hang", "still outstanding when the load stopped")
                self._close(c)
                c.dead = True
            self.sel.close()

    # --- reading the record (safe while it runs)
    def all_events(self):
        with self.lock:
            events = list(self.events)
        return sorted(events, key=lambda e: e.t0)

    def problems_of(self, kinds=None, cids=None):
        with self.lock:
            return [e for e in self.events if e.kind != "ok" and
                    (kinds is None or e.kind in kinds) and (cids is None or e.cid in cids)]

    def select(self, kinds=None, t_from=None, t_to=None, end_by=None, touching=None,
               not_touching=None):
        """Events by kind, by the start of their exchange in [t_from, t_to), ended before end_by,
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

    def busy_clients(self):
        return [c.cid for c in self.clients if c.busy]

    def open_clients(self):
        return [c.cid for c in self.clients if not c.dead]

    def wait_progress(self, each=3, since=None, timeout=30.0, ok=True):
        """Waits (bounded) until every client still open has had `each` exchanges that began at
        or after `since` (default: now; a time still to come works too) and were answered
        exactly (ok=False: answered at all, whatever the replies); raises AssertionError with the
        laggards and problems."""
        since = time.monotonic() if since is None else since
        lagging = []

        def done():
            with self.lock:
                lagging[:] = [c.cid for c in self.clients if not c.dead and
                              sum(1 for t in (c.sent_at if ok else c.done_at) if t >= since) < each]
            return not lagging

        try:
            wait.wait_for(done, timeout, f"{each} exchanges of every client on {self.where}")
        except TimeoutError as e:
            raise AssertionError(f"{e}: clients {lagging[:10]} ({len(lagging)}) lag; problems: "
                                 f"{describe(self.problems_of())}") from None

    def wait_events(self, n, what, timeout=30.0, **selection):
        """Waits (bounded) until select(**selection) holds at least n events; returns them."""
        found = []

        def enough():
            found[:] = self.select(**selection)
            return len(found) >= n

        wait.wait_for(enough, timeout, f"{n} events: {what}")
        return found

    def assert_clean(self, what=""):
        bad = self.problems_of()
        assert not bad, f"load on {self.where} {what}: {len(bad)} problems:\n{describe(bad)}"


def describe(events, limit=8):
    """A short text of some events for assertion messages."""
    lines = [f"{e.t0:.3f} client {e.cid} {e.op} {','.join(e.keys)[:40]} {e.kind} "
             f"({(e.t1 - e.t0) * 1000:.0f} ms, busy={e.busy}, {e.partial} reply bytes): "
             f"{e.detail!r:.200}" for e in events[:limit]]
    more = f"\n... and {len(events) - limit} more" if len(events) > limit else ""
    return "\n".join(lines) + more


def start_clients(port, scripts, timeout=60.0):
    """Connects one socket per script (request bytes, expected reply bytes), then, all at once
    and without blocking, writes every request and reads until each client has as many bytes as
    expected (or its connection ends), in the background. Bounded by timeout seconds a client.
    finish_clients() gives the outcome."""
    return Load(port, scripts=scripts, hang=timeout, keep_bytes=True).start()


def finish_clients(load):
    """Waits for start_clients' clients to end; returns {client index: bytes received} for each
    client whose bytes differ from its script's (a short or extra read included)."""
    try:
        wait.wait_for(lambda: not load.thread.is_alive(), load.hang + 10,
                      f"{len(load.scripts)} scripted clients on {load.where}", scaled=False)
    finally:
        load.stop()
    return {c.cid: bytes(c.raw) for c in load.clients if bytes(c.raw) != load.scripts[c.cid][1]}


def run_clients(port, scripts, timeout=60.0):
    """start_clients, then finish_clients."""
    return finish_clients(start_clients(port, scripts, timeout))


def first_difference(got, expected, context=60):
    """A short description of where got departs from expected."""
    n = min(len(got), len(expected))
    i = next((k for k in range(n) if got[k] != expected[k]), n)
    return (f"at byte {i} of {len(expected)} (got {len(got)}): expected "
            f"{expected[max(i - context, 0):i + context]!r}, got {got[max(i - context, 0):i + context]!r}")


def run_threads(n, body, timeout=60.0):
    """Runs body(i) for i in range(n), each in its own thread, all at once; raises
    AssertionError with what failed (and if any did not end within timeout seconds)."""
    errors = []

    def run(i):
        try:
            body(i)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(f"thread {i}: {e!r}")

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    end = time.monotonic() + timeout
    for t in threads:
        t.join(max(end - time.monotonic(), 0.1))
    alive = sum(t.is_alive() for t in threads)
    assert not errors and not alive, f"{alive} threads still running; errors: {errors[:8]}"


def drip(send, data, pause=0.001):
    """Sends data one byte per write, `pause` seconds apart, so that the proxy gets them one read
    at a time."""
    for i in range(len(data)):
        send(data[i:i + 1])
        wait.pace(pause)


def witness(port, timeout=IO_TIMEOUT):
    """A well-behaved redis client on its own connection: a SET then a GET of a fresh value must
    come back exactly."""
    key, val = f"witness:{uuid.uuid4().hex}", uuid.uuid4().hex
    with KvConn(port, True, timeout=timeout) as c:
        c.exchange(codec.resp("SET", key, val) + codec.resp("GET", key),
                   b"+OK\r\n" + codec.bulk(val))


StormClient = collections.namedtuple("StormClient", "got closed error")
# got: the bytes received; closed: the proxy closed (EOF) or reset the connection; error: the
# OSError of a connect or send that failed, else None


def storm(port, scripts, timeout=60.0):
    """A connection storm: one client per script (request bytes, expected reply bytes), their
    connects issued back to back without waiting (non-blocking), each writing its request as soon
    as its connect completes and reading until it has as many bytes as expected or its connection
    ends. Every connection stays open until all clients have ended (a client served keeps its
    place under client_connections, so none is freed for a later one) or `timeout` seconds
    (scaled) have passed; then all are closed. Returns a StormClient per script, in order; a client
    still short of its bytes at the deadline has closed=False."""
    sel = selectors.DefaultSelector()
    socks = [None] * len(scripts)
    out = [request for request, _ in scripts]
    got = [bytearray() for _ in scripts]
    closed = [False] * len(scripts)
    error = [None] * len(scripts)
    pending = set()

    def end(i, failure=None, eof=False):
        sel.unregister(socks[i])
        pending.discard(i)
        closed[i] = eof
        error[i] = failure

    try:
        for i in range(len(scripts)):
            s = socks[i] = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            rc = s.connect_ex((HOST, port))
            sel.register(s, selectors.EVENT_WRITE, i)
            pending.add(i)
            if rc not in (0, errno.EINPROGRESS):
                end(i, OSError(rc, os.strerror(rc)))
        limit = wait.deadline(timeout)
        while pending and time.monotonic() < limit:
            for key, events in sel.select(min(limit - time.monotonic(), 0.5)):
                i, s = key.data, key.fileobj
                if events & selectors.EVENT_WRITE:
                    rc = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    if rc:
                        end(i, OSError(rc, os.strerror(rc)))
                        continue
                    try:
                        out[i] = out[i][s.send(out[i]):]
                    except BlockingIOError:
                        pass
                    except OSError as e:
                        end(i, e)
                        continue
                    if not out[i]:
                        sel.modify(s, selectors.EVENT_READ, i)
                elif events & selectors.EVENT_READ:
                    try:
                        chunk = s.recv(65536)
                    except BlockingIOError:
                        continue
                    except OSError:  # a reset: closed as well (what came before it is in got)
                        chunk = b""
                    got[i] += chunk
                    if not chunk:
                        end(i, eof=True)
                    elif len(got[i]) >= len(scripts[i][1]):
                        end(i)
    finally:
        for s in socks:
            if s is not None:
                s.close()
        sel.close()
    return [StormClient(bytes(g), c, e) for g, c, e in zip(got, closed, error)]
