"""A pool with `redis_cluster: true` in front of a real Redis Cluster (issue 28; the cluster from
rcluster_fixtures.py: 6 nodes, 3 masters with a replica each). What the pool must do:

- its `servers:` are seed nodes (1 or 2 "127.0.0.1:port:1" entries); keys route by the cluster's
  slot map (every key written through it is on the master that owns its slot, read directly);
- a client never sees -MOVED or -ASK: the proxy follows them (a live reshard under a checked load,
  an ask window left open by hand: a migrated key is read from the destination, a key written to
  the migrating slot lands where the cluster wants it);
- MGET, MSET, DEL and EXISTS across slots are split per node and merged; MSETNX across slots is a
  -CROSSSLOT error (it cannot be atomic over nodes); MULTI/EXEC over keys of one slot works;
- SCAN covers every master, each key once; DBSIZE is the sum of the masters';
- `read_from: replica` sends reads to the replicas (their INFO commandstats count the GETs, the
  masters' do not grow);
- a master killed with SIGKILL: once its replica is promoted, writes to its slots succeed again
  within 10 s, and no reply is another request's (nctest.kvcheck: no wrong value).

One cluster and one proxy (-T 2, 2 seeds) are shared by the module's tests, in this order (slots
move in the later ones, a master is killed in the last one); each test asks where the slots are
now. More of the pool (stats, find_key, -t, seeds, auth, RESP3, blocking, Pub/Sub, reload,
failover names): test_rcluster_pool.py.
"""
import time

import pytest
import redis

from nctest import wait
from nctest.kvcheck import CheckedClients
from nctest.rcluster import keys_in_slot, keys_in_slots, keyslot

THREADED = True  # the module's proxy runs 2 workers: the TSan stage runs these

CLIENTS = 4
KEYS_PER_CLIENT = 16
WARM = 20.0           # s: every client has written and read back each of its keys
WRITES_BACK = 10.0    # s: from a promotion to every key of the killed master's slots written again
RESHARD_SLOTS = 2000
# what a client may see while the cluster itself refuses (a master killed, not yet replaced:
# with cluster-require-full-coverage, every node answers -CLUSTERDOWN), never -MOVED nor -ASK
REPLY_ERRORS = {"ResponseError", "ClusterDownError", "TryAgainError"}


@pytest.fixture(scope="module")
def cluster(module_rcluster):
    return module_rcluster()


@pytest.fixture(scope="module")
def proxy(cluster, module_rcluster_proxy):
    """The module's proxy: 2 workers, the first 2 masters as seeds."""
    return module_rcluster_proxy(cluster, "-T", "2", seeds=2, name="rc")


def by_owner(cluster, keys):
    """{master port: [keys]} of the keys, by the slot map the cluster has now."""
    owners = {s: m.port for m in cluster.masters() for s in m.slot_set()}
    out = {}
    for key in keys:
        out.setdefault(owners[keyslot(key)], []).append(key)
    return out


def direct_values(cluster, port, keys):
    """{key: value (bytes or None)} read from the node on `port` itself (a -MOVED raises)."""
    with cluster.client(port) as c:
        pipe = c.pipeline(transaction=False)
        for key in keys:
            pipe.get(key)
        return dict(zip(keys, pipe.execute()))


def assert_on_owners(cluster, expected):
    """Every key of {key: value (bytes or None)} is on the master of its slot with that value."""
    for port, keys in by_owner(cluster, expected).items():
        assert direct_values(cluster, port, keys) == {k: expected[k] for k in keys}, port


def test_keys_land_on_the_master_of_their_slot(cluster, proxy):
    keys = [f"basic:{i}" for i in range(2000)]
    with proxy.client() as c:
        pipe = c.pipeline(transaction=False)
        for key in keys:
            pipe.set(key, f"v:{key}")
        assert pipe.execute() == [True] * len(keys)
        pipe = c.pipeline(transaction=False)
        for key in keys:
            pipe.get(key)
        assert pipe.execute() == [f"v:{k}".encode() for k in keys]
    assert len(by_owner(cluster, keys)) == 3
    assert_on_owners(cluster, {k: f"v:{k}".encode() for k in keys})


def test_multi_key_commands_across_slots(cluster, proxy):
    keys = [f"multi:{i}" for i in range(60)]
    assert len(by_owner(cluster, keys)) == 3
    values = {k: f"m:{k}".encode() for k in keys}
    with proxy.client() as c:
        assert c.mset(values) is True
        assert c.mget(keys + ["multi:absent"]) == [values[k] for k in keys] + [None]
        assert c.exists(*keys[:10], keys[0], "multi:absent") == 11  # a key named twice counts twice
        gone = keys[::2]
        assert c.delete(*gone, "multi:absent") == len(gone)
        assert c.mget(keys) == [None if k in gone else values[k] for k in keys]
        assert c.exists(*keys) == len(keys) - len(gone)
    assert_on_owners(cluster, {k: None if k in gone else values[k] for k in keys})


def test_msetnx_across_slots_is_crossslot(cluster, proxy):
    keys = ["msetnx:a", "msetnx:b", "msetnx:c"]
    assert len({keyslot(k) for k in keys}) > 1
    with proxy.client() as c:
        with pytest.raises(redis.exceptions.ClusterCrossSlotError):  # -CROSSSLOT (redis-py
            c.msetnx({k: "v" for k in keys})                           # drops the word)
        assert c.exists(*keys) == 0
        *same, fresh = keys_in_slot(keyslot("msetnx"), 4, prefix="msetnx")
        assert c.msetnx({k: "v" for k in same}) is True
        assert c.msetnx({same[0]: "again", fresh: "x"}) is False  # one of them exists
    assert_on_owners(cluster, {**{k: None for k in [*keys, fresh]}, **{k: b"v" for k in same}})


def test_multi_exec_in_one_slot(cluster, proxy):
    a, b, n = keys_in_slot(keyslot("txn"), 3, prefix="txn")
    with proxy.client() as c:
        txn = c.pipeline(transaction=True)
        txn.set(a, "1").set(b, "2").incr(n).incr(n).mget(a, b, n)
        assert txn.execute() == [True, True, 1, 2, [b"1", b"2", b"2"]]
    assert_on_owners(cluster, {a: b"1", b: b"2", n: b"2"})


def scan_all(client, match, count=50, rounds=10000):
    """Every key SCAN returns for `match`, in order, duplicates kept (bounded rounds)."""
    found, cursor = [], 0
    for _ in range(rounds):
        cursor, batch = client.scan(cursor, match=match, count=count)
        found += [k.decode() for k in batch]
        if cursor == 0:
            return found
    raise AssertionError(f"SCAN did not end in {rounds} rounds ({len(found)} keys so far)")


def test_scan_covers_every_master_once_and_dbsize_sums_them(cluster, proxy):
    keys = [f"scan:{i}" for i in range(300)]
    assert len(by_owner(cluster, keys)) == 3
    with proxy.client() as c:
        assert c.mset({k: k for k in keys}) is True
        found = scan_all(c, "scan:*")
        assert len(found) == len(set(found)), "a key came twice"
        assert sorted(found) == sorted(keys)
        total = sum(cluster.command(m, "DBSIZE") for m in cluster.masters())
        assert c.dbsize() == total


def test_read_from_replica_reads_on_the_replicas(cluster, module_rcluster_proxy):
    view = module_rcluster_proxy(cluster, "-T", "2", seeds=1, name="replica", read_from="replica")
    keys = [f"replica:{i}" for i in range(300)]
    with view.client() as c:
        assert c.mset({k: k for k in keys}) is True
    masters = cluster.masters()
    replicas = {m.port: cluster.replicas_of(m)[0].port for m in masters}
    owners = by_owner(cluster, keys)

    def replicated():
        for master, mine in owners.items():
            with cluster.client(replicas[master]) as r:
                r.execute_command("READONLY")
                if r.mget(mine[:1]) != [mine[0].encode()] or r.get(mine[-1]) != mine[-1].encode():
                    return False
        return True

    wait.wait_for(replicated, 10, "the replicas to have the keys")
    before = {port: cluster.commandstats(port).get("get", 0)
              for port in [*replicas, *replicas.values()]}
    with view.client() as c:
        assert [c.get(k) for k in keys] == [k.encode() for k in keys]
    after = {port: cluster.commandstats(port).get("get", 0) for port in before}
    for master, replica in replicas.items():
        assert after[master] == before[master], ("a master got reads", before, after)
        assert after[replica] > before[replica], ("a replica got no read", before, after)
    assert sum(after[r] - before[r] for r in replicas.values()) >= len(keys)


def test_ask_window_is_followed(cluster, proxy):
    src, dst = cluster.masters()[:2]
    slot = sorted(src.slot_set())[len(src.slot_set()) // 2]
    keys = keys_in_slot(slot, 8, prefix="askp")
    old, absent = keys[:6], keys[6:]
    with proxy.client() as c:
        assert c.mset({k: f"before:{k}" for k in old}) is True
    with cluster.ask_window(slot, src, dst) as window:
        window.migrate(old[:3])  # the source answers -ASK for these now, and for absent keys
        with proxy.client() as c:
            assert c.get(old[0]) == f"before:{old[0]}".encode()  # from dst, after ASKING
            assert c.get(old[4]) == f"before:{old[4]}".encode()  # still on src
            assert c.get(absent[0]) is None
            assert c.set(old[1], "after") is True     # migrated: written on dst
            assert c.set(old[5], "after") is True     # not migrated: written on src
            assert c.set(absent[1], "new") is True    # new in the slot: dst (src has no such key)
            assert c.get(old[1]) == b"after" and c.get(absent[1]) == b"new"
    assert cluster.slot_owner(slot).id == dst.id and window.finished
    expected = {k: f"before:{k}".encode() for k in old}
    expected.update({old[1]: b"after", old[5]: b"after", absent[0]: None, absent[1]: b"new"})
    assert direct_values(cluster, dst.port, keys) == expected
    with proxy.client() as c:
        assert c.mget(keys) == [expected[k] for k in keys]


def client_keys(keys):
    """The keys dealt round-robin to CLIENTS clients."""
    return [keys[c::CLIENTS] for c in range(CLIENTS)]


def warm(load):
    wait.wait_for(lambda: load.rewritten_since(0) and load.every_client(
        count=KEYS_PER_CLIENT, op="get", outcome="ok"), WARM, "the clients to get going")


def assert_last_values_on_owners(cluster, load, keys):
    """Every client's keys hold, on the master of their slot, its last acknowledged write (or a
    later one that failed)."""
    for c, mine in enumerate(keys):
        for port, owned in by_owner(cluster, mine).items():
            for key, value in direct_values(cluster, port, owned).items():
                assert (value or b"") in load.expected(c, key), (port, key, value)


def test_live_reshard_under_checked_load(cluster, proxy):
    src, dst = cluster.masters()[0], cluster.masters()[2]
    nslots = min(RESHARD_SLOTS, src.slot_count - 1)
    moving = set(sorted(src.slot_set())[:nslots])  # redis-cli moves the lowest slots first
    keys = keys_in_slots(moving, CLIENTS * KEYS_PER_CLIENT * 3 // 4, prefix="reshard:moving")
    keys += cluster.keys_on_node(dst, CLIENTS * KEYS_PER_CLIENT // 4, prefix="reshard:dst")
    per_client = client_keys(keys)
    with CheckedClients(proxy.port, per_client) as load:
        warm(load)
        moved = set(cluster.reshard(src, dst, nslots))
        done = time.monotonic()
        wait.wait_for(lambda: load.rewritten_since(done), WARM,
                      "every key written after the reshard")
        again = time.monotonic()
        wait.wait_for(lambda: load.rewritten_since(again), WARM, "one more round")
        load.stop()
    summary = load.summary()
    assert sum(keyslot(k) in moved for k in keys) >= len(keys) // 2, "too few keys moved"
    assert load.count(outcome="error") == 0, summary
    assert load.count(outcome="wrong") == 0 and load.count(outcome="stale") == 0, summary
    assert_last_values_on_owners(cluster, load, per_client)


def test_killed_master_under_checked_load(cluster, proxy):
    victim = max(cluster.masters(), key=lambda m: m.slot_count)
    keys = [f"kill:{i}" for i in range(CLIENTS * KEYS_PER_CLIENT)]
    owners = {k: str(port) for port, ks in by_owner(cluster, keys).items() for k in ks}
    assert len(set(owners.values())) == 3
    per_client = client_keys(keys)
    victim_keys = {(c, k) for c, mine in enumerate(per_client) for k in mine
                   if owners[k] == str(victim.port)}

    def victim_written_since(since):
        done = {(o.client, o.key) for o in load.select(op="set", outcome="ok", since=since,
                                                        group=str(victim.port))}
        return done >= victim_keys

    with CheckedClients(proxy.port, per_client, owners) as load:
        warm(load)
        cluster.kill_master(victim)
        new, _ = cluster.wait_promoted(victim)
        promoted = time.monotonic()
        wait.wait_for(lambda: victim_written_since(promoted), WRITES_BACK,
                      f"every key of :{victim.port}'s slots written again after the promotion")
        again = time.monotonic()
        wait.wait_for(lambda: load.rewritten_since(again), WARM, "one more round")
        load.stop()
    summary = load.summary()
    assert load.count(outcome="wrong") == 0, summary
    # a write the old master took just before the kill may be lost (asynchronous replication):
    # at most one a client
    assert len(load.lost_writes()) <= CLIENTS, summary
    assert {e.split(":")[0] for e in summary["errors"]} <= REPLY_ERRORS, summary
    assert new.slots == victim.slots
    assert_last_values_on_owners(cluster, load, per_client)
