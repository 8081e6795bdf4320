"""memcached's binary protocol in the tests: requests built field by field (any field may lie, for
the malformed ones), a reply stream cut into its packets and each parsed, reads of exactly N
packets or up to a noop's reply (or the close) within the connection's bounded timeout, what one
memcached answers to requests sent to it directly, and a bystander that shares the proxy's server
connections and checks every reply it gets is its own.

A packet: a 24-byte header (magic, opcode, key length, extras length, data type, vbucket or
status, total body length, opaque, CAS; network byte order), then extras, key and value.
Requests have magic 0x80, replies 0x81.

Threads: the functions keep no state; a BinBystander runs a thread of its own (its start(),
check() and stop() are the test's).
"""
import enum
import struct
import uuid
from dataclasses import dataclass

from . import framing
from .conn import Closed
from .framing import Bystander

HEADER = struct.Struct(">BBHBBHIIQ")
HEADER_LEN = HEADER.size  # 24
REQ, RSP = 0x80, 0x81
TERM_OPAQUE = 0x7E57E4D0  # the opaque of the noop that ends a direct() or a read (none other uses it)


class Op(enum.IntEnum):
    GET = 0x00
    SET = 0x01
    ADD = 0x02
    REPLACE = 0x03
    DELETE = 0x04
    INCR = 0x05
    DECR = 0x06
    QUIT = 0x07
    FLUSH = 0x08
    GETQ = 0x09
    NOOP = 0x0A
    VERSION = 0x0B
    GETK = 0x0C
    GETKQ = 0x0D
    APPEND = 0x0E
    PREPEND = 0x0F
    STAT = 0x10
    SETQ = 0x11
    ADDQ = 0x12
    REPLACEQ = 0x13
    DELETEQ = 0x14
    INCRQ = 0x15
    DECRQ = 0x16
    QUITQ = 0x17
    FLUSHQ = 0x18
    APPENDQ = 0x19
    PREPENDQ = 0x1A
    VERBOSITY = 0x1B
    TOUCH = 0x1C
    GAT = 0x1D
    GATQ = 0x1E
    SASL_LIST = 0x20
    SASL_AUTH = 0x21
    SASL_STEP = 0x22
    GATK = 0x23
    GATKQ = 0x24


class Status(enum.IntEnum):
    OK = 0x0000
    NOT_FOUND = 0x0001
    EXISTS = 0x0002
    TOO_LARGE = 0x0003
    EINVAL = 0x0004
    NOT_STORED = 0x0005
    NON_NUMERIC = 0x0006
    UNKNOWN = 0x0081
    ENOMEM = 0x0082
    NOT_SUPPORTED = 0x0083
    TEMPORARY = 0x0086


STORE_OPS = (Op.SET, Op.SETQ, Op.ADD, Op.ADDQ, Op.REPLACE, Op.REPLACEQ)
COUNTER_OPS = (Op.INCR, Op.INCRQ, Op.DECR, Op.DECRQ)
TOUCH_OPS = (Op.TOUCH, Op.GAT, Op.GATQ, Op.GATK, Op.GATKQ)
NO_EXPIRY_CREATE = 0xFFFFFFFF  # an incr/decr expiry that says: a missing key is not created


def packet(magic, op, key=b"", extras=b"", value=b"", opaque=0, cas=0, status=0, datatype=0,
           keylen=None, extlen=None, bodylen=None):
    """A packet (request or reply); keylen, extlen, bodylen: header fields that lie about the
    body (None: the true lengths)."""
    body = extras + key + value
    return HEADER.pack(magic, op, len(key) if keylen is None else keylen,
                       len(extras) if extlen is None else extlen, datatype, status,
                       len(body) if bodylen is None else bodylen, opaque, cas) + body


def request(op, key=b"", extras=b"", value=b"", opaque=0, cas=0, **lie):
    """A request: magic 0x80; the vbucket field 0 (lie: see packet())."""
    return packet(REQ, op, _b(key), extras, _b(value), opaque, cas, **lie)


def response(op, status=Status.OK, key=b"", extras=b"", value=b"", opaque=0, cas=0):
    """A reply as a server (or the proxy) writes it."""
    return packet(RSP, op, _b(key), extras, _b(value), opaque, cas, status)


def _b(data):
    return data.encode() if isinstance(data, str) else bytes(data)


def get(op, key, opaque=0):
    """get, getq, getk or getkq."""
    return request(op, key, opaque=opaque)


def store(op, key, value, flags=0, exptime=0, cas=0, opaque=0):
    """set, add, replace (and their quiet twins): extras are flags and expiry."""
    return request(op, key, struct.pack(">II", flags, exptime), value, opaque, cas)


def concat(op, key, value, cas=0, opaque=0):
    """append or prepend (and their quiet twins): no extras."""
    return request(op, key, value=value, opaque=opaque, cas=cas)


def counter(op, key, delta, initial=0, exptime=0, cas=0, opaque=0):
    """incr or decr (and their quiet twins): extras are delta, initial value and expiry
    (NO_EXPIRY_CREATE: a missing key is not created)."""
    return request(op, key, struct.pack(">QQI", delta, initial, exptime), opaque=opaque, cas=cas)


def delete(op, key, cas=0, opaque=0):
    return request(op, key, opaque=opaque, cas=cas)


def touch(op, key, exptime, opaque=0):
    """touch, gat, gatq, gatk, gatkq: extras are the new expiry."""
    return request(op, key, struct.pack(">I", exptime), opaque=opaque)


def flush(op=Op.FLUSH, delay=None, opaque=0):
    """flush or flushq; extras are a delay when one is given."""
    return request(op, extras=b"" if delay is None else struct.pack(">I", delay), opaque=opaque)


def noop(opaque=0):
    return request(Op.NOOP, opaque=opaque)


def flags_extras(flags):
    """The 4 bytes of extras a get's reply has: the item's flags."""
    return struct.pack(">I", flags)


@dataclass(frozen=True)
class Packet:
    magic: int
    op: int
    datatype: int
    status: int      # a reply's status (a request's vbucket)
    opaque: int
    cas: int
    extras: bytes
    key: bytes
    value: bytes

    @property
    def flags(self):
        """A get's reply: the item's flags (its 4 bytes of extras)."""
        return struct.unpack(">I", self.extras)[0]

    @property
    def number(self):
        """An incr/decr reply: the 8-byte value."""
        return struct.unpack(">Q", self.value)[0]


def packet_end(data, pos=0):
    """The end of the one packet at data[pos:], or None when it is not all there."""
    if len(data) - pos < HEADER_LEN:
        return None
    end = pos + HEADER_LEN + struct.unpack_from(">I", data, pos + 8)[0]
    return end if end <= len(data) else None


def parse(raw):
    """One whole packet -> Packet (raises ValueError when raw is not exactly one packet)."""
    if len(raw) < HEADER_LEN or packet_end(raw) != len(raw):
        raise ValueError(f"not one packet: {bytes(raw[:64])!r}")
    magic, op, keylen, extlen, datatype, status, _, opaque, cas = HEADER.unpack_from(raw)
    body = bytes(raw[HEADER_LEN:])
    if keylen + extlen > len(body):
        raise ValueError(f"key and extras longer than the body: {bytes(raw[:64])!r}")
    return Packet(magic, op, datatype, status, opaque, cas, body[:extlen],
                  body[extlen:extlen + keylen], body[extlen + keylen:])


def split(data):
    """The packets of a stream, one bytes each (an incomplete one last)."""
    return framing.split_replies(bytes(data), packet_end)


def describe(data):
    """The packets of a stream, one short line each: for failure messages."""
    out = []
    for raw in split(data):
        try:
            p = parse(raw)
        except ValueError:
            out.append(f"<incomplete {raw[:40]!r}>")
            continue
        op = Op(p.op).name if p.op in Op._value2member_map_ else hex(p.op)
        status = Status(p.status).name if p.status in Status._value2member_map_ else hex(p.status)
        out.append(f"{op} {status} opaque={p.opaque:#x} cas={p.cas} extras={p.extras.hex()} "
                   f"key={p.key[:40]!r} value={p.value[:40]!r}{'...' if len(p.value) > 40 else ''}")
    return "\n  ".join(out)


def read(conn, n, timeout=None):
    """Exactly n packets from conn (a RawConn), parsed."""
    return [parse(conn._until(packet_end, timeout)) for _ in range(n)]


def until_noop(conn, opaque=TERM_OPAQUE, timeout=None):
    """(the bytes of the packets conn gets before the noop reply with this opaque (left out),
    False), or when the peer closes first, (every byte it sent until then, True)."""
    got = b""
    while True:
        try:
            one = conn._until(packet_end, timeout)
        except Closed:
            return got + conn._take(len(conn.buf)), True
        p = parse(one)
        if p.op == Op.NOOP and p.opaque == opaque and p.magic == RSP:
            return got, False
        got += one


def until_noop_open(conn, opaque=TERM_OPAQUE, timeout=None):
    """until_noop's bytes; fails when the peer closed instead."""
    got, closed = until_noop(conn, opaque, timeout)
    assert not closed, f"the connection was closed after:\n  {describe(got)}"
    return got


def read_raw(conn, n, timeout=None):
    """The bytes of exactly n packets from conn."""
    return b"".join(conn._until(packet_end, timeout) for _ in range(n))


def assert_same(got, want, what=""):
    """got is want byte for byte; else both described packet by packet."""
    assert got == want, f"{what}\ngot\n  {describe(got)}\nwant\n  {describe(want)}"


def exchange(conn, data, want, timeout=None):
    """Sends data, reads as many packets as want (bytes: replies) has, and checks them byte for
    byte."""
    conn.send(data)
    assert_same(read_raw(conn, len(split(want)), timeout), want)


def send_cut(conn, data, port, at=()):
    """Sends data in pieces cut at the offsets `at`, each read by the peer on port (the proxy)
    before the next is written, so that its parser sees the stream cut there."""
    bounds = [0, *at, len(data)]
    for a, b in zip(bounds, bounds[1:]):
        conn.send(data[a:b])
        if b < len(data):
            framing.read_by_peer(conn, port)


def direct(conn, data):
    """What memcached answers to data (one request or several) on conn, and whether it closed:
    the requests and a noop are sent, and the replies read up to the noop's (left out) or the
    close."""
    try:
        conn.send(data + noop(TERM_OPAQUE))
    except Closed:
        pass
    return until_noop(conn)


class BinBystander(Bystander):
    """framing.Bystander for the binary protocol: in a thread of its own it stores its keys (one
    per server) with setq and reads each back with getk and an opaque of its round, then a noop:
    every reply must be its own (the getk hit with its key, value and opaque, or the miss when a
    test flushed the servers meanwhile; the noop with its opaque). It shares the pool's server
    connections with what a test sends."""

    def __init__(self, port, keys):
        super().__init__(port)
        self.keys = [_b(k) for k in keys]

    def _round(self, c, n):
        value = uuid.uuid4().hex.encode()
        for i, key in enumerate(self.keys):
            opaque = (n << 8 | i) & 0xFFFFFFFF
            c.send(store(Op.SETQ, key, value, flags=i, opaque=opaque) +
                   get(Op.GETK, key, opaque) + noop(opaque))
            hit, end = read(c, 2)
            assert end == parse(response(Op.NOOP, opaque=opaque)), f"{key}: {end}"
            assert (hit.op, hit.opaque, hit.key) == (Op.GETK, opaque, key), f"{key}: {hit}"
            assert (hit.status, hit.value, hit.extras) in (
                (Status.OK, value, flags_extras(i)), (Status.NOT_FOUND, b"", b"")), \
                f"{key}: {hit}"
