"""Commands declared in a pool's `commands:` (issue 31, notes/declared-commands.md), against 3
real redis-servers behind a proxy with -T 2: a declared command the command table lacks is
routed to the owner of its key (its reply compared with the owner's own answer, on a key that
exists only there), a declared multi-key command runs when its keys are on one server and gets
the proxy's cross-server error otherwise, a declared built-in name is routed by its declared
key position, an undeclared unknown command is still refused as before, a declared name redis
does not know comes back with redis's own error, too few arguments get the arity error; `-t`
names the file, line and key of each malformed entry; a reload adds and removes declarations;
with Sentinel replicas and read_from: replica, a readonly declared command reaches the replicas and
a write one never does.

The commands used are redis 7.0 core commands the table lacks today (SUBSTR, RENAME) or has
(APPEND): a later built-in entry for SUBSTR or RENAME makes these declarations overrides, which
route the same way.
"""
import subprocess
import uuid

import pytest

from nctest import cluster, manage, procs, wait
from nctest.codec import bulk, integer, resp
from nctest.conn import RawConn, redis_client

THREADED = True  # the TSan stage runs these too (conftest.py)

COMMANDS = [
    "SUBSTR 1 1 1 readonly",   # a core command the table lacks: routed by its key
    "RENAME 1 2 1",            # two keys: on one server, else the cross-server error
    "APPEND 2 2 1 write",      # a built-in declared anew: routed by its value's owner
    "JSON.SET 1 1 1",          # a module command redis 7.0 without modules does not know
]
UNSUPPORTED = b"-ERR unsupported command '%s'\r\n"


@pytest.fixture(scope="module")
def pool(module_redis_server, module_write_conf, module_nutcrackers):
    c = cluster.start_cluster("redis", 3, 2, module_redis_server, module_write_conf, module_nutcrackers,
                              name="declared", hash_tag="{}", commands=COMMANDS)
    yield c
    assert c.stop() == 0


@pytest.fixture
def placed(pool):
    """Two keys on each server (their value: their own name)."""
    return pool.place_keys(f"decl:{uuid.uuid4().hex[:8]}", 2)


def test_declared_command_goes_to_the_owner_of_its_key(pool, placed):
    with pool.raw() as c:
        for server, keys in enumerate(placed):
            for key in keys:
                assert pool.holder(key) == [server]
                with RawConn(pool.ports[server]) as own:
                    own.send(resp("SUBSTR", key, 0, 6))
                    expected = own.reply()
                assert expected == bulk(key[:7])  # the key exists there only: its value comes back
                c.exchange(resp("substr", key, 0, 6), expected)
    assert pool.client().execute_command("SUBSTR", placed[0][0], 0, 1) == placed[0][0][:2].encode()


def test_declared_multi_key_command_on_one_server_or_refused_across(pool, placed):
    tag = uuid.uuid4().hex[:8]
    src, dst = f"{{{tag}}}:a", f"{{{tag}}}:b"
    client = pool.client()
    client.set(src, "moved")
    (owner,) = pool.holder(src)
    with pool.raw() as c:
        c.exchange(resp("RENAME", src, dst), b"+OK\r\n")
        assert pool.holder(dst) == [owner] and pool.holder(src) == []
        a, b = placed[0][0], placed[1][0]
        c.exchange(resp("RENAME", a, b),
                   b"-ERR the keys of 'rename' are on more than one server (hash tags keep them on one)\r\n")
    assert pool.holder(a) == [0] and pool.holder(b) == [1]  # nothing ran


def test_declared_builtin_routes_by_its_declared_key(pool):
    # APPEND key value, declared "APPEND 2 2 1": the proxy routes it by the value's owner
    by_server = pool.route_keys(f"decl-app:{uuid.uuid4().hex[:8]}", 1)
    key, value = by_server[0][0], by_server[2][0]
    with pool.raw() as c:
        c.exchange(resp("APPEND", key, value), integer(len(value)))
    assert pool.holder(key) == [2]
    assert pool.direct(2).get(key) == value.encode()


def test_undeclared_unknown_command_is_still_refused(pool, placed):
    key = placed[0][0]
    with pool.raw() as c:
        c.exchange(resp("LASTSAVE"), UNSUPPORTED % b"lastsave")
        c.exchange(resp("JSON.GET", key), UNSUPPORTED % b"json.get")
        c.exchange(resp("SWAPDB", "0", "1"), UNSUPPORTED % b"swapdb")
        c.exchange(resp("GET", key), bulk(key))  # the connection goes on
    # counted under their names as before; the declared ones (SUBSTR, RENAME) are never refused
    doc = manage.wait_status(pool.proxy.manage_port,
                             lambda d: d["declared"].get("refused_cmd_swapdb", 0) >= 1, what="swapdb refused")
    stats = doc["declared"]
    assert stats.get("refused_cmd_lastsave", 0) >= 1 and stats.get("refused_cmd_other", 0) >= 1, stats
    assert "refused_cmd_substr" not in stats and "refused_cmd_rename" not in stats, stats


def test_declared_unknown_name_gets_the_servers_own_error(pool, placed):
    key = placed[1][0]
    request = resp("JSON.SET", key, "$", '{"a":1}')
    with RawConn(pool.ports[1]) as own:
        own.send(request)
        expected = own.reply()
    assert expected.startswith(b"-ERR unknown command 'JSON.SET'"), expected
    with pool.raw() as c:
        c.exchange(request, expected)


@pytest.mark.parametrize("args", [("SUBSTR",), ("JSON.SET",), ("APPEND", "k")])
def test_too_few_arguments_get_the_arity_error(pool, args):
    name = args[0].lower().encode()
    with pool.raw() as c:
        c.exchange(resp(*args), b"-ERR wrong number of arguments for '%s' command\r\n" % name)
        c.exchange(resp("GET"), b"-ERR wrong number of arguments for 'get' command\r\n")


def _test_conf(tmp_path, text):
    path = tmp_path / "declared.yml"
    path.write_text(text)
    run = subprocess.run([procs.nutcrackers_bin(), "-t", "-c", str(path)], capture_output=True, text=True,
                         timeout=30)
    return path, run


BAD_ENTRIES = [
    ('"GET 0 1 1"', "FIRST 0: a command with no key cannot be routed"),
    ('"FOO 1 1 0"', "STEP 0"),
    ('"FOO 1 x 1"', "LAST 'x' is not an integer"),
    ('"FOO 1 1"', 'expected "NAME FIRST LAST STEP [readonly|write]"'),
    ('"FOO 1 1 1 sometimes"', "unknown mode 'sometimes'"),
    ('"FOO{} 1 1 1"', "a command name is letters, digits"),
    ('"ABCDEFGHIJKLMNOPQRSTUVWXYZ 1 1 1"', "too long for a command name"),
    ('"MGET 1 -1 1"', "'mget' cannot be declared: the proxy splits it per server"),
    ('"BLPOP 1 -2 1"', "'blpop' cannot be declared: it blocks"),
    ('"INFO 1 1 1"', "'info' cannot be declared: the proxy answers it itself"),
    ('{a: b}', "expected a command"),
]


@pytest.mark.parametrize("entry,why", BAD_ENTRIES, ids=[e for e, _ in BAD_ENTRIES])
def test_test_conf_names_file_line_and_key_of_a_bad_entry(tmp_path, entry, why):
    text = ("alpha:\n  listen: 127.0.0.1:22121\n  redis: true\n  commands:\n"
            f"    - \"JSON.GET 1 1 1 readonly\"\n    - {entry}\n  servers:\n    - 127.0.0.1:6379:1\n")
    path, run = _test_conf(tmp_path, text)
    assert run.returncode == 1
    assert f"{path}:6: pool 'alpha': key 'commands': " in run.stderr, run.stderr
    assert why in run.stderr, run.stderr


def test_test_conf_duplicates_and_memcached_pools(tmp_path):
    text = ("alpha:\n  listen: 127.0.0.1:22121\n  redis: true\n  commands:\n"
            "    - \"JSON.GET 1 1 1 readonly\"\n    - \"json.get 1 1 1\"\n  servers:\n    - 127.0.0.1:6379:1\n"
            "beta:\n  listen: 127.0.0.1:22122\n  commands: []\n  servers:\n    - 127.0.0.1:11211:1\n")
    path, run = _test_conf(tmp_path, text)
    assert run.returncode == 1
    assert f"{path}:6: pool 'alpha': key 'commands': " in run.stderr and "declared twice (first at line 5)" in run.stderr
    assert f"{path}:11: pool 'beta': key 'commands': declared commands are redis commands" in run.stderr
    good = text.split("beta:")[0].replace('"json.get 1 1 1"', '"TS.ADD 1 1 1"')
    _, run = _test_conf(tmp_path, good)
    assert run.returncode == 0, run.stderr


def test_reload_adds_and_removes_declarations(redis_server, write_conf, nutcrackers):
    """One worker (-T 1), so a second client shows when the worker serves the new generation. A
    request half sent at the reload is parsed whole with the declarations it began with; the
    client's next request, with the new ones. PFDEBUG (a redis command the table lacks) is
    declared, then not; JSON.GET (no module here) not, then declared: forwarded to its key's
    server, whose own unknown-command error comes back."""
    c = cluster.start_cluster("redis", 3, 1, redis_server, write_conf, nutcrackers, name="reloaded",
                              commands=["PFDEBUG 2 2 1 readonly"])
    key = f"decl-reload:{uuid.uuid4().hex[:8]}"
    client = c.client()
    client.pfadd(key, "a", "b")
    (owner,) = c.holder(key)
    pfdebug = resp("PFDEBUG", "ENCODING", key)
    json_get = resp("JSON.GET", key)
    with c.raw() as conn, c.raw() as other:
        conn.exchange(pfdebug, b"+sparse\r\n")
        conn.exchange(json_get, UNSUPPORTED % b"json.get")
        conn.send(pfdebug[:30])  # its name, its subcommand and the start of its key
        c.reload_conf("PFDEBUG 2 2 1 readonly", "JSON.GET 1 1 1 readonly")

        def refused():
            other.send(pfdebug)
            return other.reply() == UNSUPPORTED % b"pfdebug"

        wait.wait_for(refused, 10, "PFDEBUG refused on the worker's new generation")
        conn.exchange(pfdebug[30:], b"+sparse\r\n")
        conn.exchange(pfdebug, UNSUPPORTED % b"pfdebug")
        conn.send(json_get)
        # redis's own words, with the key: forwarded (routing by key is checked above)
        assert conn.line() == b"-ERR unknown command 'JSON.GET', with args beginning with: '%s' \r\n" % key.encode()
    assert c.holder(key) == [owner]
    assert c.stop() == 0


def test_readonly_declared_reads_from_replicas_and_write_never(nutcrackers, write_conf, sentinel_deployment):
    """read_from: replica, one shard (a master, two replicas, 3 sentinels): SUBSTR declared
    readonly goes to the replicas; GETRANGE, a read built-in declared write, and RENAME (written
    without a mode: write) go to the master only (a replica would refuse RENAME: READONLY)."""
    d = sentinel_deployment(shards=1, replicas=2)
    listen = procs.free_port()
    pool = d.pool_conf(f"127.0.0.1:{listen}", read_from="replica", timeout=5000,
                       commands=["SUBSTR 1 1 1 readonly", "GETRANGE 1 1 1 write", "RENAME 1 2 1"])
    proxy = nutcrackers(write_conf({"rf": pool}), "-T", "2", wait_manage=True)
    master = d.master_addr("shard0")
    replicas = sorted(d.up_replicas("shard0"))
    wait.wait_for(lambda: len(_replica_slots(proxy)) == 2, 20, "the proxy's replica slots filled")
    c = redis_client(listen)
    c.set("{k}a", "value")
    wait.wait_for(lambda: all(d.server_client(r).get("{k}a") == b"value" for r in replicas), 10, "replicated")
    for a in [master] + replicas:
        d.reset_stats(a)
    reads = 20
    for _ in range(reads):
        assert c.execute_command("SUBSTR", "{k}a", 0, 1) == b"va"
        assert c.getrange("{k}a", 0, 1) == b"va"
    assert c.execute_command("RENAME", "{k}a", "{k}b") is True
    stats = {a: d.commandstats(a) for a in [master] + replicas}
    assert stats[master].get("substr", 0) == 0 and sum(stats[r].get("substr", 0) for r in replicas) == reads, stats
    assert stats[master].get("getrange", 0) == reads and stats[master].get("rename", 0) == 1, stats
    for r in replicas:  # (a replica counts the RENAME its master sent it, not one of a client)
        assert stats[r].get("getrange", 0) == 0, stats
    c.close()


def _replica_slots(proxy):
    status, _, body = manage.http_get(proxy.manage_port, "/metrics")
    assert status == 200
    return [line for line in body.decode().splitlines()
            if line.startswith("nutcrackers_server_info{") and 'role="replica"' in line and 'addr=""' not in line]
