"""memcached's binary protocol checked against real memcacheds (1.6.18), byte for byte, the
differential part of test_memcache_binary.py (on the model of test_memcache_meta_diff.py): a
corpus of streams of keyed binary requests (every keyed opcode and its quiet twin, CAS hits and
mismatches, incr and decr with and without create (expiry 0xffffffff), append and prepend to a
missing key, touch and the gat family, values up to 1 MB and over, quiet pipelines over keys on
every server ended by noop, version) goes through the proxy, a pool of 3 fresh memcacheds, whole;
and, on 3 other fresh memcacheds, each request goes straight to the server the proxy routes its key
to (noop and version to any: memcached's reply does not depend on the server), in the same order.
Each server sees the same operations in both runs, so CAS values match: the client must get from
the proxy exactly the packets memcached gives, opaque and CAS included, and for a noop the proxy's
own reply must be the one memcached writes.

A stream is a list of phases: a phase's requests go together, and a request of a later phase may
be built from the replies of the earlier ones (a CAS read back), on each side from its own replies.

Then a few streams go through the proxy again one byte per write, each byte read by the proxy
before the next is written (a cut at every byte boundary), against a fresh reference run: the
same packets again.
"""
import uuid

import pytest

from nctest import cluster, mcbin
from nctest.conn import RawConn
from nctest.keys import big_value
from nctest.mcbin import (NO_EXPIRY_CREATE, TERM_OPAQUE, Op, concat, counter, delete, get, noop,
                          request, store, touch)

SERVERS = 3
MB = 1 << 20


@pytest.fixture(scope="module")
def setup(module_memcached_server, module_write_conf, module_nutcrackers):
    c = cluster.start_cluster("memcache", SERVERS, 1, module_memcached_server, module_write_conf,
                              module_nutcrackers, name=f"bdiff-{uuid.uuid4().hex[:6]}",
                              server_connections=1)
    ref = [module_memcached_server()[0] for _ in range(SERVERS)]
    yield c, ref, c.route_keys("bd", 2)
    assert c.stop() == 0


def u(data, key=None):
    """A unit of a stream: a request (bytes, or a function of the replies so far {opaque: Packet}
    that builds it) answered on the server of key (a str, as the proxy routes it) or, key None,
    on any."""
    return (data, key)


def cas_of(opaque, stale=False):
    """The CAS of the reply with this opaque (stale: one less, which no item has any more)."""
    return lambda seen: seen[opaque].cas - (1 if stale else 0)


class K:
    """The corpus's keys: two on each server (a, a2 on one, b, b2, c, c2), as str (routing) and
    as bytes (in the requests: A, A2, ...)."""

    def __init__(self, keys):
        (self.a, self.a2), (self.b, self.b2), (self.c, self.c2) = keys
        for name in ("a", "a2", "b", "b2", "c", "c2"):
            setattr(self, name.upper(), getattr(self, name).encode())


def reads(k):
    return [[
        u(store(Op.SET, k.A, b"hello", flags=3, opaque=1), k.a),
        u(store(Op.SET, k.B, b"", flags=0xFFFFFFFF, exptime=100, opaque=2), k.b),
        u(get(Op.GET, k.A, 3), k.a), u(get(Op.GETK, k.A, 4), k.a), u(get(Op.GETQ, k.A, 5), k.a),
        u(get(Op.GETKQ, k.A, 6), k.a), u(get(Op.GET, k.C, 7), k.c), u(get(Op.GETK, k.C, 8), k.c),
        u(get(Op.GETQ, k.C, 9), k.c), u(get(Op.GETKQ, k.C, 10), k.c), u(get(Op.GETK, k.B, 11), k.b),
        u(get(Op.GETKQ, k.B2, 12), k.b2), u(noop(13)), u(request(Op.VERSION, opaque=14)),
        u(get(Op.GETKQ, k.B, 0xFFFFFFFF), k.b), u(noop(0))]]


def stores(k):
    return [[
        u(store(Op.SET, k.A, b"1", opaque=1), k.a), u(store(Op.SETQ, k.A2, b"2", opaque=2), k.a2),
        u(store(Op.ADD, k.A, b"x", opaque=3), k.a), u(store(Op.ADDQ, k.A, b"x", opaque=4), k.a),
        u(store(Op.ADD, k.B, b"b", flags=5, opaque=5), k.b),
        u(store(Op.ADDQ, k.B2, b"b2", opaque=6), k.b2),
        u(store(Op.REPLACE, k.C, b"c", opaque=7), k.c),
        u(store(Op.REPLACEQ, k.C2, b"c", opaque=8), k.c2),
        u(store(Op.REPLACE, k.A, b"r", flags=9, opaque=9), k.a),
        u(store(Op.REPLACEQ, k.B, b"rb", opaque=10), k.b),
        u(store(Op.SET, k.A, b"x", cas=1, opaque=11), k.a),
        u(store(Op.SET, k.C, b"x", cas=5, opaque=12), k.c),
        u(store(Op.ADD, k.C, b"x", cas=5, opaque=13), k.c),
        u(get(Op.GETK, k.A, 14), k.a), u(get(Op.GETK, k.B, 15), k.b), u(noop(16))], [
        u(lambda s: store(Op.SET, k.A, b"cas-ok", cas=cas_of(14)(s), opaque=21), k.a),
        u(lambda s: store(Op.SETQ, k.B, b"casq-ok", cas=cas_of(15)(s), opaque=22), k.b),
        u(lambda s: store(Op.SET, k.A, b"stale", cas=cas_of(14)(s), opaque=23), k.a),
        u(lambda s: store(Op.SETQ, k.B, b"stale", cas=cas_of(15)(s), opaque=24), k.b),
        u(lambda s: store(Op.REPLACE, k.A2, b"rc", cas=cas_of(14, True)(s), opaque=25), k.a2),
        u(get(Op.GETK, k.A, 26), k.a), u(get(Op.GETK, k.B, 27), k.b), u(noop(28))]]


def counters(k):
    return [[
        u(counter(Op.INCR, k.A, 5, 10, NO_EXPIRY_CREATE, opaque=1), k.a),
        u(counter(Op.INCRQ, k.A2, 5, 10, NO_EXPIRY_CREATE, opaque=2), k.a2),
        u(counter(Op.DECR, k.B, 1, 7, opaque=3), k.b),
        u(counter(Op.INCR, k.A, 5, 10, opaque=4), k.a),
        # no result with fewer digits than the value before it: memcached pads such a result
        # with spaces when it changes the item in place and not when it copies it, which varies
        # from run to run (the 2^64 wrap is taken on 20-digit values)
        u(counter(Op.INCR, k.A, 5, opaque=5), k.a), u(counter(Op.DECR, k.A, 5, opaque=6), k.a),
        u(store(Op.SET, k.A, b"10000000000000000005", opaque=37), k.a),
        u(counter(Op.INCR, k.A, (1 << 64) - 1, opaque=7), k.a),
        u(counter(Op.INCR, k.A, 1, opaque=8), k.a),
        u(counter(Op.INCRQ, k.A, 3, opaque=9), k.a), u(counter(Op.DECRQ, k.A, 1, opaque=10), k.a),
        u(store(Op.SET, k.C, b"abc", opaque=11), k.c), u(counter(Op.INCR, k.C, 1, opaque=12), k.c),
        u(counter(Op.INCRQ, k.C, 1, opaque=13), k.c),
        u(counter(Op.DECR, k.C2, 1, 0, NO_EXPIRY_CREATE, opaque=14), k.c2),
        u(counter(Op.INCR, k.B2, 1, 5, 100, opaque=15), k.b2),
        u(store(Op.SET, k.B2, b"18446744073709551614", opaque=16), k.b2),
        u(counter(Op.INCR, k.B2, 1, opaque=17), k.b2),
        u(counter(Op.INCR, k.A, 1, cas=1, opaque=18), k.a),
        u(get(Op.GETK, k.A, 19), k.a), u(get(Op.GETK, k.B, 20), k.b), u(get(Op.GET, k.C, 21), k.c),
        u(get(Op.GETK, k.B2, 22), k.b2), u(noop(23))], [
        u(lambda s: counter(Op.INCR, k.A, 1, cas=cas_of(19)(s), opaque=31), k.a),
        u(lambda s: counter(Op.DECRQ, k.B, 1, cas=cas_of(20)(s), opaque=32), k.b),
        u(lambda s: counter(Op.DECRQ, k.B, 1, cas=cas_of(20)(s), opaque=33), k.b),
        u(get(Op.GETK, k.A, 34), k.a), u(get(Op.GETK, k.B, 35), k.b), u(noop(36))]]


def concats(k):
    return [[
        u(concat(Op.APPEND, k.A, b"x", opaque=1), k.a),
        u(concat(Op.APPENDQ, k.A2, b"x", opaque=2), k.a2),
        u(concat(Op.PREPEND, k.B, b"x", opaque=3), k.b),
        u(concat(Op.PREPENDQ, k.B2, b"x", opaque=4), k.b2),
        u(store(Op.SET, k.A, b"mid", flags=4, opaque=5), k.a),
        u(concat(Op.APPEND, k.A, b">", opaque=6), k.a),
        u(concat(Op.PREPEND, k.A, b"<", opaque=7), k.a),
        u(concat(Op.APPENDQ, k.A, b"]", opaque=8), k.a),
        u(concat(Op.PREPENDQ, k.A, b"[", opaque=9), k.a),
        u(concat(Op.APPEND, k.A, b"!", cas=1, opaque=10), k.a), u(get(Op.GETK, k.A, 11), k.a),
        u(noop(12))], [
        u(lambda s: concat(Op.APPEND, k.A, b"+", cas=cas_of(11)(s), opaque=13), k.a),
        u(lambda s: concat(Op.PREPENDQ, k.A, b"-", cas=cas_of(11)(s), opaque=14), k.a),
        u(get(Op.GETK, k.A, 15), k.a), u(noop(16))]]


def deletes(k):
    return [[
        u(delete(Op.DELETE, k.A, opaque=1), k.a), u(delete(Op.DELETEQ, k.A2, opaque=2), k.a2),
        u(store(Op.SET, k.A, b"a", opaque=3), k.a), u(store(Op.SET, k.B, b"b", opaque=4), k.b),
        u(store(Op.SET, k.C, b"c", opaque=5), k.c), u(delete(Op.DELETE, k.A, cas=1, opaque=6), k.a),
        u(get(Op.GETK, k.A, 7), k.a), u(delete(Op.DELETEQ, k.B, opaque=8), k.b),
        u(get(Op.GETK, k.B, 9), k.b), u(get(Op.GETK, k.C, 10), k.c), u(noop(11))], [
        u(lambda s: delete(Op.DELETE, k.A, cas=cas_of(7)(s), opaque=12), k.a),
        u(get(Op.GETK, k.A, 13), k.a),
        u(lambda s: delete(Op.DELETEQ, k.C, cas=cas_of(10, True)(s), opaque=14), k.c),
        u(delete(Op.DELETE, k.C, opaque=15), k.c), u(noop(16))]]


def touches(k):
    return [[
        u(touch(Op.TOUCH, k.A, 10, 1), k.a), u(touch(Op.GAT, k.A, 10, 2), k.a),
        u(touch(Op.GATQ, k.A, 10, 3), k.a), u(touch(Op.GATK, k.A, 10, 4), k.a),
        u(touch(Op.GATKQ, k.A, 10, 5), k.a), u(store(Op.SET, k.A, b"t", flags=5, opaque=6), k.a),
        u(touch(Op.TOUCH, k.A, 100, 7), k.a), u(touch(Op.GAT, k.A, 200, 8), k.a),
        u(touch(Op.GATQ, k.A, 300, 9), k.a), u(touch(Op.GATK, k.A, 0, 10), k.a),
        u(touch(Op.GATKQ, k.A, 400, 11), k.a), u(store(Op.SET, k.B, b"tb", opaque=12), k.b),
        u(touch(Op.GATKQ, k.B, 1000, 13), k.b), u(touch(Op.GATQ, k.C, 10, 14), k.c),
        u(touch(Op.TOUCH, k.C2, 10, 15), k.c2), u(get(Op.GETK, k.A, 16), k.a), u(noop(17))]]


def bigs(k):
    """Up to 1 MB (memcached's item limit): 1 MB and more is "Too large." (its value passed
    over by memcached)."""
    return [[
        u(store(Op.SET, k.A, big_value(MB - 512), flags=1, opaque=1), k.a),
        u(get(Op.GETK, k.A, 2), k.a),
        u(store(Op.SET, k.B, big_value(MB), opaque=3), k.b),
        u(store(Op.SETQ, k.B2, big_value(MB + 1), opaque=4), k.b2),
        u(get(Op.GET, k.A, 5), k.a), u(concat(Op.APPEND, k.A, big_value(1000), opaque=6), k.a),
        u(get(Op.GETKQ, k.B, 7), k.b),
        u(store(Op.SET, k.C, big_value(MB // 2, b"c"), opaque=8), k.c),
        u(touch(Op.GATK, k.C, 100, 9), k.c), u(noop(10))]]


def quiet_pipeline(k):
    """Quiet requests over every server (hits, misses, errors), noops among them."""
    mixed = [k.a, k.a2, k.b, k.b2, k.c, k.c2]
    return [
        [u(store(Op.SETQ, key.encode(), b"v%d" % i, flags=i, opaque=i), key)
         for i, key in enumerate(mixed)] +
        [u(get(Op.GETKQ, key.encode(), 10 + i), key)
         for i, key in enumerate([k.a, k.b, k.c, k.a2 + "x", k.b2, k.c2 + "x"])] +
        [u(get(Op.GETQ, k.A2, 20), k.a2), u(get(Op.GETQ, (k.c2 + "y").encode(), 21), k.c2 + "y"),
         u(store(Op.ADDQ, k.B, b"no", opaque=22), k.b),
         u(delete(Op.DELETEQ, (k.c2 + "z").encode(), opaque=23), k.c2 + "z"),
         u(counter(Op.INCRQ, k.A, 1, opaque=24), k.a),
         u(concat(Op.APPENDQ, k.B2, b"!", opaque=25), k.b2),
         u(noop(26)), u(get(Op.GETKQ, k.B2, 27), k.b2), u(touch(Op.GATKQ, k.C, 0, 28), k.c),
         u(noop(29))]]


STREAMS = {"get-family": reads, "store-family": stores, "counters": counters, "concat": concats,
           "delete": deletes, "touch-gat": touches, "big": bigs, "quiet-pipeline": quiet_pipeline}


def corpus(keys):
    k = K(keys)
    return {name: make(k) for name, make in STREAMS.items()}


NAMES = list(STREAMS)
DRIPPED = ["quiet-pipeline", "store-family"]


@pytest.fixture(scope="module")
def streams(setup):
    return corpus(setup[2])


@pytest.fixture(scope="module")
def owner(setup):
    c, cache = setup[0], {}

    def of(key):
        if key not in cache:
            cache[key] = c.server_of(key)
        return cache[key]

    return of


def flush(ports):
    """Every item gone (a stream starts from nothing on both sides; the CAS counters go on)."""
    for port in ports:
        with RawConn(port) as r:
            r.exchange(b"flush_all\r\n", b"OK\r\n")


def built(data, seen):
    return data(seen) if callable(data) else data


def by_opaque(replies):
    return {p.opaque: p for p in map(mcbin.parse, mcbin.split(replies))}


def expected(ref, stream, owner):
    """The packets memcached writes for each request on the server the proxy routes its key to."""
    flush(ref)
    conns = [RawConn(p) for p in ref]
    try:
        seen, out = {}, b""
        for phase in stream:
            for data, key in phase:
                got, closed = mcbin.direct(conns[owner(key) if key else 0], built(data, seen))
                assert not closed, f"memcached closed after {mcbin.describe(got)}"
                seen.update(by_opaque(got))
                out += got
        return out
    finally:
        for r in conns:
            r.close()


def through(c, stream, drip=False):
    """The proxy's packets for the stream, each phase sent whole (or one byte per write) with a
    last noop, read up to that noop's reply (left out: nothing comes between)."""
    flush(c.ports)
    seen, out = {}, b""
    with c.raw() as r:
        for phase in stream:
            data = b"".join(built(d, seen) for d, _ in phase) + noop(TERM_OPAQUE)
            mcbin.send_cut(r, data, c.port, range(1, len(data)) if drip else ())
            got = mcbin.until_noop_open(r)
            seen.update(by_opaque(got))
            out += got
    return out


@pytest.mark.parametrize("name", NAMES)
def test_replies_are_memcacheds(setup, owner, streams, name):
    """The stream through the proxy: memcached's packets, byte for byte."""
    c, ref, _ = setup
    want = expected(ref, streams[name], owner)
    mcbin.assert_same(through(c, streams[name]), want, name)


@pytest.mark.parametrize("name", DRIPPED)
def test_stream_one_byte_per_write(setup, owner, streams, name):
    """The stream through the proxy one byte per write (a cut at every byte boundary): the same
    packets again."""
    c, ref, _ = setup
    want = expected(ref, streams[name], owner)
    mcbin.assert_same(through(c, streams[name], drip=True), want, f"{name}, one byte per write")


def test_version_and_noop_answer_as_memcached(setup):
    """A noop answered by the proxy is memcached's noop reply; version is a server's reply."""
    c, ref, _ = setup
    req = noop(0xDEADBEEF) + request(Op.VERSION, opaque=7) + noop(0)
    with RawConn(ref[0]) as m:
        want, _ = mcbin.direct(m, req)
    with c.raw() as r:
        mcbin.exchange(r, req, want)
    assert [p.op for p in map(mcbin.parse, mcbin.split(want))] == [Op.NOOP, Op.VERSION, Op.NOOP]
