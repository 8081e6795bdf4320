"""Checked redis-py clients: threads that each loop SET key value, then GET key, over keys of their
own through a proxy, and check every reply against what that client wrote. The load of the
Sentinel failover tests (a master moves under it: no reply may be another's) and of
bench/failover.py (how long writes fail while it moves).

Client c's n-th SET of key k writes "c:k:n". A GET of k is
- ok: the value of c's last SET of k that succeeded, or of a later one that failed (an error
  may come after the server ran it: "-ERR Remote address changed" for a request in flight on a
  connection to a master that moved), or nil when no SET of k succeeded yet;
- stale: an older value of c's for k, or nil after a SET of k succeeded: an acknowledged write
  that is gone. Redis replicates asynchronously: a write a master takes after its replica was
  promoted, or just before it was killed, can be lost in a failover, whatever the proxy does;
- wrong: anything else (another client's or another key's value, a value never written): a
  reply that is not the answer to this client's request;
- error: an error reply, a failed connection or a timeout (the SET's value then counts as
  maybe written, as above).

Every request is recorded as an Op (when it was sent and answered, its key's group, e.g. the
shard, its outcome), so a test asks what happened after an event and which keys hold what now.
Bounded: every request has the client's socket timeout, a client stops after LIFETIME seconds in
any case, stop() joins the threads.

Threads: one thread per client; each appends to its own record, read by others under the lock.
"""
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

from . import wait
from .conn import no_retry, redis_client

LIFETIME = 300.0        # s: a client stops by itself after this
REQUEST_TIMEOUT = 10.0  # s: one request (a write held while its master moves takes ~1 s)
OUTCOMES = ("ok", "stale", "wrong", "error")


@dataclass
class Op:
    """One request: op ("set"/"get"), client, key, its group, when it was sent and answered
    (time.monotonic()) and when it was sent by the wall clock (time.time(), as the proxy's log
    stamps its lines), outcome (OUTCOMES) and detail (the error: "<redis-py class>: <text>", or
    the unexpected value)."""
    op: str
    client: int
    key: str
    group: str
    t0: float
    t1: float
    wall: float
    outcome: str
    detail: str = ""


@dataclass
class KeyState:
    """What client wrote to a key: the n of its last acknowledged SET (0: none) and those of the
    SETs that failed since (they may have run)."""
    acked: int = 0
    maybe: set = field(default_factory=set)


class CheckedClients:
    """`keys`: one list of keys per client (disjoint); `groups`: {key: group} (a key's shard);
    `pace`: seconds between two exchanges of a client; read_back=False: SETs only (each still
    recorded). start() starts the threads."""

    def __init__(self, port, keys, groups=None, pace=0.0, read_back=True, timeout=REQUEST_TIMEOUT):
        self.port = port
        self.keys = [list(k) for k in keys]
        self.groups = groups or {}
        self.pace = pace
        self.read_back = read_back
        self.timeout = timeout
        self.state = [{k: KeyState() for k in ks} for ks in self.keys]
        self.ops = [[] for _ in self.keys]
        self.failures = []  # what ended a client's thread early (a bug in the caller)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(c,), daemon=True,
                                          name=f"kvcheck-{c}") for c in range(len(self.keys))]

    def start(self):
        for t in self._threads:
            t.start()
        return self

    def stop(self):
        self._stop.set()
        for t in self._threads:
            t.join(self.timeout + 5.0)
        alive = [t.name for t in self._threads if t.is_alive()]
        assert not alive, f"checked clients still running: {alive}"
        assert not self.failures, f"checked clients failed: {self.failures}"

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self._stop.set()
        for t in self._threads:
            t.join(self.timeout + 5.0)

    # --- the clients -----------------------------------------------------------------------

    def _run(self, c):
        from redis.exceptions import RedisError

        end = time.monotonic() + LIFETIME
        client = redis_client(self.port, socket_timeout=self.timeout, retry=no_retry())
        n = 0
        try:
            while not self._stop.is_set() and time.monotonic() < end:
                for key in self.keys[c]:
                    if self._stop.is_set():
                        break
                    n += 1
                    self._set(client, c, key, n, RedisError)
                    if self.read_back:
                        self._get(client, c, key, RedisError)
                    if self.pace:
                        wait.gap(self._stop, self.pace)
        except Exception as e:  # noqa: BLE001 - reported by stop()
            self.failures.append(f"client {c}: {e!r}")
        finally:
            client.close()

    def _record(self, c, op, key, t0, outcome, detail=""):
        t1 = time.monotonic()
        wall = time.time() - (t1 - t0)
        item = Op(op, c, key, self.groups.get(key, ""), t0, t1, wall, outcome, detail)
        with self._lock:
            self.ops[c].append(item)

    def _set(self, client, c, key, n, errors):
        st = self.state[c][key]
        t0 = time.monotonic()
        try:
            client.set(key, f"{c}:{key}:{n}")
        except errors as e:
            with self._lock:
                st.maybe.add(n)
            self._record(c, "set", key, t0, "error", f"{type(e).__name__}: {e}")
            return
        with self._lock:
            st.acked, st.maybe = n, set()
        self._record(c, "set", key, t0, "ok")

    def _get(self, client, c, key, errors):
        t0 = time.monotonic()
        try:
            value = client.get(key)
        except errors as e:
            self._record(c, "get", key, t0, "error", f"{type(e).__name__}: {e}")
            return
        outcome = self.judge(c, key, value)
        self._record(c, "get", key, t0, outcome, "" if outcome == "ok" else repr(value))

    def judge(self, c, key, value):
        """The outcome of reading `value` (bytes or None) for client c's key now."""
        with self._lock:
            st = self.state[c][key]
            acked, maybe = st.acked, set(st.maybe)
        if value is None:
            return "stale" if acked else "ok"
        owner, _, rest = value.decode(errors="replace").partition(":")
        name, _, n = rest.rpartition(":")
        if owner != str(c) or name != key or not n.isdigit():
            return "wrong"
        n = int(n)
        if n == acked or n in maybe:
            return "ok"
        return "stale" if 0 < n < acked else "wrong"

    # --- what happened ---------------------------------------------------------------------

    def select(self, op=None, group=None, outcome=None, since=None, client=None):
        """The recorded ops that match (since: sent at or after that monotonic time)."""
        with self._lock:
            every = [o for ops in self.ops for o in ops]
        return [o for o in every
                if (op is None or o.op == op) and (group is None or o.group == group)
                and (outcome is None or o.outcome == outcome)
                and (since is None or o.t0 >= since) and (client is None or o.client == client)]

    def count(self, **kw):
        return len(self.select(**kw))

    def every_client(self, count=1, **kw):
        """True once every client has `count` recorded ops that match (see select)."""
        return all(self.count(client=c, **kw) >= count for c in range(len(self.keys)))

    def lost_writes(self):
        """For each stale read, the write it should have found: the client's last SET of that
        key that succeeded before it (an acknowledged write that is gone)."""
        lost = []
        with self._lock:
            for ops in self.ops:
                for i, o in enumerate(ops):
                    if o.outcome == "stale":
                        lost += [next(p for p in reversed(ops[:i]) if p.op == "set"
                                      and p.key == o.key and p.outcome == "ok")]
        return lost

    def rewritten_since(self, since):
        """True once every key of every client had a SET sent at or after `since` succeed."""
        done = {(o.client, o.key) for o in self.select(op="set", outcome="ok", since=since)}
        return len(done) == sum(len(ks) for ks in self.keys)

    def summary(self):
        """{(op, group, outcome): count}, and the error texts: for assertion messages."""
        ops = self.select()
        return {"ops": dict(Counter((o.op, o.group, o.outcome) for o in ops)),
                "errors": dict(Counter(o.detail for o in ops if o.outcome == "error")),
                "unexpected": [(o.op, o.key, o.outcome, o.detail) for o in ops
                               if o.outcome in ("stale", "wrong")][:10]}

    def expected(self, c, key):
        """The values key may hold on its server now (client c's last acknowledged SET, or a
        later failed one), as bytes; b"" stands for no value (no SET acknowledged yet)."""
        with self._lock:
            st = self.state[c][key]
            ns = {st.acked, *st.maybe}
        return {f"{c}:{key}:{n}".encode() if n else b"" for n in ns}

    def outages(self, op="set", group=None):
        """The spans during which `op` failed, client by client: (sent time of the first failed
        one, sent time of the first one that succeeded after it, or None) in time order."""
        spans = []
        for c in range(len(self.keys)):
            down = None
            for o in self.select(op=op, group=group, client=c):
                if o.outcome == "error" and down is None:
                    down = o.t0
                elif o.outcome != "error" and down is not None:
                    spans.append((down, o.t0))
                    down = None
            if down is not None:
                spans.append((down, None))
        return sorted(spans, key=lambda s: s[0])
