"""One item, three protocols (issue 29): what a binary client stores, a text or meta client reads,
and the reverse, with the same CAS, flags, value and TTL (a TTL read with `mg t` may differ by a
second), on keys of every server. Each check runs twice: `direct`, against a memcached of its own
with no proxy (the checks themselves), and `proxy`, through a proxy (-T 2) over 3 memcacheds, on
one listener where each connection's first byte decides its protocol.
"""
from nctest import mcmeta
from nctest.codec import mc_value
from nctest.keys import mc_item
from nctest.mcbin import Op, Status, concat, counter, delete, exchange, flags_extras, get, noop
from nctest.mcbin import assert_same, read, read_raw, response, store, touch

THREADED = True  # the TSan stage runs these too (conftest.py)

SERVERS = 3




def each_key(target, prefix):
    """A fresh key on each server: (key str, key bytes, the port of its server)."""
    return [(k, k.encode(), target.ports[target.server_of(k)])
            for (k,) in target.route_keys(prefix, 1)]


def cas_now(port, key):
    return mc_item(port, key).cas


def check(b, req, port, key, op, opaque, **fields):
    """Sends binary req on b: its one reply is a success with the CAS key's server holds after
    it."""
    b.send(req)
    got = read_raw(b, 1)
    assert_same(got, response(op, opaque=opaque, cas=cas_now(port, key), **fields), key)


def num(n):
    """An incr/decr reply's value: 8 bytes."""
    return n.to_bytes(8, "big")


def line_of(r, request):
    r.send(request)
    return r.line()


def test_binary_set_read_by_text_and_meta(mc_target):
    """A binary set (flags over 2^31, a TTL, bytes that are line ends and NUL) read by text gets
    and meta mg: the CAS of the set's reply, its flags, value and TTL."""
    value = b"a\r\nb\x00END\r\n"
    for k, kb, _ in each_key(mc_target, "b2t"):
        with mc_target.raw() as b, mc_target.raw() as t:
            b.send(store(Op.SET, kb, value, flags=0xDEADBEEF, exptime=300, opaque=1))
            (reply,) = read(b, 1)
            assert (reply.op, reply.status, reply.opaque) == (Op.SET, Status.OK, 1)
            t.exchange(b"gets %s\r\n" % kb,
                       mc_value(k, value, flags=0xDEADBEEF, cas=reply.cas) + b"END\r\n")
            t.send(b"mg %s s v f c t k\r\n" % kb)
            got = t.recv_exact(len(b"VA %d s%d f%d c%d t300 k%s\r\n" % (
                len(value), len(value), 0xDEADBEEF, reply.cas, kb)) + len(value) + 2)
            mcmeta.assert_same(got, b"VA %d s%d f%d c%d t300 k%s\r\n%s\r\n" % (
                len(value), len(value), 0xDEADBEEF, reply.cas, kb, value), k)


def test_meta_set_read_by_binary(mc_target):
    """ms with flags and a TTL read by binary get and getk (flags in the extras, the CAS mg
    reads); a binary touch seen by mg's TTL."""
    for k, kb, port in each_key(mc_target, "m2b"):
        with mc_target.raw() as b, mc_target.raw() as t:
            t.exchange(b"ms %s 5 F7 T100\r\nhello\r\n" % kb, b"HD\r\n")
            line = line_of(t, b"mg %s c\r\n" % kb)
            cas = int(line.split()[1][1:])
            assert line == b"HD c%d\r\n" % cas
            exchange(b, get(Op.GET, kb, 2) + get(Op.GETK, kb, 3),
                     response(Op.GET, extras=flags_extras(7), value=b"hello", opaque=2, cas=cas) +
                     response(Op.GETK, key=kb, extras=flags_extras(7), value=b"hello", opaque=3,
                              cas=cas))
            check(b, touch(Op.TOUCH, kb, 500, 4), port, k, Op.TOUCH, 4, extras=flags_extras(7))
            mcmeta.assert_same(line_of(t, b"mg %s t f\r\n" % kb), b"HD t500 f7\r\n", k)


def test_text_set_read_by_binary(mc_target):
    """A text set with flags read by binary getk: flags, key, value, the CAS gets reads."""
    for k, kb, _ in each_key(mc_target, "t2b"):
        with mc_target.raw() as b, mc_target.raw() as t:
            t.exchange(b"set %s 9 0 5\r\nhello\r\n" % kb, b"STORED\r\n")
            cas = int(line_of(t, b"gets %s\r\n" % kb).split()[4])
            t.recv_until(b"END\r\n")
            exchange(b, get(Op.GETK, kb, 5),
                     response(Op.GETK, key=kb, extras=flags_extras(9), value=b"hello", opaque=5,
                              cas=cas))


def test_cas_across_protocols(mc_target):
    """A CAS from a binary reply used by text cas and meta ms C, one from text gets by a binary
    set and delete: accepted while current, refused (EXISTS) once stale."""
    for k, kb, port in each_key(mc_target, "cas"):
        with mc_target.raw() as b, mc_target.raw() as t:
            b.send(store(Op.SET, kb, b"v1", opaque=1))
            c1 = read(b, 1)[0].cas
            t.exchange(b"cas %s 0 0 2 %d\r\nv2\r\n" % (kb, c1), b"STORED\r\n")
            t.exchange(b"cas %s 0 0 2 %d\r\nv3\r\n" % (kb, c1), b"EXISTS\r\n")
            c2 = int(line_of(t, b"gets %s\r\n" % kb).split()[4])
            t.recv_until(b"END\r\n")
            check(b, store(Op.SET, kb, b"v4", cas=c2, opaque=2), port, k, Op.SET, 2)
            exchange(b, store(Op.SET, kb, b"v5", cas=c2, opaque=3),
                     response(Op.SET, Status.EXISTS, value=b"Data exists for key.", opaque=3))
            c3 = cas_now(port, k)
            t.exchange(b"ms %s 2 C%d\r\nv6\r\n" % (kb, c1), b"EX\r\n")
            t.exchange(b"ms %s 2 C%d\r\nv6\r\n" % (kb, c3), b"HD\r\n")
            exchange(b, delete(Op.DELETE, kb, cas=c3, opaque=4),
                     response(Op.DELETE, Status.EXISTS, value=b"Data exists for key.", opaque=4))
            exchange(b, delete(Op.DELETE, kb, cas=cas_now(port, k), opaque=5),
                     response(Op.DELETE, opaque=5))
            t.exchange(b"get %s\r\n" % kb, b"END\r\n")


def test_counters_across_protocols(mc_target):
    """A counter created by binary incr, read by text get, moved by text incr, meta ma and binary
    decr, each seeing the others' value."""
    for k, kb, port in each_key(mc_target, "ctr"):
        with mc_target.raw() as b, mc_target.raw() as t:
            b.send(counter(Op.INCR, kb, 1, 10, opaque=1))
            assert read(b, 1)[0].number == 10
            t.exchange(b"get %s\r\n" % kb, mc_value(k, "10") + b"END\r\n")
            t.exchange(b"incr %s 5\r\n" % kb, b"15\r\n")
            check(b, counter(Op.INCR, kb, 1, opaque=2), port, k, Op.INCR, 2, value=num(16))
            t.exchange(b"ma %s v\r\n" % kb, b"VA 2\r\n17\r\n")
            check(b, counter(Op.DECR, kb, 7, opaque=3), port, k, Op.DECR, 3, value=num(10))
            t.exchange(b"get %s\r\n" % kb, mc_value(k, "10") + b"END\r\n")


def test_append_and_delete_across_protocols(mc_target):
    """Binary append and prepend to a text item read by mg; a text delete seen by binary get,
    a binary deleteq by text get."""
    for k, kb, port in each_key(mc_target, "cat"):
        with mc_target.raw() as b, mc_target.raw() as t:
            t.exchange(b"set %s 3 0 3\r\nmid\r\n" % kb, b"STORED\r\n")
            exchange(b, concat(Op.APPENDQ, kb, b">") + concat(Op.PREPENDQ, kb, b"<") + noop(9),
                     response(Op.NOOP, opaque=9))
            t.exchange(b"mg %s v f\r\n" % kb, b"VA 5 f3\r\n<mid>\r\n")
            t.exchange(b"delete %s\r\n" % kb, b"DELETED\r\n")
            exchange(b, get(Op.GET, kb, 1),
                     response(Op.GET, Status.NOT_FOUND, value=b"Not found", opaque=1))
            t.exchange(b"set %s 0 0 1\r\nx\r\n" % kb, b"STORED\r\n")
            exchange(b, delete(Op.DELETEQ, kb) + noop(2), response(Op.NOOP, opaque=2))
            t.exchange(b"get %s\r\nmn\r\n" % kb, b"END\r\nMN\r\n")
