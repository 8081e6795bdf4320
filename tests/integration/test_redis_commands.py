"""Redis commands through the proxy (1 and 4 redis-servers, -T 1 and -T 4).

Every command twemproxy 0.5 documents as supported (data/twemproxy-redis-commands.txt, a copy of
the shared spec's list: the expected set comes from outside the proxy) is sent at least once,
through the proxy and straight to a reference redis-server that holds the same data; the replies
must be the same bytes. Then: inline
commands, nested replies, the proxy's own replies (PING, unsupported, wrong arity, AUTH without a
password, QUIT), protocol errors (an error reply, then the connection is closed), and backend
failure (-ERR Connection refused).
"""
import hashlib
import os
import re
import uuid
from pathlib import Path

import pytest

from nctest import codec, procs
from nctest.keys import spread_keys
from nctest.cluster import start_cluster
from nctest.codec import array, bulk, integer, resp
from nctest.conn import RawConn

SCRIPT_GET = "return redis.call('get', KEYS[1])"
SCRIPT_NESTED = "return {1, {2, {3, 'x', {}}, 'y'}, redis.status_reply('fine'), -7, {'z'}}"
PREV = object()  # stands for the previous reply's value (DUMP -> RESTORE)


def command_table(t):
    """The steps of the walk: (args, expect_error). t(name) is a key; every key carries one hash
    tag, so multi-key commands that need their keys on one server get that (MGET, DEL, ... are
    split anyway; test_redis_multikey.py spreads them over the servers)."""
    k = t
    ok = False
    err = True
    return [
        # strings
        (("SET", k("s1"), "hello"), ok),
        (("SET", k("s2"), "v2", "EX", "100", "NX"), ok),
        (("SET", k("s1"), "world", "GET"), ok),
        (("GET", k("s1")), ok),
        (("APPEND", k("s1"), "!!"), ok),
        (("STRLEN", k("s1")), ok),
        (("GETRANGE", k("s1"), "0", "2"), ok),
        (("SETRANGE", k("s1"), "0", "W"), ok),
        (("GETSET", k("s1"), "x"), ok),
        (("GETDEL", k("s1")), ok),
        (("GETEX", k("s2"), "PERSIST"), ok),
        (("SETNX", k("s3"), "1"), ok),
        (("SETEX", k("s4"), "100", "v"), ok),
        (("PSETEX", k("s5"), "100000", "v"), ok),
        (("INCR", k("n1")), ok),
        (("INCRBY", k("n1"), "5"), ok),
        (("DECR", k("n1")), ok),
        (("DECRBY", k("n1"), "2"), ok),
        (("INCRBYFLOAT", k("f1"), "1.5"), ok),
        (("SETBIT", k("b1"), "7", "1"), ok),
        (("GETBIT", k("b1"), "7"), ok),
        (("BITCOUNT", k("b1")), ok),
        (("BITPOS", k("b1"), "1"), ok),
        (("BITFIELD", k("b1"), "GET", "u8", "0"), ok),
        (("MSET", k("m1"), "a", k("m2"), "b"), ok),
        (("MGET", k("m1"), k("m2"), k("m3")), ok),
        # keys
        (("EXISTS", k("m1"), k("m2"), k("m3")), ok),
        (("TYPE", k("m1")), ok),
        (("EXPIRE", k("s4"), "1000"), ok),
        (("TTL", k("s4")), ok),
        (("PERSIST", k("s4")), ok),
        (("PEXPIRE", k("s4"), "5000000"), ok),
        (("EXPIREAT", k("s4"), "4102444800"), ok),
        (("PEXPIREAT", k("s4"), "4102444800000"), ok),
        (("PERSIST", k("s4")), ok),
        (("PTTL", k("s4")), ok),
        (("DUMP", k("s2")), ok),
        (("RESTORE", k("r1"), "0", PREV), ok),
        (("GET", k("r1")), ok),
        (("COPY", k("r1"), k("r2")), ok),
        (("MOVE", k("r2"), "1"), ok),
        (("TOUCH", k("r1"), k("m1"), k("nope")), ok),
        (("UNLINK", k("m1"), k("nope")), ok),
        (("DEL", k("m2"), k("r1"), k("nope")), ok),
        (("RPUSH", k("sl"), "3", "1", "2"), ok),
        (("SORT", k("sl")), ok),
        (("SORT", k("sl"), "LIMIT", "0", "2", "DESC"), ok),
        # hashes
        (("HSET", k("h"), "f1", "v1", "f2", "v2"), ok),
        (("HSETNX", k("h"), "f3", "v3"), ok),
        (("HGET", k("h"), "f1"), ok),
        (("HMGET", k("h"), "f1", "nope", "f3"), ok),
        (("HMSET", k("h"), "f4", "4"), ok),
        (("HINCRBY", k("h"), "f4", "3"), ok),
        (("HINCRBYFLOAT", k("h"), "f4", "0.5"), ok),
        (("HGETALL", k("h")), ok),
        (("HKEYS", k("h")), ok),
        (("HVALS", k("h")), ok),
        (("HLEN", k("h")), ok),
        (("HEXISTS", k("h"), "f2"), ok),
        (("HSTRLEN", k("h"), "f2"), ok),
        (("HDEL", k("h"), "f2", "nope"), ok),
        (("HSCAN", k("h"), "0"), ok),
        (("HSET", k("h1"), "only", "1"), ok),
        (("HRANDFIELD", k("h1")), ok),
        # lists
        (("RPUSH", k("l"), "a", "b", "c"), ok),
        (("LPUSH", k("l"), "z"), ok),
        (("RPUSHX", k("l"), "d"), ok),
        (("LPUSHX", k("nolist"), "x"), ok),
        (("LRANGE", k("l"), "0", "-1"), ok),
        (("LINDEX", k("l"), "1"), ok),
        (("LINSERT", k("l"), "BEFORE", "b", "a2"), ok),
        (("LLEN", k("l")), ok),
        (("LPOS", k("l"), "b"), ok),
        (("LSET", k("l"), "0", "y"), ok),
        (("LREM", k("l"), "0", "a2"), ok),
        (("LPOP", k("l")), ok),
        (("RPOP", k("l"), "1"), ok),
        (("LMOVE", k("l"), k("l2"), "LEFT", "RIGHT"), ok),
        (("RPOPLPUSH", k("l"), k("l2")), ok),
        (("LTRIM", k("l2"), "0", "0"), ok),
        (("LRANGE", k("l2"), "0", "-1"), ok),
        # sets (integers: an intset keeps them sorted, the same on every server)
        (("SADD", k("a"), "1", "2", "3", "4"), ok),
        (("SADD", k("b"), "3", "4", "5"), ok),
        (("SCARD", k("a")), ok),
        (("SISMEMBER", k("a"), "2"), ok),
        (("SMISMEMBER", k("a"), "2", "9"), ok),
        (("SMEMBERS", k("a")), ok),
        (("SDIFF", k("a"), k("b")), ok),
        (("SINTER", k("a"), k("b")), ok),
        (("SUNION", k("a"), k("b")), ok),
        (("SDIFFSTORE", k("d"), k("a"), k("b")), ok),
        (("SINTERSTORE", k("i"), k("a"), k("b")), ok),
        (("SUNIONSTORE", k("u"), k("a"), k("b")), ok),
        (("SMOVE", k("a"), k("b"), "1"), ok),
        (("SREM", k("a"), "2"), ok),
        (("SSCAN", k("a"), "0"), ok),
        (("SADD", k("one"), "7"), ok),
        (("SRANDMEMBER", k("one")), ok),
        (("SPOP", k("one")), ok),
        # sorted sets
        (("ZADD", k("z"), "1", "a", "2", "b", "3", "c"), ok),
        (("ZADD", k("z2"), "1", "b", "5", "d"), ok),
        (("ZCARD", k("z")), ok),
        (("ZCOUNT", k("z"), "1", "2"), ok),
        (("ZINCRBY", k("z"), "2", "a"), ok),
        (("ZSCORE", k("z"), "a"), ok),
        (("ZMSCORE", k("z"), "a", "nope"), ok),
        (("ZRANK", k("z"), "b"), ok),
        (("ZREVRANK", k("z"), "b"), ok),
        (("ZRANGE", k("z"), "0", "-1", "WITHSCORES"), ok),
        (("ZREVRANGE", k("z"), "0", "-1"), ok),
        (("ZRANGEBYSCORE", k("z"), "-inf", "+inf", "WITHSCORES"), ok),
        (("ZREVRANGEBYSCORE", k("z"), "+inf", "-inf"), ok),
        (("ZADD", k("zl"), "0", "a", "0", "b", "0", "c"), ok),
        (("ZLEXCOUNT", k("zl"), "-", "+"), ok),
        (("ZRANGEBYLEX", k("zl"), "[a", "[b"), ok),
        (("ZREVRANGEBYLEX", k("zl"), "+", "-"), ok),
        (("ZRANGESTORE", k("zs"), k("z"), "0", "1"), ok),
        (("ZDIFF", "2", k("z"), k("z2"), "WITHSCORES"), ok),
        (("ZINTER", "2", k("z"), k("z2")), ok),
        (("ZUNION", "2", k("z"), k("z2"), "WITHSCORES"), ok),
        (("ZDIFFSTORE", k("zd"), "2", k("z"), k("z2")), ok),
        (("ZINTERSTORE", k("zi"), "2", k("z"), k("z2")), ok),
        (("ZUNIONSTORE", k("zu"), "2", k("z"), k("z2")), ok),
        (("ZSCAN", k("z"), "0"), ok),
        (("ZADD", k("z1"), "1", "only"), ok),
        (("ZRANDMEMBER", k("z1")), ok),
        (("ZPOPMAX", k("z")), ok),
        (("ZPOPMIN", k("z")), ok),
        (("ZREM", k("zu"), "a", "nope"), ok),
        (("ZREMRANGEBYLEX", k("zl"), "[a", "[a"), ok),
        (("ZREMRANGEBYRANK", k("zu"), "0", "0"), ok),
        (("ZREMRANGEBYSCORE", k("zu"), "-inf", "1"), ok),
        # hyperloglog
        (("PFADD", k("hll"), "a", "b", "c"), ok),
        (("PFADD", k("hll2"), "c", "d"), ok),
        (("PFCOUNT", k("hll"), k("hll2")), ok),
        (("PFMERGE", k("hll3"), k("hll"), k("hll2")), ok),
        # geo
        (("GEOADD", k("g"), "13.361389", "38.115556", "Palermo", "15.087269", "37.502669",
          "Catania"), ok),
        (("GEODIST", k("g"), "Palermo", "Catania", "km"), ok),
        (("GEOHASH", k("g"), "Palermo", "nope"), ok),
        (("GEOPOS", k("g"), "Palermo", "nope"), ok),
        (("GEORADIUS", k("g"), "15", "37", "200", "km", "WITHDIST", "ASC"), ok),
        (("GEORADIUSBYMEMBER", k("g"), "Palermo", "200", "km", "ASC"), ok),
        (("GEOSEARCH", k("g"), "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "ASC",
          "WITHCOORD"), ok),
        (("GEOSEARCHSTORE", k("g2"), k("g"), "FROMMEMBER", "Palermo", "BYBOX", "400", "400",
          "km", "ASC"), ok),
        # scripting: the server of the first key runs it
        (("EVAL", SCRIPT_GET, "1", k("s2")), ok),
        (("EVALSHA", hashlib.sha1(SCRIPT_GET.encode()).hexdigest(), "1", k("s2")), ok),
        (("EVAL", SCRIPT_NESTED, "1", k("s2")), ok),
        # server commands forwarded to any server (deterministic forms)
        (("COMMAND", "INFO", "get"), ok),
        # errors from the server pass through
        (("INCR", k("s2")), err),
        (("LPUSH", k("s2"), "x"), err),
        # transactions (stateless steps; test_transactions.py has the rest)
        (("EXEC",), err),
        (("DISCARD",), err),
        (("WATCH", k("s2"), k("n1")), ok),
        (("UNWATCH",), ok),
        (("MULTI",), ok),
        (("INCR", k("n1")), ok),
        (("GET", k("n1")), ok),
        (("EXEC",), ok),
    ]


# commands whose reply is not the same bytes on two servers, checked on their own below
NOT_DIFFERENTIAL = {"ping", "quit", "auth", "lolwut"}

DOCUMENTED = Path(__file__).resolve().parent / "data" / "twemproxy-redis-commands.txt"
# the shared spec, beside the checkout (as in CI), or where $NC_SHARED_DIR says
SHARED_SPEC = Path(os.environ.get("NC_SHARED_DIR") or procs.REPO.parent / "shared") / \
    "twemproxy-behaviour.md"


def documented_commands():
    """The commands twemproxy 0.5 supports, lower case, from the copy of its documented list."""
    lines = (line.split("#", 1)[0].strip() for line in DOCUMENTED.read_text().splitlines())
    return [line.lower() for line in lines if line]


def spec_commands(text):
    """The command names of the "Supported" list of section 1.5 of twemproxy-behaviour.md
    (parenthesised remarks left out; ZREMRANGEBYLEX/RANK/SCORE is three commands)."""
    section = text[text.index("## 1.5 Redis commands"):]
    listed = section[section.index("**Supported:**"):section.index("**Not supported**")]
    listed = re.sub(r"\([^)]*\)", "", listed.replace("**Supported:**", ""))
    names = set()
    for m in re.finditer(r"\b([A-Z][A-Z0-9]+)((?:/[A-Z]+)*)", listed):
        names.add(m.group(1).lower())
        stem = m.group(1)[:m.group(1).rindex("BY") + 2] if m.group(2) else ""
        names.update((stem + tail).lower() for tail in m.group(2).split("/")[1:])
    return names


@pytest.fixture(scope="module")
def reference(module_redis_server):
    """A redis-server outside the proxy: it gets the same commands, for the expected replies."""
    port, _ = module_redis_server()
    return port


def tagger():
    tag = uuid.uuid4().hex[:8]
    return lambda name: f"{{{tag}}}{name}"


def test_the_documented_list_is_the_shared_specs():
    """The copy in data/ says what the shared spec says (CI has the spec beside the checkout)."""
    if not SHARED_SPEC.exists():
        pytest.skip(f"the shared spec is not at {SHARED_SPEC} (set NC_SHARED_DIR to its folder)")
    copy = documented_commands()
    assert len(copy) == len(set(copy)), "a command is listed twice"
    assert set(copy) == spec_commands(SHARED_SPEC.read_text())


def test_every_documented_command_is_walked():
    """Each command twemproxy supports is sent through the proxy below (and must get redis' own
    reply): a command dropped from the proxy's table fails the walk."""
    walked = {args[0].lower() for args, _ in command_table(str)} | NOT_DIFFERENTIAL
    assert set(documented_commands()) - walked == set()


def test_every_command_same_reply_as_redis(redis_cluster, reference):
    with redis_cluster.raw() as proxy, RawConn(reference) as ref:
        prev = {}
        for args, expect_error in command_table(tagger()):
            got = {}
            for name, conn in (("proxy", proxy), ("reference", ref)):
                sent = [prev[name] if a is PREV else a for a in args]
                conn.send(resp(*sent))
                got[name] = conn.reply()
                prev[name] = codec.resp_decode(got[name])[0]
            assert got["proxy"] == got["reference"], args
            assert got["proxy"].startswith(b"-") == expect_error, (args, got["proxy"])


def test_keys_land_on_the_backends(redis_cluster):
    """Writes through the proxy are on exactly one backend, reads find them."""
    client = redis_cluster.client()
    keys = spread_keys(f"land:{uuid.uuid4().hex}", 40)
    for key in keys:
        assert client.set(key, key)
    used = set()
    for key in keys:
        holders = redis_cluster.holder(key)
        assert len(holders) == 1, (key, holders)
        # where the proxy's manage port says the key goes (find_key): a worker that routed
        # otherwise would show here, key by key
        assert holders[0] == redis_cluster.server_of(key), (key, holders)
        used.add(holders[0])
        assert redis_cluster.direct(holders[0]).get(key) == key.encode()
        assert client.get(key) == key.encode()
    assert used == set(range(len(redis_cluster.ports))), "40 keys should reach every server"


def test_local_replies(redis_cluster):
    with redis_cluster.raw() as c:
        c.exchange(resp("PING"), b"+PONG\r\n")
        c.exchange(resp("ping", "hello world"), bulk("hello world"))
        c.exchange(resp("PING", "a", "b"), b"-ERR wrong number of arguments for 'ping' command\r\n")
        c.exchange(resp("AUTH", "pw"), b"-ERR Client sent AUTH, but no password is set\r\n")
        c.send(resp("LOLWUT"))
        text = codec.resp_decode(c.reply())[0]
        assert b"Redis ver." in text
        c.exchange(resp("QUIT"), b"+OK\r\n")
        assert c.is_closed()


UNSUPPORTED = ["MIGRATE", "DEBUG", "SLOWLOG", "LATENCY", "ACL",
               "MONITOR", "WAIT", "SWAPDB", "MODULE", "WAITAOF", "LASTSAVE",
               "SAVE", "SHUTDOWN", "NoSuchCommand"]


def test_unsupported_command_then_valid_one(redis_cluster):
    """Each unsupported or unknown command gets an error naming it; the connection stays usable."""
    key = f"unsup:{uuid.uuid4().hex}"
    with redis_cluster.raw() as c:
        c.exchange(resp("SET", key, "still here"), b"+OK\r\n")
        for name in UNSUPPORTED:
            c.exchange(resp(name, "a", "b", "c"),
                       b"-ERR unsupported command '%s'\r\n" % name.lower().encode())
            c.exchange(resp("GET", key), bulk("still here"))
        # pipelined: the error takes its place between the replies
        c.exchange(resp("GET", key) + resp("SLOWLOG", "GET") + resp("GET", key),
                   bulk("still here") + b"-ERR unsupported command 'slowlog'\r\n" +
                   bulk("still here"))


@pytest.mark.parametrize("args, name", [
    (("GET",), "get"),
    (("GET", "a", "b"), "get"),
    (("set", "a"), "set"),
    (("MSET", "a", "1", "b"), "mset"),
    (("HSET", "h", "f"), "hset"),
    (("EVAL", "return 1", "0"), "eval"),
    (("EVAL", "return 1", "2", "k"), "eval"),
    (("ZUNIONSTORE", "d", "x", "a"), "zunionstore"),
    (("MGET",), "mget"),
    (("DEL",), "del"),
])
def test_wrong_arity(redis_cluster, args, name):
    with redis_cluster.raw() as c:
        c.exchange(resp(*args), b"-ERR wrong number of arguments for '%s' command\r\n" % name.encode())
        c.exchange(resp("PING"), b"+PONG\r\n")


def test_inline_commands(redis_cluster):
    key = f"inline:{uuid.uuid4().hex}"
    others = [f"{key}:{i}" for i in range(8)]
    with redis_cluster.raw() as c:
        c.exchange(b"PING\r\n", b"+PONG\r\n")
        c.exchange(b"SET %s hello\r\n" % key.encode(), b"+OK\r\n")
        c.exchange(b"get %s\r\n" % key.encode(), bulk("hello"))
        c.exchange(("MSET " + " ".join(f"{o} v{i}" for i, o in enumerate(others)) + "\r\n").encode(),
                   b"+OK\r\n")
        c.exchange(("MGET " + " ".join([key, "nope:" + key, *others]) + "\r\n").encode(),
                   array(bulk("hello"), bulk(None), *[bulk(f"v{i}") for i in range(8)]))
        c.exchange(("EXISTS " + " ".join(others) + " nope\r\n").encode(), integer(8))
        c.exchange(b"slowlog get\r\n", b"-ERR unsupported command 'slowlog'\r\n")
        c.exchange(b"GET\r\n", b"-ERR wrong number of arguments for 'get' command\r\n")
        # blank lines are ignored, as redis does
        c.exchange(b"\r\n\r\nGET %s\r\n" % key.encode(), bulk("hello"))
        # inline and RESP mixed in one write
        c.exchange(b"GET %s\r\n" % key.encode() + resp("GET", key) + b"PING\r\n",
                   bulk("hello") * 2 + b"+PONG\r\n")


def test_odd_inline_and_keys_same_as_redis(redis_cluster, reference):
    """Bare LF line ends, extra blanks and tabs in inline commands, an empty key, CR LF inside a
    key: the same replies as redis."""
    key = tagger()("odd")
    requests = [b"PING\n", b"SET %s b\n" % key.encode(), b"GET %s\n" % key.encode(),
                b"GET  %s  \r\n" % key.encode(), b"  PING\r\n", b"\tPING\r\n",
                b"GET a\tb\r\n", resp("SET", "", "empty"), resp("GET", ""),
                resp("SET", "x\r\ny", "crlf"), resp("MGET", "x\r\ny", "", key, "nope")]
    with redis_cluster.raw() as proxy, RawConn(reference) as ref:
        for request in requests:
            proxy.send(request)
            ref.send(request)
            assert proxy.reply() == ref.reply(), request


def test_nested_replies_pass_through(redis_cluster, reference):
    """Deeply nested arrays, nils, statuses, errors inside arrays, empty arrays: the same bytes as
    redis sends."""
    script = ("local t = {0, 's0'} ; local cur = t ; for i = 1, 40 do local n = {i, 's' .. i} ; "
              "cur[3] = n ; cur = n end ; "
              "return {t, {}, redis.error_reply('ERR inner'), {redis.status_reply('OK'), false}}")
    key = tagger()("nest")
    with redis_cluster.raw() as proxy, RawConn(reference) as ref:
        for args in [("EVAL", script, "1", key),
                     ("EVAL", SCRIPT_NESTED, "1", key),
                     ("COMMAND", "INFO", "get", "set", "nosuch")]:
            proxy.send(resp(*args))
            ref.send(resp(*args))
            got, want = proxy.reply(), ref.reply()
            assert got == want
            assert got.startswith(b"*")
    value = codec.resp_decode(got)[0]
    assert value[2] is None


@pytest.mark.parametrize("stream, reason", [
    # redis 7's own words
    (b"*1\r\n$abc\r\n", "invalid bulk length"),
    (b"*x\r\n", "invalid multibulk length"),
    (b"*2\r\n$3\r\nGET\r\n:1\r\n", "expected '$', got ':'"),
    (b"*2\r\n$3\r\nGET\r\n*1\r\n", "expected '$', got '*'"),
    (b'GET "quoted key\r\n', "unbalanced quotes in request"),
    # where redis goes on (it skips two bytes unread; it unquotes): the proxy's own refusal
    (b"*1\r\n$4\r\nPINGxx", "expected CRLF after bulk data"),
    (b'GET "quoted key"\r\n', "quotes and NUL are not supported in inline requests"),
])
def test_protocol_error_replies_then_closes(redis_cluster, stream, reason):
    """Earlier pipelined requests are answered, then one protocol error, then the close. The
    texts are redis 7's where redis refuses the stream too (test_framing_diff.py compares them
    with a redis-server's)."""
    with redis_cluster.raw() as c:
        c.send(resp("PING") + stream + resp("PING"))
        c.expect(b"+PONG\r\n")
        c.expect(b"-ERR Protocol error: %s\r\n" % reason.encode())
        assert c.is_closed()


def test_backend_refused(redis_server, write_conf, nutcrackers):
    """A server nobody listens on: -ERR Connection refused, for single and multi-key commands,
    and the connection stays usable."""
    live, _ = redis_server()
    dead = procs.free_port()
    cluster = start_cluster("redis", 2, 2, None, write_conf, nutcrackers, "refused",
                                    ports=[live, dead])
    keys_live, keys_dead = [], []
    with cluster.raw() as c:
        for key in spread_keys("refused", 100):
            c.send(resp("SET", key, "v"))
            reply = c.reply()
            if reply == b"+OK\r\n":
                keys_live.append(key)
            else:
                assert reply == b"-ERR Connection refused\r\n"
                keys_dead.append(key)
        assert keys_live and keys_dead
        c.exchange(resp("GET", keys_dead[0]), b"-ERR Connection refused\r\n")
        c.exchange(resp("MGET", keys_live[0], keys_dead[0]), b"-ERR Connection refused\r\n")
        c.exchange(resp("DEL", keys_live[0], keys_dead[0]), b"-ERR Connection refused\r\n")
        c.exchange(resp("GET", keys_live[1]), bulk("v"))
