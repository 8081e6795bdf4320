"""Framing checked against a real redis-server: the same byte stream of requests sent to a
redis-server directly and through the proxy, whole, cut in two writes, or one byte per write, and
the two reply streams compared (tests/integration/test_framing_diff.py).

  Part, cmd, inline, empty, raw   the pieces of a stream: each knows the command it names and
                                  whether redis answers it once, never, or we cannot tell
  Differs, Stream                 a named stream, and where the proxy answers otherwise
  cuts                            where to cut a stream in two, a bounded number of places
  read_by_peer                    waits until the proxy has read what a client sent
  Differ                          runs a stream on both sides and says how the replies differ;
                                  sends one through the proxy and leaves at once
  Bystander                       a client of the proxy, in a thread, that checks every reply of
                                  its own (it shares the server connection with the streams)
  server_conn_ids                 the server connections a redis-server has from the proxy

How a run ends without waiting for a time: a sentinel (ECHO of a fresh token) follows the stream,
so the replies end at the sentinel's reply, or at the close when the stream made the server (or the
proxy) close. A stream must therefore leave redis between two requests, or closed.

Through the proxy, the proxy reads each write before the next one goes (its socket's receive
queue empty, procfs.tcp_queues), so that its parser sees the stream cut there.

Threads: a Differ belongs to the test's thread; a Bystander runs its own.
"""
import threading
import uuid
from dataclasses import dataclass

from . import codec, load, procfs, wait
from .conn import IO_TIMEOUT, Closed, RawConn

SPACES = b" \t\n\v\f\r"       # isspace(): what redis skips between inline arguments
ENDS_TOKEN = b" \t\r\n"       # what ends an unquoted inline argument (sdssplitargs)
READ_POLL = 0.0005            # seconds between two looks at the proxy's receive queue


@dataclass(frozen=True)
class Part:
    """Bytes of a stream. replies: 1 for a request redis answers once, 0 for bytes redis ignores
    (an empty request), None for bytes whose replies we do not count (malformed input). name: the
    command named (lowercase), for the allow-list; refused: the proxy refuses this command, with
    the allow-list's reply in place of redis's."""
    data: bytes
    replies: int = None
    name: bytes = None
    refused: bool = False


def cmd(*args, refused=False):
    """A RESP request."""
    name = args[0] if isinstance(args[0], bytes) else str(args[0]).encode()
    return Part(codec.resp(*args), 1, name.lower(), refused)


def inline(line, refused=False):
    """An inline request (line: with its line end); its name is its first argument as redis
    splits it."""
    rest = line.lstrip(SPACES)
    end = next((i for i, c in enumerate(rest) if c in ENDS_TOKEN), len(rest))
    return Part(line, 1, rest[:end].lower(), refused)


def empty(data):
    """Bytes redis ignores: *0, *-1, blank lines."""
    return Part(data, 0)


def raw(data):
    """Malformed bytes: what redis answers is whatever it answers."""
    return Part(data, None)


@dataclass(frozen=True)
class Differs:
    """Where the proxy deliberately answers otherwise: it answers the requests of the parts
    before `at` as redis does, then `reply` in place of what redis does with part `at`, then it
    closes. why: where this is documented (or why it stays)."""
    at: int
    reply: bytes
    why: str


@dataclass(frozen=True)
class Stream:
    name: str
    parts: tuple
    differs: Differs = None
    drip: bool = False          # also sent one byte per write

    @property
    def data(self):
        return b"".join(p.data for p in self.parts)


@dataclass(frozen=True)
class Outcome:
    replies: bytes
    closed: bool


def cuts(data, cap):
    """Where to cut data in two writes: after every byte when there are at most cap places, else
    cap of them: those next to a CR, LF, '*' or '$' first (where a parser changes state), then
    evenly spread ones."""
    n = len(data)
    if n - 1 <= cap:
        return list(range(1, n))
    marks = sorted({j for i, c in enumerate(data) if c in b"\r\n*$" for j in (i, i + 1)
                    if 0 < j < n})
    picked = marks[::max(1, len(marks) // (cap // 2))][:cap // 2]
    step = n / (cap - len(picked) + 1)
    spread = {int(step * k) for k in range(1, cap - len(picked) + 1)}
    return sorted(({*picked, *spread} - {0, n}))[:cap]


def read_by_peer(c, port):
    """Waits until the peer on port (the proxy) has read every byte sent on c (none in flight,
    none in its socket's receive queue), or has closed its side."""
    mine = (c.local_port, port)
    theirs = (port, c.local_port)

    def done():
        q = procfs.tcp_queues(*theirs)
        if q is None or q[0] != "ESTABLISHED":
            return True
        m = procfs.tcp_queues(*mine)
        return m is not None and m[2] == 0 and q[1] == 0

    wait.wait_for(done, IO_TIMEOUT, f"port {port} to read what port {c.local_port} sent",
                  interval=READ_POLL)


def split_replies(data, reply_end=codec.resp_end):
    """The replies of a reply stream (RESP, or what reply_end(data, pos) reads), one bytes each (a
    trailing incomplete one last)."""
    out, pos = [], 0
    while pos < len(data):
        end = reply_end(data, pos)
        if end is None:
            out.append(data[pos:])
            break
        out.append(data[pos:end])
        pos = end
    return out


class Differ:
    """Runs streams on a redis-server (the reference, at redis_port) and through the proxy (at
    proxy_port, whose servers are at backend_ports). Before each run the keys of the corpus
    (`keys`) are deleted on the servers the run goes to, so both sides start alike; the reference
    server must hold no other key afterwards (a key the corpus forgot to list). refusals: the
    allow-list, {command name: the proxy's reply}."""

    def __init__(self, proxy_port, redis_port, backend_ports, keys, refusals):
        self.proxy_port = proxy_port
        self.redis_port = redis_port
        self.backend_ports = list(backend_ports)
        self.keys = keys
        self.refusals = refusals
        self.control = {p: RawConn(p) for p in [redis_port, *self.backend_ports]}

    def close(self):
        for c in self.control.values():
            c.close()

    def _reset(self, port):
        c = self.control[port]
        c.send(codec.resp("DEL", *self.keys) + codec.resp("DBSIZE"))
        c.reply()
        return c.read()

    def _sentinel(self):
        token = uuid.uuid4().hex
        return codec.resp("ECHO", token), codec.bulk(token)

    def reference(self, data):
        """What redis does with data: its replies, and whether it closed."""
        self._reset(self.redis_port)
        request, reply = self._sentinel()
        with RawConn(self.redis_port) as c:
            try:
                c.send(data + request)
            except Closed:
                pass
            try:
                got, closed = c.until_or_closed(reply)
            except TimeoutError as e:
                raise AssertionError("redis neither answered the sentinel nor closed: the stream "
                                     f"leaves it inside a request ({e})") from None
        left = self._reset(self.redis_port)
        assert left == 0, f"redis holds {left} keys the corpus does not list"
        return Outcome(got, closed)

    def expected(self, stream):
        """What the proxy must answer: redis's replies, with the allow-list's refusal in place of
        the reply to each refused request (counted while every part before it has a known number
        of replies); up to the differing part and then its reply and the close, for a stream the
        proxy answers otherwise."""
        parts = stream.parts[:stream.differs.at] if stream.differs else stream.parts
        ref = self.reference(b"".join(p.data for p in parts))
        replies = split_replies(ref.replies)
        i = 0
        for k, p in enumerate(parts):
            if p.replies is None:
                assert not any(q.refused for q in parts[k:]), \
                    f"{stream.name}: a refused request after malformed bytes cannot be placed"
                break
            if p.refused:
                assert p.name in self.refusals, \
                    f"{stream.name}: {p.name!r} is not in the allow-list"
                if i < len(replies):
                    replies[i] = self.refusals[p.name]
            i += p.replies
        if stream.differs:
            assert not ref.closed, f"{stream.name}: redis closed before the part the proxy refuses"
            return Outcome(b"".join(replies) + stream.differs.reply, True)
        return Outcome(b"".join(replies), ref.closed)

    def _read_by_proxy(self, c):
        read_by_peer(c, self.proxy_port)

    def through(self, data, at=()):
        """What the proxy does with data written in pieces cut at the offsets `at` (each read by
        the proxy before the next is written)."""
        for port in self.backend_ports:
            self._reset(port)
        request, reply = self._sentinel()
        bounds = [0, *at, len(data)]
        pieces = [data[a:b] for a, b in zip(bounds, bounds[1:])]
        pieces[-1] += request
        with RawConn(self.proxy_port) as c:
            for k, piece in enumerate(pieces):
                try:
                    c.send(piece)
                except Closed:
                    break
                if k + 1 < len(pieces):
                    self._read_by_proxy(c)
            got, closed = c.until_or_closed(reply)
        return Outcome(got, closed)

    def abandon(self, data):
        """Sends data through the proxy and closes at once, reading nothing; returns once the
        proxy has closed its side too (it has read all, and forwarded what it forwards). The
        replies of what it forwarded are for no one now: the bystander checks they do not reach
        it."""
        with RawConn(self.proxy_port) as c:
            theirs = (self.proxy_port, c.local_port)
            try:
                c.send(data)
            except Closed:
                pass
        wait.wait_for(lambda: (procfs.tcp_queues(*theirs) or ("gone",))[0]
                      not in ("ESTABLISHED", "CLOSE_WAIT"), IO_TIMEOUT,
                      f"the proxy to close port {theirs[1]}'s connection", interval=READ_POLL)

    def compare(self, stream, expected, at=()):
        """None when the proxy answers `expected` with the stream cut at `at`; else what differs."""
        try:
            got = self.through(stream.data, at)
        except TimeoutError as e:
            return f"{stream.name} cut at {list(at)}: {e}"
        if got == expected:
            return None
        how = ("closed" if got.closed else "stayed open") + (
            "" if got.closed == expected.closed else
            f" where it should have {'closed' if expected.closed else 'stayed open'}")
        where = list(at) if len(at) < 8 else f"{len(at)} places"
        return (f"{stream.name} cut at {where}: the proxy {how}; replies "
                f"{load.first_difference(got.replies, expected.replies)}")


class Bystander:
    """A client of the proxy that, in a thread of its own, sets its own key to a fresh value and
    reads it back, again and again: every reply must be its own (+OK, then exactly that value).
    With the pool's one server connection (server_connections: 1, one worker) its requests share
    that connection with every stream's."""

    def __init__(self, port):
        self.port = port
        self.key = f"bystander:{uuid.uuid4().hex}"
        self.rounds = 0
        self.error = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bystander", daemon=True)

    def start(self):
        self._thread.start()
        wait.wait_for(lambda: self.rounds > 0 or self.error, IO_TIMEOUT,
                      "the bystander's first round")
        self.check()
        return self

    def _round(self, c, n):
        """One round on the connection c (n: its number): fails on a reply not its own."""
        value = uuid.uuid4().hex
        c.exchange(codec.resp("SET", self.key, value) + codec.resp("GET", self.key),
                   b"+OK\r\n" + codec.bulk(value))

    def _run(self):
        try:
            with RawConn(self.port) as c:
                while not self._stop.is_set():
                    self._round(c, self.rounds)
                    self.rounds += 1
        except BaseException as e:  # noqa: BLE001 - reported by check()
            self.error = f"after {self.rounds} rounds: {e!r}"

    def check(self, rounds=2):
        """Waits for `rounds` more rounds (the bystander ran after what came before: its replies
        went through the server connection after those of the streams), and fails on any reply
        that was not its own."""
        assert self.error is None, f"the bystander got a foreign reply or none: {self.error}"
        since = self.rounds
        wait.wait_for(lambda: self.rounds >= since + rounds or self.error, IO_TIMEOUT,
                      "the bystander's next rounds", interval=READ_POLL)
        assert self.error is None, f"the bystander got a foreign reply or none: {self.error}"

    def stop(self):
        self._stop.set()
        self._thread.join(IO_TIMEOUT * wait.scale())


def server_conn_ids(port, exclude=()):
    """The ids of the client connections a redis-server has, but the one asking and those from
    the local ports in `exclude` (the tests' own)."""
    from .conn import redis_client_fields

    return {int(f["id"]) for f in redis_client_fields(port)
            if int(f["addr"].rsplit(":", 1)[1]) not in exclude}
