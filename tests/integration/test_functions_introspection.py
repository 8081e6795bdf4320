"""Redis 7's functions, the introspection tools ask for, and redis 7's other keyed commands through
the proxy (3 real redis-servers, -T 2; notes/functions-and-introspection.md): FUNCTION LOAD,
DELETE, FLUSH and RESTORE reach every server (checked on each server directly), LIST and DUMP come
from the first; FCALL and FCALL_RO run on the server of their keys, for keys of every server;
CONFIG GET is the first server's, CONFIG SET refused; ROLE; OBJECT, MEMORY USAGE, EXPIRETIME, LCS,
RESTORE, RENAME answered as the key's own server answers them; a hash field expiry command of
redis 7.4 gets the server's own unknown-command error; redis-benchmark runs without a warning."""
import re
import shutil
import subprocess
import uuid

import pytest
import redis

from nctest import cluster
from nctest.codec import resp
from nctest.procs import HOST

THREADED = True  # the TSan stage runs these too (conftest.py)

SERVERS = 3
ROLE = b"*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n"


@pytest.fixture(scope="module")
def pool(module_redis_server, module_write_conf, module_nutcrackers):
    c = cluster.start_cluster("redis", SERVERS, 2, module_redis_server, module_write_conf, module_nutcrackers,
                              name=f"fn-{uuid.uuid4().hex[:6]}", hash_tag="{}")
    yield c
    assert c.stop() == 0


@pytest.fixture
def prefix():
    return f"fi:{uuid.uuid4().hex[:8]}"


@pytest.fixture
def r(pool):
    """A client of the proxy; every server's functions flushed before and after the test."""
    for i in range(SERVERS):
        pool.direct(i).function_flush()
    client = pool.client()
    yield client
    client.close()
    for i in range(SERVERS):
        pool.direct(i).function_flush()


def library(name, body="return redis.call('SET', keys[1], args[1])"):
    """A library of two functions: `name`_set (writes keys[1]) and `name`_get (reads it)."""
    return (f"#!lua name={name}\n"
            f"redis.register_function('{name}_set', function(keys, args) {body} end)\n"
            f"redis.register_function{{function_name='{name}_get', callback=function(keys, args) "
            f"return redis.call('GET', keys[1]) end, flags={{'no-writes'}}}}\n")


def libraries(client):
    """The names of the libraries client's server lists (FUNCTION LIST, RESP2: flat pairs)."""
    return sorted(dict(zip(lib[::2], lib[1::2]))[b"library_name"].decode() for lib in client.function_list())


def every_server(pool, fn):
    return [fn(pool.direct(i)) for i in range(SERVERS)]


def one_key_each(pool, prefix):
    return [ks[0] for ks in pool.route_keys(prefix, 1)]


# ------------------------------------------------------------------------------------ functions

def test_function_load_reaches_every_server_and_fcall_runs_where_its_keys_live(pool, r, prefix):
    lib = f"l{uuid.uuid4().hex[:8]}"
    assert r.function_load(library(lib)) == lib.encode()
    assert every_server(pool, libraries) == [[lib]] * SERVERS
    keys = one_key_each(pool, prefix)
    for server, key in enumerate(keys):
        assert r.fcall(f"{lib}_set", 1, key, f"v{server}") == b"OK"
        assert pool.holder(key) == [server]
        assert pool.direct(server).get(key) == f"v{server}".encode()
        assert r.fcall_ro(f"{lib}_get", 1, key) == f"v{server}".encode()
    # read-only scripts by their keys too
    key = keys[1]
    assert r.execute_command("EVAL_RO", "return redis.call('GET', KEYS[1])", 1, key) == b"v1"
    sha = r.script_load("return redis.call('GET', KEYS[1])")
    assert r.execute_command("EVALSHA_RO", sha, 1, key) == b"v1"
    # keys of one function on several servers: it would not see them all, refused
    for args in ((f"{lib}_set", 2, keys[0], keys[1], "x"), (f"{lib}_get", 2, keys[1], keys[2])):
        name = "fcall" if args[0].endswith("_set") else "fcall_ro"
        with pytest.raises(redis.ResponseError) as e:
            r.execute_command(name.upper(), *args)
        assert str(e.value) == f"the keys of '{name}' are on more than one server (hash tags keep them on one)"
    assert pool.direct(0).get(keys[0]) == b"v0"


def test_fcall_with_no_key_is_refused_as_eval_with_no_key(pool, r):
    lib = f"l{uuid.uuid4().hex[:8]}"
    r.function_load(library(lib))
    for args in (("FCALL", f"{lib}_set", 0), ("FCALL_RO", f"{lib}_get", 0), ("EVAL", "return 1", 0)):
        with pytest.raises(redis.ResponseError) as e:
            r.execute_command(*args)
        assert str(e.value) == f"wrong number of arguments for '{args[0].lower()}' command"


def test_function_delete_and_flush_reach_every_server(pool, r):
    names = [f"l{uuid.uuid4().hex[:8]}" for _ in range(3)]
    for n in names:
        r.function_load(library(n))
    assert r.function_delete(names[0]) is True
    assert every_server(pool, libraries) == [sorted(names[1:])] * SERVERS
    with pytest.raises(redis.ResponseError, match="Library not found"):
        r.function_delete(names[0])
    assert r.function_flush("SYNC") is True
    assert every_server(pool, libraries) == [[]] * SERVERS


def test_function_load_errors_are_the_servers(pool, r):
    broken = "#!lua name=broken\nthis is not lua"
    with pytest.raises(redis.ResponseError) as direct:
        pool.direct(0).function_load(broken)
    with pytest.raises(redis.ResponseError) as proxied:
        r.function_load(broken)
    assert str(proxied.value) == str(direct.value)
    assert every_server(pool, libraries) == [[]] * SERVERS
    # a library one server already has: that server's error; the others took it (documented),
    # and LOAD REPLACE makes every server hold the same code
    lib = f"l{uuid.uuid4().hex[:8]}"
    pool.direct(1).function_load(library(lib, "return 'old'"))
    with pytest.raises(redis.ResponseError, match=f"Library '{lib}' already exists"):
        r.function_load(library(lib))
    assert every_server(pool, libraries) == [[lib]] * SERVERS
    assert r.function_load(library(lib), replace=True) == lib.encode()
    codes = every_server(pool, lambda c: dict(zip(*[iter(c.function_list(library=lib, withcode=True)[0])] * 2))[
        b"library_code"])
    assert codes == [library(lib).encode()] * SERVERS


def test_function_list_dump_stats_come_from_the_first_server_and_restore_reaches_every_one(pool, r):
    lib, only_first, only_second = (f"l{uuid.uuid4().hex[:8]}" for _ in range(3))
    r.function_load(library(lib))
    pool.direct(0).function_load(library(only_first))
    pool.direct(1).function_load(library(only_second))
    assert libraries(r) == sorted([lib, only_first])
    dump = r.function_dump()
    assert dump == pool.direct(0).function_dump()
    stats = r.execute_command("FUNCTION", "STATS")
    assert stats is not None
    assert r.function_flush() is True
    assert every_server(pool, libraries) == [[]] * SERVERS
    assert r.function_restore(dump) is True
    assert every_server(pool, libraries) == [sorted([lib, only_first])] * SERVERS
    with pytest.raises(redis.ResponseError, match="FUNCTION KILL is not supported by the proxy"):
        r.function_kill()
    with pytest.raises(redis.ResponseError, match="unknown subcommand 'nosuch'. Try FUNCTION HELP"):
        r.execute_command("FUNCTION", "nosuch")


# ------------------------------------------------------------------------ CONFIG, ROLE, MEMORY

def test_config_get_is_the_first_servers_and_config_set_is_refused(pool, r):
    for i in range(SERVERS):
        pool.direct(i).config_set("maxmemory", str((i + 1) * 100 << 20))
    try:
        assert r.config_get("maxmemory") == {"maxmemory": str(100 << 20)}
        assert r.config_get("maxmemory") == pool.direct(0).config_get("maxmemory")
    finally:
        for i in range(SERVERS):
            pool.direct(i).config_set("maxmemory", "0")
    with pytest.raises(redis.ResponseError) as e:
        r.config_set("maxmemory", "1")
    assert str(e.value) == "CONFIG SET is not supported by the proxy: set it on each server"
    for sub in ("REWRITE", "RESETSTAT"):
        with pytest.raises(redis.ResponseError, match=f"CONFIG {sub} is not supported by the proxy"):
            r.execute_command("CONFIG", sub)
    assert pool.direct(0).config_get("maxmemory") == {"maxmemory": "0"}


def test_role_is_a_master_without_replicas(pool):
    with pool.raw() as c:
        c.exchange(resp("ROLE"), ROLE)
        c.send(resp("HELLO", "3"))
        assert c.reply().startswith(b"%")
        c.exchange(resp("ROLE"), ROLE)
        # the proxy's own commands inside MULTI: refused there (documented), as HELLO is
        c.exchange(resp("MULTI"), b"+OK\r\n")
        for args in (("ROLE",), ("CONFIG", "GET", "save"), ("FUNCTION", "LIST")):
            c.exchange(resp(*args), b"-ERR Command not allowed inside a transaction\r\n")
        c.exchange(resp("DISCARD"), b"+OK\r\n")


def test_keyed_introspection_is_the_owners_answer(pool, r, prefix):
    for server, key in enumerate(one_key_each(pool, prefix)):
        owner = pool.direct(server)
        r.rpush(key, *range(5))
        r.expire(key, 1000)
        assert r.object("encoding", key) == owner.object("encoding", key)
        assert r.object("refcount", key) == owner.object("refcount", key)
        assert r.memory_usage(key) == owner.memory_usage(key)
        assert r.execute_command("EXPIRETIME", key) == owner.execute_command("EXPIRETIME", key) > 0
        assert r.execute_command("PEXPIRETIME", key) == owner.execute_command("PEXPIRETIME", key)
        dumped = owner.dump(key)
        copy = f"{{{key}}}:copy"
        assert r.restore(copy, 0, dumped) == b"OK"
        assert pool.holder(copy) == [server]
        assert owner.lrange(copy, 0, -1) == [b"0", b"1", b"2", b"3", b"4"]
    assert r.execute_command("OBJECT", "HELP")
    with pytest.raises(redis.ResponseError, match="MEMORY without a key is not supported by the proxy"):
        r.execute_command("MEMORY", "STATS")


def test_two_key_commands_on_one_server_and_across_servers(pool, r, prefix):
    a, b = f"{{{prefix}}}:a", f"{{{prefix}}}:b"
    (server,) = {pool.server_of(a), pool.server_of(b)}
    r.set(a, "ohmytext")
    r.set(b, "mynewtext")
    assert r.lcs(a, b) == pool.direct(server).lcs(a, b) == b"mytext"
    assert r.rename(a, f"{{{prefix}}}:c") is True
    assert pool.holder(f"{{{prefix}}}:c") == [server]
    assert r.renamenx(f"{{{prefix}}}:c", b) is False
    crossing = one_key_each(pool, prefix)
    r.set(crossing[0], "x")
    for args in (("RENAME", crossing[0], crossing[1]), ("LCS", crossing[0], crossing[2])):
        with pytest.raises(redis.ResponseError) as e:
            r.execute_command(*args)
        assert str(e.value) == (f"the keys of '{args[0].lower()}' are on more than one server "
                                "(hash tags keep them on one)")
    assert r.get(crossing[0]) == b"x"


def test_a_newer_hash_command_gets_the_servers_own_error(pool, r, prefix):
    key = one_key_each(pool, prefix)[2]
    args = ("HEXPIRE", key, 10, "FIELDS", 1, "f")
    with pytest.raises(redis.ResponseError) as direct:
        pool.direct(2).execute_command(*args)
    with pytest.raises(redis.ResponseError) as proxied:
        r.execute_command(*args)
    assert str(proxied.value) == str(direct.value)
    assert "unknown command 'HEXPIRE'" in str(proxied.value)


# ------------------------------------------------------------------------------ redis-benchmark

def test_redis_benchmark_runs_without_a_warning(pool):
    tool = shutil.which("redis-benchmark")
    if tool is None:
        pytest.skip("redis-benchmark is not installed (Debian: redis-tools)")
    tests = ["SET", "GET", "INCR", "LPUSH", "LPOP", "SADD", "MSET (10 keys)"]
    run = subprocess.run([tool, "-h", HOST, "-p", str(pool.port), "-q", "-n", "2000",
                          "-t", "get,set,incr,lpush,lpop,sadd,mset"],
                         capture_output=True, text=True, timeout=120)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    assert "WARN" not in out and "ERR" not in out, out
    rates = {m.group(1): float(m.group(2))
             for m in re.finditer(r"^\s*([A-Z][^:\r\n]*): ([0-9.]+) requests per second", out, re.M)}
    assert {name: rates.get(name, 0) > 0 for name in tests} == {name: True for name in tests}, out
