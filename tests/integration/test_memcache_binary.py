"""memcached's binary protocol on a memcached pool's listener (issue 29), against real memcacheds
(1.6.18): a connection whose first byte is 0x80 speaks it to the end. Most checks run twice:
`direct`, against a memcached of its own with no proxy (the checks themselves), and `proxy`,
through a proxy (-T 2) over 3 memcacheds, where each item must be on the server the proxy routes
its key to (as for text), each reply the owning memcached's (opaque and CAS included), quiet
pipelines over every server answered in request order with the noop's reply last, version from a
server, quit and quitq, stat (one packet per stat: the proxy's lines and the servers' counters
summed, as text `stats` gives them; with a key refused), flush and flushq on every server, unknown
and SASL opcodes answered "Unknown command" with their body passed over, malformed requests
answered as memcached answers them and closed (while a bystander on the same server connection
only ever gets its own replies, and no server ever sees their bytes), and a server that is down.

Then the differential part, on the model of test_memcache_meta_diff.py: a corpus of keyed binary
requests (every opcode and its quiet twin, CAS hits and mismatches, incr with and without create,
append to a missing key, touch and gat, values up to 1 MB, quiet pipelines over every server ended
by noop) through the proxy on 3 fresh memcacheds, and on 3 other fresh memcacheds each request
straight to its key's owner in the same order: the replies are compared byte for byte (a noop's:
the proxy's against memcached's). A few streams go through again one byte per write, each byte
read by the proxy before the next: the same replies. What a text or meta client sees of binary
items: test_memcache_cross.py.
"""
import struct
import uuid

import pytest

from nctest import cluster, manage, procs
from nctest.conn import RawConn
from nctest.keys import mc_item, spread_keys
from nctest.mcbin import (TERM_OPAQUE, BinBystander, Op, Status, concat, counter, delete, exchange,
                          flags_extras, flush, get, noop, parse, read, read_raw, request, response,
                          split, store, touch, until_noop_open, assert_same)

THREADED = True  # the TSan stage runs these too (conftest.py)

SERVERS = 3


def num(n):
    """An incr/decr reply's value: 8 bytes."""
    return struct.pack(">Q", n)


def checker(target, r, key):
    """check(req, *steps, tail=b""): sends req on r and checks its replies, one per step (op,
    opaque, fields) as memcached writes it, with the CAS key's server holds afterwards (0 for an
    error or a delete), then the packets of tail."""

    def check(req, *steps, tail=b""):
        r.send(req)
        got = read_raw(r, len(steps) + len(split(tail)))
        item = mc_item(target.ports[target.server_of(key)], key)
        want = b""
        for op, opaque, fields in steps:
            status = fields.pop("status", Status.OK)
            ok = status == Status.OK and item and op not in (Op.DELETE, Op.DELETEQ)
            want += response(op, status, opaque=opaque, cas=item.cas if ok else 0, **fields)
        assert_same(got, want + tail, key)

    return check


def test_keyed_opcodes_on_their_keys_server(mc_target):
    """Every keyed opcode on a key of each server: the item is on the key's server, each reply
    has the request's opcode and opaque and the CAS that server holds."""
    for i, (k,) in enumerate(mc_target.route_keys("op", 1)):
        kb, fl = k.encode(), flags_extras(i + 1)
        with mc_target.raw() as r:
            check = checker(mc_target, r, k)
            check(store(Op.SET, kb, b"10", flags=i + 1, opaque=1), (Op.SET, 1, {}))
            assert mc_target.holder(k) == [mc_target.server_of(k)]
            check(get(Op.GET, kb, 2) + get(Op.GETK, kb, 3) + get(Op.GETQ, kb, 4) +
                  get(Op.GETKQ, kb, 5) + noop(6),
                  (Op.GET, 2, dict(extras=fl, value=b"10")),
                  (Op.GETK, 3, dict(key=kb, extras=fl, value=b"10")),
                  (Op.GETQ, 4, dict(extras=fl, value=b"10")),
                  (Op.GETKQ, 5, dict(key=kb, extras=fl, value=b"10")),
                  tail=response(Op.NOOP, opaque=6))
            check(counter(Op.INCR, kb, 5, opaque=7), (Op.INCR, 7, dict(value=num(15))))
            # (a decr to fewer digits would leave memcached's padding, "0 ", or not, as the item
            # was changed in place or copied: a run-to-run difference of memcached's own)
            check(counter(Op.DECR, kb, 5, opaque=8), (Op.DECR, 8, dict(value=num(10))))
            check(concat(Op.APPEND, kb, b"1", opaque=9), (Op.APPEND, 9, {}))
            check(concat(Op.PREPEND, kb, b"2", opaque=10), (Op.PREPEND, 10, {}))
            check(touch(Op.TOUCH, kb, 100, 11), (Op.TOUCH, 11, dict(extras=fl)))
            check(touch(Op.GAT, kb, 100, 12) + touch(Op.GATK, kb, 100, 13),
                  (Op.GAT, 12, dict(extras=fl, value=b"2101")),
                  (Op.GATK, 13, dict(key=kb, extras=fl, value=b"2101")))
            check(store(Op.ADD, kb, b"x", opaque=14) + store(Op.REPLACE, kb, b"r", opaque=15),
                  (Op.ADD, 14, dict(status=Status.EXISTS, value=b"Data exists for key.")),
                  (Op.REPLACE, 15, {}))
            check(delete(Op.DELETE, kb, opaque=16), (Op.DELETE, 16, {}))
            assert mc_target.holder(k) == []
            check(delete(Op.DELETE, kb, opaque=17),
                  (Op.DELETE, 17, dict(status=Status.NOT_FOUND, value=b"Not found")))


def test_quiet_twins_answer_hits_and_errors(mc_target):
    """The quiet opcodes on a key of each server: only their hits and errors come back (memcached's
    suppression), in request order, then the noop's reply."""
    for i, (k,) in enumerate(mc_target.route_keys("qt", 1)):
        kb = k.encode()
        with mc_target.raw() as r:
            r.send(store(Op.SETQ, kb, b"7", flags=i, opaque=16) + store(Op.ADDQ, kb, b"x", opaque=17) +
                   store(Op.REPLACEQ, kb, b"8", flags=i, opaque=18) +
                   concat(Op.APPENDQ, kb, b"0", opaque=19) + concat(Op.PREPENDQ, kb, b"1", opaque=20) +
                   counter(Op.INCRQ, kb, 2, opaque=21) + counter(Op.DECRQ, kb, 1, opaque=22) +
                   touch(Op.GATQ, kb, 50, 23) + touch(Op.GATKQ, kb, 50, 24) +
                   delete(Op.DELETEQ, kb, opaque=25) + delete(Op.DELETEQ, kb, opaque=26) + noop(27))
            got = read(r, 5)
        assert [(p.op, p.opaque, p.status) for p in got] == [
            (Op.ADDQ, 17, Status.EXISTS), (Op.GATQ, 23, Status.OK), (Op.GATKQ, 24, Status.OK),
            (Op.DELETEQ, 26, Status.NOT_FOUND), (Op.NOOP, 27, Status.OK)], got
        assert (got[1].value, got[1].flags, got[2].key, got[2].value) == (b"181", i, kb, b"181")
        assert got[1].cas == got[2].cas > 0
        assert mc_target.holder(k) == []


def test_quiet_pipeline_over_servers_ends_with_noop(mc_target):
    """setq on keys of every server, then getkq hits and misses in a mixed order, quiet errors
    among them, then noop: the hits and errors in request order (each with its opaque and its
    server's CAS), then the noop's reply; and again on the same connection."""
    keys = [k for ks in mc_target.route_keys("qp", 20) for k in ks]
    with mc_target.raw() as r:
        exchange(r, b"".join(store(Op.SETQ, k, b"v%d" % i, flags=i, opaque=i)
                             for i, k in enumerate(keys)) + noop(1), response(Op.NOOP, opaque=1))
        req, want = b"", b""
        for i, k in enumerate(keys):
            kb = k.encode()
            if i % 3 == 0:
                req += get(Op.GETKQ, kb, 100 + i)
                item = mc_item(mc_target.ports[mc_target.server_of(k)], k)
                want += response(Op.GETKQ, key=kb, extras=flags_extras(i), value=item.value,
                                 opaque=100 + i, cas=item.cas)
            elif i % 3 == 1:
                req += get(Op.GETQ, kb + b"x", 100 + i) + delete(Op.DELETEQ, kb + b"x", opaque=200 + i)
                want += response(Op.DELETEQ, Status.NOT_FOUND, value=b"Not found", opaque=200 + i)
            else:
                req += store(Op.ADDQ, kb, b"no", opaque=300 + i)
                want += response(Op.ADDQ, Status.EXISTS, value=b"Data exists for key.", opaque=300 + i)
        for n in range(2):  # whole, then again on the same connection
            exchange(r, req + noop(1000 + n), want + response(Op.NOOP, opaque=1000 + n))
        misses = b"".join(get(Op.GETQ, k, 7) for k in spread_keys(f"qm{uuid.uuid4().hex[:6]}", 1000))
        exchange(r, misses + noop(5), response(Op.NOOP, opaque=5))


def test_version_quit_quitq(mc_target):
    """version is a server's reply; quit answers an empty success and closes, quitq closes with
    nothing; what follows them is never run."""
    with RawConn(mc_target.ports[0]) as m:
        m.send(request(Op.VERSION, opaque=9) + noop(TERM_OPAQUE))
        want = until_noop_open(m)
    assert parse(want).value.startswith(b"1.6.")
    k = f"quit{uuid.uuid4().hex}".encode()
    with mc_target.raw() as r:
        for _ in range(SERVERS):
            exchange(r, request(Op.VERSION, opaque=9), want)
    for op, answer in ((Op.QUIT, response(Op.QUIT, opaque=3)), (Op.QUITQ, b"")):
        with mc_target.raw() as r:
            r.send(noop(1) + request(op, opaque=3) + store(Op.SET, k, b"after"))
            got = r.read_until_closed()
            assert got == response(Op.NOOP, opaque=1) + answer, split(got)
    assert mc_target.holder(k.decode()) == []


SUMMED = ["curr_items", "total_items", "cmd_get", "cmd_set", "cmd_flush", "get_hits", "get_misses",
          "bytes", "limit_maxbytes"]
EXACT = ["pid", "version", "pointer_size", "servers", "servers_answered"]


def binary_stats(r, opaque):
    """A stat without a key on r: [(name, value)] up to the empty packet; every packet a stat
    reply with the opaque."""
    r.send(request(Op.STAT, opaque=opaque))
    out = []
    for _ in range(1000):
        (p,) = read(r, 1)
        assert (p.magic, p.op, p.status, p.opaque, p.cas, p.extras) == \
            (0x81, Op.STAT, 0, opaque, 0, b""), p
        if not p.key and not p.value:
            return out
        out.append((p.key.decode(), p.value.decode()))
    raise AssertionError(f"no end of the stats after {len(out)} packets")


def text_stats(port):
    """`stats` on port: [(name, value)] in order."""
    with RawConn(port) as r:
        r.send(b"stats\r\n")
        text = r.recv_until(b"END\r\n").decode()
    return [tuple(line.split(" ", 2)[1:]) for line in text.splitlines() if line.startswith("STAT ")]


def test_stat_sums_the_servers(mc_pool):
    """stat without a key: one packet per stat (opcode, status 0, the opaque, the name as key and
    the value), then an empty one: the names of text `stats` through the proxy in its order, the
    proxy's own lines and memcached's counters summed over the servers."""
    with mc_pool.raw() as r:
        r.send(store(Op.SET, "st" + uuid.uuid4().hex, b"v") + get(Op.GET, "nothere", 2))
        read(r, 2)
        got = binary_stats(r, 0xabcd)
        exchange(r, noop(4), response(Op.NOOP, opaque=4))
    text = text_stats(mc_pool.port)
    servers = [dict(text_stats(p)) for p in mc_pool.ports]
    assert [n for n, _ in got] == [n for n, _ in text]
    names = dict(got)
    for name in SUMMED:
        assert int(names[name]) == sum(int(s[name]) for s in servers), name
    for name in EXACT:
        assert names[name] == dict(text)[name], name
    assert int(names["pid"]) == mc_pool.pid() and names["servers_answered"] == str(SERVERS)
    assert names["version"] == min(s["version"] for s in servers)


def test_stat_with_a_key_is_refused(mc_pool):
    """stat with a group (settings, slabs, ...) is per server: "not supported" (0x0083) with its
    opaque, its key passed over, the connection kept."""
    text = b"stats with arguments is not supported by the proxy (only stats)"
    with mc_pool.raw() as r:
        for n, group in enumerate((b"settings", b"slabs", b"items")):
            exchange(r, request(Op.STAT, key=group, opaque=n) + noop(100 + n),
                     response(Op.STAT, Status.NOT_SUPPORTED, value=text, opaque=n) +
                     response(Op.NOOP, opaque=100 + n))


def test_flush_reaches_every_server(mc_target):
    """flush (no extras, or a 4-byte delay) empties every server and answers an empty success
    with its opcode and opaque; flushq answers nothing."""
    def filled():
        keys = [k for ks in mc_target.route_keys("fl", 2) for k in ks]
        with mc_target.raw() as w:
            w.send(b"".join(store(Op.SETQ, k, b"v") for k in keys) + noop(0))
            read(w, 1)
        assert all(mc_target.holder(k) for k in keys)
        return keys

    def flushes():
        return [int(dict(text_stats(p))["cmd_flush"]) for p in mc_target.ports]

    before = flushes()
    with mc_target.raw() as r:
        for n, req in enumerate((flush(Op.FLUSH, opaque=7), flush(Op.FLUSH, 0, opaque=8),
                                 flush(Op.FLUSHQ, opaque=9), flush(Op.FLUSHQ, 0, opaque=10))):
            keys = filled()
            answer = b"" if req[1] == Op.FLUSHQ else response(req[1], opaque=7 + n)
            exchange(r, req + noop(20 + n), answer + response(Op.NOOP, opaque=20 + n))
            assert not any(mc_target.holder(k) for k in keys)
        exchange(r, flush(Op.FLUSH, 3600, opaque=30), response(Op.FLUSH, opaque=30))
    assert flushes() == [b + 5 for b in before]


UNKNOWN = b"Unknown command"


@pytest.mark.parametrize("req", [
    request(0x1B, extras=struct.pack(">I", 1), opaque=11),            # verbosity
    request(0x30, opaque=12), request(0x30, key=b"k", extras=b"1234", value=b"v" * 3000, opaque=13),
    request(0xFF, value=noop(99), opaque=14),                          # a noop inside its body
    request(Op.SASL_LIST, opaque=15),
    request(Op.SASL_AUTH, key=b"PLAIN", value=b"\0user\0pass", opaque=16),
    request(Op.SASL_STEP, key=b"PLAIN", value=b"\0user\0pass", opaque=17),
], ids=["verbosity", "0x30", "0x30-body", "0xff-noop-body", "sasl-list", "sasl-auth", "sasl-step"])
def test_unknown_opcode_answered_and_passed_over(mc_target, req):
    """Unknown and SASL opcodes: "Unknown command" (0x0081) with the request's opcode and
    opaque; the body is passed over (a noop inside it is not run) and the connection kept."""
    if isinstance(mc_target, cluster.Direct) and req[4]:
        pytest.skip("memcached 1.6.18 holds its reply to an unknown opcode with extras until more "
                    "bytes come")
    opaque = struct.unpack(">I", req[12:16])[0]
    with mc_target.raw() as r:
        exchange(r, req + noop(2), response(req[1], Status.UNKNOWN, value=UNKNOWN, opaque=opaque) +
                 response(Op.NOOP, opaque=2))


# --- malformed requests: memcached's reply, then the connection closed

CANARY = f"canary{uuid.uuid4().hex}".encode()
SET_CANARY = store(Op.SET, CANARY, b"x")  # in a malformed request's body: never run anywhere
EINVAL, X4, X8, X20 = b"Invalid arguments", b"\0" * 4, b"\0" * 8, b"\0" * 20
BAD = {
    "body-shorter-than-key": (request(Op.GET, b"abcdef", bodylen=3) + SET_CANARY, UNKNOWN),
    "key-251": (get(Op.GET, b"k" * 251, 5), EINVAL),
    "set-key-300": (store(Op.SET, b"k" * 300, SET_CANARY), EINVAL),
    "get-extras": (request(Op.GET, b"k", X4), EINVAL),
    "getk-value": (request(Op.GETK, b"k", value=SET_CANARY), EINVAL),
    "getq-no-key": (request(Op.GETQ), EINVAL),
    "set-no-extras": (request(Op.SET, b"k", value=SET_CANARY), EINVAL),
    "add-4-extras": (request(Op.ADD, b"k", X4, b"v"), EINVAL),
    "replaceq-no-key": (request(Op.REPLACEQ, extras=X8, value=SET_CANARY), EINVAL),
    "delete-extras": (request(Op.DELETE, b"k", X4), EINVAL),
    "deleteq-value": (request(Op.DELETEQ, b"k", value=SET_CANARY), EINVAL),
    "delete-no-key": (request(Op.DELETE), EINVAL),
    "incr-8-extras": (request(Op.INCR, b"k", X8), EINVAL),
    "decrq-value": (request(Op.DECRQ, b"k", X20, SET_CANARY), EINVAL),
    "append-extras": (request(Op.APPEND, b"k", X4, b"v"), EINVAL),
    "prependq-no-key": (request(Op.PREPENDQ, value=SET_CANARY), EINVAL),
    "touch-no-extras": (request(Op.TOUCH, b"k"), EINVAL),
    "gat-value": (request(Op.GAT, b"k", X4, SET_CANARY), EINVAL),
    "gatkq-8-extras": (request(Op.GATKQ, b"k", X8), EINVAL),
    "flush-key": (request(Op.FLUSH, b"k"), EINVAL),
    "flushq-value": (request(Op.FLUSHQ, value=b"v"), EINVAL),
    "flush-8-extras": (request(Op.FLUSH, extras=X8), EINVAL),
    "noop-extras": (request(Op.NOOP, extras=X4), EINVAL),
    "quit-key": (request(Op.QUIT, b"k"), EINVAL),
    "version-value": (request(Op.VERSION, value=b"v"), EINVAL),
    "bad-magic": (b"\x81" + SET_CANARY[1:], None),
    "text-request": (b"set %s 0 0 1\r\nx\r\n" % CANARY, None),
}
# memcached reads no value for these, so it takes the value for the next request: the proxy
# refuses them, as it cannot tell where the next request starts
PROXY_ONLY = {"gat-value"}


@pytest.fixture(scope="module")
def lone(module_memcached_server, module_write_conf, module_nutcrackers):
    """A proxy (-T 1) with one server connection to its one memcached, for the bystander."""
    c = cluster.start_cluster("memcache", 1, 1, module_memcached_server, module_write_conf,
                              module_nutcrackers, name=f"binlone-{uuid.uuid4().hex[:6]}",
                              server_connections=1)
    yield c
    assert c.stop() == 0


@pytest.fixture(scope="module", params=["direct", "proxy"])
def shared(request):
    """(target, bystander): a BinBystander runs on the target all along (through the proxy it
    shares the one server connection with every test's requests)."""
    target = request.getfixturevalue("mc_direct" if request.param == "direct" else "lone")
    by = BinBystander(target.port, [f"by{uuid.uuid4().hex[:8]}"]).start()
    failures = manage.server_failures(target.proxy.manage_port, target.name) \
        if request.param == "proxy" else None
    yield target, by
    by.stop()
    assert by.error is None, by.error
    if failures is not None:
        assert manage.server_failures(target.proxy.manage_port, target.name) == failures


@pytest.mark.parametrize("name", list(BAD))
def test_malformed_request_closes_only_its_client(shared, name):
    """The earlier replies, then memcached's reply to the malformed request (its opcode and
    opaque; none for a bad magic) and the close; no server ever runs the bytes after its
    header, and the bystander only ever gets its own replies."""
    target, by = shared
    if name in PROXY_ONLY and isinstance(target, cluster.Direct):
        pytest.skip("memcached reads the value as the next request")
    bad, text = BAD[name]
    want = response(Op.NOOP, opaque=1)
    if text is not None:
        want += response(bad[1], Status.UNKNOWN if text == UNKNOWN else Status.EINVAL, value=text,
                         opaque=struct.unpack(">I", bad[12:16])[0])
    with target.raw() as r:
        r.send(noop(1) + bad)
        got = r.read_until_closed()
    assert_same(got, want, name)
    assert target.holder(CANARY.decode()) == []
    by.check()


def test_server_down(memcached_server, write_conf, nutcrackers):
    """A request for a server that refuses connections gets status 0x0086 with the error's text,
    its opcode and opaque, quiet ones too, in their place; the other servers answer."""
    live, _ = memcached_server()
    c = cluster.start_cluster("memcache", 2, 1, None, write_conf, nutcrackers, "bindown",
                              ports=[live, procs.free_port()])
    (up,), (down,) = c.route_keys("down", 1)
    refused = b"Connection refused"
    with c.raw() as r:
        exchange(r, get(Op.GET, down, 1), response(Op.GET, Status.TEMPORARY, value=refused, opaque=1))
        r.send(store(Op.SETQ, up, b"v") + get(Op.GETKQ, down, 2) + store(Op.SETQ, down, b"v", opaque=3) +
               get(Op.GETQ, up, 4) + noop(5))
        got = read(r, 4)
        assert [(p.op, p.status, p.opaque, p.value) for p in got] == [
            (Op.GETKQ, Status.TEMPORARY, 2, refused), (Op.SETQ, Status.TEMPORARY, 3, refused),
            (Op.GETQ, Status.OK, 4, b"v"), (Op.NOOP, Status.OK, 5, b"")], got
    assert c.stop() == 0
