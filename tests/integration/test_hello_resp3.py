"""HELLO, RESP3 and the connection handshake through the proxy (notes/resp3-and-handshake.md),
against real redis-servers: 2 of them behind -T 1 and -T 4.

- redis-py as today's applications use it: the newest (8.x, the interpreter's own) with its
  default options (HELLO 3), protocol=2 and protocol=3, and redis-py 5.3.1 (the newest 5.x) with the
  same three (pinned, installed apart and run in a child interpreter: nctest.pinned). The same sequence of calls over
  every data type, pipelines, multi-key commands split over both servers and a transaction on
  hash-tagged keys gives the same results through the proxy as from a redis-server with the same
  library and protocol (nctest.redisops).
- Raw bytes: HELLO, CLIENT, ECHO, SELECT, RESET, AUTH and their errors are redis's own, byte for
  byte, against a redis-server answering the same requests (the client id aside); RESP3 replies
  (nulls, maps, sets, doubles, merged MGET) too. INFO's content is the proxy's: its shape and its
  summed values are checked against the backends.
- HELLO with a server down answers from the one up; with all down, the usual error. A RESP2-only
  deployment opens no RESP3 connection; a RESP3 client gets its own, set up with HELLO 3.
"""
import re
import uuid

import pytest
import redis

from nctest import manage, pinned, redisops
from nctest.cluster import matrix_id, start_cluster
from nctest.codec import Verbatim, decode, resp
from nctest.conn import RawConn, no_retry, redis_client, redis_clients
from nctest.keys import spread_keys
from nctest.load import first_difference
from nctest.procs import free_port
from nctest.wait import wait_for

THREADED = True  # the TSan stage runs these too (conftest.py)

MATRIX = [(2, 1), (2, 4)]
REDIS_PY_5 = "redis==5.3.1"


@pytest.fixture(scope="module", params=MATRIX, ids=matrix_id)
def pool(request, module_redis_server, module_write_conf, module_nutcrackers):
    """A Cluster: 2 redis-servers behind a proxy (-T 1 or -T 4, hash_tag "{}")."""
    backends, threads = request.param
    cluster = start_cluster("redis", backends, threads, module_redis_server, module_write_conf,
                            module_nutcrackers, name=f"hello-{matrix_id(request.param)}", hash_tag="{}")
    yield cluster
    assert cluster.stop() == 0


@pytest.fixture(scope="module")
def oracle(module_redis_server):
    """A redis-server of its own: what redis answers."""
    port, _ = module_redis_server()
    return port


def fresh(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def placed(cluster, prefix, n):
    """n fresh keys with the index of the server the proxy maps each to: {key: server}."""
    keys = spread_keys(fresh(prefix), n)
    client = cluster.client()
    client.mset({k: "x" for k in keys})
    where = {k: cluster.holder(k)[0] for k in keys}
    client.delete(*keys)
    client.close()
    return where


def spread_over(cluster, prefix, n=6):
    """n fresh keys (n >= 2) that the proxy maps to more than one server."""
    where = placed(cluster, prefix, 8 * n)
    a, b = two_of(where)
    return [a, b] + [k for k in where if k not in (a, b)][:n - 2]


def two_of(where):
    first = next(iter(where))
    other = next((k for k in where if where[k] != where[first]), None)
    assert other is not None, "the keys all landed on one server"
    return first, other


def two_apart(cluster, prefix):
    """Two fresh keys that the proxy maps to two servers."""
    return two_of(placed(cluster, prefix, 16))


# ---------------------------------------------------------------------------------------------
# redis-py, newest and 5.x: the same results as from a redis-server


@pytest.mark.parametrize("protocol", [None, 2, 3], ids=["default", "resp2", "resp3"])
def test_redis_py_newest(pool, oracle, protocol):
    keys = spread_over(pool, "py")
    tag = fresh("t")
    results = []
    for port in (oracle, pool.port):
        r = redis_client(port, protocol=protocol)
        results.append(redisops.run(r, tag, keys))
        r.close()
    expected, got = results
    assert got == expected, first_difference(got, expected)
    # the default is RESP3 (redis-py 8): HELLO 3 went through
    r = redis_client(pool.port, protocol=protocol)
    hello = r.execute_command("HELLO")
    proto = hello[b"proto"] if isinstance(hello, dict) else hello[hello.index(b"proto") + 1]
    assert proto == (2 if protocol == 2 else 3)
    r.close()


REDIS_PY_5_SCRIPT = r"""
import json, sys
import redis
from nctest import redisops
arg = json.loads(sys.argv[1])
out = {"version": redis.__version__, "results": []}
for port in arg["ports"]:
    kw = {} if arg["protocol"] is None else {"protocol": arg["protocol"]}
    r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=10, socket_connect_timeout=10, **kw)
    out["results"].append(redisops.run(r, arg["tag"], arg["keys"]))
    hello = r.execute_command("HELLO")
    out["hello"] = hello[b"proto"] if isinstance(hello, dict) else hello[hello.index(b"proto") + 1]
    r.close()
print(json.dumps(out))
"""


@pytest.mark.parametrize("protocol", [None, 2, 3], ids=["default", "resp2", "resp3"])
def test_redis_py_5(pool, oracle, protocol):
    keys = spread_over(pool, "py5")
    try:
        out = pinned.run(REDIS_PY_5, REDIS_PY_5_SCRIPT,
                         {"ports": [oracle, pool.port], "tag": fresh("t5"), "keys": keys,
                          "protocol": protocol})
    except pinned.Unavailable as e:
        pytest.skip(f"{REDIS_PY_5} cannot be installed here: {e}")
    assert out["version"] == REDIS_PY_5.split("==")[1]
    expected, got = out["results"]
    assert got == expected, first_difference(got, expected)
    # redis-py 5's default is RESP2 (it sends HELLO only when asked for protocol 3)
    assert out["hello"] == (3 if protocol == 3 else 2)


# ---------------------------------------------------------------------------------------------
# byte for byte against a redis-server

ID = re.compile(rb"(\$2\r\nid\r\n):\d+\r\n")


def exchange(port, requests, nreplies):
    """Sends the requests in one write; returns the first nreplies replies' bytes, the client id
    in HELLO's reply blanked (it is the connection's own)."""
    with RawConn(port) as c:
        c.send(b"".join(requests))
        return ID.sub(rb"\1:ID\r\n", b"".join(c.reply() for _ in range(nreplies)))


def sequences():
    """name -> (function of keys a, b -> requests, number of replies)."""
    return {
        "hello": (lambda a, b: [resp("HELLO"), resp("HELLO", "2"), resp("HELLO", "3"), resp("hello"),
                                resp("HELLO", "2")], 5),
        "hello-errors": (lambda a, b: [resp("HELLO", "4"), resp("HELLO", "1"), resp("HELLO", "x"),
                                       resp("HELLO", "3", "FOO"), resp("HELLO", "3", "AUTH", "default"),
                                       resp("HELLO", "3", "SETNAME", "a b"),
                                       resp("HELLO", "3", "AUTH", "bob", "pw"), resp("GET", a)], 8),
        "hello-setname-auth": (lambda a, b: [resp("HELLO", "3", "AUTH", "default", "any", "SETNAME", "app"),
                                             resp("CLIENT", "GETNAME"), resp("HELLO", "2", "SETNAME", "x"),
                                             resp("CLIENT", "GETNAME")], 4),
        "auth-user": (lambda a, b: [resp("AUTH", "default", "pw"), resp("AUTH", "bob", "pw"),
                                    resp("AUTH", "a", "b", "c")], 3),
        "client": (lambda a, b: [resp("CLIENT", "GETNAME"), resp("CLIENT", "SETNAME", "n1"),
                                 resp("client", "getname"), resp("CLIENT", "SETNAME", ""),
                                 resp("CLIENT", "GETNAME"), resp("CLIENT", "SETNAME", "a b"),
                                 resp("CLIENT", "NO-EVICT", "on"), resp("CLIENT", "NO-EVICT", "x"),
                                 resp("CLIENT", "NO-EVICT", "off")], 9),
        "client-arity": (lambda a, b: [resp("CLIENT"), resp("CLIENT", "SETNAME"),
                                       resp("CLIENT", "SETNAME", "a", "b"), resp("CLIENT", "GETNAME", "x"),
                                       resp("CLIENT", "ID", "x"), resp("CLIENT", "INFO", "x"),
                                       resp("CLIENT", "NO-EVICT")], 7),
        # a subcommand redis does not have: redis's own error (node-redis 6 reads it as "no
        # maintenance notifications here"), after HELLO 3 in one write as node-redis 6 sends it
        # (its CLIENT SETINFO in between is newer than the oracle, redis 7.0)
        "client-unknown-subcommand": (lambda a, b: [resp("HELLO", "3"),
                                                    resp("CLIENT", "MAINT_NOTIFICATIONS", "ON",
                                                         "moving-endpoint-type", "external-ip"),
                                                    resp("client", "Maint_Notifications"),
                                                    resp("CLIENT", "a\nb", "c"), resp("CLIENT", "x" * 300),
                                                    resp("GET", a)], 6),
        "echo": (lambda a, b: [resp("ECHO", "hi"), resp("ECHO", ""), resp("ECHO"), resp("ECHO", "a", "b"),
                               b"ECHO inline\r\n"], 5),
        "select": (lambda a, b: [resp("SELECT", "0"), resp("SELECT", "x"), resp("SELECT"),
                                 resp("SELECT", "0", "1")], 4),
        "reset": (lambda a, b: [resp("CLIENT", "SETNAME", "n"), resp("HELLO", "3"), resp("RESET"),
                                resp("GET", a), resp("CLIENT", "GETNAME"), resp("RESET", "x")], 6),
        "resp3-replies": (lambda a, b: [resp("HELLO", "3"), resp("GET", a), resp("MGET", a, b),
                                        resp("SET", a, "1"), resp("MGET", a, b), resp("DEL", a, b),
                                        resp("HSET", a, "f", "v", "g", "w"), resp("HGETALL", a),
                                        resp("HGETALL", b), resp("SADD", b, "m"), resp("SMEMBERS", b),
                                        resp("ZADD", b + "z", "1.5", "m"), resp("ZSCORE", b + "z", "m"),
                                        resp("ZRANGE", b + "z", "0", "-1", "WITHSCORES"),
                                        resp("ZSCORE", b + "z", "no"), resp("CLIENT", "GETNAME"),
                                        resp("ECHO", "e"), resp("DEL", a, b, b + "z"), resp("PING")], 19),
        "reset-inside-multi": (lambda a, b: [resp("MULTI"), resp("SET", a, "1"), resp("RESET"), resp("EXEC"),
                                             resp("EXISTS", a)], 5),
        "ordered-around-hello": (lambda a, b: [resp("SET", a, "1"), resp("SET", b, "2"), resp("HELLO", "3"),
                                               resp("MGET", a, b), resp("DEL", a, b), resp("RESET"),
                                               resp("MGET", a, b)], 7),
    }


@pytest.mark.parametrize("name", sorted(sequences()))
def test_replies_are_redis_own(pool, oracle, name):
    build, n = sequences()[name]
    a, b = two_apart(pool, "raw")
    expected = exchange(oracle, build(a, b), n)
    got = exchange(pool.port, build(a, b), n)
    assert got == expected, first_difference(got, expected)


def client_info(line):
    return dict(f.split("=", 1) for f in line.decode().strip().split(" "))


def test_client_id_info_and_setinfo(pool):
    with pool.raw() as c, pool.raw() as d:
        ida, idb = c.call("CLIENT", "ID"), d.call("CLIENT", "ID")
        assert isinstance(ida, int) and ida != idb
        assert c.call("CLIENT", "SETNAME", "svc") == "OK"
        # redis 7.2's SETINFO and NO-TOUCH (the backends here are older): the proxy's own
        assert c.call("CLIENT", "SETINFO", "LIB-NAME", "mylib") == "OK"
        assert c.call("CLIENT", "SETINFO", "lib-ver", "1.2.3") == "OK"
        assert c.call("CLIENT", "SETINFO", "color", "x") == "ERR Unrecognized option 'color'"
        assert c.call("CLIENT", "NO-TOUCH", "on") == "OK"
        info = client_info(c.call("CLIENT", "INFO"))
        assert info["id"] == str(ida)
        assert info["addr"] == f"127.0.0.1:{c.local_port}"
        assert info["laddr"] == f"127.0.0.1:{pool.port}"
        assert int(info["fd"]) > 0
        assert (info["name"], info["db"], info["resp"], info["flags"]) == ("svc", "0", "2", "T")
        assert (info["lib-name"], info["lib-ver"]) == ("mylib", "1.2.3")
        assert c.call("HELLO", "3", "SETNAME", "svc3")[b"id"] == ida
        c.send(resp("CLIENT", "INFO"))
        raw = c.reply()
        assert raw.startswith(b"=")  # a verbatim string in RESP3, as redis
        info = client_info(decode(raw))
        assert (info["name"], info["resp"]) == ("svc3", "3")
        # the other subcommands that concern a server's connections are refused as before (CLIENT
        # LIST is the proxy's own: test_client_list.py)
        assert d.call("CLIENT", "KILL", "ID", "1") == "ERR unsupported command 'client'"


def test_time_and_quit(pool):
    with pool.raw() as c:
        now = c.call("TIME")
        assert len(now) == 2 and int(now[0]) > 1_600_000_000
        c.send(resp("QUIT"))
        c.expect(b"+OK\r\n")
        assert c.is_closed()


def test_select_other_db_names_the_pools(pool):
    with pool.raw() as c:
        assert c.call("SELECT", "3") == "ERR SELECT 3 is not possible: this pool serves db 0 only (redis_db)"
        assert c.call("SELECT", "0") == "OK"


def test_hello_inside_multi_is_refused(pool):
    """HELLO inside MULTI would switch a shared connection: refused (the transaction aborts, as
    for every command the proxy answers itself), and the connection goes on in RESP2."""
    a = fresh("hm")
    with pool.raw() as c:
        c.send(resp("MULTI") + resp("SET", a, "1") + resp("HELLO", "3") + resp("EXEC") + resp("EXISTS", a) +
               resp("GET", a + ":none"))
        c.expect(b"+OK\r\n+QUEUED\r\n-ERR Command not allowed inside a transaction\r\n"
                 b"-EXECABORT Transaction discarded because of previous errors.\r\n:0\r\n$-1\r\n")


# ---------------------------------------------------------------------------------------------
# INFO: the proxy's sections, the backends' sums


def info_sections(text):
    """{section: {key: value}} of an INFO text."""
    out, cur = {}, None
    for line in text.decode().split("\r\n"):
        if line.startswith("# "):
            cur = out.setdefault(line[2:], {})
        elif ":" in line:
            k, v = line.split(":", 1)
            cur[k] = v
    return out


def backend_info(cluster, section):
    """The INFO sections of each backend, asked directly."""
    out = []
    for p in cluster.ports:
        with RawConn(p) as c:
            out.append(info_sections(c.call("INFO", section)))
    return out


def test_info_sections_and_sums(pool):
    keys = spread_over(pool, "info", 8)
    r = pool.client()
    r.mset({k: "v" for k in keys})
    r.expire(keys[0], 1000)
    with pool.raw() as c:
        before = backend_info(pool, "stats")
        text = c.call("INFO")
        after = backend_info(pool, "stats")
        keyspace = backend_info(pool, "keyspace")
        info = info_sections(text)
        assert list(info) == ["Server", "Clients", "Memory", "Persistence", "Stats", "Keyspace"]
        assert text.startswith(b"# Server\r\nredis_version:")
        version = backend_info(pool, "server")[0]["Server"]["redis_version"]
        assert info["Server"]["redis_version"] == version
        assert info["Server"]["redis_mode"] == "standalone"
        assert info["Server"]["process_id"] == str(pool.pid())
        assert info["Server"]["tcp_port"] == str(pool.port)
        assert int(info["Server"]["uptime_in_seconds"]) >= 0
        assert int(info["Clients"]["connected_clients"]) >= 1
        assert info["Memory"] == {"maxmemory_policy": "noeviction"}  # redis-server's default
        assert info["Persistence"] == {"loading": "0"}
        for name in ("total_commands_processed", "total_connections_received", "keyspace_misses"):
            low = sum(int(b["Stats"][name]) for b in before)
            high = sum(int(b["Stats"][name]) for b in after)
            assert low <= int(info["Stats"][name]) <= high, name
        assert "instantaneous_input_kbps" not in info["Stats"]  # not a counter that adds up

        def count(field):
            return sum(int(dict(p.split("=") for p in b["Keyspace"]["db0"].split(","))[field])
                       for b in keyspace if "db0" in b["Keyspace"])

        db0 = dict(p.split("=") for p in info["Keyspace"]["db0"].split(","))
        assert int(db0["keys"]) == count("keys") and int(db0["expires"]) == count("expires")
        # sections by name, in redis's order; unknown ones add nothing
        assert list(info_sections(c.call("INFO", "keyspace", "SERVER"))) == ["Server", "Keyspace"]
        assert c.call("INFO", "nosuch") == b""
        assert info_sections(c.call("INFO", "persistence")) == {"Persistence": {"loading": "0"}}
        # RESP3: a verbatim string
        c.call("HELLO", "3")
        c.send(resp("INFO", "persistence"))
        raw = c.reply()
        assert raw == b"=30\r\ntxt:# Persistence\r\nloading:0\r\n\r\n"
        assert isinstance(decode(raw), Verbatim)
    r.delete(*keys)
    r.close()


def test_redis_py_info_and_hello(pool):
    for protocol in (2, 3):
        r = redis_client(pool.port, protocol=protocol)
        info = r.info()
        assert info["redis_version"] and info["loading"] == 0
        assert r.info("persistence") == {"loading": 0}
        r.close()


# ---------------------------------------------------------------------------------------------
# servers down; connections per protocol


@pytest.fixture(params=[1, 4], ids=["T1", "T4"])
def half_down(request, redis_server, write_conf, nutcrackers):
    """A proxy over 2 servers, the second of which is not there."""
    port, proc = redis_server()
    cluster = start_cluster("redis", 2, request.param, redis_server, write_conf, nutcrackers,
                            name="half", ports=[port, free_port()])
    cluster.procs.append(proc)
    yield cluster
    cluster.stop()


def test_hello_with_a_server_down(half_down, oracle):
    with half_down.raw() as c:
        hello = c.call("HELLO", "3")
        with RawConn(oracle) as o:
            assert hello[b"version"] == o.call("HELLO")[3]
        assert hello[b"proto"] == 3 and hello[b"server"] == b"redis"
        assert info_sections(c.call("INFO", "persistence")) == {"Persistence": {"loading": "0"}}
        c.call("HELLO", "2")
    r = redis_client(half_down.port, protocol=None)  # redis-py 8 connects (HELLO 3)
    assert r.ping()
    r.close()


def test_info_maxmemory_policy(redis_server, write_conf, nutcrackers):
    """INFO's maxmemory_policy is noeviction only while every server says so (BullMQ reads it to
    warn when keys may be evicted)."""
    cluster = start_cluster("redis", 2, 1, redis_server, write_conf, nutcrackers, name="policy")
    with cluster.raw() as c:
        assert info_sections(c.call("INFO", "memory")) == {"Memory": {"maxmemory_policy": "noeviction"}}
        cluster.direct(1).config_set("maxmemory-policy", "allkeys-lru")
        assert info_sections(c.call("INFO", "memory")) == {"Memory": {"maxmemory_policy": "allkeys-lru"}}
        cluster.direct(1).config_set("maxmemory-policy", "noeviction")
        assert info_sections(c.call("INFO"))["Memory"] == {"maxmemory_policy": "noeviction"}
    cluster.stop()


def test_hello_with_every_server_down(redis_server, write_conf, nutcrackers):
    cluster = start_cluster("redis", 2, 2, redis_server, write_conf, nutcrackers, name="down",
                            ports=[free_port(), free_port()])
    with cluster.raw() as c:
        assert c.call("HELLO", "3") == "ERR Connection refused"
        assert c.call("INFO") == "ERR Connection refused"
        assert c.call("PING") == "PONG"
    cluster.stop()


def resp_of(port):
    """The protocol (resp=) of each client connection of the redis-server on port."""
    return [int(dict(f.split("=", 1) for f in line.split(" ") if "=" in f).get("resp", 2))
            for line in redis_clients(port)]


def test_connections_per_protocol(redis_server, write_conf, nutcrackers):
    """RESP2 clients open no RESP3 server connection; a RESP3 client gets its own, opened with
    HELLO 3, and the proxy's client count is INFO's."""
    cluster = start_cluster("redis", 2, 1, redis_server, write_conf, nutcrackers, name="sets",
                            server_connections=1)
    keys = spread_over(cluster, "sets", 8)  # both servers get a connection (chance would miss 1 in 128)
    r2 = redis_client(cluster.port, protocol=2)
    r2.mset({k: "v" for k in keys})
    assert r2.mget(keys) == [b"v"] * len(keys)
    for p in cluster.ports:
        assert resp_of(p) == [2]
    assert r2.info("clients")["connected_clients"] == 1
    r3 = redis_client(cluster.port, protocol=3)
    assert r3.mget(keys) == [b"v"] * len(keys)
    assert r3.hgetall(keys[0] + ":h") == {}
    for p in cluster.ports:
        assert sorted(resp_of(p)) == [2, 3]
    # a reload that keeps the backends keeps both sets, and the RESP3 client its protocol
    conf_path = cluster.proxy.conf_path
    conf_path.write_text(conf_path.read_text().replace("\n  redis: true", "\n  redis: true\n  timeout: 5000", 1))
    assert manage.command(cluster.proxy.manage_port, "reload") == "OK generation 2\r\n"
    manage.wait_status(cluster.proxy.manage_port, lambda d: d.get("generation") == 2, timeout=10,
                       what="generation 2")
    assert r3.mget(keys) == [b"v"] * len(keys)
    assert r3.execute_command("HELLO")[b"proto"] == 3
    for p in cluster.ports:
        assert sorted(resp_of(p)) == [2, 3]
    wait_for(lambda: r2.info("clients")["connected_clients"] == 2, 10, "2 clients in INFO")
    r3.close()
    wait_for(lambda: r2.info("clients")["connected_clients"] == 1, 10, "1 client in INFO")
    r2.delete(*keys)
    r2.close()
    cluster.stop()


def test_auth_and_hello_with_a_password(redis_server, write_conf, nutcrackers):
    """redis_auth set: HELLO's AUTH, AUTH with a username and their errors are redis's; RESP3
    server connections authenticate inside their HELLO 3."""
    args = ("--requirepass", "sekret")
    ports = [redis_server(args=args)[0] for _ in range(2)]
    oracle_port, _ = redis_server(args=args)
    cluster = start_cluster("redis", 2, 2, redis_server, write_conf, nutcrackers, name="auth",
                            ports=ports, redis_auth="sekret", hash_tag="{}")
    a, b = fresh("{x}a"), fresh("{x}b")
    seq = [resp("GET", a), resp("HELLO"), resp("HELLO", "3"), resp("HELLO", "3", "AUTH", "default", "bad"),
           resp("AUTH", "default", "bad"), resp("CLIENT", "SETNAME", "x"), resp("ECHO", "e"),
           resp("RESET"), resp("HELLO", "3", "AUTH", "default", "sekret", "SETNAME", "n"),
           resp("SET", a, "1"), resp("MGET", a, b), resp("CLIENT", "GETNAME"), resp("RESET"), resp("GET", a),
           resp("AUTH", "default", "sekret"), resp("GET", a), resp("DEL", a)]
    expected = exchange(oracle_port, seq, len(seq))
    got = exchange(cluster.port, seq, len(seq))
    assert got == expected, first_difference(got, expected)
    r = redis.Redis(host="127.0.0.1", port=cluster.port, password="sekret", socket_timeout=10)  # HELLO 3 AUTH
    assert r.set(a, "v") and r.get(a) == b"v" and r.delete(a) == 1
    r.close()
    with pytest.raises(redis.AuthenticationError):  # at once: not retried
        redis.Redis(host="127.0.0.1", port=cluster.port, password="bad", socket_timeout=10,
                    retry=no_retry()).ping()
    cluster.stop()
