"""The Redis Cluster deployments themselves, without the proxy (issue 28): what rcluster_fixtures.py
starts and what nctest.rcluster does to it, checked against what the nodes answer. The cluster
comes up (3 masters, a replica each, every slot covered, every node agreeing, CLUSTER SHARDS and
CLUSTER SLOTS listing every node online); the pure-Python keyslot() equals CLUSTER KEYSLOT, hash
tags included; keys_on_node() gives keys a node takes without -MOVED, and the others redirect to
it; a live reshard moves slots and their keys; an ask window makes the source answer -ASK for a
migrated key (and -TRYAGAIN for a multi-key request over the slot) and the destination -MOVED
without ASKING; a master killed with SIGKILL is replaced by its replica, and restarted it comes
back as the new master's replica.

These hold whatever the proxy does: they check the ground the proxy's Redis Cluster tests stand
on. One cluster is shared by the module's tests, in this order (the last one kills a master).
"""
import random

import pytest
import redis

from nctest import rcluster
from nctest.codec import Err
from nctest.conn import RawConn
from nctest.procs import HOST
from nctest.wait import scale


@pytest.fixture(scope="module")
def cluster(module_rcluster):
    """6 nodes, a replica per master: shared by the module."""
    return module_rcluster()


def fields(flat):
    """A dict of a flat [key, value, ...] reply (CLUSTER SHARDS' shards and nodes)."""
    return dict(zip(flat[::2], flat[1::2]))


def test_cluster_comes_up(cluster):
    assert cluster.timings["start"] < rcluster.UP_TIMEOUT * scale()
    masters = cluster.masters()
    assert len(masters) == 3, masters
    slots = [s for m in masters for s in m.slot_set()]
    assert len(slots) == len(set(slots)) == rcluster.SLOTS
    for m in masters:
        (replica,) = cluster.replicas_of(m)
        assert cluster.command(replica, "ROLE")[:3] == [b"slave", HOST.encode(), m.port]
    assert cluster.problems() == []  # every node ok, agreeing, replicas synced and online
    shards = [fields(s) for s in cluster.shards()]
    assert sorted(tuple(s[b"slots"]) for s in shards) == sorted(
        r for m in masters for r in m.slots)
    for shard in shards:
        nodes = [fields(n) for n in shard[b"nodes"]]
        assert sorted(n[b"role"] for n in nodes) == [b"master", b"replica"], nodes
        assert {n[b"health"] for n in nodes} == {b"online"}, nodes
    by_range = {(lo, hi): [n[1] for n in rest] for lo, hi, *rest in cluster.slots_reply()}
    for m in masters:
        (replica,) = cluster.replicas_of(m)
        assert by_range[m.slots[0]] == [m.port, replica.port]


KNOWN_SLOTS = {"foo": 12182, "bar": 5061, "{user1000}.following": 3443,
               "{user1000}.followers": 3443, "123456789": 0x31C3 % rcluster.SLOTS}
TAG_CASES = ["{}", "{}x", "x{}", "{", "}", "}{", "{a", "a}", "{a}", "{a}b", "b{a}", "x{a}y{b}z",
             "{{a}}", "{a}}", "{}{a}", "a{}{b}", "{ }", "{é}", "é", "", "{\x00}", "{a\nb}c"]


def test_keyslot_matches_cluster_keyslot(cluster):
    assert rcluster.crc16(b"123456789") == 0x31C3  # the XMODEM check value
    for key, slot in KNOWN_SLOTS.items():
        assert rcluster.keyslot(key) == slot, key
    rng = random.Random(28)
    keys = [k.encode() for k in TAG_CASES]
    keys += [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 24))) for _ in range(1500)]
    keys += [f"k:{{{rng.randrange(10**6)}}}:{i}".encode() for i in range(500)]
    with cluster.client(cluster.masters()[0]) as c:
        pipe = c.pipeline(transaction=False)
        for key in keys:
            pipe.execute_command("CLUSTER", "KEYSLOT", key)
        theirs = pipe.execute()
    wrong = [(k, rcluster.keyslot(k), s) for k, s in zip(keys, theirs) if rcluster.keyslot(k) != s]
    assert not wrong, wrong[:10]
    assert rcluster.keyslot("{a}b") == rcluster.keyslot("a") != rcluster.keyslot("{}a")


def test_keys_on_node_are_taken_there_and_redirected_elsewhere(cluster):
    masters = cluster.masters()
    for m in masters:
        keys = cluster.keys_on_node(m, 20, prefix=f"on:{m.port}")
        assert all(cluster.node_for_key(k).id == m.id for k in keys)
        with cluster.client(m) as c:
            for key in keys:
                assert c.set(key, key) is True  # no -MOVED
        other = next(o for o in masters if o.id != m.id)
        with RawConn(other.port) as raw:
            reply = raw.call("GET", keys[0])
        assert reply == Err(f"MOVED {rcluster.keyslot(keys[0])} {HOST}:{m.port}"), reply
    slot = masters[0].slots[0][0]
    keys = rcluster.keys_in_slot(slot, 5)
    assert {rcluster.keyslot(k) for k in keys} == {slot} and len(set(keys)) == 5


def test_reshard_moves_slots_and_their_keys(cluster):
    src, dst = cluster.masters()[:2]
    first = sorted(src.slot_set())[:100]
    keys = [rcluster.keys_in_slot(s, 1, prefix="moved")[0] for s in first]
    keys += cluster.keys_on_node(src, 100, prefix="stays")
    with cluster.client(src) as c:
        for key in keys:
            c.set(key, key)
    moved = cluster.reshard(src, dst, 100)
    assert cluster.timings["reshard"] < rcluster.RESHARD_TIMEOUT * scale()
    assert len(moved) == 100 and set(moved) & set(first), moved[:5]
    for node in cluster.running():  # every node has dst owning them
        owners = {cluster.slot_owner(s, node).id for s in moved}
        assert owners == {dst.id}, (node.port, owners)
    in_moved = [k for k in keys if rcluster.keyslot(k) in set(moved)]
    assert in_moved
    for key in keys:
        owner = dst if key in in_moved else src
        with cluster.client(owner) as c:
            assert c.get(key) == key.encode(), (key, owner.port)


def test_ask_window_answers_ask_moved_and_tryagain(cluster):
    src, dst = cluster.masters()[1:3]
    slot = sorted(src.slot_set())[-1]
    keys = rcluster.keys_in_slot(slot, 3, prefix="ask")
    with cluster.client(src) as c:
        for key in keys:
            c.set(key, key)
    with cluster.ask_window(slot, src, dst) as window:
        assert cluster.myself(src).migrating == {slot: dst.id}
        assert cluster.myself(dst).importing == {slot: src.id}
        assert window.migrate([keys[0]]) == [keys[0]]
        with RawConn(src.port) as raw:
            assert raw.call("GET", keys[0]) == Err(f"ASK {slot} {HOST}:{dst.port}")
            assert raw.call("GET", keys[1]) == keys[1].encode()  # still on the source
            assert raw.call("MGET", *keys[:2]) == Err(
                "TRYAGAIN Multiple keys request during rehashing of slot")
        with cluster.client(src) as c, pytest.raises(redis.exceptions.AskError) as asked:
            c.execute_command("GET", keys[0])
        assert (asked.value.slot_id, asked.value.node_addr) == (slot, (HOST, dst.port))
        with RawConn(dst.port) as raw:
            assert raw.call("GET", keys[0]) == Err(f"MOVED {slot} {HOST}:{src.port}")
            assert raw.call("ASKING") == "OK"
            assert raw.call("GET", keys[0]) == keys[0].encode()
    assert window.finished and set(keys) <= set(window.migrated)  # (the slot may hold others)
    assert cluster.slot_owner(slot).id == dst.id
    with cluster.client(dst) as c:
        assert c.mget(keys) == [k.encode() for k in keys]
    with RawConn(src.port) as raw:
        assert raw.call("GET", keys[0]) == Err(f"MOVED {slot} {HOST}:{dst.port}")


def test_killed_master_is_replaced_and_comes_back_as_a_replica(cluster):
    master = cluster.masters()[0]
    (replica,) = cluster.replicas_of(master)
    keys = cluster.keys_on_node(master, 50, prefix="failover")
    with cluster.client(master) as c:
        for key in keys:
            c.set(key, key)
        assert c.execute_command("WAIT", 1, 5000) == 1
    old = cluster.kill_master(master)
    new, took = cluster.wait_promoted(old)
    assert new.id == replica.id and new.slots == master.slots, (new, master)
    assert took < rcluster.FAILOVER_TIMEOUT * scale()
    with cluster.client(new) as c:
        assert c.mget(keys[:1]) == [keys[0].encode()]
        assert [c.get(k) for k in keys] == [k.encode() for k in keys]
    back = cluster.restart(master)
    assert back.role == "replica" and back.master_id == new.id, back
    with cluster.client(master) as c:
        assert c.execute_command("READONLY") is True
        assert c.get(keys[0]) == keys[0].encode()  # synced from the new master
    assert cluster.problems() == []
