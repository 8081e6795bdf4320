"""memcached commands through the proxy (1 and 4 memcacheds, -T 1 and -T 4), byte for byte on raw
sockets and with pymemcache: get/gets/gat/gats split per server and reassembled in key order with
one END, the storage commands with and without noreply, cas, incr/decr, delete (also
`delete <key> 0`), touch, version, quit; memcached's token counts (a wrong one is ERROR and the
next line is the next request, compared with a live memcached); CLIENT_ERROR for bad requests (the
connection is closed only when the stream cannot be followed), nothing for those ending in noreply
when memcached sends nothing; a connection that starts with a binary request served in the binary
protocol (raw and with pylibmc binary=True; test_memcache_binary.py has the rest); SERVER_ERROR
when a server cannot be reached.

The error texts are memcached's own: the expected line is what a live memcached outside the proxy
(the `reference` fixture) answers to the same request. Only the proxy's own replies, where
memcached has none to compare with (it would run the command or close the connection), are
written out here; README.md and notes/memcache.md document them.
"""
import uuid

import pylibmc
import pytest

from nctest import mcbin, procs
from nctest.cluster import start_cluster
from nctest.codec import mc_store, mc_value
from nctest.conn import RawConn
from nctest.keys import spread_keys
from nctest.mcbin import Op, Status


def cas_of(conn, key):
    """The cas unique of key, read with gets through conn."""
    conn.send(f"gets {key}\r\n".encode())
    reply = conn.mc_get_reply()
    return int(reply.split(b"\r\n")[0].split()[4])


@pytest.fixture(scope="module")
def reference(module_memcached_server):
    """A memcached outside the proxy: what it answers is the expected reply."""
    port, _ = module_memcached_server()
    return port


def memcached_says(reference, request, setup=()):
    """The first reply line of a live memcached (the reference) to request, after the setup
    requests (each answered with one line) on the same connection."""
    with RawConn(reference) as m:
        for s in setup:
            m.send(s)
            m.line()
        m.send(request)
        return m.line()


def replies_until_version(conn):
    """The reply lines before the VERSION line (no request here gets a data block back)."""
    lines = []
    while not (line := conn.line()).startswith(b"VERSION "):
        lines.append(line)
    return lines


def memcached_answers(reference, request):
    """All a live memcached (the reference) answers to request: the lines before the VERSION of a
    version sent after it."""
    with RawConn(reference) as m:
        m.send(request + b"version\r\n")
        return b"".join(replies_until_version(m))


@pytest.fixture
def placed(mc_cluster):
    prefix = f"mk{uuid.uuid4().hex[:8]}"
    by_server = mc_cluster.place_keys(prefix, 3)
    keys = [key for group in zip(*by_server) for key in group]  # servers take turns
    return by_server, keys, [f"{prefix}:missing:{i}" for i in range(3)]


def test_get_many_keys_in_key_order_one_end(mc_cluster, placed):
    by_server, keys, missing = placed
    asked = [missing[0], *keys[:5], missing[1], *keys[5:], keys[0], missing[2], keys[-1]]
    expected = b"".join(mc_value(k, k) for k in asked if k not in missing) + b"END\r\n"
    with mc_cluster.raw() as c:
        c.exchange(f"get {' '.join(asked)}\r\n".encode(), expected)
        c.exchange(f"get {' '.join(missing)}\r\n".encode(), b"END\r\n")
        c.exchange(f"get {keys[0]}\r\n".encode(), mc_value(keys[0], keys[0]) + b"END\r\n")
        # many spaces between keys, a bare "\n" line end: as memcached accepts them
        c.exchange(f"get   {keys[0]}    {keys[1]}  \n".encode(),
                   mc_value(keys[0], keys[0]) + mc_value(keys[1], keys[1]) + b"END\r\n")
    assert mc_cluster.client().get_many(asked) == {k: k.encode() for k in asked if k not in missing}


def test_gets_many_keys_carry_each_servers_cas(mc_cluster, placed):
    by_server, keys, missing = placed
    with mc_cluster.raw() as c:
        cas = {k: cas_of(c, k) for k in keys}
        asked = [keys[-1], missing[0], *keys]
        expected = b"".join(mc_value(k, k, cas=cas[k]) for k in asked if k not in missing)
        c.exchange(f"gets {' '.join(asked)}\r\n".encode(), expected + b"END\r\n")


def test_storage_commands(mc_cluster):
    k = f"st{uuid.uuid4().hex}"
    with mc_cluster.raw() as c:
        c.exchange(mc_store("set", k, "hello", flags=42), b"STORED\r\n")
        c.exchange(f"get {k}\r\n".encode(), mc_value(k, "hello", flags=42) + b"END\r\n")
        c.exchange(mc_store("add", k, "x"), b"NOT_STORED\r\n")
        c.exchange(mc_store("add", k + "a", "added"), b"STORED\r\n")
        c.exchange(mc_store("replace", k, "bye"), b"STORED\r\n")
        c.exchange(mc_store("replace", k + "nope", "x"), b"NOT_STORED\r\n")
        c.exchange(mc_store("append", k, "!!"), b"STORED\r\n")
        c.exchange(mc_store("prepend", k, "<<"), b"STORED\r\n")
        c.exchange(mc_store("append", k + "nope", "x"), b"NOT_STORED\r\n")
        c.exchange(mc_store("prepend", k + "nope", "x"), b"NOT_STORED\r\n")
        c.exchange(f"get {k} {k}a\r\n".encode(),
                   mc_value(k, "<<bye!!") + mc_value(k + "a", "added") + b"END\r\n")
        # empty and binary values
        c.exchange(mc_store("set", k + "e", b""), b"STORED\r\n")
        c.exchange(mc_store("set", k + "b", b"\r\n\x00END\r\n"), b"STORED\r\n")
        c.exchange(f"get {k}e {k}b\r\n".encode(),
                   mc_value(k + "e", b"") + mc_value(k + "b", b"\r\n\x00END\r\n") + b"END\r\n")


def test_noreply_commands_send_nothing(mc_cluster):
    k = f"nr{uuid.uuid4().hex}"
    noreply = b"".join([
        mc_store("set", k, "1", extra=" noreply"),
        mc_store("add", k + "a", "a", extra=" noreply"),
        mc_store("add", k, "no", extra=" noreply"),
        mc_store("replace", k, "10", extra=" noreply"),
        mc_store("append", k, "0", extra=" noreply"),
        mc_store("prepend", k, "2", extra=" noreply"),
        f"incr {k} 5 noreply\r\n".encode(),
        f"decr {k} 1 noreply\r\n".encode(),
        f"touch {k} 1000 noreply\r\n".encode(),
        f"delete {k}a noreply\r\n".encode(),
        f"delete {k}nope noreply\r\n".encode(),
    ])
    with mc_cluster.raw() as c:
        # the only reply is the get's: 2100 + 5 - 1
        c.exchange(noreply + f"get {k} {k}a\r\n".encode(), mc_value(k, "2104") + b"END\r\n")
        c.send(f"gets {k}\r\n".encode())
        cas = int(c.mc_get_reply().split()[4])
        c.exchange(mc_store("cas", k, "c", extra=f" {cas} noreply") + f"get {k}\r\n".encode(),
                   mc_value(k, "c") + b"END\r\n")


def test_cas(mc_cluster):
    k = f"cas{uuid.uuid4().hex}"
    with mc_cluster.raw() as c:
        c.exchange(mc_store("set", k, "v1"), b"STORED\r\n")
        cas = cas_of(c, k)
        c.exchange(mc_store("cas", k, "v2", extra=f" {cas}"), b"STORED\r\n")
        c.exchange(mc_store("cas", k, "v3", extra=f" {cas}"), b"EXISTS\r\n")
        c.exchange(mc_store("cas", k + "nope", "v", extra=" 1"), b"NOT_FOUND\r\n")
        c.exchange(f"get {k}\r\n".encode(), mc_value(k, "v2") + b"END\r\n")
    client = mc_cluster.client()
    value, token = client.gets(k)
    assert value == b"v2"
    assert client.cas(k, "v4", token) is True
    assert client.cas(k, "v5", token) is False
    assert client.get(k) == b"v4"


def test_incr_decr(mc_cluster, reference):
    k = f"n{uuid.uuid4().hex}"
    with mc_cluster.raw() as c:
        c.exchange(mc_store("set", k, "10"), b"STORED\r\n")
        c.exchange(f"incr {k} 5\r\n".encode(), b"15\r\n")
        c.exchange(f"decr {k} 20\r\n".encode(), b"0\r\n")
        c.exchange(f"incr {k} 18446744073709551615\r\n".encode(), b"18446744073709551615\r\n")
        c.exchange(f"incr {k} 1\r\n".encode(), b"0\r\n")
        c.exchange(f"incr {k}nope 1\r\n".encode(), b"NOT_FOUND\r\n")
        c.exchange(mc_store("set", k + "s", "abc"), b"STORED\r\n")
        # the errors: a non-numeric value (memcached's, passed on) and bad deltas (the proxy's)
        for request in (f"incr {k}s 1\r\n", f"incr {k} x\r\n", f"decr {k} -1\r\n"):
            want = memcached_says(reference, request.encode(),
                                  setup=[mc_store("set", k, "0"), mc_store("set", k + "s", "abc")])
            assert want.startswith(b"CLIENT_ERROR "), want
            c.exchange(request.encode(), want)
    client = mc_cluster.client()
    assert client.incr(k, 7) == 7
    assert client.decr(k, 2) == 5


def test_delete(mc_cluster, reference):
    k = f"d{uuid.uuid4().hex}"
    usage = memcached_says(reference, f"delete {k} 5\r\n".encode())
    with mc_cluster.raw() as c:
        c.exchange(mc_store("set", k, "v") + mc_store("set", k + "2", "v"), b"STORED\r\n" * 2)
        c.exchange(f"delete {k}\r\n".encode(), b"DELETED\r\n")
        c.exchange(f"delete {k}\r\n".encode(), b"NOT_FOUND\r\n")
        c.exchange(f"delete {k}2 0\r\n".encode(), b"DELETED\r\n")
        c.exchange(f"delete {k}2 0\r\n".encode(), b"NOT_FOUND\r\n")
        c.exchange(f"delete {k} 5\r\n".encode(), usage)
        c.exchange(f"get {k} {k}2\r\n".encode(), b"END\r\n")


def test_touch_gat_gats(mc_cluster, placed, reference):
    by_server, keys, missing = placed
    bad_exptime = f"touch {keys[0]} soon\r\n".encode()
    bad_exptime_reply = memcached_says(reference, bad_exptime,
                                       setup=[mc_store("set", keys[0], keys[0])])
    with mc_cluster.raw() as c:
        c.exchange(f"touch {keys[0]} 1000\r\n".encode(), b"TOUCHED\r\n")
        c.exchange(f"touch {missing[0]} 1000\r\n".encode(), b"NOT_FOUND\r\n")
        c.exchange(bad_exptime, bad_exptime_reply)
        asked = [missing[0], *keys, missing[1]]
        c.exchange(f"gat 1000 {' '.join(asked)}\r\n".encode(),
                   b"".join(mc_value(k, k) for k in keys) + b"END\r\n")
        cas = {k: cas_of(c, k) for k in keys}
        c.exchange(f"gats 2000 {' '.join(reversed(asked))}\r\n".encode(),
                   b"".join(mc_value(k, k, cas=cas[k]) for k in reversed(keys)) + b"END\r\n")
        c.exchange(f"gat 1000 {missing[0]}\r\n".encode(), b"END\r\n")
    assert mc_cluster.client().touch(keys[1], 100) is True


def test_version(mc_cluster):
    want = RawConn(mc_cluster.ports[0])
    want.send(b"version\r\n")
    expected = want.line()
    want.close()
    assert expected.startswith(b"VERSION ")
    with mc_cluster.raw() as c:
        for _ in range(2 * len(mc_cluster.ports)):
            c.exchange(b"version\r\n", expected)
    assert mc_cluster.client().version() == expected[8:-2]


@pytest.mark.parametrize("quit", ["quit", "quit noreply", "quit now please"])
def test_quit(mc_cluster, quit):
    """quit closes after the earlier replies; memcached ignores whatever follows it on the line."""
    k = f"q{uuid.uuid4().hex}"
    with mc_cluster.raw() as c:
        c.send(mc_store("set", k, "v") + f"get {k}\r\n{quit}\r\nget {k}\r\n".encode())
        c.expect(b"STORED\r\n" + mc_value(k, "v") + b"END\r\n")
        assert c.is_closed()


def test_pymemcache_client(mc_cluster):
    client = mc_cluster.client()
    p = f"py{uuid.uuid4().hex[:8]}"
    data = {f"{p}:{i}": f"value {i}".encode() for i in range(40)}
    assert client.set_many(data) == []
    assert client.get_many(list(data) + [p + "nope"]) == data
    assert client.add(p + ":0", "x") is False
    assert client.replace(p + ":0", "r") is True
    assert client.append(p + ":0", "a") is True
    assert client.prepend(p + ":0", "p") is True
    assert client.get(p + ":0") == b"pra"
    assert client.delete_many(list(data)) is True
    assert client.get_many(list(data)) == {}
    client.close()


# --- bad requests


def test_key_longer_than_250_bytes(mc_cluster, reference):
    ok_key = "k" * 250
    long_key = "k" * 251
    huge_key = "h" * 20000
    with mc_cluster.raw() as c:
        c.exchange(mc_store("set", ok_key, "v"), b"STORED\r\n")
        c.exchange(f"get {ok_key}\r\n".encode(), mc_value(ok_key, "v") + b"END\r\n")
        for request in [f"get {long_key}\r\n", f"get {ok_key} {long_key}\r\n",
                        f"get {huge_key}\r\n", f"delete {long_key}\r\n",
                        f"incr {long_key} 1\r\n", f"touch {long_key} 1\r\n"]:
            want = memcached_says(reference, request.encode())
            assert want.startswith(b"CLIENT_ERROR "), want
            c.exchange(request.encode(), want)
            c.send(b"version\r\n")
            assert c.line().startswith(b"VERSION ")
        # the data block of a rejected storage command is skipped (memcached would read it as a
        # command: only its first line is compared): the stream stays in sync
        store = mc_store("set", long_key, "data\r\nget x")
        c.exchange(store, memcached_says(reference, store))
        c.exchange(f"get {ok_key}\r\n".encode(), mc_value(ok_key, "v") + b"END\r\n")


# the proxy's own replies: memcached runs these commands (verbosity, ...) (notes/memcache.md,
# "Left as they are"); WHOLE: the proxy answers all memcached answers (a wrong token count is ERROR
# and the data block is the next request; an extra last token is ignored)
UNSUPPORTED = b"CLIENT_ERROR unsupported command\r\n"
WHOLE = "memcached's whole answer"


@pytest.mark.parametrize("request_bytes, own", [
    (b"set k abc 0 1\r\nx\r\n", None),
    (b"cas k 0 0 1 notanumber\r\nx\r\n", None),
    (b"nosuchcommand a b\r\n", None),
    (b"GET k\r\n", None),
    (b"\r\n", None),
    (b"set k 0 0 1 extra\r\nx\r\n", WHOLE),           # STORED: memcached ignores "extra"
    (b"set k 0 0 1 noreply extra\r\nx\r\n", WHOLE),   # ERROR, and the data is a line too
    (b"get\r\n", WHOLE),
    (b"incr k\r\n", WHOLE),
    (b"stats items\r\n",  # sub-stats are per server (stats itself: test_memcache_fanout.py)
     b"CLIENT_ERROR stats with arguments is not supported by the proxy (only stats)\r\n"),
    (b"verbosity 1\r\n", UNSUPPORTED),
    # meta commands: memcached's own errors (forwarded; an ms line memcached reads without its
    # data is answered by the proxy with memcached's text, and the data is the next request)
    (b"mg\r\n", WHOLE),
    (b"md k Z\r\n", WHOLE),
    (b"ms k 2 MX\r\nxx\r\n", WHOLE),
    (b"ms k\r\nxx\r\n", WHOLE),
])
def test_malformed_request_then_valid_one(mc_cluster, reference, request_bytes, own):
    """A bad request the stream survives: its error (memcached's, unless the proxy's own), then
    the connection still works (a data block the proxy skips is one memcached reads as a command,
    so only its first line is compared; WHOLE: all memcached answers)."""
    if own is WHOLE:
        reply = memcached_answers(reference, request_bytes)
    else:
        reply = own or memcached_says(reference, request_bytes)
        assert reply.startswith((b"CLIENT_ERROR ", b"ERROR")), reply
    k = f"m{uuid.uuid4().hex}"
    with mc_cluster.raw() as c:
        c.exchange(mc_store("set", k, "v") + request_bytes + f"get {k}\r\n".encode(),
                   b"STORED\r\n" + reply + mc_value(k, "v") + b"END\r\n")


LONG_KEY = "k" * 251


@pytest.mark.parametrize("line, data", [
    ("incr {k} abc noreply", None),
    ("decr {k} -1 noreply", None),
    ("incr {k} noreply", None),
    (f"incr {LONG_KEY} 1 noreply", None),
    ("touch {k} abc noreply", None),
    ("touch {k} noreply", None),
    ("delete {k} 5 noreply", None),
    ("delete {k} noreply noreply", None),
    ("set {k} abc 0 3 noreply", b"xyz"),
    (f"set {LONG_KEY} 0 0 3 noreply", b"xyz"),
    ("add {k} 0 x 3 noreply", b"xyz"),
    ("cas {k} 0 0 3 x noreply", b"xyz"),
    ("cas {k} 0 0 3 noreply", b"xyz"),
])
def test_rejected_request_with_noreply_sends_nothing(mc_cluster, line, data):
    """A request the proxy rejects but whose last token is "noreply" gets no reply, as from
    memcached (measured in notes/memcache.md): a client that sent noreply reads no reply, so an
    error line would be taken as the reply to its next request. A data block is still skipped
    (memcached, which does not skip it, sends nothing for the line itself: compared below by
    sending it the line alone)."""
    k = f"nrj{uuid.uuid4().hex}"
    request = line.format(k=k).encode() + b"\r\n"
    get_reply = mc_value(k, "v") + b"END\r\n"
    with mc_cluster.raw() as c:
        c.exchange(mc_store("set", k, "v"), b"STORED\r\n")
        body = b"" if data is None else data + b"\r\n"
        c.exchange(request + body + f"get {k}\r\n".encode(), get_reply)
        c.exchange(f"get {k}\r\n".encode(), get_reply)  # and nothing came after it
    with RawConn(mc_cluster.ports[0]) as m:
        m.exchange(mc_store("set", k, "v"), b"STORED\r\n")
        m.exchange(request + f"get {k}\r\n".encode(), get_reply)


# memcached 1.6's token counts: set/add/replace/append/prepend take 4 or 5 argument tokens, cas 5 or
# 6, incr/decr/touch 2 or 3, delete 1 to 3, get at least 1; runs of spaces count as one. A wrong
# count is ERROR whatever the tokens, and memcached reads the line after it (a data block the
# client sent) as the next command. A last token other than "noreply" is ignored.
TOKEN_CASES = [
    b"cas {k} 0 600 5 \r\n",
    b"cas {k} 0 600 5\r\nhello\r\n",
    b"cas {k} 0 600 5 1\r\nhello\r\n",
    b"cas {k} 0 600 5 1 foo\r\nhello\r\n",
    b"cas  {k}  0 600 5  1  noreply  \r\nhello\r\n",
    b"cas {k} 0 600 5 1 noreply x\r\nhello\r\n",
    b"set {k} 0 0 5 \r\nhello\r\n",
    b"set  {k}  0   0 5   \r\nhello\r\n",
    b"set {k} 0 0 5 noreply \r\nhello\r\n",
    b"set {k} 0 0 5 foo\r\nhello\r\n",
    b"set {k} 0 0 5 noreply x\r\nhello\r\n",
    b"set {k} 0 0 5 x noreply\r\nhello\r\n",
    b"set {k} 0 0\r\nhello\r\n",
    b"set {k} 0 0 \r\nhello\r\n",
    b"set {k}\r\n",
    b"set \r\n",
    b"set {k} 0 0 abc x y\r\nhello\r\n",
    b"set {k} 0 0 1 a b c d e f g h i j k l m n o p q r s t u v w x y z\r\nx\r\n",
    b"add {k} 0 0 5 foo\r\nhello\r\n",
    b"add {k} 0 0 5 noreply\nhello\r\n",
    b"replace {k} 0 0 5 a b\r\nhello\r\n",
    b"append {k} 0 0 1 foo\r\nX\r\n",
    b"prepend {k} 0 0 1 noreply z\r\nX\r\n",
    b"incr {k} 1 2 3\r\n",
    b"incr {k}\r\n",
    b"touch {k} 0 foo\r\n",
    b"delete {k} 0 foo\r\n",
    b"delete {k} noreply 0\r\n",
    b"delete {k} 0 0 0\r\n",
    b"get\r\n",
    b"gats\r\n",
]


@pytest.mark.parametrize("request_bytes", TOKEN_CASES)
def test_token_counts_as_memcached(mc_cluster, request_bytes):
    """The proxy answers what memcached answers and stays in step with the client: the request,
    then a get and a version, sent to the proxy and to a memcached (each with a fresh key)."""
    replies = []
    for conn in (mc_cluster.raw(), RawConn(mc_cluster.ports[0])):
        k = f"tok{uuid.uuid4().hex}".encode()
        with conn:
            conn.send(request_bytes.replace(b"{k}", k) + b"get " + k + b"\r\nversion\r\n")
            replies.append([line.replace(k, b"{k}") for line in replies_until_version(conn)])
    assert replies[0] == replies[1]


@pytest.mark.parametrize("line", ["verbosity noreply", "verbosity 1 noreply"])
def test_unsupported_command_with_noreply_closes_the_connection(mc_cluster, line):
    """verbosity is not supported. With noreply, memcached would carry them out and
    say nothing: an error line would be read as the next request's reply, and saying nothing would
    let the client believe it was done. The proxy answers the requests before it, then closes."""
    k = f"nru{uuid.uuid4().hex}"
    get_reply = mc_value(k, "v") + b"END\r\n"
    with mc_cluster.raw() as c:
        c.exchange(mc_store("set", k, "v"), b"STORED\r\n")
        c.send(f"get {k}\r\n{line}\r\nget {k}\r\n".encode())
        c.expect(get_reply)
        assert c.is_closed()
    with mc_cluster.raw() as c:  # nothing was flushed
        c.exchange(f"get {k}\r\n".encode(), get_reply)


@pytest.mark.parametrize("request_bytes, own", [
    (b"set k 0 0 abc\r\nxyz\r\n", None),
    (b"set k 0 0 -1\r\n", None),
    (b"set k 0 0 3\r\nabcdef\r\n", None),                      # bad data chunk
    (b"set k 0 " + b"9" * 3000 + b" 1\r\nx\r\n",                  # memcached closes lines over
     b"CLIENT_ERROR line too long\r\n"),                        # 2 kB it has not seen end
    # memcached's line ends at a NUL: it would answer "set k" and then "hello" as commands, two
    # replies to one request, so such a line never reaches a server
    (b"set k\0x 0 0 5\r\nhello\r\n", b"CLIENT_ERROR NUL byte in a command line\r\n"),
    (b"delete k\0 noreply\r\n", b"CLIENT_ERROR NUL byte in a command line\r\n"),
    (b"get a b\0c\r\n", b"CLIENT_ERROR NUL byte in a command line\r\n"),
])
def test_unfollowable_stream_gets_client_error_and_close(mc_cluster, reference, request_bytes,
                                                         own):
    """Bad or missing <bytes>, data not ended by CRLF, an endless line: the proxy cannot tell where
    the next request starts, so it answers CLIENT_ERROR <reason> (memcached's, unless the proxy's
    own) after the earlier replies and closes."""
    reply = own or memcached_says(reference, request_bytes)
    assert reply.startswith(b"CLIENT_ERROR "), reply
    with mc_cluster.raw() as c:
        c.send(b"version\r\n" + request_bytes + b"version\r\n")
        assert c.line().startswith(b"VERSION ")
        c.expect(reply)
        assert c.is_closed()


BINARY_SET_KEY = "nc-binary-set-key"


def test_binary_connection_is_served(mc_cluster):
    """A connection whose first byte is 0x80 speaks the binary protocol (test_memcache_binary.py
    has the rest): a noop (its opcode is "\\n", once answered a text ERROR) and a set whose value
    holds text requests are answered in binary, and those text bytes are only a value."""
    k = f"bin{uuid.uuid4().hex}".encode()
    value = b"v\r\nset " + BINARY_SET_KEY.encode() + b" 0 0 1\r\nx\r\n"
    with mc_cluster.raw() as c:
        c.send(mcbin.noop(0xDEADBEEF) + mcbin.get(Op.GET, k, 7) +
               mcbin.store(Op.SET, k, value, flags=3, opaque=9) + mcbin.get(Op.GETK, k, 10) +
               mcbin.noop(11))
        got = mcbin.read(c, 5)
    assert [(p.op, p.status, p.opaque) for p in got] == [
        (Op.NOOP, 0, 0xDEADBEEF), (Op.GET, Status.NOT_FOUND, 7), (Op.SET, 0, 9), (Op.GETK, 0, 10),
        (Op.NOOP, 0, 11)], got
    assert (got[3].key, got[3].flags, got[3].value, got[3].cas) == (k, 3, value, got[2].cas)
    with mc_cluster.raw() as c:  # nothing of the value was run as a command
        c.exchange(b"get %s %s\r\n" % (k, BINARY_SET_KEY.encode()),
                   mc_value(k, value, flags=3) + b"END\r\n")


@pytest.mark.parametrize("binary", [
    mcbin.noop(0xDEADBEEF),  # its opcode is "\\n": the line "\\x80\\n", then a line of the rest
    mcbin.get(Op.GET, b"foo", 7),
    mcbin.store(Op.SET, BINARY_SET_KEY, b"v\r\nset " + BINARY_SET_KEY.encode() + b" 0 0 1\r\nx\r\n",
                opaque=9),
], ids=["noop", "get", "set-with-text-in-its-value"])
def test_binary_request_on_a_text_connection_is_text(mc_cluster, reference, binary):
    """Only a connection's first byte chooses the binary protocol: after a text request, a binary
    request's bytes are text lines, answered as memcached answers them (no verb it knows: ERROR;
    a text request inside them runs), and the connection goes on."""
    k = f"bin{uuid.uuid4().hex}"
    request = mc_store("set", k, "v") + binary + b"\r\n" + f"get {k}\r\n".encode()
    want = memcached_answers(reference, request)
    assert want.startswith(b"STORED\r\nERROR\r\n") and want.endswith(b"END\r\n"), want
    with mc_cluster.raw() as c:
        c.send(request + b"version\r\n")
        assert b"".join(replies_until_version(c)) == want


def test_pylibmc_binary_client(mc_cluster):
    """pylibmc with binary=True (libmemcached's binary protocol) through the proxy: storage,
    a multi-get over the servers (its quiet gets and a noop), counters, cas, delete and stats;
    an ASCII client reads what it wrote."""
    server = str(mc_cluster.path) if mc_cluster.path else f"127.0.0.1:{mc_cluster.port}"
    behaviors = {"connect_timeout": 5000, "_poll_timeout": 5000, "cas": True}
    client = pylibmc.Client([server], binary=True, behaviors=behaviors)
    p = f"plm{uuid.uuid4().hex[:8]}"
    data = {f"{p}:{i}": f"value {i}" for i in range(20)}
    assert client.set_multi(data) == []
    assert client.get_multi([*data, p + ":nope"]) == data
    assert client.set(p, 5) and client.incr(p, 3) == 8 and client.decr(p, 1) == 7
    k0, k1 = f"{p}:0", f"{p}:1"
    assert client.add(k0, "x") is False and client.replace(k0, "r") is True
    assert client.append(k0, "!") and client.prepend(k0, "<") and client.get(k0) == "<r!"
    value, cas = client.gets(k1)
    assert value == "value 1" and client.cas(k1, "new", cas) is True
    assert client.cas(k1, "newer", cas) is False
    # (no touch: libmemcached 1.0.18's binary touch waits out its poll timeout against memcached
    # itself, 5 s; the proxy's touch is tested with raw packets in test_memcache_binary.py)
    assert client.delete(k0) is True and client.get(k0) is None and client.delete(k0) is False
    ((_, stats),) = client.get_stats()
    assert int(stats["pid"]) == mc_cluster.pid()
    ascii_client = pylibmc.Client([server], binary=False, behaviors=behaviors)
    assert ascii_client.get_multi([k1, p]) == {k1: "new", p: 7}
    client.disconnect_all()
    ascii_client.disconnect_all()


def test_get_of_more_keys_than_the_cap_is_refused(mc_cluster):
    """A get's keys cost the proxy ~70 bytes each (2 bytes to send): past 2^20 keys (MSG_KEYS_MAX)
    the request is refused with CLIENT_ERROR after the earlier replies and the connection closed
    (tests/unit/test_msg.c checks that the cap itself passes)."""
    with mc_cluster.raw(timeout=30) as c:
        c.send(b"version\r\nget" + b" a" * ((1 << 20) + 1) + b"\r\n")
        assert c.line().startswith(b"VERSION ")
        c.expect(b"CLIENT_ERROR too many keys\r\n")
        assert c.is_closed()


def test_request_over_1gb_is_refused(mc_cluster):
    """One request is held whole: a get line of endless spaces (or of keys the proxy stopped
    keeping) grew the proxy for as long as the client sent. Past 1 GB (CONN_REQUEST_MAX, redis'
    client-query-buffer-limit) the client gets CLIENT_ERROR and is closed."""
    if procs.tsan_binary():
        pytest.skip("a gigabyte through a TSan build takes minutes")
    if mc_cluster.threads != 1 or len(mc_cluster.ports) != 1:
        pytest.skip("one configuration is enough for a gigabyte")
    chunk = b" " * (64 << 20)
    with mc_cluster.raw(timeout=60) as c:
        c.send(b"version\r\nget")
        for _ in range(16):  # 1 GB of spaces after "get": refused at the next byte
            c.send(chunk)
        c.send(b" a")  # then nothing more, so the proxy's close is not a reset
        assert c.line().startswith(b"VERSION ")
        c.expect(b"CLIENT_ERROR request larger than 1 GB\r\n")
        assert c.is_closed()


def test_backend_refused(memcached_server, write_conf, nutcrackers):
    live, _ = memcached_server()
    dead = procs.free_port()
    cluster = start_cluster("memcache", 2, 2, None, write_conf, nutcrackers, "refused",
                                    ports=[live, dead])
    refused = b"SERVER_ERROR Connection refused\r\n"
    keys_live, keys_dead = [], []
    with cluster.raw() as c:
        for key in spread_keys("refused", 60):
            c.send(mc_store("set", key, "v"))
            reply = c.line()
            assert reply in (b"STORED\r\n", refused)
            (keys_live if reply == b"STORED\r\n" else keys_dead).append(key)
        assert keys_live and keys_dead
        c.exchange(f"get {keys_dead[0]}\r\n".encode(), refused)
        c.exchange(f"get {keys_live[0]} {keys_dead[0]}\r\n".encode(), refused)
        c.exchange(f"delete {keys_dead[0]}\r\n".encode(), refused)
        c.exchange(f"get {keys_live[0]}\r\n".encode(), mc_value(keys_live[0], "v") + b"END\r\n")


@pytest.mark.parametrize("verb", ["gat 0", "gats 0", " " * 101 + "get"])
def test_line_memcached_would_drop_is_refused(memcached_server, write_conf, nutcrackers, verb):
    """memcached (1.6) closes its connection when a line has more than 2048 bytes before its "\\n"
    unless it starts with "get " or "gets " after at most 100 spaces: gat/gats lines and get lines
    with more leading spaces are limited like the other commands. Forwarded, such a line would
    reset the server connection that every client shares (failing their requests in flight) and
    count as a server failure, here enough to eject the only server."""
    cluster = start_cluster("memcache", 1, 1, memcached_server, write_conf, nutcrackers,
                                    "longline", auto_eject_hosts=True, server_failure_limit=1,
                                    server_retry_timeout=60000)
    # over memcached's 16 kB read buffer: it always drops this one (a 2.1 kB line can be dropped
    # too, when it straddles the end of a read, behind other clients' pipelined requests)
    keys = " ".join(f"k{i}" for i in range(4000))
    with cluster.raw() as other:
        other.exchange(mc_store("set", "k1", "v"), b"STORED\r\n")
        with cluster.raw() as c:
            c.send(f"{verb} {keys}\r\n".encode())
            c.expect(b"CLIENT_ERROR line too long\r\n")
            assert c.is_closed()
        other.exchange(b"get k1\r\n", mc_value("k1", "v") + b"END\r\n")
        # a get with at most 100 leading spaces has no limit (memcached takes it too)
        other.exchange(f"{' ' * 100}get {keys}\r\n".encode(), mc_value("k1", "v") + b"END\r\n")
