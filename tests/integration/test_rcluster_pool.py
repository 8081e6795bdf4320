"""A `redis_cluster` pool beyond routing (issue 28; test_rcluster_backends.py has the routing, the
redirections under load and the failover under load): what the proxy says of the cluster and how
its clients' other features work in front of one. Against the real 6-node cluster of
rcluster_fixtures.py (3 masters, a replica each), shared by the module with its proxies:

- stats: the manage port's `status` lists exactly the cluster's masters as `node1`..`node3`
  (server_addr their addresses, server_role master, server_slots the slots CLUSTER SHARDS gives
  each), `"topology":"cluster"`, `topology_reachable` the 6 nodes, no empty place; with
  `read_from: replica` the replicas as `nodeN/replica1`; Prometheus' nutcrackers_server_info and
  nutcrackers_pool_topology_reachable say the same; `cluster_redirections` counts an -ASK followed;
- `find_key`: "host:port:1 nodeN" of the master that owns the key's slot, before and after a
  reshard (once the proxy has the new map), the stats' server_slots following too;
- seeds: a first seed that is a dead port, the second a live node: the map is learned, keys served;
- RESP3 (redis-py protocol=3 and raw HELLO 3): SET/GET, MGET across slots, HGETALL as a map;
- BLPOP through the proxy, served by an LPUSH through the proxy, on keys of two masters at once;
  a BLPOP blocked when its slot moves, or sent while its slot migrates, does not see the -MOVED
  or -ASK that redis gives it: the proxy moves it to a connection of the node named;
- Pub/Sub: SUBSCRIBE, PSUBSCRIBE over channels of every master and SSUBSCRIBE: each message
  published through the proxy arrives once (a cluster delivers PUBLISH on every node: the proxy
  must subscribe a channel or a pattern on one node only);
- reload (SIGHUP, then the manage port's `reload`) with the same config: the map is kept (the
  stats list the masters right after the new generation shows) and clients are served throughout;
- a master killed with SIGKILL: once its replica is promoted, the stats show the promoted node as
  the master in the same place (`nodeN`; with read_from: replica, the shard without a replica),
  `topology_reachable` 5, find_key names it, and its keys are served again (the last test).

The tests run in this order; each asks the cluster where the slots are now. The `-t` checks of a
redis_cluster pool and a cluster with passwords (redis_auth): test_rcluster_pool_setup.py.
"""
import select
import signal
import threading
import time

import pytest
import redis

from nctest import manage, wait
from nctest.codec import decode, resp
from nctest.conn import RawConn, redis_blocked
from nctest.procs import HOST, free_port
from nctest.rcluster import keys_in_slot, keys_in_slots, keyslot

THREADED = True  # the module's proxies run 2 workers: the TSan stage runs these

MAP_TIMEOUT = 10.0     # s: the proxy's map (status, find_key) follows the cluster's (1 s polls)
SERVE_TIMEOUT = 15.0   # s: a killed master's keys written again through the proxy
MESSAGE_WAIT = 5.0     # s: one Pub/Sub message or confirmation
QUIET = 0.3            # s: no further message comes in this long (a duplicate would)
RESHARD_SLOTS = 300


# --- what the cluster says ----------------------------------------------------------------------

def addr(port):
    return f"{HOST}:{port}"


def pairs(flat):
    """A dict of a flat [key, value, ...] reply, its keys decoded."""
    return {k.decode(): v for k, v in zip(flat[::2], flat[1::2])}


def cluster_shards(cluster):
    """{master "host:port": (set of its slots, ["host:port" of its online replicas])} by CLUSTER
    SHARDS (the slots of a 7.0 shard: a flat list of first, last pairs)."""
    out = {}
    for shard in cluster.shards():
        shard = pairs(shard)
        slots = {s for lo, hi in zip(shard["slots"][::2], shard["slots"][1::2])
                 for s in range(lo, hi + 1)}
        nodes = [pairs(n) for n in shard["nodes"]]
        masters = [n for n in nodes if n["role"] == b"master" and n["health"] == b"online"]
        if not masters or not slots:
            continue
        assert len(masters) == 1, shard
        replicas = sorted(addr(n["port"]) for n in nodes
                          if n["role"] == b"replica" and n["health"] == b"online")
        out[addr(masters[0]["port"])] = (slots, replicas)
    return out


def slot_set(text):
    """The slots of a server_slots text: "0-5460,6000" -> {0, ..., 5460, 6000}."""
    out = set()
    for item in text.split(","):
        lo, _, hi = item.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def servers(doc):
    """{name: server object} of a pool's status object (the members that are objects)."""
    return {k: v for k, v in doc.items() if isinstance(v, dict)}


def master_view(doc):
    """{name: (server_addr, server_role, set of slots)} of a status pool object's servers."""
    return {k: (v["server_addr"], v["server_role"], slot_set(v["server_slots"]) if "server_slots"
                in v else None) for k, v in servers(doc).items()}


def expected_masters(cluster):
    """{master addr: (addr, "master", its slots)} of CLUSTER SHARDS (to compare, by address, with
    master_view's values)."""
    return {a: (a, "master", slots) for a, (slots, _) in cluster_shards(cluster).items()}


def wait_map(view, cluster, what="the proxy's map to be the cluster's"):
    """Waits (bounded) until the pool's status lists exactly the cluster's masters, by address,
    role and slots, under the names node1..node3; returns {name: addr}."""
    want = expected_masters(cluster)

    def mine():
        got = master_view(view.doc())
        if sorted(got) != [f"node{i}" for i in range(1, len(want) + 1)]:
            return got
        return {v[0]: v for v in got.values()}

    wait.wait_value(mine, lambda v: v == want, MAP_TIMEOUT, what)
    return {name: v[0] for name, v in master_view(view.doc()).items()}


def find_key_lines(view, keys):
    """{key: the manage port's find_key line} (one find_keys command a 40 keys)."""
    out = {}
    for i in range(0, len(keys), 40):
        chunk = keys[i:i + 40]
        lines = manage.command(view.manage, " ".join(["find_keys", view.pool, *chunk])).splitlines()
        assert len(lines) == len(chunk), lines
        out.update(zip(chunk, lines))
    return out


def expected_lines(cluster, names, keys):
    """{key: "host:port:1 nodeN"} of the master that owns each key's slot now."""
    owner = {s: a for a, (slots, _) in cluster_shards(cluster).items() for s in slots}
    by_addr = {a: n for n, a in names.items()}
    return {k: f"{owner[keyslot(k)]}:1 {by_addr[owner[keyslot(k)]]}" for k in keys}


def key_per_master(cluster, prefix):
    """{master addr: a key of its slots}, one key per master."""
    return {a: keys_in_slots(slots, 1, prefix=f"{prefix}:{a}")[0]
            for a, (slots, _) in cluster_shards(cluster).items()}


# --- fixtures -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cluster(module_rcluster):
    return module_rcluster()


@pytest.fixture(scope="module")
def proxy(cluster, module_rcluster_proxy):
    """The module's proxy: 2 workers, one seed, reads from the masters."""
    view = module_rcluster_proxy(cluster, "-T", "2", seeds=1, name="pool")
    wait_map(view, cluster)
    return view


@pytest.fixture(scope="module")
def replica_view(cluster, module_rcluster_proxy):
    """A proxy that reads from the replicas: the stats list them."""
    return module_rcluster_proxy(cluster, "-T", "2", seeds=1, name="replicas", read_from="replica")


def replica_places(cluster, masters):
    """The places a read_from: replica pool must list: {name: (addr, role)} of masters ({master
    addr: name}) and of their online replicas (nodeN/replica1, ...) by CLUSTER SHARDS."""
    want = {}
    for a, (_, replicas) in cluster_shards(cluster).items():
        want[masters[a]] = (a, "master")
        want.update({f"{masters[a]}/replica{i + 1}": (r, "replica") for i, r in enumerate(replicas)})
    return want


def wait_replica_places(view, cluster, what):
    """Waits (bounded) until a read_from: replica pool lists exactly the cluster's masters and
    their replicas; returns {name: (addr, role)}."""
    def mine():
        got = view.places()
        masters = {a: n for n, (a, role) in got.items() if "/" not in n}
        if sorted(masters) != sorted(cluster_shards(cluster)):
            return got, None
        return got, replica_places(cluster, masters)

    got, _ = wait.wait_value(mine, lambda v: v[0] == v[1], MAP_TIMEOUT, what)
    return got


# --- stats --------------------------------------------------------------------------------------

def test_status_lists_the_masters_with_their_slots(cluster, proxy):
    names = wait_map(proxy, cluster)
    doc = proxy.doc()
    assert (doc["topology"], doc["topology_reachable"]) == ("cluster", 6)
    shards = cluster_shards(cluster)
    assert sorted(names.values()) == sorted(addr(m.port) for m in cluster.masters())
    assert sum(len(slots) for slots, _ in shards.values()) == 16384
    for name, (a, role, slots) in master_view(doc).items():
        assert (a, role, slots) == (a, "master", shards[a][0]), name
    # Prometheus: the same places, the same count of nodes
    assert proxy.prom_places() == {n: (a, "master") for n, a in names.items()}
    assert proxy.prom_reachable() == 6


def test_status_with_read_from_replica_lists_the_replicas(cluster, replica_view):
    view = replica_view
    shards = cluster_shards(cluster)
    assert all(len(r) == 1 for _, r in shards.values()), shards
    got = wait_replica_places(view, cluster, "the masters and their replicas in the stats")
    assert sorted(got) == ["node1", "node1/replica1", "node2", "node2/replica1", "node3",
                           "node3/replica1"]
    assert view.prom_places() == got
    doc = view.doc()
    assert (doc["topology"], doc["topology_reachable"]) == ("cluster", 6)
    for name, obj in servers(doc).items():
        assert ("server_slots" in obj) == (obj["server_role"] == "master"), (name, obj)
        if "/" not in name:
            assert slot_set(obj["server_slots"]) == shards[obj["server_addr"]][0], name


def test_cluster_redirections_count_an_ask_followed(cluster, proxy):
    src, dst = cluster.masters()[:2]
    slot = sorted(src.slot_set())[-1]
    keys = keys_in_slot(slot, 4, prefix="redir")
    with proxy.client() as c:
        assert c.mset({k: k for k in keys}) is True
    before = proxy.doc()["cluster_redirections"]
    with cluster.ask_window(slot, src, dst) as window:
        window.migrate(keys[:2])
        with proxy.client() as c:
            assert c.get(keys[0]) == keys[0].encode()  # src: -ASK, dst after ASKING
            assert c.get(keys[1]) == keys[1].encode()
            assert c.get(keys[3]) == keys[3].encode()  # still on src: no redirection
    after = proxy.doc()["cluster_redirections"]
    assert after >= before + 2, (before, after)
    samples = proxy.samples("nutcrackers_pool_cluster_redirections_total")
    assert len(samples) == 1 and samples[0][1] >= after, samples


# --- find_key -----------------------------------------------------------------------------------

def test_find_key_names_the_master_of_the_slot(cluster, proxy):
    names = wait_map(proxy, cluster)
    keys = [f"find:{i}" for i in range(120)] + keys_in_slot(keyslot("tagged"), 3, prefix="f")
    want = expected_lines(cluster, names, keys)
    assert len({line for line in want.values()}) == 3, "the keys do not reach every master"
    assert find_key_lines(proxy, keys) == want
    one = manage.command(proxy.manage, f"find_key {proxy.pool} {keys[0]}")
    assert one == want[keys[0]] + "\r\n"


def test_find_key_and_slots_follow_a_reshard(cluster, proxy):
    src, dst = cluster.masters()[1], cluster.masters()[2]
    names = wait_map(proxy, cluster)
    moving = set(sorted(src.slot_set())[:RESHARD_SLOTS])
    keys = keys_in_slots(moving, 40, prefix="refind")
    assert set(find_key_lines(proxy, keys).values()) == {f"{addr(src.port)}:1 "
                                                         f"{_name_of(names, src.port)}"}
    moved = cluster.reshard(src, dst, RESHARD_SLOTS)
    assert set(moved) == moving
    after = wait_map(proxy, cluster, "the proxy's map after the reshard")
    assert after == names, "a master changed its name in a reshard"
    want = expected_lines(cluster, names, keys)
    assert set(want.values()) == {f"{addr(dst.port)}:1 {_name_of(names, dst.port)}"}
    wait.wait_value(lambda: find_key_lines(proxy, keys), lambda v: v == want, MAP_TIMEOUT,
                    "find_key to name the new owner")
    with proxy.client() as c:
        assert c.mset({k: "moved" for k in keys}) is True
    with cluster.client(dst) as d:  # one GET a key: they are in several slots
        assert [d.get(k) for k in keys] == [b"moved"] * len(keys)


def _name_of(names, port):
    return next(n for n, a in names.items() if a == addr(port))


# --- seeds --------------------------------------------------------------------------------------

def test_a_dead_first_seed_is_passed_over(cluster, module_rcluster_proxy):
    live = cluster.seeds(1)[0]
    view = module_rcluster_proxy(cluster, "-T", "2", name="deadseed",
                                 servers=[f"{HOST}:{free_port()}:1", live])
    wait_map(view, cluster, "the map learned from the second seed")  # node1 not the dead seed
    view.wait_log(f"pool 'rc': cluster slot map learned from {live.rsplit(':', 1)[0]}\n",
                  timeout=MAP_TIMEOUT)
    keys = list(key_per_master(cluster, "seed").values())
    with view.client() as c:
        assert c.mset({k: f"s:{k}" for k in keys}) is True
        assert c.mget(keys) == [f"s:{k}".encode() for k in keys]
    for k in keys:
        with cluster.client(cluster.node_for_key(k)) as d:
            assert d.get(k) == f"s:{k}".encode(), k


# --- RESP3 --------------------------------------------------------------------------------------

def test_resp3_client_across_slots(cluster, proxy):
    keys = list(key_per_master(cluster, "resp3").values())
    h = keys_in_slot(keyslot("resp3h"), 1, prefix="h")[0]
    with proxy.client(protocol=3) as c:
        assert c.set(keys[0], "a") is True and c.get(keys[0]) == b"a"
        assert c.mset({k: f"v{i}" for i, k in enumerate(keys)}) is True
        assert c.mget([*keys, "resp3:absent"]) == [b"v0", b"v1", b"v2", None]
        assert c.hset(h, mapping={"f1": "1", "f2": "2"}) == 2
        assert c.hgetall(h) == {b"f1": b"1", b"f2": b"2"}
    with RawConn(proxy.port) as raw:  # the bytes: a map, and the proxy's own RESP3 null
        hello = raw.call("HELLO", "3")
        assert isinstance(hello, dict) and hello[b"proto"] == 3, hello
        raw.send(resp("HGETALL", h))
        reply = raw.reply()
        assert reply.startswith(b"%2\r\n") and decode(reply) == {b"f1": b"1", b"f2": b"2"}, reply
        raw.exchange(resp("MGET", *keys, "resp3:absent"),
                     b"*4\r\n$2\r\nv0\r\n$2\r\nv1\r\n$2\r\nv2\r\n_\r\n")


# --- blocking commands --------------------------------------------------------------------------

def test_blpop_on_two_masters_served_by_lpush(cluster, proxy):
    """One BLPOP a master, blocked at once; LPUSHes through the proxy serve each its value."""
    ports = {a: int(a.rsplit(":", 1)[1]) for a in cluster_shards(cluster)}
    (a1, k1), (a2, k2) = sorted(key_per_master(cluster, "blpop").items())[:2]
    with RawConn(proxy.port) as b1, RawConn(proxy.port) as b2, proxy.client() as pusher:
        b1.send(resp("BLPOP", k1, "10"))
        b2.send(resp("BLPOP", k2, "10"))
        wait.wait_value(lambda: (len(redis_blocked(ports[a1])), len(redis_blocked(ports[a2]))),
                        lambda v: v == (1, 1), MAP_TIMEOUT, "a BLPOP blocked on each master")
        assert pusher.lpush(k2, "second") == 1
        assert b2.read() == [k2.encode(), b"second"]
        assert pusher.lpush(k1, "first") == 1
        assert b1.read() == [k1.encode(), b"first"]
        assert pusher.exists(k1, k2) == 0  # popped, not left on the lists
    assert (redis_blocked(ports[a1]), redis_blocked(ports[a2])) == ([], [])


def answered(conn):
    """Whether a reply (any byte) waits on a RawConn: buffered, or readable on its socket."""
    return bool(conn.buf) or bool(select.select([conn.sock], [], [], 0)[0])


def assert_blocked_on(conn, port, what):
    """Waits (bounded) until the node on port has a client blocked, or conn got a reply; fails
    with that reply (a blocked client must get none)."""
    wait.wait_for(lambda: answered(conn) or redis_blocked(port), MAP_TIMEOUT, what)
    if answered(conn):
        pytest.fail(f"the blocked client was answered {conn.read()!r} ({what})")


def test_blpop_blocked_when_its_slot_moves_stays_blocked(cluster, proxy):
    """A BLPOP blocked on a key whose slot then moves to another master: redis unblocks it with
    -MOVED <slot> <new owner> (a cluster client sends it again there); behind the proxy, which
    follows redirections, the client stays blocked (on the new owner) and gets the next LPUSH."""
    src, dst = cluster.masters()[:2]
    slot = sorted(src.slot_set())[0]
    key = keys_in_slot(slot, 1, prefix="blkmoved")[0]
    with RawConn(proxy.port) as client, proxy.client() as pusher:
        client.send(resp("BLPOP", key, "0"))
        assert_blocked_on(client, src.port, "BLPOP blocked on the slot's master")
        with cluster.ask_window(slot, src, dst):
            pass  # no key to migrate: the slot is dst's at the end of the block
        assert cluster.slot_owner(slot).port == dst.port
        assert_blocked_on(client, dst.port, "BLPOP blocked on the slot's new master")
        assert pusher.lpush(key, "after the move") == 1
        assert client.read() == [key.encode(), b"after the move"]


def test_blpop_on_a_migrating_slot_blocks_on_the_importing_node(cluster, proxy):
    """A BLPOP on a key that the migrating source does not have: redis answers -ASK (the key may
    be on the importing node); the proxy must send ASKING and the BLPOP there, where it blocks
    until an LPUSH through the proxy (-ASK followed as well) serves it."""
    src, dst = cluster.masters()[:2]
    slot = sorted(src.slot_set())[0]
    key = keys_in_slot(slot, 1, prefix="blkask")[0]
    with cluster.ask_window(slot, src, dst):
        with RawConn(proxy.port) as client, proxy.client() as pusher:
            client.send(resp("BLPOP", key, "0"))
            assert_blocked_on(client, dst.port, "BLPOP blocked on the importing node")
            assert pusher.lpush(key, "asked") == 1
            assert client.read() == [key.encode(), b"asked"]


# --- Pub/Sub ------------------------------------------------------------------------------------

def next_messages(sub, n, kind="get_message"):
    """The next n messages (not confirmations) of a redis-py PubSub, bounded."""
    out = []
    end = wait.deadline(MESSAGE_WAIT)
    while len(out) < n and time.monotonic() < end:
        m = getattr(sub, kind)(timeout=0.2)
        if m is not None and m["type"] in ("message", "pmessage", "smessage"):
            out.append(m)
    return out


def subscriptions(cluster, command, *args):
    """{node port: PUBSUB <command> <args> reply} of every running node."""
    return {n.port: cluster.command(n, "PUBSUB", command, *args) for n in cluster.running()}


def test_subscribe_gets_each_message_once(cluster, proxy):
    with proxy.client() as pub, proxy.client() as c:
        sub = c.pubsub()
        sub.subscribe("ch")
        assert sub.get_message(timeout=MESSAGE_WAIT)["type"] == "subscribe"
        numsub = subscriptions(cluster, "NUMSUB", "ch")
        assert sorted(n[1] for n in numsub.values()) == [0] * 5 + [1], numsub  # on one node
        for i in range(20):  # the node's count of receivers: the proxy's one subscription
            assert pub.publish("ch", f"m{i}") == 1
        got = next_messages(sub, 20)
        assert [(m["channel"], m["data"]) for m in got] == [(b"ch", f"m{i}".encode())
                                                           for i in range(20)]
        assert sub.get_message(timeout=QUIET) is None, "a message came twice"
        sub.close()


def test_psubscribe_gets_messages_of_every_slot_once(cluster, proxy):
    channels = list(key_per_master(cluster, "news").values())
    channels += [f"news:{i}" for i in range(20)]
    with proxy.client() as pub, proxy.client() as c:
        sub = c.pubsub()
        sub.psubscribe("news:*")
        m = sub.get_message(timeout=MESSAGE_WAIT)
        assert (m["type"], m["data"]) == ("psubscribe", 1), m
        numpat = subscriptions(cluster, "NUMPAT")
        assert sorted(numpat.values()) == [0] * 5 + [1], numpat  # on one node
        for ch in channels:
            pub.publish(ch, f"to {ch}")
        got = next_messages(sub, len(channels))
        assert sorted((m["channel"], m["data"]) for m in got) == \
            sorted((ch.encode(), f"to {ch}".encode()) for ch in channels)
        assert sub.get_message(timeout=QUIET) is None, "a message came twice"
        sub.close()


def test_ssubscribe_gets_each_shard_message_once(cluster, proxy):
    ch = keys_in_slot(keyslot("shardch"), 1, prefix="sch")[0]
    with proxy.client() as pub, proxy.client() as c:
        sub = c.pubsub()
        sub.ssubscribe(ch)
        m = sub.get_sharded_message(timeout=MESSAGE_WAIT)
        assert (m["type"], m["data"]) == ("ssubscribe", 1), m
        owner = cluster.node_for_key(ch)
        shardnumsub = subscriptions(cluster, "SHARDNUMSUB", ch)
        assert {p: v[1] for p, v in shardnumsub.items() if v[1]} == {owner.port: 1}, shardnumsub
        for i in range(10):
            assert pub.spublish(ch, f"s{i}") == 1  # the owner's count: the proxy's subscription
        got = next_messages(sub, 10, "get_sharded_message")
        assert [m["data"] for m in got] == [f"s{i}".encode() for i in range(10)]
        assert sub.get_sharded_message(timeout=QUIET) is None, "a message came twice"
        sub.close()


# --- reload -------------------------------------------------------------------------------------

def test_reload_keeps_the_map_and_the_clients(cluster, proxy):
    names = wait_map(proxy, cluster)
    keys = [f"reload:{i}" for i in range(60)]
    stop, errors, rounds = threading.Event(), [], [0]

    def load():
        with proxy.client() as c:
            while not stop.is_set():
                try:
                    n = rounds[0]
                    assert c.mset({k: f"{k}/{n}" for k in keys}) is True
                    assert c.mget(keys) == [f"{k}/{n}".encode() for k in keys]
                    rounds[0] += 1
                except Exception as e:  # noqa: BLE001 - reported by the test's thread
                    errors.append(repr(e))
                    return

    worker = threading.Thread(target=load, daemon=True)
    worker.start()
    try:
        for how in ("hup", "manage"):
            start = rounds[0]
            if how == "hup":
                proxy.generation += 1
                proxy.proxy.signal(signal.SIGHUP)
                manage.wait_status(proxy.manage, lambda d: d.get("generation") == proxy.generation,
                                   MAP_TIMEOUT, f"generation {proxy.generation} after SIGHUP")
            else:
                proxy.reload()
            # at once: the new generation routes by the map it was given, not by the seeds
            assert {n: v[0] for n, v in master_view(proxy.doc()).items()} == names, how
            assert find_key_lines(proxy, keys[:20]) == expected_lines(cluster, names, keys[:20])
            wait.wait_for(lambda: rounds[0] >= start + 5 or errors, MAP_TIMEOUT,
                          f"the clients served after the reload ({how})")
            assert not errors, errors
    finally:
        stop.set()
        worker.join(MAP_TIMEOUT)
    assert not errors, errors
    assert proxy.doc()["forward_error"] == 0


# --- failover -----------------------------------------------------------------------------------

def test_promoted_replica_takes_its_masters_place(cluster, proxy, replica_view):
    names = wait_map(proxy, cluster)
    replica_names = wait_replica_places(replica_view, cluster, "the replicas before the kill")
    victim = cluster.masters()[0]
    place = _name_of(names, victim.port)
    key = keys_in_slots(victim.slot_set(), 1, prefix="promoted")[0]
    with proxy.client() as c:
        assert c.set(key, "before") is True
    cluster.kill_master(victim)
    new, _ = cluster.wait_promoted(victim)
    after = wait_map(proxy, cluster, "the promoted replica in the stats")
    assert after == {**names, place: addr(new.port)}
    assert find_key_lines(proxy, [key]) == {key: f"{addr(new.port)}:1 {place}"}
    proxy.wait_reachable(5, MAP_TIMEOUT)  # the killed node is in no place: 5 nodes (JSON, Prometheus)
    # the pool that reads from replicas: the promoted node a master in its master's place, the
    # killed node in no place (its shard has no replica left to list)
    shard = next(n for n, (a, _) in replica_names.items() if a == addr(victim.port))
    want = {n: v for n, v in replica_names.items() if not n.startswith(f"{shard}/")}
    want[shard] = (addr(new.port), "master")
    assert wait_replica_places(replica_view, cluster, "the promotion in the replicas' stats") == want

    def written():
        try:
            with proxy.client() as c:
                return c.set(key, "after") is True
        except redis.exceptions.RedisError:
            return False

    wait.wait_for(written, SERVE_TIMEOUT, f"{key} written through the proxy after the promotion")
    with cluster.client(new) as d:
        assert d.get(key) == b"after"
