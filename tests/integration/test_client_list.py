"""CLIENT LIST through the proxy (notes/client-list.md): the proxy answers it itself with the
clients of the caller's pool on every worker, one CLIENT INFO line each, against a real
redis-server behind -T 3 (the master hands clients to the workers round-robin, so a few clients
are spread over all three) and a redis-server of its own for redis's texts.

- redis-py's client_list() shows every client exactly once, with its name (CLIENT SETNAME), its id
  (CLIENT ID) and its address (the client socket's own name); a RESP3 client gets a verbatim
  string, as from redis.
- TYPE normal / pubsub split the clients by their subscriptions (a subscriber shows flags=P and
  its counts, sub= psub= ssub=, in CLIENT LIST and in its own CLIENT INFO);
  TYPE master / replica / slave list none; ID lists the clients named, in the order named.
- Wrong arguments get redis 7's errors, byte for byte against a redis-server.
- Clients that ask and leave before the answer, and a list of many clients, leave the proxy well.
- After a reload, the pool's clients on the old generation (a subscriber stays there) and on the
  new one are listed together.
"""
import pytest

from nctest.cluster import start_cluster
from nctest.codec import resp
from nctest.conf import write_conf as replace_conf
from nctest.conn import RawConn, redis_client
from nctest.load import first_difference
from nctest.manage import command as manage_command

THREADED = True  # the TSan stage runs these too (conftest.py)

THREADS = 3
NAMED = 9  # three clients on each worker


@pytest.fixture(scope="module")
def pool(module_redis_server, module_write_conf, module_nutcrackers):
    cluster = start_cluster("redis", 1, THREADS, module_redis_server, module_write_conf, module_nutcrackers,
                            name="clientlist")
    yield cluster
    assert cluster.stop() == 0


def fields(line):
    return dict(f.split("=", 1) for f in line.split(" "))


def lines(text):
    if isinstance(text, bytes):
        text = text.decode()
    assert text == "" or text.endswith("\n"), text
    return [fields(x) for x in text.splitlines()]


class Named:
    """NAMED raw clients, each with a name: {name: (conn, id, addr)}."""

    def __init__(self, pool, prefix):
        self.conns = {}
        for i in range(NAMED):
            c = RawConn(pool.port)
            name = f"{prefix}-{i}"
            assert c.call("CLIENT", "SETNAME", name) == "OK"
            ident = c.call("CLIENT", "ID")
            host, port = c.sock.getsockname()[:2]
            self.conns[name] = (c, ident, f"{host}:{port}")

    def close(self):
        for c, _, _ in self.conns.values():
            c.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def test_every_client_once(pool):
    with Named(pool, "every") as named, redis_client(pool.port, protocol=None) as r:
        listed = r.client_list()
        mine = [c for c in listed if c["name"].startswith("every-")]
        assert sorted(c["name"] for c in mine) == sorted(named.conns), listed
        for c in mine:
            _, ident, addr = named.conns[c["name"]]
            assert (int(c["id"]), c["addr"], c["laddr"]) == (ident, addr, f"127.0.0.1:{pool.port}"), c
            assert c["flags"] == "N" and c["db"] == "0" and c["resp"] == "2", c
        # the asker itself, in RESP3 (redis-py's default), is listed too
        me = r.client_id()
        assert [c["resp"] for c in listed if int(c["id"]) == me] == ["3"], listed
        # a RESP3 client gets a verbatim string, each line ending in a newline
        with RawConn(pool.port) as c:
            c.call("HELLO", "3")
            c.send(resp("CLIENT", "LIST"))
            raw = c.reply()
            assert raw.startswith(b"=") and raw[raw.index(b"\r\n") + 2:].startswith(b"txt:"), raw[:40]
            assert raw.endswith(b"\n\r\n"), raw[-40:]


def test_type_and_id(pool):
    with Named(pool, "flt") as named, RawConn(pool.port) as sub, redis_client(pool.port) as r:
        assert sub.call("CLIENT", "SETNAME", "flt-sub") == "OK"
        sub_id = sub.call("CLIENT", "ID")
        sub.send(resp("SUBSCRIBE", "flt-channel"))
        assert sub.reply() == b"*3\r\n$9\r\nsubscribe\r\n$11\r\nflt-channel\r\n:1\r\n"

        def names(*args):
            return sorted(c["name"] for c in lines(r.execute_command("CLIENT", "LIST", *args))
                          if c["name"].startswith("flt-"))

        assert names() == sorted([*named.conns, "flt-sub"])
        assert names("TYPE", "normal") == sorted(named.conns)
        assert names("type", "PUBSUB") == ["flt-sub"]
        sub.send(resp("PSUBSCRIBE", "flt-p*"))
        assert sub.reply().endswith(b":2\r\n")
        assert [(c["flags"], c["sub"], c["psub"], c["ssub"])
                for c in lines(r.execute_command("CLIENT", "LIST", "TYPE", "pubsub"))
                if c["name"] == "flt-sub"] == [("P", "1", "1", "0")]
        for t in ("master", "replica", "slave"):
            assert r.execute_command("CLIENT", "LIST", "TYPE", t) == b""
        ids = [named.conns[n][1] for n in sorted(named.conns)[:4]]
        got = lines(r.execute_command("CLIENT", "LIST", "ID", *ids, sub_id, 10 ** 12, 0, -1))
        assert sorted(int(c["id"]) for c in got) == sorted(ids + [sub_id]), got
        assert r.execute_command("CLIENT", "LIST", "ID", 10 ** 12) == b""
        # in the order of the ids given, one given twice listed twice, as redis
        order = [ids[2], sub_id, ids[0], ids[2]]
        assert [int(c["id"]) for c in lines(r.execute_command("CLIENT", "LIST", "ID", *order))] == order
        # redis-py's own filter arguments
        assert {c["name"] for c in r.client_list(_type="pubsub")} == {"flt-sub"}
        assert sorted(int(c["id"]) for c in r.client_list(client_id=ids)) == sorted(ids)


ERRORS = [
    ("CLIENT", "LIST", "TYPE"),
    ("CLIENT", "LIST", "TYPE", "foo"),
    ("CLIENT", "LIST", "TYPE", "Normal", "x"),
    ("CLIENT", "LIST", "ID"),
    ("CLIENT", "LIST", "ID", "abc"),
    ("CLIENT", "LIST", "ID", "1", "abc"),
    ("CLIENT", "LIST", "ID", "1.5"),
    ("CLIENT", "LIST", "ID", "99999999999999999999"),
    ("CLIENT", "LIST", "ID", "1", "TYPE", "normal"),
    ("CLIENT", "LIST", "TYPE", "normal", "ID", "1"),
    ("CLIENT", "LIST", "foo"),
    ("client", "list", "type", "MASTER"),
    ("CLIENT", "LIST", "TYPE", "replica"),
    ("CLIENT", "LIST", "ID", "0", "-1", "999999999"),
]


def test_client_info_of_a_subscriber(pool):
    """CLIENT INFO, the same line: a RESP3 subscriber sees its flag and its counts."""
    with RawConn(pool.port) as c:
        c.call("HELLO", "3")
        c.send(resp("SUBSCRIBE", "info-a", "info-b") + resp("PSUBSCRIBE", "info-p*") + resp("CLIENT", "INFO"))
        for _ in range(3):
            assert c.reply().startswith(b">3\r\n")
        info = lines(c.reply().split(b"txt:", 1)[1][:-2])[0]
        assert (info["flags"], info["sub"], info["psub"], info["ssub"], info["resp"]) == ("P", "2", "1", "0", "3")
        c.send(resp("UNSUBSCRIBE") + resp("PUNSUBSCRIBE") + resp("CLIENT", "INFO"))
        for _ in range(3):
            assert c.reply().startswith(b">3\r\n")
        info = lines(c.reply().split(b"txt:", 1)[1][:-2])[0]
        assert (info["flags"], info["sub"], info["psub"]) == ("N", "0", "0")


@pytest.mark.parametrize("hello", [None, "3"], ids=["resp2", "resp3"])
def test_errors_are_redis(pool, redis_oracle, hello):
    def exchange(port):
        with RawConn(port) as c:
            if hello:
                c.call("HELLO", hello)
            c.send(b"".join(resp(*a) for a in ERRORS))
            return b"".join(c.reply() for _ in ERRORS)

    expected, got = exchange(redis_oracle), exchange(pool.port)
    assert got == expected, first_difference(got, expected)


def test_askers_that_leave(pool):
    """Clients that ask and close at once: their answers come back to no one, the proxy serves on."""
    with Named(pool, "leave") as named:
        for _ in range(50):
            c = RawConn(pool.port)
            c.send(resp("CLIENT", "LIST") * 3)
            c.close()
        with redis_client(pool.port) as r:
            assert r.ping()
            mine = [c["name"] for c in r.client_list() if c["name"].startswith("leave-")]
            assert sorted(mine) == sorted(named.conns)


def test_many_clients(pool):
    """300 clients over the three workers: each listed once, the asker's pipeline in order."""
    conns = [RawConn(pool.port) for _ in range(300)]
    try:
        for i, c in enumerate(conns):
            c.send(resp("CLIENT", "SETNAME", f"many-{i}"))
        for c in conns:
            assert c.reply() == b"+OK\r\n"
        with RawConn(pool.port) as c:
            c.send(resp("PING") + resp("CLIENT", "LIST") + resp("ECHO", "after"))
            assert c.reply() == b"+PONG\r\n"
            text = c.reply()
            assert c.reply() == b"$5\r\nafter\r\n"
        body = text[text.index(b"\r\n") + 2:-2]
        assert int(text[1:text.index(b"\r\n")]) == len(body)
        names = [f["name"] for f in lines(body) if f["name"].startswith("many-")]
        assert sorted(names) == sorted(f"many-{i}" for i in range(300))
    finally:
        for c in conns:
            c.close()


def test_after_reload(redis_server, write_conf, nutcrackers):
    cluster = start_cluster("redis", 1, THREADS, redis_server, write_conf, nutcrackers, name="clientlist-reload")
    with Named(cluster, "rl") as named, RawConn(cluster.port) as sub:
        assert sub.call("CLIENT", "SETNAME", "rl-sub") == "OK"
        sub.send(resp("SUBSCRIBE", "rl-channel"))
        assert sub.reply().endswith(b":1\r\n")
        conf = {cluster.name: {"listen": f"127.0.0.1:{cluster.port}", "redis": True, "timeout": 4000,
                               "servers": [f"127.0.0.1:{p}:1" for p in cluster.ports]}}
        replace_conf(cluster.proxy.conf_path, conf)
        assert manage_command(cluster.proxy.manage_port, "reload").startswith("OK generation")
        cluster.proxy.wait_log("generation 2")
        with redis_client(cluster.port) as r:
            listed = {c["name"]: c for c in r.client_list() if c["name"].startswith("rl-")}
            assert sorted(listed) == sorted([*named.conns, "rl-sub"]), listed
            assert listed["rl-sub"]["flags"] == "P"
            assert [c["name"] for c in r.client_list(_type="pubsub")] == ["rl-sub"]
    assert cluster.stop() == 0
