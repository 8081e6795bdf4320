"""Framing checked against a real redis-server: every stream of the corpus (valid requests of
every routing kind, inline requests, malformed input) goes to a redis-server directly and through
the proxy, whole, cut in two writes at every byte (a bounded number of places for long streams)
and, for some, one byte per write. The proxy's reply stream, and whether it closes, must be
redis's own; the only exceptions are written down here:

- REFUSALS, the allow-list by command name: a command the proxy does not route gets the proxy's
  documented refusal in place of redis's reply (a request of the stream says it is refused);
- a stream's Differs: input the proxy refuses where redis goes on (or waits for ever), each with
  the place that documents it. Everything else is compared byte for byte.

Meanwhile a bystander shares the proxy's one server connection (one worker, server_connections:
1) and checks that every reply it gets is its own; each stream is also sent and left at once
(whole, and cut in the middle of it), and after each stream the server connection must still be
the one it was (a framing slip would make redis close it, or shift replies).

The multi-key streams run again through a pool of two servers, where their keys are split and
the replies merged (the same replies as one redis-server's).

The proxy and the reference redis-server start from the same keys (the corpus's, deleted before
each run); the bystander's key is on the proxy's server only, so no request of the corpus looks
at the whole keyspace (DBSIZE, RANDOMKEY) or at keys it did not name.
"""
import pytest

from nctest import manage, wait
from nctest.cluster import start_cluster
from nctest.codec import resp
from nctest.conn import IO_TIMEOUT
from nctest.framing import (Bystander, Differ, Differs, Stream, cmd, cuts, empty, inline, raw,
                            server_conn_ids)

CUTS = 400        # places a stream is cut at, at most (a stream that long is cut after every byte)
BIG_CUTS = 6      # for the streams of tens of kB

# every key a stream touches (deleted on both servers before each run)
KEYS = ["fd:s", "fd:n", "fd:e", "fd:h", "fd:l", "fd:st", "fd:z", "fd:z2", "fd:zd", "fd:x",
        "fd:a", "fd:b", "fd:c", "fd:t", "fd:q", "fd:big", b"fd:\x00\r\n", "fd:s\r\n*1\r\n",
        "fd:hll", "fd:geo"]


LONG_NAME = b"NoSuchCommand" * 8


def unsupported(shown):
    return b"-ERR unsupported command '%s'\r\n" % shown


# The allow-list: {command name (as the stream names it, lowercase): the proxy's reply in place of
# redis's}. README ("refused_commands": unknown commands, and redis's commands the proxy does not
# serve: MONITOR, DEBUG, ...; the names are redis_refused_names in src/proto/redis_cmd.c) and
# notes/redis-proto.md (EVAL with no key: a numkeys of 0 is a wrong arity, there is no key to route
# by; an unknown name is shown lowercased, its control bytes as spaces).
REFUSALS = {
    b"debug": unsupported(b"debug"),
    b"latency": unsupported(b"latency"),
    b"slowlog": unsupported(b"slowlog"),
    b"wait": unsupported(b"wait"),
    b"nosuch": unsupported(b"nosuch"),
    b"pi\x00g": unsupported(b"pi g"),
    b"get\x0bfd:s": unsupported(b"get fd:s"),
    b"eval": b"-ERR wrong number of arguments for 'eval' command\r\n",
    LONG_NAME.lower(): unsupported(LONG_NAME.lower()[:64]),  # a name is shown up to 64 bytes
}

PING = cmd("PING")
GET = cmd("GET", "fd:s")        # forwarded to the server: its reply comes from there
SET = cmd("SET", "fd:s", "v")


def proto_error(text):
    return b"-ERR Protocol error: %s\r\n" % text


def malformed(name, bad, **kw):
    """Forwarded and local requests, then bad bytes, then a request redis never reads."""
    return Stream(name, (SET, PING, GET, raw(bad), PING), **kw)


def refused_at(name, before, bad, reply, why, after=(PING,)):
    """A stream the proxy refuses at `bad` (with `reply`, then the close) where redis goes on, or
    waits."""
    parts = (*before, raw(bad), *after)
    return Stream(name, parts, Differs(len(before), reply, why))


VALID = [
    Stream("strings", (SET, GET, cmd("APPEND", "fd:s", " world"), cmd("GETRANGE", "fd:s", 0, 4),
                       cmd("STRLEN", "fd:s"), cmd("INCR", "fd:n"), cmd("INCRBY", "fd:n", 10),
                       cmd("GET", "fd:c")), drip=True),
    Stream("binary-keys-and-values", (cmd("SET", b"fd:\x00\r\n", b"\r\n\x00$3\r\n*1\r\n"),
                                      cmd("GET", b"fd:\x00\r\n"), cmd("SET", "fd:e", ""),
                                      cmd("GET", "fd:e"), cmd("GETDEL", "fd:e"))),
    Stream("aggregates", (cmd("HSET", "fd:h", "f1", "v1", "f2", "v2"), cmd("HGETALL", "fd:h"),
                          cmd("RPUSH", "fd:l", "a", "b", "c"), cmd("LRANGE", "fd:l", 0, -1),
                          cmd("SADD", "fd:st", "m"), cmd("SMEMBERS", "fd:st"),
                          cmd("ZADD", "fd:z", 1, "a", 2, "b"),
                          cmd("ZRANGE", "fd:z", 0, -1, "WITHSCORES"))),
    Stream("streams-hll-geo", (cmd("XADD", "fd:x", "1-1", "f", "v"), cmd("XLEN", "fd:x"),
                               cmd("XRANGE", "fd:x", "-", "+"),
                               cmd("XREAD", "COUNT", 1, "STREAMS", "fd:x", 0),
                               cmd("PFADD", "fd:hll", "a", "b"), cmd("PFCOUNT", "fd:hll"),
                               cmd("GEOADD", "fd:geo", "13.361389", "38.115556", "p"),
                               cmd("GEOPOS", "fd:geo", "p"))),
    Stream("multi-key", (cmd("MSET", "fd:a", 1, "fd:b", 2), cmd("MGET", "fd:a", "fd:b", "fd:c"),
                               cmd("EXISTS", "fd:a", "fd:b", "fd:c", "fd:a"),
                               cmd("TOUCH", "fd:a", "fd:c"), cmd("DEL", "fd:a", "fd:c"),
                               cmd("UNLINK", "fd:b", "fd:a")), drip=True),
    Stream("numkeys", (SET, cmd("EVAL", "return redis.call('get', KEYS[1])", 1, "fd:s"),
                       cmd("ZADD", "fd:z", 1, "a"), cmd("ZADD", "fd:z2", 2, "a", 3, "b"),
                       cmd("ZUNION", 2, "fd:z", "fd:z2", "WITHSCORES"),
                       cmd("ZUNIONSTORE", "fd:zd", 2, "fd:z", "fd:z2"),
                       cmd("ZRANGE", "fd:zd", 0, -1))),
    Stream("local-and-keyless", (PING, cmd("PING", "hi"), cmd("ECHO", "e\r\n"), cmd("SELECT", 0),
                                 cmd("CLIENT", "SETNAME", "fdn"), cmd("CLIENT", "GETNAME"),
                                 cmd("COMMAND", "COUNT"), cmd("PUBLISH", "fd:ch", "m"))),
    Stream("introspection-by-key", (SET, cmd("OBJECT", "ENCODING", "fd:s"), cmd("OBJECT", "HELP"),
                                    cmd("SUBSTR", "fd:s", 0, 0), cmd("EXPIRETIME", "fd:s"),
                                    cmd("LCS", "fd:s", "fd:s"), cmd("EVAL_RO", "return 1", 1, "fd:s"),
                                    cmd("SORT_RO", "fd:l"), GET)),
    Stream("fan-out", (SET, cmd("SCRIPT", "LOAD", "return 1"), cmd("KEYS", "fd:s"),
                       cmd("SCAN", 0, "MATCH", "fd:s", "COUNT", 1000), GET)),
    Stream("transaction", (cmd("MULTI"), cmd("SET", "fd:t", 1), cmd("INCR", "fd:t"), cmd("EXEC"),
                           cmd("GET", "fd:t"))),
    Stream("blocking", (cmd("RPUSH", "fd:q", "a"), cmd("BLPOP", "fd:q", 1), GET)),
    Stream("wrong-arity", (cmd("GET"), cmd("SET", "fd:s"), cmd("MSET", "fd:a", 1, "fd:b"),
                           cmd("MGET"), cmd("HSET", "fd:h", "f"), cmd("XINFO"), cmd("CLIENT"),
                           cmd("PING", "a", "b"), GET)),
    Stream("refused", (SET, cmd("DEBUG", "OBJECT", "fd:s", refused=True), GET,
                       cmd("LATENCY", "LATEST", refused=True),
                       cmd("SLOWLOG", "GET", 1, refused=True),
                       cmd("WAIT", 0, 0, refused=True), cmd("NOSUCH", "a", "b", refused=True),
                       cmd("EVAL", "return 1", 0, refused=True), cmd(b"PI\x00G", refused=True),
                       cmd(LONG_NAME, "a", refused=True), GET)),
    # read in pieces, and not sent on
    Stream("refused-with-a-big-argument",
           (SET, cmd("DEBUG", "OBJECT", b"x\r\n" * 15000, refused=True), GET)),
    Stream("empty-requests", (empty(b"*0\r\n"), PING, empty(b"*-1\r\n\r\n   \r\n\t\r\n\n"), GET,
                              empty(b"*-9223372036854775808\r\n*-5\r\n"), SET, empty(b"\r\n"),
                              GET), drip=True),
    Stream("quit", (SET, GET, cmd("QUIT"), PING, GET)),
    # a length that takes in what looks like the next request, and lands on a CRLF: one key
    Stream("length-takes-in-the-next-request",
           (SET, raw(b"*2\r\n$3\r\nGET\r\n$10\r\nfd:s\r\n*1\r\n\r\n"), GET, PING)),
    Stream("big-value", (cmd("SET", "fd:big", b"v\r\n" * 30000), cmd("GET", "fd:big"),
                         cmd("STRLEN", "fd:big"))),
]

INLINE = [
    Stream("inline-pipeline", (inline(b"PING\r\n"), inline(b"SET fd:s v\r\n"),
                               inline(b"  GET   fd:s  \r\n"), inline(b"GET\tfd:s\r\n"),
                               inline(b"APPEND fd:s w\n"), inline(b"GET fd:s\r\r\n"),
                               inline(b"ECHO hi\r\n")), drip=True),
    Stream("inline-multi-key", (inline(b"MSET fd:a 1 fd:b 2\r\n"),
                                inline(b"MGET fd:a fd:c fd:b\r\n"),
                                inline(b"EXISTS fd:a fd:b\r\n"), inline(b"DEL fd:a fd:b fd:c\r\n"),
                                GET)),
    Stream("inline-blank-lines", (empty(b"\r\n"), inline(b"PING\r\n"), empty(b"   \r\n\t\r\n\n"),
                                  inline(b"GET fd:s\r\n"), empty(b" \t \r\n"), PING)),
    Stream("inline-mixed-with-resp", (SET, inline(b"GET fd:s\r\n"), GET, inline(b"PING\n"),
                                      cmd("MGET", "fd:s", "fd:a"), inline(b"STRLEN fd:s\r\n"))),
    Stream("inline-refused-and-arity", (inline(b"GET\r\n"), inline(b"get a b\r\n"),
                                        inline(b"nosuch x y\r\n", refused=True),
                                        inline(b"GET\vfd:s\r\n", refused=True), GET)),
    Stream("inline-10kb", (inline(b"SET fd:s " + b"x" * 10000 + b"\r\n"), cmd("STRLEN", "fd:s"))),
    # quotes redis cannot split: its error, the connection closed
    malformed("inline-open-single-quote", b"GET 'fd:s\r\n", drip=True),
    malformed("inline-open-double-quote", b'GET "fd:s\n'),
    malformed("inline-escaped-closing-quote", b'GET "fd:s\\"\r\n'),
    malformed("inline-quote-then-text", b'GET "fd"s\r\n'),
    malformed("inline-text-quote-text", b"GET f'd's\r\n"),
]

MALFORMED = [
    malformed("count-not-a-number", b"*abc\r\n"),
    malformed("count-x", b"*x\r\n"),
    malformed("count-plus", b"*+1\r\n"),
    malformed("count-leading-zero", b"*01\r\n$4\r\nPING\r\n"),
    malformed("count-trailing-space", b"*1 \r\n$4\r\nPING\r\n"),
    malformed("count-empty", b"*\r\n"),
    malformed("count-minus-zero", b"*-0\r\n"),
    malformed("count-over-int-max", b"*2147483648\r\n"),
    malformed("count-20-digits", b"*99999999999999999999\r\n"),
    malformed("count-bare-lf", b"*1\n$4\r\nPING\r\n"),
    malformed("count-40-digits", b"*" + b"1" * 40 + b"\r\n"),
    malformed("length-negative", b"*2\r\n$3\r\nGET\r\n$-5\r\n"),
    malformed("length-minus-one", b"*2\r\n$3\r\nGET\r\n$-1\r\n"),
    malformed("length-not-a-number", b"*1\r\n$abc\r\n"),
    malformed("length-plus", b"*1\r\n$+4\r\nPING\r\n"),
    malformed("length-leading-zero", b"*1\r\n$04\r\nPING\r\n"),
    malformed("length-space", b"*1\r\n$ 4\r\nPING\r\n"),
    malformed("length-empty", b"*1\r\n$\r\n"),
    malformed("length-huge", b"*1\r\n$99999999999\r\n"),
    malformed("length-over-512mb", b"*2\r\n$3\r\nSET\r\n$536870913\r\n", drip=True),
    malformed("length-bare-lf", b"*1\r\n$4\nPING\r\n"),
    malformed("length-40-digits", b"*1\r\n$" + b"9" * 40 + b"\r\n"),
    malformed("integer-for-argument", b"*2\r\n$3\r\nGET\r\n:1\r\n"),
    malformed("nested-array", b"*2\r\n$3\r\nGET\r\n*1\r\n$1\r\na\r\n", drip=True),
    malformed("status-for-argument", b"*1\r\n+PING\r\n"),
    malformed("text-for-argument", b"*2\r\n$3\r\nGET\r\nfd:s\r\n"),
    malformed("cr-for-argument", b"*2\r\n$3\r\nGET\r\n\r\r\n"),
    malformed("lf-for-argument", b"*2\r\n$3\r\nGET\r\n\n\r\n"),
    malformed("high-byte-for-argument", b"*2\r\n$3\r\nGET\r\n\x80\r\n"),
    malformed("control-byte-for-argument", b"*2\r\n$3\r\nGET\r\n\x01\x7f\r\n"),
    malformed("del-for-argument", b"*2\r\n$3\r\nGET\r\n\x7f\r\n"),
    # the error comes while a slow request is still with the server: its reply goes first
    Stream("error-behind-a-slow-request",
           (SET, cmd("EVAL", "local i = 0 while i < 30000 do i = i + 1 end return i", 1, "fd:n"),
            GET, raw(b"*x\r\n"), PING)),
    Stream("error-behind-a-long-pipeline",
           (*[cmd("INCR", "fd:n") for _ in range(40)], GET, raw(b"*1\r\n$-1\r\n"), PING)),
    malformed("count-cut-short", b"*3\r\n$3\r\nGET\r\n$4\r\nfd:s\r\n" + b"*1\r\n$4\r\nPING\r\n"),
]

DOCUMENTED = "notes/redis-proto.md (Requests)"
HOSTILE = "README.md (Hardening, hostile clients)"
STRICT = ("notes/redis-proto.md (Requests: a CRLF is checked where redis skips two bytes "
          "unread)")
NUL_WAIT = ("notes/redis-proto.md (Requests: redis looks for the line end with strchr, which "
            "stops at a NUL: it waits for ever)")

KNOWN = [
    # inline quotes redis would unquote: the proxy would hash another key
    refused_at("inline-balanced-quotes", (SET, GET), b'GET "fd:s"\r\n',
               proto_error(b"quotes and NUL are not supported in inline requests"), DOCUMENTED),
    refused_at("inline-escaped-quote", (SET,), b"GET 'fd\\'s'\r\n",
               proto_error(b"quotes and NUL are not supported in inline requests"), DOCUMENTED),
    refused_at("inline-hex-escape", (SET, GET), b'GET "fd\\x3as"\r\n',
               proto_error(b"quotes and NUL are not supported in inline requests"), DOCUMENTED),
    refused_at("inline-nul", (SET, GET), b"GET fd\x00s\r\n",
               proto_error(b"quotes and NUL are not supported in inline requests"), NUL_WAIT),
    refused_at("count-nul", (SET, GET), b"*1\x00\r\n$4\r\nPING\r\n",
               proto_error(b"invalid multibulk length"), NUL_WAIT),
    refused_at("nul-for-argument", (SET, GET), b"*2\r\n$3\r\nGET\r\n\x00\r\n",
               proto_error(b"expected '$', got ' '"), NUL_WAIT),
    # two bytes after a bulk's data that are not CRLF: redis skips them unread
    refused_at("data-longer-than-length", (SET, GET), b"*2\r\n$3\r\nGET\r\n$2\r\nfd:s\r\n",
               proto_error(b"expected CRLF after bulk data"), STRICT),
    refused_at("data-shorter-than-length", (SET, GET), b"*2\r\n$3\r\nGET\r\n$6\r\nfd:s\r\n",
               proto_error(b"expected CRLF after bulk data"), STRICT, after=(PING, PING)),
    refused_at("no-crlf-after-data", (SET, GET), b"*1\r\n$4\r\nPINGxx",
               proto_error(b"expected CRLF after bulk data"), STRICT),
    refused_at("lf-lf-after-data", (SET, GET), b"*1\r\n$4\r\nPING\n\n",
               proto_error(b"expected CRLF after bulk data"), STRICT),
    refused_at("count-cr-without-lf", (SET, GET), b"*1\rX$4\r\nPING\r\n",
               proto_error(b"invalid multibulk length"), STRICT),
    refused_at("length-cr-without-lf", (SET, GET), b"*1\r\n$4\rXPING\r\n",
               proto_error(b"invalid bulk length"), STRICT),
    # a key must fit one buffer (-m, 16 kB by default); redis takes 512 MB
    refused_at("key-larger-than-a-buffer", (SET, GET), resp("GET", b"k" * 20000),
               proto_error(b"request token larger than the buffer size (-m)"), DOCUMENTED),
    # an inline line must fit one buffer; redis takes 64 kB
    refused_at("inline-20kb", (SET, GET), b"SET fd:s " + b"x" * 20000 + b"\r\n",
               proto_error(b"request token larger than the buffer size (-m)"), DOCUMENTED),
    # redis: "too big inline request", once 64 kB came without a line end
    refused_at("inline-100kb-no-line-end", (SET, GET), b"x" * 100000,
               proto_error(b"request token larger than the buffer size (-m)"), DOCUMENTED,
               after=()),
    # redis: "too big mbulk count string", once 64 kB came without a CR
    refused_at("count-100kb-no-cr", (SET, GET), b"*" + b"1" * 100000,
               proto_error(b"invalid multibulk length"), DOCUMENTED, after=()),
    refused_at("empty-requests-over-64kb", (SET, GET), b"\r\n" * 40000,
               proto_error(b"too many empty requests"), DOCUMENTED),
    # redis waits for the 2^31 - 1 arguments announced
    refused_at("count-2147483647", (SET, GET), b"*2147483647\r\n$3\r\nGET\r\n$4\r\nfd:s\r\n",
               b"-ERR wrong number of arguments for 'get' command\r\n", HOSTILE, after=()),
    refused_at("count-over-the-key-cap", (SET, GET), b"*1048578\r\n$3\r\nDEL\r\n",
               proto_error(b"too many keys"), HOSTILE, after=()),
]

CORPUS = VALID + INLINE + MALFORMED + KNOWN


MULTI_KEY = ["fd:a", "fd:b", "fd:c"]
BIG = b"v\r\n$5\r\n" * 5000     # values over 2 buffers of the proxy (16 kB)

# multi-key requests whose keys are on two servers: split, each server's part sent on its own, the
# replies merged (notes/redis-proto.md, Fragments)
SPLIT = [s for s in VALID + INLINE if s.name in ("multi-key", "inline-multi-key")] + [
    Stream("multi-key-repeated-and-missing",
           (cmd("MSET", "fd:c", 3, "fd:a", 1), cmd("MGET", "fd:b", "fd:a", "fd:c", "fd:a", "fd:b"),
            cmd("EXISTS", "fd:c", "fd:c", "fd:b", "fd:a"), cmd("TOUCH", "fd:b", "fd:a", "fd:c"),
            cmd("DEL", "fd:c", "fd:a", "fd:b", "fd:a"), cmd("MGET", "fd:a", "fd:c")), drip=True),
    Stream("multi-key-wrong-type", (cmd("HSET", "fd:a", "f", "v"), cmd("SET", "fd:b", "x"),
                                    cmd("MGET", "fd:a", "fd:b", "fd:c"),
                                    cmd("EXISTS", "fd:a", "fd:b", "fd:c"))),
    Stream("multi-key-then-error", (cmd("MSET", "fd:a", 1, "fd:b", 2, "fd:c", 3),
                                    cmd("MGET", "fd:a", "fd:b", "fd:c"), PING,
                                    cmd("DEL", "fd:a", "fd:b"), raw(b"*2\r\n$4\r\nMGET\r\n:1\r\n"),
                                    PING)),
    Stream("multi-key-big-values", (cmd("MSET", "fd:a", BIG, "fd:b", 2, "fd:c", BIG[::-1]),
                                    cmd("MGET", "fd:c", "fd:b", "fd:a"),
                                    cmd("DEL", "fd:a", "fd:b", "fd:c"))),
]


def start_rig(servers, reference, start_backend, write_conf, start_proxy, name):
    """(Differ, Bystander, the proxy's server connections: {port: ids}, the ports of ours) for a
    proxy with one worker and one server connection to each of its `servers` redis-servers
    (opened at start), a bystander on it, and the reference redis-server."""
    cluster = start_cluster("redis", servers, 1, start_backend, write_conf, start_proxy, name,
                            server_connections=1, preconnect=True, timeout=10000,
                            hash="fnv1a_64", distribution="modula")  # a key's server: its hash
    differ = Differ(cluster.port, reference, cluster.ports, KEYS, REFUSALS)
    ours = {c.local_port for c in differ.control.values()}
    shared = {port: wait.wait_for(lambda p=port: server_conn_ids(p, ours), IO_TIMEOUT,
                                  f"the proxy's connection to {port}") for port in cluster.ports}
    assert all(len(ids) == 1 for ids in shared.values()), shared
    return cluster, differ, Bystander(cluster.port).start(), shared, ours


def stop_rig(rig):
    _, differ, bystander, _, _ = rig
    bystander.stop()
    differ.close()
    assert bystander.error is None, bystander.error


@pytest.fixture(scope="module")
def one_server(redis_oracle, module_redis_server, module_write_conf, module_nutcrackers):
    rig = start_rig(1, redis_oracle, module_redis_server, module_write_conf, module_nutcrackers,
                    "framing")
    yield rig
    stop_rig(rig)


@pytest.fixture(scope="module")
def two_servers(redis_oracle, module_redis_server, module_write_conf, module_nutcrackers):
    rig = start_rig(2, redis_oracle, module_redis_server, module_write_conf, module_nutcrackers,
                    "framing-split")
    cluster = rig[0]
    assert len({cluster.server_of(k) for k in MULTI_KEY}) == 2, "the keys are on one server"
    with cluster.raw() as c:  # and an MGET of them is split
        c.exchange(resp("MGET", *MULTI_KEY), b"*3\r\n" + b"$-1\r\n" * 3)
    manage.wait_pool_stat(cluster.proxy.manage_port, cluster.name, "fragments", lambda n: n >= 2)
    yield rig
    stop_rig(rig)


def check_stream(rig, stream):
    """The stream whole, cut in two at each place of cuts(), one byte per write when it says so,
    then sent and left at once, whole and half; then the bystander's replies and the server
    connections."""
    _, differ, bystander, shared, ours = rig
    expected = differ.expected(stream)
    n = len(stream.data)
    variants = [()] + [(k,) for k in cuts(stream.data, CUTS if n < 20000 else BIG_CUTS)]
    if stream.drip:
        variants.append(tuple(range(1, n)))
    failures = [f for f in (differ.compare(stream, expected, at) for at in variants) if f]
    differ.abandon(stream.data)
    differ.abandon(stream.data[:n // 2])  # a request left half sent: nothing of it may go on
    bystander.check()
    for port, ids in shared.items():
        assert ids <= server_conn_ids(port, ours), \
            f"the proxy's connection to {port} was closed: its bytes lost their framing"
    assert not failures, \
        f"{len(failures)} of {len(variants)} runs differ:\n" + "\n".join(failures[:5])


@pytest.mark.parametrize("stream", CORPUS, ids=lambda s: s.name)
def test_stream_through_the_proxy_is_answered_as_redis_answers_it(one_server, stream):
    check_stream(one_server, stream)


@pytest.mark.parametrize("stream", SPLIT, ids=lambda s: s.name)
def test_multi_key_stream_over_two_servers_is_answered_as_redis_answers_it(two_servers, stream):
    check_stream(two_servers, stream)


def test_the_allow_list_is_what_the_corpus_refuses():
    """Every entry of REFUSALS is used by a request the corpus marks refused (the list stays as
    short as what is tested); names it marks refused are checked against it at run time."""
    refused = {p.name for s in CORPUS for p in s.parts if p.refused}
    assert refused == set(REFUSALS)
