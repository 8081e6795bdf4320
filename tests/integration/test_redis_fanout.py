"""Redis streams routed by their key, and the commands that concern every server of a pool (4
real redis-servers, -T 2): KEYS merged, DBSIZE summed, RANDOMKEY, SCRIPT LOAD/EXISTS/FLUSH on
every server (EVALSHA then works on keys of every server), FLUSHDB/FLUSHALL only with
redis_flush, PUBSUB's introspection over every server, and SCAN across the servers (its cursor names the server; notes/fan-out.md): a full
iteration of 100,000 keys returns each exactly once, redis-py's scan_iter with MATCH and COUNT."""
import uuid

import pytest
import redis

from nctest import cluster, manage, procs
from nctest.codec import resp

THREADED = True  # the TSan stage runs these too (conftest.py)

SERVERS = 4


def start(kind_fixtures, **pool):
    start_backend, write_conf, start_proxy = kind_fixtures
    return cluster.start_cluster("redis", SERVERS, 2, start_backend, write_conf, start_proxy,
                                 name=f"fan-{uuid.uuid4().hex[:6]}", hash_tag="{}", **pool)


@pytest.fixture(scope="module")
def fan(module_redis_server, module_write_conf, module_nutcrackers):
    c = start((module_redis_server, module_write_conf, module_nutcrackers), redis_flush=True)
    yield c
    assert c.stop() == 0


@pytest.fixture
def prefix():
    return f"fo:{uuid.uuid4().hex[:8]}"


def one_on_each(c, prefix):
    return [group[0] for group in c.place_keys(prefix, 1)]


# ---------------------------------------------------------------------------------------- streams

def test_stream_commands_live_on_their_keys_server(fan, prefix):
    r = fan.client(decode_responses=True)
    for server, key in enumerate(one_on_each(fan, prefix)):
        s = f"{{{key}}}:s"  # the hash tag: on key's server
        ids = [r.xadd(s, {"f": str(i)}) for i in range(5)]
        assert fan.holder(s) == [server]
        assert r.xlen(s) == 5
        assert [e[0] for e in r.xrange(s, count=2)] == ids[:2]
        assert [e[0] for e in r.xrevrange(s, count=1)] == ids[-1:]
        assert r.xdel(s, ids[0]) == 1
        assert r.xgroup_create(s, "g", id="0") is True
        got = r.xreadgroup("g", "c1", {s: ">"}, count=2)
        assert [e[0] for e in got[0][1]] == ids[1:3]
        assert r.xpending(s, "g")["pending"] == 2
        assert len(r.xclaim(s, "g", "c2", 0, [ids[1]])) == 1
        assert r.xautoclaim(s, "g", "c3", 0, "0-0", count=10)[1][0][0] == ids[1]
        assert r.xack(s, "g", ids[1], ids[2]) == 2
        assert r.xinfo_stream(s)["length"] == 4
        assert r.xinfo_groups(s)[0]["name"] == "g"
        assert r.xgroup_createconsumer(s, "g", "c9") == 1
        assert {c["name"] for c in r.xinfo_consumers(s, "g")} >= {"c1", "c9"}
        assert r.xgroup_delconsumer(s, "g", "c9") == 0
        assert r.xtrim(s, maxlen=2, approximate=False) == 2
        assert r.execute_command("XSETID", s, "9999999999999999-0") in (True, b"OK", "OK")
        assert r.xgroup_destroy(s, "g") == 1
        assert fan.direct(server).xlen(s) == 2


def test_xread_of_keys_on_one_server_and_on_several(fan, prefix):
    r = fan.client(decode_responses=True)
    a, b = f"{{{prefix}}}:a", f"{{{prefix}}}:b"  # one hash tag: one server
    r.xadd(a, {"x": "1"}, id="1-0")
    r.xadd(b, {"y": "2"}, id="2-0")
    got = dict(r.xread({a: "0", b: "0"}, count=10))
    assert got == {a: [("1-0", {"x": "1"})], b: [("2-0", {"y": "2"})]}
    keys = [f"{{{k}}}:x" for k in one_on_each(fan, prefix)]
    for k in keys:
        r.xadd(k, {"v": k})
    assert len({fan.holder(k)[0] for k in keys}) == SERVERS
    with pytest.raises(redis.ResponseError, match="keys of 'xread' are on more than one server"):
        r.xread({k: "0" for k in keys})
    with fan.raw() as c:
        # with BLOCK: served on a dedicated connection (nothing new: redis's null after 10 ms)
        c.exchange(resp("XREAD", "BLOCK", "10", "STREAMS", a, "$"), b"*-1\r\n")
        # no STREAMS, an unbalanced list: redis' own errors
        assert c.call("XREAD", "COUNT", "1", "NOACK").startswith("ERR")
        assert c.call("XREAD", "STREAMS", a, b, "0").startswith("ERR Unbalanced")
        assert isinstance(c.call("XGROUP", "HELP"), list)
        assert c.call("XLEN", a) == 1


# -------------------------------------------------------------------- keys, dbsize, randomkey

def written(c, prefix):
    """Every key of prefix, asked of each server itself (place_keys writes more than it keeps)."""
    return sorted(k.decode() for i in range(SERVERS) for k in c.direct(i).keys(f"{prefix}*"))


def test_keys_dbsize_randomkey_cover_every_server(fan, prefix):
    fan.place_keys(prefix, 3)
    everything = written(fan, prefix)
    r = fan.client(decode_responses=True)
    assert sorted(r.keys(f"{prefix}*")) == everything
    assert r.keys(f"{prefix}:nosuch*") == []
    assert r.dbsize() == sum(fan.direct(i).dbsize() for i in range(SERVERS))
    for _ in range(20):
        assert r.exists(r.randomkey()) == 1


def test_flush_and_randomkey_of_an_empty_pool(redis_server, write_conf, nutcrackers):
    c = start((redis_server, write_conf, nutcrackers))  # redis_flush off (the default)
    r = c.client()
    r.set("a", "1")
    for cmd in ("FLUSHDB", "FLUSHALL"):
        with pytest.raises(redis.ResponseError, match=f"{cmd} is disabled on this pool"):
            r.execute_command(cmd)
    assert r.get("a") == b"1"
    assert c.stop() == 0

    c = start((redis_server, write_conf, nutcrackers), redis_flush=True)
    r = c.client()
    c.place_keys("fl", 2)
    assert r.dbsize() == len(written(c, "fl")) >= 2 * SERVERS
    assert r.flushdb() is True
    assert r.dbsize() == 0 and r.randomkey() is None and r.keys() == []
    c.place_keys("fl", 1)
    assert r.flushall(asynchronous=True) is True
    assert all(c.direct(i).dbsize() == 0 for i in range(SERVERS))
    assert c.stop() == 0


# ------------------------------------------------------------------------------------- scripts

def test_script_load_then_evalsha_on_keys_of_every_server(fan, prefix):
    r = fan.client(decode_responses=True)
    body = f"return redis.call('INCRBY', KEYS[1], ARGV[1]) -- {prefix}"
    sha = r.script_load(body)
    assert all(fan.direct(i).script_exists(sha) == [True] for i in range(SERVERS))
    for key in one_on_each(fan, prefix):
        assert r.evalsha(sha, 1, f"{key}:n", 5) == 5
    other = r.script_load(f"return 1 -- {prefix}")
    assert r.script_exists(sha, "0" * 40, other) == [True, False, True]
    # a script missing on one server is missing for the pool
    fan.direct(SERVERS - 1).script_flush()
    assert r.script_exists(sha) == [False]
    script = r.register_script(f"return KEYS[1] -- {prefix}")  # NOSCRIPT, then loaded again
    assert [script(keys=[f"{k}:s"]) for k in one_on_each(fan, prefix)] == \
        [f"{k}:s" for k in one_on_each(fan, prefix)]
    with pytest.raises(redis.ResponseError, match="SCRIPT KILL is not supported"):
        r.script_kill()
    assert r.script_flush() is True
    assert r.script_exists(sha, other) == [False, False]


# ---------------------------------------------------------------------------------------- pubsub

def test_pubsub_introspection_covers_every_server(fan, prefix):
    """Channels subscribed straight on the server each name hashes to (where the proxy's
    SUBSCRIBE puts them), a pattern on every server (as the proxy subscribes one): CHANNELS and
    SHARDCHANNELS list them all, NUMSUB/SHARDNUMSUB count each once, NUMPAT is one pattern."""
    chans = [f"{{{k}}}:ch" for k in one_on_each(fan, prefix)]  # the hash tag: on k's server
    pattern = f"{{{prefix}*"
    subs = []
    try:
        for server, ch in enumerate(chans):
            p = fan.direct(server).pubsub()
            p.subscribe(ch)
            p.psubscribe(pattern)
            p.ssubscribe(ch + ":shard")
            for _ in range(3):
                assert p.get_message(timeout=5) is not None  # the three confirmations
            subs.append(p)
        r = fan.client(decode_responses=True)
        assert sorted(r.pubsub_channels(pattern)) == sorted(chans)
        got = r.pubsub_numsub(*chans, f"{prefix}:none")
        assert got == [(ch, 1) for ch in chans] + [(f"{prefix}:none", 0)]
        assert r.pubsub_numpat() == 1
        shard = [ch + ":shard" for ch in chans]
        assert sorted(r.execute_command("PUBSUB", "SHARDCHANNELS", pattern)) == sorted(shard)
        flat = r.execute_command("PUBSUB", "SHARDNUMSUB", *shard)
        assert flat == [x for ch in shard for x in (ch, 1)]
        assert r.execute_command("PUBSUB", "NUMSUB") == []
        direct = fan.direct(0)
        assert r.execute_command("PUBSUB", "HELP") == [x.decode() for x in direct.execute_command("PUBSUB", "HELP")]
        with pytest.raises(redis.ResponseError) as proxied:
            r.execute_command("PUBSUB", "NOSUCH")
        with pytest.raises(redis.ResponseError) as real:
            direct.execute_command("PUBSUB", "NOSUCH")
        assert str(proxied.value) == str(real.value)
    finally:
        for p in subs:
            p.close()


# ----------------------------------------------------------------------------------------- scan

def test_scan_iter_with_match_and_count(fan, prefix):
    fan.place_keys(prefix, 25)
    everything = written(fan, prefix)
    r = fan.client(decode_responses=True)
    assert sorted(r.scan_iter(match=f"{prefix}*", count=7)) == everything
    assert sorted(r.scan_iter(match=f"{prefix}*", count=1000, _type="string")) == everything
    assert list(r.scan_iter(match=f"{prefix}*", _type="hash")) == []
    r3 = fan.client(protocol=3, decode_responses=True)  # RESP3: the same arrays
    assert sorted(r3.scan_iter(match=f"{prefix}*", count=5)) == everything
    assert sorted(r3.keys(f"{prefix}*")) == everything
    last = sorted(k.decode() for k in fan.direct(SERVERS - 1).keys(f"{prefix}*"))
    with fan.raw() as c:  # inline: the options are passed on as RESP
        c.send(b"SCAN %d MATCH %s* COUNT 100000\r\n" % ((SERVERS - 1) << 48, prefix.encode()))
        cur, keys = c.read()
        assert cur == b"0" and sorted(k.decode() for k in keys) == last
    with fan.raw() as c:
        for bad in ("x", "-1", "18446744073709551616", str(SERVERS << 48), "1.5"):
            c.exchange(resp("SCAN", bad), b"-ERR invalid cursor\r\n")
        # the last server's end is the iteration's end
        cur, _ = c.call("SCAN", str((SERVERS - 1) << 48), "COUNT", "100000")
        assert cur == b"0"
        assert c.call("SCAN", "0", "COUNT", "0").startswith("ERR")  # redis' own error


def test_scan_of_100000_keys_over_4_servers_returns_each_once(redis_server, write_conf, nutcrackers):
    c = start((redis_server, write_conf, nutcrackers))
    r = c.client()
    n = 100_000
    pipe = r.pipeline(transaction=False)
    for i in range(n):
        pipe.set(f"k{i}", "v")
        if i % 5000 == 4999:
            pipe.execute()
    pipe.execute()
    sizes = [c.direct(i).dbsize() for i in range(SERVERS)]
    assert sum(sizes) == n and min(sizes) > 0
    seen = []
    cursor = 0
    for _ in range(n):  # bounded: COUNT 1000 needs far fewer calls
        cursor, keys = r.scan(cursor, count=1000)
        seen += keys
        if cursor == 0:
            break
    assert cursor == 0
    assert len(seen) == n
    assert set(seen) == {f"k{i}".encode() for i in range(n)}
    assert c.stop() == 0


def test_scan_passes_over_an_ejected_server(redis_server, write_conf, nutcrackers):
    c = start((redis_server, write_conf, nutcrackers), auto_eject_hosts=True,
              server_failure_limit=1, server_retry_timeout=600000)
    by_server = c.place_keys("ej", 5)
    held = [sorted(k.decode() for k in c.direct(i).keys("ej*")) for i in range(SERVERS)]
    victim = 1
    procs.kill_popen(c.procs[victim])
    r = c.client(decode_responses=True)
    with pytest.raises(redis.RedisError):  # that failure ejects it (server_failure_limit 1)
        r.get(by_server[victim][0])
    manage.wait_pool_stat(c.proxy.manage_port, c.name, "server_ejects", lambda v: v >= 1)
    assert sorted(r.scan_iter(match="ej*", count=1000)) == sorted(held[0] + held[2] + held[3])
    # a cursor naming the ejected server goes on with the next one, from its start
    cur, keys = r.scan(1 << 48, match="ej*", count=1000)
    assert (cur, sorted(keys)) == (3 << 48, held[2])
    assert c.stop() == 0
