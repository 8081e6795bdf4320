"""The Sentinel deployments themselves, without the proxy (issue 27): what sentinel_fixtures.py
starts and what nctest.sentinel does to it, checked against redis-py's own Sentinel client as the
reference. The deployment comes up (every sentinel knows every master, its replica and the other
sentinels); master_for writes and reads, slave_for reads from the replica (INFO commandstats shows
where each went); SENTINEL FAILOVER moves a master and redis-py follows; a master killed with
SIGKILL is replaced within a generous bound, and restarted it comes back as a replica of the new
one (or, on a host short of CPUs, the sentinels fail over back to it: one master and its replica
either way); sentinels stopped and started; sentinels that name the servers by hostname; passwords on the
sentinels (the proxy's sentinel_auth) and on the servers.

These hold whatever the proxy does: they check the ground the proxy's Sentinel tests stand on.
One deployment is shared by the module's tests (each asks where the masters are now); the
hostname and password tests have their own.
"""
import pytest
import redis
from redis.sentinel import MasterNotFoundError, Sentinel

from nctest import sentinel, wait
from nctest.wait import scale

SENTINEL_PASS = "sentinel-secret"
MASTER_PASS = "master-secret"


def reference(d, sentinel_pass=None):
    """redis-py's Sentinel client over all the deployment's sentinels, with its passwords (the
    sentinels' unless told). A sentinel that does not answer is passed over at once (by default
    redis-py retries it for seconds first)."""
    return Sentinel(d.sentinel_addrs, socket_timeout=sentinel.CLIENT_TIMEOUT,
                    password=d.master_pass,
                    sentinel_kwargs={"socket_timeout": sentinel.CLIENT_TIMEOUT,
                                     "retry": sentinel.no_retry(),
                                     "password": sentinel_pass or d.sentinel_pass})


@pytest.fixture(scope="module")
def deployment(module_sentinel_deployment):
    """2 shards of a master and a replica, 3 sentinels, no passwords: shared by the module."""
    return module_sentinel_deployment()


def test_deployment_comes_up(deployment):
    d = deployment
    assert d.names == ["shard0", "shard1"]
    masters = {name: d.master_addr(name) for name in d.names}
    assert len(set(masters.values())) == 2, masters
    with reference(d) as ref:
        for name, master in masters.items():
            assert ref.discover_master(name) == master
            assert d.role(master)[0] == "master"
            replicas = d.up_replicas(name)
            assert len(replicas) == 1, d.replicas(name)
            assert ref.discover_slaves(name) == replicas
            assert d.role(replicas[0])[:4] == ["slave", master[0], master[1], "connected"]
            for i in d.running_sentinels():
                state = d.master_state(name, i)
                assert state["flags"] == {"master"}, state
                assert (state["num-other-sentinels"], state["num-slaves"]) == ("2", "1"), state


def test_master_for_writes_and_slave_for_reads_the_replica(deployment):
    d = deployment
    name = "shard0"
    master, replica = d.master_addr(name), d.up_replicas(name)[0]
    on_master, on_replica = d.commandstats(master), d.commandstats(replica)
    with reference(d) as ref:
        writer = ref.master_for(name)
        assert writer.set("sentinel:read-write", "v1") is True
        assert writer.execute_command("WAIT", 1, 5000) == 1  # the replica has it
        reader = ref.slave_for(name)
        assert reader.get("sentinel:read-write") == b"v1"
        with pytest.raises(redis.ReadOnlyError):
            d.server_client(replica).set("sentinel:read-write", "v2")
    assert d.commandstats(master)["set"] == on_master.get("set", 0) + 1
    assert d.commandstats(replica)["get"] == on_replica.get("get", 0) + 1
    assert d.commandstats(master).get("get", 0) == on_master.get("get", 0)


def test_forced_failover_moves_the_master_and_redis_py_follows(deployment):
    d = deployment
    name = "shard0"
    replicas = d.up_replicas(name)
    watch = d.subscribe_switches()
    with reference(d) as ref:
        writer = ref.master_for(name)
        writer.set("sentinel:failover", "before")
        assert writer.execute_command("WAIT", 1, 5000) == 1
        old, new = d.failover(name)
        assert old != new and new in replicas, (old, new, replicas)
        event = watch.wait(1, name)[-1]
        assert (event.old, event.new) == (old, new), event.data
        assert ref.discover_master(name) == new
        fresh = ref.master_for(name)
        assert fresh.get("sentinel:failover") == b"before"  # replicated before the switch
        sets = d.commandstats(new).get("set", 0)
        assert fresh.set("sentinel:failover", "after") is True
        assert d.commandstats(new)["set"] == sets + 1
        # the old master stays one until the sentinels convert it (8 s on): then the client made
        # before the failover, whose connection was to the old master, follows too
        d.wait_replica_of(old, new)
        assert writer.set("sentinel:failover", "late") is True
        assert d.commandstats(new)["set"] == sets + 2
        assert fresh.get("sentinel:failover") == b"late"


def test_killed_master_is_replaced_and_comes_back_as_a_replica(deployment):
    d = deployment
    name = "shard1"
    replicas = d.up_replicas(name)
    old, new, took = d.kill_master(name)
    assert new in replicas, (old, new, replicas)
    assert took < sentinel.SWITCH_TIMEOUT * scale(), f"the switch took {took:.1f} s"
    known = [r["addr"] for r in d.replicas(name)]
    assert old in known and old not in d.up_replicas(name), d.replicas(name)  # disconnected
    with reference(d) as ref:
        assert ref.discover_master(name) == new
        assert ref.master_for(name).set("sentinel:killed", "after") is True
    d.restart(old)
    # the sentinels make the empty old master a replica of the new one; on a host short of CPUs
    # they may instead find the new master slow, fail over again and promote the old one (whose
    # restart emptied it): either way they converge on one master and the other as its replica
    wait.wait_for(lambda: converged(d, name, {old, new}), 2 * sentinel.REJOIN_TIMEOUT,
                  f"{name}'s two servers: one master, the other its replica")
    master = d.agreed_master(name)
    if master == new:
        assert d.server_client(old).get("sentinel:killed") == b"after"  # synced from the new one
    d.wait_replica_up(name, old if master == new else new)
    with reference(d) as ref:
        assert ref.discover_master(name) == master
        assert ({old, new} - {master}) <= set(ref.discover_slaves(name))


def converged(d, name, pair):
    """Whether the sentinels agree on a master of `name` among pair and the other of pair is its
    synced replica."""
    try:
        master = d.agreed_master(name, timeout=1)
    except (AssertionError, TimeoutError):
        return False
    if master not in pair:
        return False
    (other,) = pair - {master}
    try:
        d.wait_replica_of(other, master, timeout=1)
    except (AssertionError, TimeoutError):
        return False
    return True


def test_sentinels_stopped_and_started(deployment):
    d = deployment
    name = "shard0"
    master = d.master_addr(name)
    d.stop_sentinel(0)
    assert d.running_sentinels() == [1, 2]
    with reference(d) as ref:
        assert ref.discover_master(name) == master  # from the sentinels still up
    d.stop_sentinels()
    assert d.running_sentinels() == []
    with reference(d) as ref, pytest.raises(MasterNotFoundError):
        ref.discover_master(name)
    d.start_sentinels()  # on their ports, from their rewritten configs
    assert d.running_sentinels() == [0, 1, 2]
    with reference(d) as ref:
        assert ref.discover_master(name) == master


def test_sentinels_that_announce_hostnames(sentinel_deployment):
    d = sentinel_deployment(shards=1, replicas=1, hostnames=True)
    master = d.master_addr("shard0")
    assert master[0] == "localhost" and d.up_replicas("shard0")[0][0] == "localhost"
    with reference(d) as ref:
        assert ref.discover_master("shard0") == master
        assert ref.master_for("shard0").set("sentinel:hostname", "v") is True
        old, new = d.failover("shard0")
        assert new[0] == "localhost" and ref.discover_master("shard0") == new
    assert d.pool_conf("127.0.0.1:22121")["servers"] == [f"localhost:{new[1]}:1 shard0"]


def test_sentinel_and_server_passwords(sentinel_deployment):
    d = sentinel_deployment(shards=1, replicas=1, sentinel_pass=SENTINEL_PASS,
                            master_pass=MASTER_PASS)
    # up means the sentinels passed each other's requirepass and the servers' (auth-pass)
    for password in (None, "wrong"):
        with d.sentinel_client(password=password) as c, pytest.raises(redis.AuthenticationError):
            c.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "shard0")
    with reference(d, sentinel_pass="wrong") as wrong, pytest.raises(MasterNotFoundError):
        wrong.discover_master("shard0")
    with d.server_client(d.master_addr("shard0"), password=None) as c, \
            pytest.raises(redis.AuthenticationError):
        c.ping()
    with reference(d) as ref:
        assert ref.master_for("shard0").set("sentinel:auth", "v") is True
        old, new = d.failover("shard0")
        assert ref.discover_master("shard0") == new
        assert ref.master_for("shard0").get("sentinel:auth") == b"v"
    pool = d.pool_conf("127.0.0.1:22121", read_from="replica")
    assert pool["sentinel_auth"] == SENTINEL_PASS and pool["redis_auth"] == MASTER_PASS
    assert pool["servers"] == [f"{sentinel.addr_str(new)}:1 shard0"]
    assert pool["sentinels"] == [sentinel.addr_str(a) for a in d.sentinel_addrs]
    assert pool["read_from"] == "replica"
