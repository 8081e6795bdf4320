"""Cluster-mode clients (issue 28, notes/cluster-clients.md): a redis pool with
client_cluster_mode answers CLUSTER SLOTS, SHARDS, NODES, INFO, MYID, KEYSLOT, READONLY and
READWRITE itself, as the one node of a cluster that owns every slot, at cluster_announce.

- Raw RESP2 and RESP3 (HELLO 3): every answer compared in shape (types, element counts, field
  names in order) with a real redis-server 7.0 started here with cluster-enabled and every slot
  its own; KEYSLOT, READONLY, READWRITE and the errors byte for byte with it; the node id is the
  MD5s of the announced host:port, and two proxies announcing one address announce one node.
- -t's refusals (file, line and key); without the key CLUSTER, READONLY and READWRITE are refused
  as twemproxy refuses them (counted under their names, aborting a transaction), with it they
  are not refused commands; a reload turns the key on and off for a connected client.
- The cluster clients at pinned versions, the proxy's address their only seed (cluster_announce
  that same address), over 2 redis-servers (ketama), in a pool with hash_tag "{}" and in one
  without (there one {tag}'s keys are on both servers, and the proxy splits their MSET, MGET and
  DEL), and over a Redis Cluster of 3 masters (a redis_cluster pool: each key on its slot's
  master): redis-py RedisCluster (RESP2, RESP3), go-redis ClusterClient (tests/clients/go
  cluster.go), ioredis Cluster 5 and 6 (tests/clients/node/ioredis_cluster.js), JedisCluster and
  RedisClusterClient (tests/clients/java JedisClusterClient.java). Each sets and reads back many
  keys, found on the backends on exactly the server the proxy names (find_keys), with their
  values; MSET/MGET of one slot's keys, a pipeline of 100 commands, INCR, DEL. Without a client's
  toolchain its test skips (conftest.py's go_client, java_client, node).
"""
import hashlib
import json
import re
import subprocess

import pytest
from redis.cluster import RedisCluster

from nctest import manage, nodeclients
from nctest.codec import Verbatim, resp
from nctest.conf import render_conf
from nctest.conn import RawConn, redis_client
from nctest.keys import spread_keys
from nctest.manage import find_keys
from nctest.procs import HOST, REPO, free_port, run
from nctest.wait import scale, wait_for

THREADED = True  # a -T 2 proxy: the TSan stage runs these too (conftest.py)

POOLS = ("tagged", "untagged", "rcluster")  # client_cluster_mode, with and without hash_tag "{}",
                                            # and over a Redis Cluster (redis_cluster)
KEYS = 60                        # keys each client sets and reads back
TAGGED = 6                       # keys of one {tag}: MSET, MGET, DEL
PIPELINED = 50                   # SETs, then as many GETs
RUN_TIMEOUT = 120                # seconds for one client program's run (unscaled)
CLUSTER_ARGS = ("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")


class Deployment:
    def __init__(self, proxy, ports, backends, cluster):
        self.proxy, self.ports, self.backends, self.cluster = proxy, ports, backends, cluster

    def node(self, pool):
        return f"{HOST}:{self.ports[pool]}"


@pytest.fixture(scope="module")
def deploy(module_redis_server, module_write_conf, module_nutcrackers, module_rcluster):
    """2 redis-servers behind a -T 2 proxy with pools tagged, untagged (client_cluster_mode,
    cluster_announce their own address) and plain (no client_cluster_mode); and rcluster:
    client_cluster_mode over a Redis Cluster of 3 masters (redis_cluster)."""
    backends = [module_redis_server()[0] for _ in range(2)]
    cluster = module_rcluster(nodes=3, replicas=0)
    ports = {name: free_port() for name in (*POOLS, "plain")}
    conf = {"rcluster": cluster.pool_conf(f"{HOST}:{ports['rcluster']}", client_cluster_mode=True,
                                          cluster_announce=f"{HOST}:{ports['rcluster']}")}
    for name, port in ports.items():
        if name == "rcluster":
            continue
        keys = {"listen": f"{HOST}:{port}", "redis": True, "distribution": "ketama"}
        if name != "untagged":
            keys["hash_tag"] = "{}"
        if name != "plain":
            keys.update(client_cluster_mode=True, cluster_announce=f"{HOST}:{port}")
        conf[name] = {**keys, "servers": [f"{HOST}:{b}:1" for b in backends]}
    proxy = module_nutcrackers(module_write_conf(conf, name="cluster.yml"), "-T", "2",
                               log_name="cluster.log")
    return Deployment(proxy, ports, backends, cluster)


@pytest.fixture(scope="module")
def oracle(module_redis_server):
    """A redis-server 7.0 with cluster-enabled, announcing 127.0.0.1, every slot its own."""
    port, _ = module_redis_server(args=CLUSTER_ARGS)
    r = redis_client(port)
    r.execute_command("CONFIG", "SET", "cluster-announce-ip", HOST)
    r.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 16383)
    wait_for(lambda: b"cluster_state:ok" in r.execute_command("CLUSTER", "INFO"), 10,
             "the oracle's cluster to be ok")
    r.close()
    return port


def node_id(host, port):
    digest = hashlib.md5(f"{host}:{port}".encode()).digest()
    return digest.hex() + hashlib.md5(digest).hexdigest()[:8]


def shape(v):
    """What a decoded reply is made of: types, counts and map keys, not the values."""
    if isinstance(v, dict):
        return {"map": [(k, shape(x)) for k, x in v.items()]}
    if isinstance(v, list):
        return [shape(x) for x in v]
    if isinstance(v, Verbatim):
        return "verbatim:" + v.fmt
    return type(v).__name__


def conns(port, protocol):
    """A raw connection speaking RESP protocol (HELLO 3 sent for 3)."""
    c = RawConn(port)
    if protocol == 3:
        assert c.call("HELLO", "3")[b"proto"] == 3
    return c


NODE_LINE = re.compile(rb"^([0-9a-f]{40}) ([^ ]+):(\d+)@(\d+) myself,master - 0 0 (\d+) connected 0-16383\n$")


@pytest.mark.parametrize("protocol", [2, 3])
def test_answers_like_a_cluster_node(deploy, oracle, protocol):
    """Every answer in the shape a cluster-enabled redis-server gives, with the proxy's node."""
    port = deploy.ports["tagged"]
    nid = node_id(HOST, port).encode()
    with conns(port, protocol) as p, conns(oracle, protocol) as o:
        for cmd in (("CLUSTER", "SLOTS"), ("CLUSTER", "SHARDS"), ("CLUSTER", "MYID"),
                    ("CLUSTER", "NODES"), ("CLUSTER", "INFO")):
            got, want = p.call(*cmd), o.call(*cmd)
            assert shape(got) == shape(want), cmd
        empty = {} if protocol == 3 else []
        assert p.call("CLUSTER", "SLOTS") == [[0, 16383, [HOST.encode(), port, nid, empty]]]
        assert p.call("CLUSTER", "MYID") == nid
        shard = p.call("CLUSTER", "SHARDS")[0]
        node = (shard[b"nodes"] if protocol == 3 else shard[3])[0]
        fields = node if protocol == 3 else dict(zip(node[0::2], node[1::2]))
        assert fields == {b"id": nid, b"port": port, b"ip": HOST.encode(), b"endpoint": HOST.encode(),
                          b"role": b"master", b"replication-offset": 0, b"health": b"online"}
        line = NODE_LINE.match(p.call("CLUSTER", "NODES"))
        assert line and line.groups() == (nid, HOST.encode(), str(port).encode(),
                                          str(port + 10000).encode(), b"1")
        assert NODE_LINE.match(o.call("CLUSTER", "NODES")), "the oracle's line"
        info = dict(f.split(b":") for f in p.call("CLUSTER", "INFO").split(b"\r\n") if f)
        names = [f.split(b":")[0] for f in o.call("CLUSTER", "INFO").split(b"\r\n") if f]
        assert list(info) == names
        assert info[b"cluster_state"] == b"ok" and info[b"cluster_known_nodes"] == b"1"
        assert info[b"cluster_slots_assigned"] == info[b"cluster_slots_ok"] == b"16384"
        assert info[b"cluster_size"] == b"1" and info[b"cluster_my_epoch"] == b"1"


@pytest.mark.parametrize("protocol", [2, 3])
def test_keyslot_errors_and_readonly_as_redis(deploy, oracle, protocol):
    """Byte for byte what redis answers: KEYSLOT, READONLY, READWRITE, the arities, unknown
    subcommands; HELLO's mode."""
    keys = ["somekey", "foo{hash_tag}", "{user1000}.following", "foo{}{bar}", "foo{{bar}}zap", "",
            "{", "a{b}c", b"\x00\xff{\x80}", *spread_keys("slot", 20)]
    reqs = [resp("CLUSTER", "KEYSLOT", k) for k in keys] + [
        resp("READONLY"), resp("READWRITE"), resp("CLUSTER"), resp("CLUSTER", "FOO"),
        resp("cluster", "slots", "x"), resp("CLUSTER", "KEYSLOT"), resp("CLUSTER", "MYID", "x"),
        resp("READONLY", "x"), b"CLUSTER KEYSLOT inline\r\n"]
    with conns(deploy.ports["tagged"], protocol) as p, conns(oracle, protocol) as o:
        for req in reqs:
            p.send(req)
            o.send(req)
            assert p.reply() == o.reply(), req
        # what redis answers and the proxy's one node does not
        assert p.call("CLUSTER", "COUNTKEYSINSLOT", "1") == \
            "ERR unknown subcommand 'COUNTKEYSINSLOT'. Try CLUSTER HELP."
        help_lines = p.call("CLUSTER", "HELP")
        assert help_lines[0].startswith("CLUSTER <subcommand>") and "KEYSLOT <key>" in help_lines
        hello = p.call("HELLO", str(protocol))
        mode = hello[b"mode"] if protocol == 3 else hello[hello.index(b"mode") + 1]
        assert mode == b"cluster"
        assert b"redis_mode:cluster" in p.call("INFO", "server")


def test_one_address_one_node(deploy, write_conf, nutcrackers, redis_server):
    """A second proxy announcing the first pool's address announces the same node."""
    port = free_port()
    conf = write_conf({"second": {"listen": f"{HOST}:{port}", "redis": True, "client_cluster_mode": True,
                                  "cluster_announce": deploy.node("tagged"),
                                  "servers": [f"{HOST}:{redis_server()[0]}:1"]}})
    nutcrackers(conf, "-T", "1")
    with RawConn(port) as a, RawConn(deploy.ports["tagged"]) as b:
        assert a.call("CLUSTER", "MYID") == b.call("CLUSTER", "MYID") == node_id(HOST, deploy.ports["tagged"]).encode()
        assert a.call("CLUSTER", "SLOTS") == b.call("CLUSTER", "SLOTS")


def test_refused_without_the_key(deploy):
    """The plain pool refuses them as twemproxy does, counted under their names (a transaction
    aborts on them as on any unknown command); the cluster pools refuse nothing."""
    with RawConn(deploy.ports["plain"]) as c:
        for name in ("CLUSTER", "READONLY", "READWRITE"):
            want = f"ERR unsupported command '{name.lower()}'"
            assert c.call(name) == want
            assert c.call(name, "SLOTS") == want
        assert c.call("MULTI") == "OK"
        assert c.call("CLUSTER", "SLOTS") == "ERR unsupported command 'cluster'"
        assert c.call("EXEC") == "EXECABORT Transaction discarded because of previous errors."
    st = manage.wait_status(deploy.proxy.manage_port,
                            lambda d: d["plain"].get("refused_cmd_cluster", 0) >= 3, what="refused counts")
    assert st["plain"]["refused_cmd_readonly"] >= 2 and st["plain"]["refused_cmd_readwrite"] >= 2
    for pool in POOLS:
        with RawConn(deploy.ports[pool]) as c:
            assert c.call("CLUSTER", "MYID") == node_id(HOST, deploy.ports[pool]).encode()
            assert c.call("READONLY") == "OK"
    st = manage.status(deploy.proxy.manage_port)
    assert [st[pool]["refused_commands"] for pool in POOLS] == [0] * len(POOLS)


def test_reload_turns_it_on_and_off(write_conf, nutcrackers, redis_server):
    """A reload that sets or clears client_cluster_mode applies to a connected client's next
    request (an idle client follows the reload at once)."""
    port = free_port()
    pool = {"listen": f"{HOST}:{port}", "redis": True, "servers": [f"{HOST}:{redis_server()[0]}:1"]}
    path = write_conf({"p": pool})
    proxy = nutcrackers(path, "-T", "2")
    with RawConn(port) as c:
        assert c.call("CLUSTER", "MYID") == "ERR unsupported command 'cluster'"
        for gen, on in ((2, True), (3, False)):
            write_conf({"p": {**pool, "client_cluster_mode": on}})
            assert manage.command(proxy.manage_port, "reload") == f"OK generation {gen}\r\n"
            manage.wait_status(proxy.manage_port, lambda d, g=gen: d.get("generation") == g,
                               what=f"generation {gen}")
            want = node_id(HOST, port).encode() if on else "ERR unsupported command 'cluster'"
            wait_for(lambda: c.call("CLUSTER", "MYID") == want, 10, f"CLUSTER MYID after reload {gen}")
            assert c.call("READWRITE") == ("OK" if on else "ERR unsupported command 'readwrite'")


def test_conf_refusals(write_conf):
    """-t: exit 1, each problem with the file, the line and the key."""
    server = [f"{HOST}:{free_port()}:1"]
    pools = {
        "mc": {"listen": f"{HOST}:{free_port()}", "client_cluster_mode": True, "servers": server},
        "unix": {"listen": "/tmp/nc-cluster-test.sock", "redis": True, "client_cluster_mode": True,
                 "servers": server},
        "alone": {"listen": f"{HOST}:{free_port()}", "redis": True, "cluster_announce": f"{HOST}:7000",
                  "servers": server},
        "wild": {"listen": f"{HOST}:{free_port()}", "redis": True, "client_cluster_mode": True,
                 "cluster_announce": "0.0.0.0:7000", "servers": server},
        "bool": {"listen": f"{HOST}:{free_port()}", "redis": True, "client_cluster_mode": "perhaps",
                 "servers": server},
    }
    path = write_conf(pools)
    lines = render_conf(pools).splitlines()

    def line_of(pool, key):
        start = lines.index(f"{pool}:")
        return next(n for n, text in enumerate(lines[start:], start + 1) if text.strip().startswith(f"{key}:"))

    r = run(["-t", "-c", str(path)])
    assert r.returncode == 1, r.stderr
    want = [
        ("mc", "client_cluster_mode", "cluster-mode clients need a redis pool (redis: true)"),
        ("unix", "client_cluster_mode", "a unix-socket listen cannot be announced to cluster clients"),
        ("alone", "cluster_announce", "set without client_cluster_mode: true"),
        ("wild", "cluster_announce", "'0.0.0.0:7000': a wildcard address"),
        ("bool", "client_cluster_mode", "expected true or false, got 'perhaps'"),
    ]
    for pool, key, text in want:
        assert f"{path}:{line_of(pool, key)}: pool '{pool}': key '{key}': {text}" in r.stderr, r.stderr
    assert r.stderr.strip().splitlines()[-1].endswith("syntax is invalid")


def test_the_shipped_example_passes():
    r = run(["-t", "-c", str(REPO / "conf" / "cluster_clients.yml")])
    assert r.returncode == 0 and "syntax is ok" in r.stderr, r.stderr


# --- the cluster clients ---------------------------------------------------------------------

def make_plan(deploy, pool, prefix):
    """What a client program does on pool: its keys, TAGGED keys of one {tag} (in the pool
    without hash_tag, on both servers), a counter; their prefix names the client and the pool
    (the pools share their servers)."""
    prefix = f"{prefix}-{pool}"
    tagged = None
    for t in range(64):
        candidates = spread_keys(f"{{{prefix}-{t}}}", TAGGED)
        servers = set(find_keys(deploy.proxy.manage_port, pool, candidates).values())
        if pool != "untagged" or len(servers) == 2:
            tagged = candidates
            break
    assert tagged, "no tag whose keys the pool puts on both servers"
    return {"port": deploy.ports[pool], "prefix": prefix, "keys": spread_keys(f"{prefix}:k", KEYS),
            "tagged": tagged, "counter": f"{{{prefix}}}:n"}


def check_saw(got, plan):
    assert got["gets"] == KEYS
    assert got["mget"] == [f"t-{k}" for k in plan["tagged"]]
    assert got["pipeline"] == ["OK"] * PIPELINED + [f"v{i}" for i in range(PIPELINED)]
    assert (got["incr"], got["del"], got["exists"]) == (15, TAGGED, 0)


def check_backends(deploy, pool, plan, names):
    """Every key the client left is on exactly the server the proxy routes it to, with its
    value; the tagged keys (deleted) are nowhere. names: the client's pipeline and counter
    suffixes (Jedis runs two clients)."""
    want = {k: f"v-{k}" for k in plan["keys"]}
    for name in names:
        want.update({f"{plan['prefix']}{name}:p:{i}": f"v{i}" for i in range(PIPELINED)})
        want[f"{plan['counter']}{name.lstrip(':')}"] = "15"
    routed = find_keys(deploy.proxy.manage_port, pool, want)
    if pool == "rcluster":
        check_cluster_nodes(deploy, plan, want)
        return
    servers = [f"{HOST}:{b}:1" for b in deploy.backends]
    held = {}
    for server, port in zip(servers, deploy.backends, strict=True):
        r = redis_client(port, decode_responses=True)
        for key, value in zip(want, r.mget(list(want)), strict=True):
            if value is not None:
                assert key not in held, f"{key} on two servers"
                held[key] = (server, value)
        assert not any(r.mget(plan["tagged"])), "a deleted key is left"
        r.close()
    assert held == {k: (routed[k], v) for k, v in want.items()}
    if pool == "untagged":  # the proxy split the tag's MSET, MGET and DEL over both servers
        assert len(set(find_keys(deploy.proxy.manage_port, pool, plan["tagged"]).values())) == 2


def check_cluster_nodes(deploy, plan, want):
    """Every key the client left is on the cluster master find_key names ("host:port:1 nodeN"),
    which is the master of its slot (a GET there is answered, not redirected), with its value;
    the tagged keys are on no master."""
    lines = manage.command(deploy.proxy.manage_port, " ".join(["find_keys", "rcluster", *want])).splitlines()
    assert len(lines) == len(want)
    for (key, value), line in zip(want.items(), lines, strict=True):
        port = int(line.split()[0].split(":")[1])
        with deploy.cluster.client(port) as r:
            assert r.get(key) == value.encode(), (key, line)
    for key in plan["tagged"]:
        with deploy.cluster.client(deploy.cluster.node_for_key(key)) as r:
            assert r.exists(key) == 0, f"{key}: deleted, left on its master"


def run_program(argv, what):
    try:
        out = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                             timeout=RUN_TIMEOUT * scale())
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"{what} did not finish in {RUN_TIMEOUT * scale()} s: {e.stdout}{e.stderr}") from e
    assert out.returncode == 0, f"{what} failed:\n{out.stdout}\n{out.stderr}"
    return json.loads(out.stdout.strip().splitlines()[-1])


def redis_py_run(plan, protocol):
    """redis-py's RedisCluster at its defaults (protocol: RESP2 or 3), the proxy its only seed."""
    c = RedisCluster(host=HOST, port=plan["port"], protocol=protocol, decode_responses=True,
                     socket_timeout=10 * scale())
    got = {"nodes": sorted(n.name for n in c.get_nodes())}
    for k in plan["keys"]:
        assert c.set(k, f"v-{k}")
    got["gets"] = sum(c.get(k) == f"v-{k}" for k in plan["keys"])
    assert c.mset({k: f"t-{k}" for k in plan["tagged"]})
    got["mget"] = c.mget(plan["tagged"])
    pipe = c.pipeline()
    for i in range(PIPELINED):
        pipe.set(f"{plan['prefix']}:p:{i}", f"v{i}")
    for i in range(PIPELINED):
        pipe.get(f"{plan['prefix']}:p:{i}")
    got["pipeline"] = ["OK" if v is True else v for v in pipe.execute()]
    assert [c.incr(plan["counter"]) for _ in range(10)] == list(range(1, 11))
    got["incr"] = c.incrby(plan["counter"], 5)
    got["del"], got["exists"] = c.delete(*plan["tagged"]), c.exists(*plan["tagged"])
    c.close()
    return got


def check_client(deploy, pool, plan, runs, names=("",)):
    """What each run of a client saw (runs: one per client object of the library; each was told
    of the one node, the pool's announced address), then the backends."""
    for got in runs:
        assert got["nodes"] == [deploy.node(pool)]
        if "slots" in got:  # the CLUSTER SLOTS it read: the node's id too
            assert got["slots"] == [[0, 16383, [f"{deploy.node(pool)} {node_id(HOST, plan['port'])}"]]]
        check_saw(got, plan)
    check_backends(deploy, pool, plan, names)


@pytest.mark.parametrize("pool", POOLS)
@pytest.mark.parametrize("protocol", [2, 3])
def test_redis_py_cluster(deploy, pool, protocol):
    plan = make_plan(deploy, pool, f"py{protocol}")
    check_client(deploy, pool, plan, [redis_py_run(plan, protocol)])


@pytest.mark.parametrize("pool", POOLS)
def test_go_redis_cluster_client(go_client, deploy, pool):
    plan = make_plan(deploy, pool, "go")
    got = run_program([*go_client, "cluster", json.dumps(plan)], "go-redis ClusterClient")
    assert got["client"] == "go-redis"
    check_client(deploy, pool, plan, [got])


@pytest.mark.parametrize("pool", POOLS)
@pytest.mark.parametrize("alias", ["ioredis5", "ioredis6"])
def test_ioredis_cluster(node, deploy, pool, alias):
    plan = make_plan(deploy, pool, alias)
    got, rc, text = nodeclients.run(node, ["ioredis_cluster.js", alias, json.dumps(plan)], RUN_TIMEOUT * scale())
    assert rc == 0 and got is not None and "error" not in got, f"{alias} failed (exit {rc}):\n{text}"
    assert got["version"] == nodeclients.pinned_versions()[alias]
    check_client(deploy, pool, plan, [got])


@pytest.mark.parametrize("pool", POOLS)
def test_jedis_cluster(java_client, deploy, pool):
    plan = make_plan(deploy, pool, "java")
    got = run_program([*java_client, "cluster", json.dumps(plan)], "JedisCluster")
    assert got["client"] == "jedis"
    check_client(deploy, pool, plan, [got["jediscluster"], got["redisclusterclient"]], [":jc", ":rcc"])
