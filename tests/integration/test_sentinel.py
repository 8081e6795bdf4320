"""A pool with `sentinels:` (issue 27) against real Redis Sentinel deployments
(sentinel_fixtures.py), around the moves themselves (those under load: test_sentinel_failover.py;
the ROLE gate, -READONLY and the stats' shape: test_sentinel_roles.py):
a configured address that is stale (a dead port, the replica) is left for the master the
sentinels name; with every sentinel down the pool serves its last known masters, says so in the
log and the stats, and notices when they answer again; a reload that replaces the sentinels keeps
where the masters were found and follows a failover through the new ones only; sentinel_auth,
right and wrong; and what the config check (-t) refuses.

One deployment is shared by the module's tests (each asks where the masters are now; the failover
comes last, so no test stops the sentinels while they still convert its old master); the
passwords get one of their own.
"""
import pytest

from nctest import manage, procs
from nctest.keys import spread_keys
from nctest.procs import HOST, free_port
from nctest.sentinel import addr_str
from nctest.sentinel_proxy import ANSWERS_AGAIN, UNREACHABLE, refused_line

SENTINEL_PASS = "sentinel-secret"
MASTER_PASS = "master-secret"


@pytest.fixture(scope="module")
def deployment(module_sentinel_deployment):
    """2 shards of a master and a replica, 3 sentinels, no passwords."""
    return module_sentinel_deployment()


def dead_addr():
    """A loopback address nothing listens on."""
    return f"{HOST}:{free_port()}"


def masters_of(d):
    return {n: d.master_addr(n) for n in d.names}


def servers_conf(masters, **instead):
    """The pool's servers list: each name at its address in masters, or at instead[name]."""
    return [f"{instead.get(n) or addr_str(a)}:1 {n}" for n, a in masters.items()]


def keys_of(view, shard, prefix, n=20):
    """n keys the proxy routes to `shard`."""
    shards = manage.find_keys(view.manage, view.pool, spread_keys(prefix, 8 * n))
    keys = [k for k, s in shards.items() if s == shard][:n]
    assert len(keys) == n, shards
    return keys


def assert_served(d, view, prefix, masters):
    """SET and GET through the proxy of keys of every shard, each then on the master of its shard
    (`masters`: {shard: addr}), read from that server itself."""
    with view.client() as c:
        for shard, addr in masters.items():
            keys = keys_of(view, shard, f"{prefix}:{shard}")
            for key in keys:
                assert c.set(key, key) is True
            assert [c.get(k) for k in keys] == [k.encode() for k in keys]
            assert d.values(addr, keys) == {k: k.encode() for k in keys}


@pytest.mark.parametrize("stale", ["dead port", "replica"])
def test_a_stale_configured_address_is_left_for_the_master(deployment, sentinel_proxy, stale):
    d = deployment
    masters = masters_of(d)
    replica = d.up_replicas("shard0")[0]
    wrong = dead_addr() if stale == "dead port" else addr_str(replica)
    view = sentinel_proxy(d, servers=servers_conf(masters, shard0=wrong))
    moved = view.wait_moved("shard0", wrong, addr_str(masters["shard0"]))
    assert moved.group("asked") in [addr_str(a) for a in d.sentinel_addrs]  # asked: no switch
    view.wait_addr("shard0", addr_str(masters["shard0"]))
    reads = d.commandstats(replica).get("get", 0)
    assert_served(d, view, f"stale-{stale.replace(' ', '-')}", masters)
    assert d.commandstats(replica).get("get", 0) == reads  # no read went to the replica
    assert len(view.moves()) == 1, view.moves()  # shard1 was where the config said


def test_all_sentinels_down(deployment, sentinel_proxy):
    d = deployment
    masters = masters_of(d)
    view = sentinel_proxy(d)
    view.wait_reachable(3)
    mark = view.log_mark()
    try:
        d.stop_sentinels()
        view.wait_log(UNREACHABLE, mark)
        view.wait_reachable(0)
        assert view.places() == {n: (addr_str(a), "master") for n, a in masters.items()}
        assert_served(d, view, "unreachable", masters)
    finally:
        d.start_sentinels()
    view.wait_log(ANSWERS_AGAIN, mark)
    view.wait_reachable(3)  # links back after their backoff (5 s at most)
    assert view.proxy.log()[mark:].count(UNREACHABLE) == 1  # said once, not every second
    assert view.moves(mark) == []
    assert_served(d, view, "answers-again", masters)


def test_a_reload_that_replaces_the_sentinels(deployment, sentinel_proxy):
    """Configured with the first sentinel only, then reloaded with the two others and shard0 at
    a dead address: the new generation starts where the old one found shard0 (no move is
    logged), asks and follows the new sentinels only, and a failover after it is followed."""
    d = deployment
    first, *others = [addr_str(a) for a in d.sentinel_addrs]
    masters = masters_of(d)
    view = sentinel_proxy(d, "-T", "2", sentinels=[first])
    view.wait_reachable(1)
    mark = view.log_mark()
    view.reload(sentinels=others, servers=servers_conf(masters, shard0=dead_addr()))
    view.wait_reachable(2)
    assert view.places()["shard0"] == (addr_str(masters["shard0"]), "master")
    old, new = d.failover("shard0")
    moved = view.wait_moved("shard0", addr_str(old), addr_str(new), mark)
    assert (moved.group("sentinel") or moved.group("asked")) in others
    # the only move since the reload: not from the config's dead address, and the first
    # sentinel (no longer configured) told nothing
    assert len(view.moves(mark)) == 1, view.moves(mark)
    view.wait_addr("shard0", addr_str(new))
    assert_served(d, view, "reloaded", {**masters, "shard0": new})


def test_sentinel_auth(sentinel_deployment, sentinel_proxy):
    """Sentinels and servers with passwords. With the right sentinel_auth the pool finds the
    master (configured at a dead address) and serves through redis_auth; with a wrong one every
    sentinel's refusal is logged, none counts as answering, and the pool stays where its config
    says."""
    d = sentinel_deployment(shards=1, sentinel_pass=SENTINEL_PASS, master_pass=MASTER_PASS)
    masters = masters_of(d)
    dead = dead_addr()
    right = sentinel_proxy(d, name="right", servers=servers_conf(masters, shard0=dead))
    wrong = sentinel_proxy(d, name="wrong", servers=servers_conf(masters, shard0=dead),
                           sentinel_auth="not-the-secret")
    right.wait_moved("shard0", dead, addr_str(masters["shard0"]))
    right.wait_reachable(3)
    assert_served(d, right, "auth", masters)
    assert "refuses sentinel_auth" not in right.proxy.log()
    for addr in d.sentinel_addrs:
        wrong.wait_log(refused_line(wrong.pool, addr_str(addr)))
    wrong.wait_log(UNREACHABLE)  # a round has ended: without an answer
    wrong.wait_reachable(0)
    assert wrong.places() == {"shard0": (dead, "master")}
    assert wrong.moves() == []
    with wrong.client() as c:
        with pytest.raises(Exception, match="Connection refused"):  # the dead address, indeed
            c.set("auth:wrong", "v")


def config_check(write_conf, pool):
    """Runs -t on a config of `pool` (as pool "p"); returns (path, its lines, CompletedProcess)."""
    path = write_conf({"p": pool}, name="check.yml")
    return path, path.read_text().splitlines(), procs.run(["-t", "-c", str(path)])


def sentinel_pool(**keys):
    """A pool with two sentinels and two named servers (none need run for -t), then `keys`
    (None removes a key)."""
    pool = {"listen": f"{HOST}:{free_port()}", "redis": True,
            "sentinels": [f"{HOST}:{free_port()}", f"{HOST}:{free_port()}"],
            "servers": [f"{HOST}:{free_port()}:1 shard0", f"{HOST}:{free_port()}:1 shard1"]}
    pool.update(keys)
    return {k: v for k, v in pool.items() if v is not None}


def test_config_check_accepts_a_sentinel_pool(write_conf):
    path, _, r = config_check(write_conf, sentinel_pool(sentinel_auth="secret", timeout=1000,
                                                        read_from="prefer_replica"))
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines()[-1] == f"nutcrackers: configuration file '{path}' syntax is ok"


REFUSED = {
    "a server without a name": (
        dict(servers=[f"{HOST}:7001:1 shard0", f"{HOST}:7002:1"]), "servers", f"{HOST}:7002:1",
        f"'{HOST}:7002:1': a server of a pool with sentinels needs a name (the sentinels' master "
        "name)"),
    "read_from replica without sentinels": (
        dict(read_from="replica", sentinels=None), "read_from", "read_from:",
        "'replica' needs replicas: a pool with sentinels or redis_cluster"),
    "sentinel_auth without sentinels": (
        dict(sentinel_auth="secret", sentinels=None), "sentinel_auth", "sentinel_auth:",
        "set without sentinels"),
    "a memcached pool": (
        dict(redis=False), "sentinels", "sentinels:", "sentinels need a redis pool (redis: true)"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_config_check_refuses(write_conf, case):
    keys, key, marker, message = REFUSED[case]
    path, lines, r = config_check(write_conf, sentinel_pool(**keys))
    line = next(n for n, text in enumerate(lines, 1) if marker in text)
    assert r.returncode == 1, r.stderr
    assert f"nutcrackers: {path}:{line}: pool 'p': key '{key}': {message}" in r.stderr.splitlines()
    assert r.stderr.splitlines()[-1] == f"nutcrackers: configuration file '{path}' syntax is invalid"


