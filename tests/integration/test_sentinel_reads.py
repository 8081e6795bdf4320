"""read_from with Redis Sentinel (issue 27): a pool whose masters the sentinels follow sends its
read-only commands to the replicas as read_from says, observed on the servers themselves (INFO
commandstats: a replica counts the writes its master sends it, so reads tell where the clients
went). One shard of a master and two replicas, 3 sentinels.

- master (the default): every read on the master.
- replica: GET, MGET, EXISTS, HGETALL on the replicas (both of them, in turn), never on the
  master; SET, EVAL, MULTI/EXEC, BLPOP and SUBSCRIBE on the master; with both replicas killed, a
  read gets an error and a write still works.
- prefer_replica: the replicas; with both killed, the master.
- any: the master and the replicas.
- prefer_master: the master while it is up.
The stats list the replica slots: shard0/replica1..3, two of them at the replicas' addresses,
role replica.
"""

import pytest
import redis

from nctest import manage, procs
from nctest.conn import redis_client
from nctest.procs import HOST
from nctest.wait import wait_for

READS = 40
POOL = "rf"


@pytest.fixture
def deployment(sentinel_deployment):
    return sentinel_deployment(shards=1, replicas=2)


def start(nutcrackers, write_conf, d, read_from, **extra):
    listen = procs.free_port()
    pool = d.pool_conf(f"{HOST}:{listen}", read_from=read_from, timeout=5000, **extra)
    proxy = nutcrackers(write_conf({POOL: pool}), "-T", "2", wait_manage=True)
    if read_from != "master":  # the replica slots filled from the sentinels' answers
        wait_for(lambda: len(replica_addrs(proxy)) == 2, 20, "the proxy's replica slots filled")
    return proxy, listen


def replica_addrs(proxy):
    status, _, body = manage.http_get(proxy.manage_port, "/metrics")
    assert status == 200
    return sorted(line.split('addr="')[1].split('"')[0] for line in body.decode().splitlines()
                  if line.startswith("nutcrackers_server_info{") and 'role="replica"' in line
                  and 'addr=""' not in line)


def where(d, addrs, cmd):
    return {a: d.commandstats(a).get(cmd, 0) for a in addrs}


def servers(d):
    master = d.master_addr("shard0")
    return master, sorted(d.up_replicas("shard0"))


def reset(d, addrs):
    for a in addrs:
        d.reset_stats(a)


def set_then_read(c, d, master, replicas):
    """SET k through the proxy, wait until both replicas have it, reset every server's counters,
    then READS GETs of k through the proxy. Returns the GETs each server served."""
    c.set("k", "v")
    wait_for(lambda: all(d.server_client(r).get("k") == b"v" for r in replicas), 10, "replicated")
    reset(d, [master] + replicas)
    for _ in range(READS):
        assert c.get("k") == b"v"
    return where(d, [master] + replicas, "get")


def test_master_reads_on_the_master(nutcrackers, write_conf, deployment):
    d = deployment
    proxy, port = start(nutcrackers, write_conf, d, "master")
    master, replicas = servers(d)
    reset(d, [master] + replicas)
    with redis_client(port) as c:
        c.set("k", "v")
        for _ in range(READS):
            assert c.get("k") == b"v"
    assert where(d, [master] + replicas, "get") == {master: READS, replicas[0]: 0, replicas[1]: 0}


def test_replica_reads_on_the_replicas_writes_on_the_master(nutcrackers, write_conf, deployment):
    d = deployment
    proxy, port = start(nutcrackers, write_conf, d, "replica")
    master, replicas = servers(d)
    assert replica_addrs(proxy) == sorted(f"{h}:{p}" for h, p in replicas)
    with redis_client(port) as c:
        c.hset("h", mapping={"a": "1"})
        gets = set_then_read(c, d, master, replicas)
        assert gets[master] == 0 and sum(gets[r] for r in replicas) == READS, gets
        assert c.mget("k", "nope") == [b"v", None]
        assert c.exists("k") == 1
        assert c.hgetall("h") == {b"a": b"1"}
        assert c.set("w", "1") is True
        assert c.eval("return redis.call('set', KEYS[1], ARGV[1])", 1, "s", "x") == b"OK"
        with c.pipeline(transaction=True) as t:
            t.set("t", "1").get("t")
            assert t.execute() == [True, b"1"]
        c.rpush("q", "x")
        assert c.blpop("q", timeout=1) == (b"q", b"x")
    gets = where(d, [master] + replicas, "get")
    assert gets[master] == 1, gets  # the transaction's GET: a transaction runs on the master
    assert all(gets[r] > READS // 4 for r in replicas), gets  # both replicas, in turn
    assert sum(gets[r] for r in replicas) == READS
    for cmd in ("mget", "exists", "hgetall"):
        assert where(d, replicas, cmd) != {r: 0 for r in replicas}, cmd
        assert d.commandstats(master).get(cmd, 0) == 0, cmd
    stats = d.commandstats(master)
    assert stats.get("eval") == 1 and stats.get("exec") == 1 and stats.get("blpop") == 1, stats
    for r in replicas:
        assert d.commandstats(r).get("eval", 0) == 0


def test_replica_read_only_functions_and_scripts_on_the_replicas(nutcrackers, write_conf, deployment):
    """FCALL_RO and EVAL_RO are reads: on the replicas; FUNCTION LOAD, FCALL and EVALSHA_RO (SCRIPT
    LOAD, which redis does not replicate, put its script on the master) on the master
    (notes/functions-and-introspection.md)."""
    d = deployment
    proxy, port = start(nutcrackers, write_conf, d, "replica")
    master, replicas = servers(d)
    lib = ("#!lua name=rf\n"
           "redis.register_function{function_name='rf_get', callback=function(keys, args) "
           "return redis.call('GET', keys[1]) end, flags={'no-writes'}}\n"
           "redis.register_function('rf_set', function(keys, args) return redis.call('SET', keys[1], args[1]) end)\n")
    with redis_client(port) as c:
        assert c.function_load(lib) == b"rf"
        assert c.fcall("rf_set", 1, "k", "v") == b"OK"
        wait_for(lambda: all(d.server_client(r).get("k") == b"v" for r in replicas), 10, "replicated")
        reset(d, [master] + replicas)
        for _ in range(READS):
            assert c.fcall_ro("rf_get", 1, "k") == b"v"
        assert c.execute_command("EVAL_RO", "return redis.call('GET', KEYS[1])", 1, "k") == b"v"
        sha = c.script_load("return redis.call('GET', KEYS[1])")
        assert c.execute_command("EVALSHA_RO", sha, 1, "k") == b"v"
        assert c.fcall("rf_set", 1, "k", "w") == b"OK"
    calls = where(d, [master] + replicas, "fcall_ro")
    assert calls[master] == 0 and sum(calls[r] for r in replicas) == READS, calls
    assert d.commandstats(master).get("eval_ro", 0) == 0
    assert sum(where(d, replicas, "eval_ro").values()) == 1
    assert d.commandstats(master).get("evalsha_ro") == 1
    assert sum(where(d, replicas, "evalsha_ro").values()) == 0
    assert d.commandstats(master).get("fcall") == 1


def test_replica_pubsub_on_the_master(nutcrackers, write_conf, deployment):
    d = deployment
    proxy, port = start(nutcrackers, write_conf, d, "replica")
    master, replicas = servers(d)
    with redis_client(port) as sub_c, redis_client(port) as pub_c:
        p = sub_c.pubsub()
        p.subscribe("news")
        assert p.get_message(timeout=5)["type"] == "subscribe"
        assert pub_c.publish("news", "hi") == 1
        msg = p.get_message(timeout=5)
        assert msg is not None and msg["data"] == b"hi", msg
        # (the sentinels subscribe on every server: the channel tells where the client is)
        with d.server_client(master) as m:
            assert m.pubsub_channels("news") == [b"news"]
        for r in replicas:
            with d.server_client(r) as rc:
                assert rc.pubsub_channels("news") == []
        p.close()


def test_replica_with_no_replica_up(nutcrackers, write_conf, deployment):
    d = deployment
    proxy, port = start(nutcrackers, write_conf, d, "replica")
    master, replicas = servers(d)
    for r in replicas:
        d.kill(r)
    wait_for(lambda: replica_addrs(proxy) == [], 30, "the replica slots emptied")
    with redis_client(port) as c:
        with pytest.raises(redis.ResponseError):
            c.get("k")
        assert c.set("k", "after") is True
    with d.server_client(master) as m:
        assert m.get("k") == b"after"


def test_prefer_replica_falls_back_to_the_master(nutcrackers, write_conf, deployment):
    d = deployment
    proxy, port = start(nutcrackers, write_conf, d, "prefer_replica")
    master, replicas = servers(d)
    with redis_client(port) as c:
        gets = set_then_read(c, d, master, replicas)
        assert gets[master] == 0 and sum(gets[r] for r in replicas) == READS, gets
        for r in replicas:
            d.kill(r)
        wait_for(lambda: replica_addrs(proxy) == [], 30, "the replica slots emptied")
        reset(d, [master])
        for _ in range(READS):
            assert c.get("k") == b"v"
    assert d.commandstats(master).get("get", 0) == READS


def test_any_reads_everywhere_and_prefer_master_on_the_master(nutcrackers, write_conf, deployment):
    d = deployment
    master, replicas = servers(d)
    for mode, expect_master_only in (("any", False), ("prefer_master", True)):
        proxy, port = start(nutcrackers, write_conf, d, mode)
        with redis_client(port) as c:
            gets = set_then_read(c, d, master, replicas)
        if expect_master_only:
            assert gets[master] == READS, (mode, gets)
        else:
            assert all(n > 0 for n in gets.values()), (mode, gets)



def test_stats_list_the_replica_slots(nutcrackers, write_conf, deployment):
    d = deployment
    proxy, port = start(nutcrackers, write_conf, d, "replica")
    master, replicas = servers(d)
    doc = wait_for(lambda: (lambda s: s if s[POOL]["shard0/replica2"]["server_addr"] else None)(
        manage.status(proxy.manage_port)), 20, "the stats JSON shows the replicas")
    pool = doc[POOL]
    assert pool["topology"] == "sentinel" and pool["topology_reachable"] == 3
    assert pool["shard0"]["server_role"] == "master"
    assert pool["shard0"]["server_addr"] == f"{master[0]}:{master[1]}"
    slots = [pool[f"shard0/replica{k}"] for k in (1, 2, 3)]
    assert all(s["server_role"] == "replica" for s in slots)
    assert sorted(s["server_addr"] for s in slots) == sorted(["", *(f"{h}:{p}" for h, p in replicas)])
