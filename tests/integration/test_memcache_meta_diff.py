"""memcached's meta commands checked against real memcacheds (1.6.18), byte for byte: a corpus of
streams (every flag of mg, ms, md, ma and me; quiet pipelines over keys on every server, then mn;
base64 keys; ms framing, token counts and NUL bytes; malformed lines) goes through the proxy, a
pool of 3 fresh memcacheds, whole; and, on 3 other fresh memcacheds, each request goes straight
to the server the proxy routes its key to (a request without a routable key to any: memcached's
errors do not depend on the server), in the same order, its reply read up to a terminator. The
client must get from the proxy exactly the replies memcached gives (each server sees the same
operations in both runs, so CAS values match); only seconds (t, l, exp=, la=) may differ by 1.

Then each stream goes through the proxy again cut in two writes at many places, while a bystander
shares the pool's one server connection per server (one worker, server_connections: 1) and checks
every reply it gets is its own, and every memcached must still have the one connection it had: a
framing slip would shift replies or make the proxy close the connection.
"""
import uuid

import pytest

from nctest import cluster, manage, mcmeta
from nctest.conn import RawConn
from nctest.framing import cuts
from nctest.keys import spread_keys
from nctest.mcmeta import b64

SERVERS = 3
CUTS = 24          # places each stream is cut at (a cut is a fresh connection)


@pytest.fixture(scope="module")
def setup(module_memcached_server, module_write_conf, module_nutcrackers):
    c = cluster.start_cluster("memcache", SERVERS, 1, module_memcached_server, module_write_conf,
                              module_nutcrackers, name=f"mdiff-{uuid.uuid4().hex[:6]}",
                              server_connections=1)
    ref = [module_memcached_server()[0] for _ in range(SERVERS)]
    # two keys on each server (as the proxy routes them), and keys whose base64 decodes to them
    keys = [[] for _ in range(SERVERS)]
    for k in spread_keys("md", 60):
        where = c.server_of(k)
        if len(keys[where]) < 2:
            keys[where].append(k)
    assert all(len(ks) == 2 for ks in keys), keys
    yield c, ref, keys
    assert c.stop() == 0


def u(data, key=None):
    """A unit of a stream: bytes memcached answers as they are, on the server of key (a str, as
    the proxy routes it) or, key None, on any."""
    return (data, key)


MN = (b"mn\r\n", "mn")  # the proxy's own: "MN" after every earlier reply (memcached's is the same)


def corpus(keys):
    (a, a2), (b, b2), (c, c2) = keys
    A, B, C = a.encode(), b.encode(), c.encode()
    ab = a2 + ":b64"  # a key stored through its base64 form
    streams = {
        "ms-flags": [u(b"ms %s 5 T0 F7 c k O1 MS\r\nhello\r\n" % A, a),
                     u(b"ms %s 3 ME\r\nabc\r\n" % A, a), u(b"ms %s 2 MA c\r\n!!\r\n" % A, a),
                     u(b"ms %s 2 MP k\r\n<<\r\n" % A, a), u(b"ms %s 1 MR O9\r\nr\r\n" % A, a),
                     u(b"ms %s 1 MR\r\nx\r\n" % B, b), u(b"ms %s 1 C1\r\nx\r\n" % A, a),
                     u(b"ms %s 3 I T30\r\nabc\r\n" % A, a), u(b"ms %s 1 q\r\nq\r\n" % C, c),
                     u(b"ms %s 2 MX\r\nhi\r\n" % A, a), u(b"mg %s v f t c k s\r\n" % A, a),
                     u(b"ms %s 1 ME q\r\nz\r\n" % C, c), MN],
        "mg-flags": [u(b"ms %s 5 T60 F3\r\nhello\r\n" % B, b), u(b"mg %s v\r\n" % B, b),
                     u(b"mg %s s v t f c h l k O123 u\r\n" % B, b), u(b"mg %s h l t\r\n" % B, b),
                     u(b"mg %s T90 t v\r\n" % B, b), u(b"mg %s R100 v t c\r\n" % B, b),
                     u(b"mg %s v\r\n" % c2.encode(), c2),
                     u(b"mg %s N30 s t v c\r\n" % c2.encode(), c2), u(b"mg %s N30 v c\r\n" % c2.encode(), c2),
                     u(b"mg %s q k\r\n" % a2.encode(), a2), u(b"mg %s q v O5\r\n" % B, b),
                     u(b"mg %s E5\r\n" % B, b), u(b"mg %s P L v\r\n" % B, b), MN],
        "md-flags": [u(b"ms %s 1\r\nx\r\n" % C, c), u(b"md %s q\r\n" % C, c), u(b"md %s\r\n" % C, c),
                     u(b"md %s q k O7\r\n" % C, c), u(b"ms %s 1\r\ny\r\n" % A, a),
                     u(b"md %s C1\r\n" % A, a), u(b"md %s I T30 k\r\n" % A, a),
                     u(b"mg %s v c t\r\n" % A, a), u(b"mg %s v c\r\n" % A, a), u(b"md %s q\r\n" % A, a), MN],
        "ma-flags": [u(b"ma %s\r\n" % B, b), u(b"ma %s q\r\n" % B, b), u(b"ma %s N0 J10 v\r\n" % B, b),
                     u(b"ma %s v\r\n" % B, b), u(b"ma %s D5 MI v t c\r\n" % B, b),
                     u(b"ma %s MD D3 v k O2\r\n" % B, b), u(b"ma %s M- D100 v\r\n" % B, b),
                     u(b"ma %s q\r\n" % B, b), u(b"ma %s q v\r\n" % B, b), u(b"ma %s MX\r\n" % B, b),
                     u(b"ma %s C1\r\n" % B, b), u(b"ms %s 3\r\nabc\r\n" % A, a), u(b"ma %s\r\n" % A, a),
                     u(b"ma %s D18446744073709551615 v\r\n" % B, b), u(b"ma %s J5 N0 T30 t v\r\n" % C, c), MN],
        "me": [u(b"ms %s 2 T100\r\nhi\r\n" % A, a), u(b"me %s\r\n" % A, a), u(b"me %s b\r\n" % b64(a), a),
               u(b"me %s\r\n" % C, c), u(b"me\r\n"), u(b"me %s x y\r\n" % A, a), u(b"me foo b\r\n")],
        "quiet-pipeline": [u(b"ms %s 2 q\r\nv%d\r\n" % (k.encode(), i % 10), k)
                           for i, k in enumerate([a, a2, b, b2, c, c2])] +
                          [u(b"mg %s v q k\r\n" % k.encode(), k) for k in [a, b, c, a2 + "x", b2, c2 + "x"]] +
                          [u(b"mg %s q q\r\n" % B, b), u(b"md %s q\r\n" % (c2 + "y").encode(), c2 + "y"),
                           u(b"ma %s q\r\n" % A, a), u(b"md %s q\r\n" % b2.encode(), b2), MN,
                           u(b"mg %s v q\r\n" % b2.encode(), b2), MN],
        "opaque-and-key": [u(b"mg %s k O1\r\n" % A, a), u(b"mg %s k O2 q\r\n" % A, a),
                           u(b"md %s k O3 q\r\n" % A, a), u(b"ma %s k O4\r\n" % A, a),
                           u(b"ms %s 1 k O5 c\r\n1\r\n" % A, a), u(b"mg %s O%s\r\n" % (A, b"x" * 31), a),
                           u(b"mg %s O%s\r\n" % (A, b"x" * 33), a), MN],
        "base64": [u(b"ms %s 3 b\r\nbar\r\n" % b64(ab), ab), u(b"mg %s v\r\n" % ab.encode(), ab),
                   u(b"mg %s b v k\r\n" % b64(ab), ab), u(b"mg %s b v k c\r\n" % b64(ab)[:-1], None),
                   u(b"md %s b q\r\n" % b64(ab), ab), u(b"mg %s v\r\n" % ab.encode(), ab),
                   u(b"mg Zm9vYg b v\r\n"), u(b"mg Zm9v==== b\r\n"), u(b"mg A=== b\r\n"),
                   u(b"mg Zm!9v b v\r\n", "foo"), u(b"mg Zm=v b k\r\n", "f`"), u(b"mg Zm8=Zm9v b k\r\n", "fo")],
        "ms-framing": [u(b"ms\r\nhi\r\n"), u(b"ms %s\r\nhi\r\n" % A), u(b"ms %s abc\r\nhi\r\n" % A),
                       u(b"ms %s -1\r\nhi\r\n" % A), u(b"ms %s 0x5\r\nhello\r\n" % A),
                       u(b"ms %s 2147483646\r\n" % A), u(b"ms %s\x00x 5\r\nhello\r\n" % A),
                       u(b"ms %s 5 T0 \x00 q\r\nhello\r\n" % A, a), u(b"ms %s 5\x00\r\nhello\r\n" % A, a),
                       u(b"ms %s +5\r\nhello\r\n" % A, a), u(b"ms %s 5\tx\r\nhello\r\n" % A, a),
                       u(b"ms %s \t5\r\nhello\r\n" % A, a), u(b"ms %s -0\r\n\r\n" % A, a),
                       u(b"ms %s 4294967301\r\nhello\r\n" % A, a), u(b"ms %s -4294967291\r\nhello\r\n" % A, a),
                       u(b"ms %s 3\r\nabcde\r\n" % A, a), u(b"ms %s 3\r\nabc\r\r" % A, a),
                       u(b"ms %s 3\r\nab\r\r\n" % A, a), u(b"mg %s v\r\n" % A, a),
                       u(b"ms %s 5" % A + b" T1" * 16 + b"\r\nhello\r\n", a),
                       u(b"ms %s 5" % A + b" T1" * 17 + b"\r\nhello\r\n"),
                       u(b"ms " + b"k" * 251 + b" 5\r\nhello\r\n"), MN],
        "malformed": [u(b"mg\r\n"), u(b"md\r\n"), u(b"ma\r\n"), u(b"mx %s\r\n" % A), u(b"MG %s\r\n" % A),
                      u(b"mg %s q q\r\n" % A, a), u(b"mg %s Z\r\n" % A, a), u(b"md %s Z q\r\n" % A, a),
                      u(b"ma %s Z\r\n" % A, a), u(b"mg %s" % A + b" v" * 17 + b"\r\n", a),
                      u(b"mg %s" % A + b" v" * 18 + b" q\r\n", a), u(b"md %s" % A + b" T1" * 18 + b"\r\n", a),
                      u(b"mg " + b"k" * 251 + b" v q\r\n"), u(b"mg %s\x00x v\r\n" % A, a),
                      u(b"mg %s N\r\n" % A, a), u(b"mg %s Tx\r\n" % A, a), u(b"ma %s Jx\r\n" % A, a),
                      u(b"ma %s Dx q\r\n" % A, a), u(b"ms %s 1 Fx\r\n1\r\n" % A, a),
                      u(b"mg %s qx" % A + b"y" * 300 + b"\r\n", a), (b"mn x y\r\n", "mn"), MN],
    }
    return streams


def flush(ports):
    """Every item gone (a stream starts from nothing on both sides)."""
    for port in ports:
        with RawConn(port) as r:
            r.exchange(b"flush_all\r\n", b"OK\r\n")


def expected(setup, units, owners):
    """The replies memcached gives each unit on the server the proxy routes its key to."""
    _, ref, _ = setup
    flush(ref)
    conns = [RawConn(p) for p in ref]
    try:
        out = []
        for data, key in units:
            if key == "mn":
                out.append(b"MN\r\n")
                continue
            out.append(mcmeta.direct(conns[owners(key) if key else 0], data))
        return b"".join(out)
    finally:
        for r in conns:
            r.close()


def through(c, data, mns, at=()):
    """The proxy's replies to data (holding mns mn requests) sent in pieces cut at `at`, then to
    a last mn: read reply by reply up to that one's MN, which is left out (so nothing comes
    between the replies and it)."""
    flush(c.ports)
    with c.raw() as r:
        prev = 0
        for cut in (*at, len(data)):
            r.send(data[prev:cut])
            prev = cut
        r.send(b"mn\r\n")
        got, seen = b"", 0
        while seen <= mns:
            one = r._until(mcmeta.reply_end, None)
            got += one
            seen += one == b"MN\r\n"
    return got[:-4]


@pytest.fixture(scope="module")
def owners(setup):
    c = setup[0]
    cache = {}

    def owner(key):
        if key not in cache:
            cache[key] = c.server_of(key)
        return cache[key]

    return owner


@pytest.fixture(scope="module")
def streams(setup):
    return corpus(setup[2])


NAMES = ["ms-flags", "mg-flags", "md-flags", "ma-flags", "me", "quiet-pipeline", "opaque-and-key",
         "base64", "ms-framing", "malformed"]


@pytest.mark.parametrize("name", NAMES)
def test_replies_are_memcacheds(setup, owners, streams, name):
    """The stream whole through the proxy: memcached's replies, byte for byte."""
    c = setup[0]
    units = streams[name]
    want = expected(setup, units, owners)
    data = b"".join(d for d, _ in units)
    got = through(c, data, sum(k == "mn" for _, k in units))
    mcmeta.assert_same(got, want, name)
    if name == "base64":  # stored through the base64 form: on the decoded key's server
        key = setup[2][0][1] + ":b64"
        assert c.holder(key) == [] and c.server_of(key) == owners(key)


def test_streams_cut_with_a_bystander(setup, streams):
    """Each stream cut in two writes at many places gives the same replies (but the values that
    change from run to run: CAS, hit-before, seconds), while a bystander on the same server
    connections only ever gets its own replies, and no server connection is dropped."""
    c, _, keys = setup
    doc_before = server_counters(c)
    by = mcmeta.McBystander(c.port, [ks[0] + ":by" for ks in keys]).start()
    try:
        for name in NAMES:
            data = b"".join(d for d, _ in streams[name])
            mns = sum(k == "mn" for _, k in streams[name])
            first = through(c, data, mns)
            for at in cuts(data, CUTS):
                got = through(c, data, mns, (at,))
                mcmeta.assert_same(got, first, f"{name} cut at {at}", runs=True)
            by.check()
    finally:
        by.stop()
    assert server_counters(c) == doc_before, "a server connection failed"


def server_counters(c):
    """The pool's servers' failure counters (a framing slip is a server error)."""
    return manage.server_failures(c.proxy.manage_port, c.name)
