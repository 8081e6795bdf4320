"""memcached meta commands in the tests: a reply stream cut into its replies, a request asked of
one memcached directly (its reply read up to the terminator memcached answers after it), the
reply fields that may differ by a second between two runs, and a bystander that shares the
proxy's server connections and checks every reply it gets is its own.

Threads: the functions keep no state; a McBystander runs a thread of its own (its start(),
check() and stop() are the test's).
"""
import base64
import re
import uuid

from . import framing
from .framing import Bystander

TERM = b"mn\r\n"


def b64(key):
    """key (str or bytes) in base64, as a meta command's b flag wants it."""
    return base64.b64encode(key.encode() if isinstance(key, str) else key)


def reply_end(data, pos=0):
    """The end of the one reply (meta or text) at data[pos:], or None when it is not all there:
    a line, or a VA line and its data."""
    nl = data.find(b"\n", pos)
    if nl < 0:
        return None
    if data.startswith(b"VA ", pos):
        end = nl + 1 + int(data[pos + 3:nl].split()[0]) + 2
        return end if end <= len(data) else None
    return nl + 1


def split_replies(data):
    """The replies of a stream, one bytes each (an incomplete one last)."""
    return framing.split_replies(data, reply_end)


def direct(conn, request):
    """What memcached answers to request (any bytes: one request or several) on conn: the request
    and a terminator are sent, and the replies read up to the terminator's MN, which is left out."""
    conn.send(request + TERM)
    got = b""
    while True:
        got += conn._until(reply_end, None)
        replies = split_replies(got)
        if replies and replies[-1] == b"MN\r\n":
            return got[:-4]


# numbers that say how long ago, or how long to go, in seconds: t (TTL left) and l (since the
# last access) flags, and me's exp= and la=
_SECONDS = re.compile(rb"(?<= )(t|l|exp=|la=)(-?\d+)")
# what changes from one run of a stream to the next on the same servers: CAS values and
# hit-before (c, h flags; me's cas=)
_RUN = re.compile(rb"(?<= )(c|h|cas=)(\d+)")


def _lines(data):
    """The reply lines of a stream (VA data left out), each with its position."""
    out, pos = [], 0
    while pos < len(data):
        end = reply_end(data, pos)
        nl = data.find(b"\n", pos)
        if end is None or nl < 0:
            break
        out.append((pos, nl))
        pos = end
    return out


def normalize(data, runs=False):
    """data with the seconds fields (and with runs=True the per-run ones) of its reply lines
    replaced by a mark; returns (the bytes, the seconds numbers in order)."""
    out, numbers, pos = [], [], 0
    for start, nl in _lines(data):
        line = data[start:nl]
        numbers += [int(m.group(2)) for m in _SECONDS.finditer(line)]
        line = _SECONDS.sub(rb"\1#", line)
        if runs:
            line = _RUN.sub(rb"\1#", line)
        out.append(data[pos:start] + line)
        pos = nl
    out.append(data[pos:])
    return b"".join(out), numbers


def assert_same(got, want, what, runs=False):
    """got is want but for the seconds fields, which may differ by 1 (and with runs=True the
    per-run fields, which may differ at all)."""
    g, gn = normalize(got, runs)
    w, wn = normalize(want, runs)
    assert g == w, f"{what}:\n got  {got[:600]!r}\n want {want[:600]!r}"
    assert len(gn) == len(wn) and all(abs(a - b) <= 1 for a, b in zip(gn, wn)), \
        f"{what}: seconds {gn} vs {wn}"


class McBystander(Bystander):
    """framing.Bystander for memcached: in a thread of its own it stores its keys (one per server)
    and reads each back with its key and an opaque, again and again: every reply must be its own
    (its VA with its value, or EN when a test flushed the servers meanwhile, always with its key
    and opaque). It shares the pool's server connections with the streams a test sends."""

    def __init__(self, port, keys):
        super().__init__(port)
        self.keys = keys

    def _round(self, c, n):
        value = uuid.uuid4().hex.encode()
        for key in self.keys:
            k = key.encode()
            c.send(b"ms %s %d q\r\n%s\r\nmg %s v k O%d\r\n" % (k, len(value), value, k, n))
            got = c._until(reply_end, None)
            own = (b"VA %d k%s O%d\r\n%s\r\n" % (len(value), k, n, value), b"EN k%s O%d\r\n" % (k, n))
            assert got in own, f"{key}: {got[:200]!r}"
