"""A steady, self-checking client load for the reload tests (test_reload.py).

SteadyLoad: `nclients` raw-socket clients of one pool (a TCP port, or a unix socket `path`), all
driven by one selector thread (cheap on a 2-core machine). Each exchange is one write of SET key
value + GET key (memcached: set + get), or of `depth` such pairs on different keys (a pipeline),
with values no client ever used before, and the reply bytes must be exactly "+OK" and that value
(STORED, VALUE ... END) for each pair. So a reply meant for another client, or a SET and its GET
routed by two different configs, shows as a wrong reply. A client pauses `pause` seconds between
exchanges.

Outcomes: every exchange that got its exact reply is counted (with when it was sent); anything
else is a Problem and ends that client's connection: "wrong" (bytes that are not the expected
reply), "error" (an error reply), "closed" (EOF or reset; `partial` says how many bytes of the
reply had come, `busy` whether a request was outstanding), "hang" (no complete reply within
`hang` seconds). A closed client stays closed, so reconnects never hide a drop; with churn=True,
instead, every exchange uses a fresh connection (a failed connect is a "connfail" Problem, and the
client tries again after its pause).

Bounded: every connect and the stop have timeouts; stop() lets the exchanges in flight finish
(up to `hang` seconds), then closes every socket. Only 127.0.0.1.
"""
import collections
import selectors
import socket
import threading
import time
import uuid

import ncproxy
from ncutil import HOST

HANG = 20.0           # seconds without the complete reply that count as a hang (sanitizer builds)
CONNECT_TIMEOUT = 10.0

Problem = collections.namedtuple("Problem", "t cid kind detail partial busy")


class _Client:
    def __init__(self, cid, keys):
        self.cid = cid
        self.keys = keys
        self.sock = None
        self.dead = False       # closed for good (not churn)
        self.seq = 0
        self.busy = False       # an exchange is outstanding
        self.key = None         # the first key of the exchange outstanding (for messages)
        self.pairs = []         # its (key, value) pairs
        self.out = b""
        self.expect = b""
        self.got = bytearray()
        self.t_sent = 0.0
        self.next_at = 0.0
        self.sent_at = []       # send time of every exchange that got its exact reply
        self.connects = 0


class SteadyLoad:
    def __init__(self, port, redis=True, nclients=50, nkeys=8, pause=0.02, prefix="k",
                 churn=False, hang=HANG, depth=1, path=None):
        self.port, self.redis, self.pause, self.churn, self.hang = port, redis, pause, churn, hang
        self.depth, self.path = depth, path
        self.tag = f"{prefix}{uuid.uuid4().hex[:6]}"
        self.clients = [_Client(cid, ncproxy.spread_keys(f"{self.tag}.{cid}", nkeys))
                        for cid in range(nclients)]
        self.problems = []
        self.latest = {}        # key -> the value of its last exchange that got its exact reply
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.thread = None
        self.sel = None

    # --- driving
    def start(self):
        self.sel = selectors.DefaultSelector()
        now = time.monotonic()
        for c in self.clients:
            c.next_at = now + self.pause * c.cid / len(self.clients)  # spread the first sends
            if not self.churn and not self._connect(c):
                c.dead = True
        self.thread = threading.Thread(target=self._run, name=f"load:{self.port}", daemon=True)
        self.thread.start()
        return self

    def stop(self):
        """Lets the exchanges in flight finish (bounded), closes every connection."""
        self.stopping.set()
        if self.thread is not None:
            self.thread.join(self.hang + 10)
            assert not self.thread.is_alive(), f"the load on port {self.port} did not stop"
        return self

    def _connect(self, c):
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
            self._problem(c, "connfail", repr(e))
            return False
        s.setblocking(False)
        c.sock = s
        c.connects += 1
        self.sel.register(s, selectors.EVENT_READ, c)
        return True

    def _close(self, c, dead):
        if c.sock is not None:
            self.sel.unregister(c.sock)
            c.sock.close()
            c.sock = None
        c.busy = False
        c.dead = dead

    def _problem(self, c, kind, detail):
        with self.lock:
            self.problems.append(Problem(time.monotonic(), c.cid, kind, detail, len(c.got), c.busy))

    def _fail(self, c, kind, detail):
        self._problem(c, kind, detail)
        self._close(c, dead=not self.churn)

    def _request(self, c):
        c.seq += 1
        c.pairs = [(c.keys[(c.seq * self.depth + j) % len(c.keys)],
                    f"{self.tag}.{c.cid}.{c.seq}.{j}".encode()) for j in range(self.depth)]
        c.key = c.pairs[0][0]
        out, expect = [], []
        for key, value in c.pairs:
            k = key.encode()
            if self.redis:
                out.append(ncproxy.resp("SET", k, value) + ncproxy.resp("GET", k))
                expect.append(b"+OK\r\n" + ncproxy.bulk(value))
            else:
                out.append(ncproxy.mc_store("set", key, value) + b"get %s\r\n" % k)
                expect.append(b"STORED\r\n" + ncproxy.mc_value(key, value) + b"END\r\n")
        c.out, c.expect = b"".join(out), b"".join(expect)
        c.got = bytearray()
        c.busy = True
        c.t_sent = time.monotonic()
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
        if not c.busy:
            c.got += chunk
            self._fail(c, "wrong", f"bytes with no request outstanding: {bytes(c.got[:120])!r}")
            return
        c.got += chunk
        n = len(c.got)
        if c.got[:len(c.expect)] != c.expect[:n] or n > len(c.expect):
            error = b"-" in c.got[:1] or b"\r\n-" in c.got or b"ERROR" in c.got
            self._fail(c, "error" if error else "wrong",
                       f"{c.key}: expected {c.expect[:120]!r}, got {bytes(c.got[:120])!r}")
            return
        if n == len(c.expect):
            now = time.monotonic()
            with self.lock:
                c.sent_at.append(c.t_sent)
                self.latest.update(c.pairs)
            c.busy = False
            c.got = bytearray()
            c.next_at = now + self.pause
            if self.churn:
                self._close(c, dead=False)

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
                        if now - c.t_sent > self.hang:
                            self._fail(c, "hang", f"{c.key}: {len(c.got)} bytes of the reply")
                    elif c.dead or stop_deadline is not None:
                        continue
                    elif c.next_at <= now:
                        if c.sock is not None or self._connect(c):
                            self._request(c)
                            busy += 1
                        else:
                            c.next_at = now + self.pause
                    else:
                        wake = min(wake, c.next_at)
                if stop_deadline is not None and (busy == 0 or now > stop_deadline):
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
                    self._problem(c, "hang", "still outstanding when the load stopped")
                self._close(c, dead=True)
            self.sel.close()

    # --- reading the record (safe while it runs)
    def problems_of(self, kinds=None, cids=None):
        with self.lock:
            return [p for p in self.problems
                    if (kinds is None or p.kind in kinds) and (cids is None or p.cid in cids)]

    def busy_clients(self):
        return [c.cid for c in self.clients if c.busy]

    def open_clients(self):
        return [c.cid for c in self.clients if not c.dead]

    def wait_progress(self, each=3, since=None, timeout=30.0):
        """Waits (bounded) until every client still open has had `each` exchanges, sent at or
        after `since` (default: now), answered exactly; raises with the laggards and problems."""
        since = time.monotonic() if since is None else since
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                lagging = [c.cid for c in self.clients
                           if not c.dead and sum(1 for t in c.sent_at if t >= since) < each]
            if not lagging:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"load on port {self.port}: clients {lagging[:10]} "
                                     f"({len(lagging)}) made no progress in {timeout}s; "
                                     f"problems: {describe(self.problems_of())}")
            time.sleep(0.05)

    def assert_clean(self, what=""):
        bad = self.problems_of()
        assert not bad, f"load on port {self.port} {what}: {len(bad)} problems:\n{describe(bad)}"


def describe(problems, limit=8):
    """A short text of some problems for assertion messages."""
    lines = [f"{p.t:.3f} client {p.cid} {p.kind} (busy={p.busy}, {p.partial} reply bytes): "
             f"{p.detail}" for p in problems[:limit]]
    more = f"\n... and {len(problems) - limit} more" if len(problems) > limit else ""
    return "\n".join(lines) + more
