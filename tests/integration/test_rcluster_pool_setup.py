"""Setting up a `redis_cluster` pool (issue 28): what `nutcrackers -t` says of its config, and a
cluster whose nodes want a password (the rest of the pool: test_rcluster_pool.py).

- `-t` refuses, with exit status 1 and one error naming the file, the line, the pool and the key:
  `redis_cluster` on a memcached pool (`redis: false`), with `sentinels` (a pool follows one or
  the other), with `redis_db: 1` (a cluster has db 0 only), with `server_tls: true` (the slot map
  is asked over plain TCP) and with a unix-socket seed;
- `-t` takes `hash`, `distribution` and `hash_tag` on such a pool with a "warning:" line naming the
  key and its line (keys go by the cluster's slots), and `read_from: replica` without a word
  (which a pool of plain servers is refused);
- `redis_auth` in front of a cluster whose nodes have `requirepass` (and `masterauth`, so their
  replicas sync): the proxy learns the slot map from the nodes with it, serves keys of every
  master, reads from the replicas with it too, and its own clients must AUTH (NOAUTH without,
  WRONGPASS with a wrong password), as with a redis-server.

The `-t` checks run the binary alone on config files (no process stays). The password cluster is
one module cluster (6 nodes) with two proxies.
"""
import pytest
import redis

from nctest import procs, wait
from nctest.conf import render_conf
from nctest.procs import HOST
from nctest.rcluster import keys_in_slots

THREADED = True  # the module's proxies run 2 workers: the TSan stage runs these

PASSWORD = "cluster-secret"
MAP_TIMEOUT = 10.0  # s: the proxy's map (status) is the cluster's (1 s polls)
SEED = f"{HOST}:7000:1"  # -t connects to nothing: any address will do


def check(tmp_path, pool, name="rc.yml"):
    """Writes {"rc": pool} and runs `nutcrackers -t -c` on it: (path, its text, CompletedProcess)."""
    text = render_conf({"rc": pool})
    path = tmp_path / name
    path.write_text(text)
    return path, text, procs.run(["-t", "-c", str(path)])


def line_of(text, needle):
    """The 1-based number of the config line that holds needle (once)."""
    found = [i + 1 for i, line in enumerate(text.splitlines()) if needle in line]
    assert len(found) == 1, (needle, found)
    return found[0]


def base(**keys):
    pool = {"listen": f"{HOST}:22121", "redis": True, "redis_cluster": True}
    pool.update(keys)
    pool.setdefault("servers", [SEED])
    return pool


# (pool keys, the key the error names, the text of the line it names, a word of its message)
REFUSED = {
    "memcached": ({"redis": False}, "redis_cluster", "redis_cluster:", "redis: true"),
    "sentinels": ({"sentinels": [f"{HOST}:26379"], "servers": [f"{HOST}:7000:1 shard0"]},
                  "redis_cluster", "redis_cluster:", "sentinels"),
    "redis_db": ({"redis_db": 1}, "redis_db", "redis_db:", "database 0"),
    "server_tls": ({"server_tls": True}, "server_tls", "server_tls:", "plain TCP"),
    "unix_seed": ({"servers": [SEED, "/tmp/rc-seed.sock:1"]}, "servers", "rc-seed.sock",
                  "host:port:weight"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_t_refuses(tmp_path, case):
    keys, key, where, word = REFUSED[case]
    path, text, r = check(tmp_path, base(**keys))
    assert r.returncode == 1, r.stderr
    lines = r.stderr.splitlines()
    assert lines[-1] == f"nutcrackers: configuration file '{path}' syntax is invalid", r.stderr
    prefix = f"nutcrackers: {path}:{line_of(text, where)}: pool 'rc': key '{key}': "
    assert len(lines) == 2 and lines[0].startswith(prefix) and word in lines[0], r.stderr
    # the same pool without redis_cluster is no error of these (db 1, TLS, a unix socket, ...)
    if case in ("redis_db", "unix_seed"):
        _, _, plain = check(tmp_path, {k: v for k, v in base(**keys).items()
                                       if k != "redis_cluster"}, name="plain.yml")
        assert plain.returncode == 0, plain.stderr


WARNED = {"hash": "murmur", "distribution": "modula", "hash_tag": "{}"}


@pytest.mark.parametrize("key", sorted(WARNED))
def test_t_warns_on_keys_the_slots_override(tmp_path, key):
    path, text, r = check(tmp_path, base(**{key: WARNED[key]}))
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert lines[-1] == f"nutcrackers: configuration file '{path}' syntax is ok", r.stderr
    warnings = [line for line in lines if "warning:" in line]
    assert len(warnings) == 1, r.stderr
    assert warnings[0].startswith(f"nutcrackers: {path}:{line_of(text, key + ':')}: pool 'rc': "
                                  f"key '{key}': warning: "), r.stderr


def test_t_without_those_keys_warns_nothing(tmp_path):
    path, _, r = check(tmp_path, base())
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines() == [f"nutcrackers: configuration file '{path}' syntax is ok"]


def test_t_takes_read_from_replica_with_redis_cluster(tmp_path):
    path, _, r = check(tmp_path, base(read_from="replica"))
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines() == [f"nutcrackers: configuration file '{path}' syntax is ok"]
    plain = {k: v for k, v in base(read_from="replica").items() if k != "redis_cluster"}
    _, text, r = check(tmp_path, plain, name="plain.yml")  # needs replicas to read from
    assert r.returncode == 1 and f":{line_of(text, 'read_from:')}: pool 'rc': key 'read_from'" \
        in r.stderr, r.stderr


# --- a cluster with passwords -------------------------------------------------------------------

@pytest.fixture(scope="module")
def cluster(module_rcluster):
    return module_rcluster(password=PASSWORD)


def masters_in_stats(view):
    """{name: (addr, role)} of the pool's masters in the stats."""
    return {n: p for n, p in view.places().items() if "/" not in n}


def wait_masters(view, cluster):
    want = sorted((f"{HOST}:{m.port}", "master") for m in cluster.masters())
    wait.wait_value(lambda: masters_in_stats(view), lambda v: sorted(v.values()) == want and
                    sorted(v) == ["node1", "node2", "node3"], MAP_TIMEOUT,
                    "the masters learned with redis_auth")


def test_the_cluster_wants_the_password(cluster):
    with cluster.client(cluster.masters()[0], password=None) as c:
        with pytest.raises(redis.exceptions.AuthenticationError):
            c.get("x")
    assert cluster.command(cluster.masters()[0], "PING") is True


def test_redis_auth_learns_the_map_and_serves(cluster, module_rcluster_proxy):
    view = module_rcluster_proxy(cluster, "-T", "2", name="auth", redis_auth=PASSWORD)
    wait_masters(view, cluster)
    assert view.doc()["topology_reachable"] == 6
    keys = {m.port: keys_in_slots(m.slot_set(), 5, prefix=f"auth:{m.port}")
            for m in cluster.masters()}
    every = [k for ks in keys.values() for k in ks]
    with view.client(password=None) as c:
        with pytest.raises(redis.exceptions.AuthenticationError):  # -NOAUTH
            c.get(every[0])
    with view.client(password="wrong") as c:  # AUTH at connect: -WRONGPASS
        with pytest.raises(redis.exceptions.AuthenticationError):
            c.ping()
    with view.client() as c:
        assert c.mset({k: f"v:{k}" for k in every}) is True
        assert c.mget(every) == [f"v:{k}".encode() for k in every]
    for port, mine in keys.items():
        with cluster.client(port) as d:
            assert [d.get(k) for k in mine] == [f"v:{k}".encode() for k in mine], port


def test_redis_auth_reads_from_the_replicas(cluster, module_rcluster_proxy):
    view = module_rcluster_proxy(cluster, "-T", "2", name="authreplica", redis_auth=PASSWORD,
                                 read_from="replica")
    wait_masters(view, cluster)
    masters = cluster.masters()
    replicas = {m.port: cluster.replicas_of(m)[0].port for m in masters}
    wait.wait_value(lambda: sorted(a for n, (a, r) in view.places().items() if r == "replica"),
                    lambda v: v == sorted(f"{HOST}:{p}" for p in replicas.values()), MAP_TIMEOUT,
                    "the replicas in the stats")
    keys = [keys_in_slots(m.slot_set(), 1, prefix=f"authr:{m.port}")[0] for m in masters]
    with view.client() as c:
        assert c.mset({k: k for k in keys}) is True

    def replicated():
        for m, k in zip(masters, keys):
            with cluster.client(replicas[m.port]) as r:
                r.execute_command("READONLY")
                if r.get(k) != k.encode():
                    return False
        return True

    wait.wait_for(replicated, MAP_TIMEOUT, "the replicas to have the keys")
    before = {p: cluster.commandstats(p).get("get", 0) for p in replicas.values()}
    with view.client() as c:
        assert [c.get(k) for k in keys] == [k.encode() for k in keys]
    after = {p: cluster.commandstats(p).get("get", 0) for p in replicas.values()}
    assert all(after[p] > before[p] for p in before), (before, after)
