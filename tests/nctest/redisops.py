"""One sequence of redis-py calls over every data type, multi-key commands, pipelines and a
transaction, whose results a test compares between the proxy and a redis-server (the oracle): the
same client library and protocol on both sides must read the same values, so a RESP3 map, set or
double that the proxy mangled shows up as a difference. Works with any redis-py from 4.x on, in
the test's interpreter or in a child one (nctest.pinned).

Threads: the caller's client.
"""


def canonical(value):
    """A comparable, JSON-able form of a redis-py result: sets sorted, dicts as sorted pairs,
    bytes as text, floats rounded to what a double round-trip keeps."""
    if isinstance(value, (set, frozenset)):
        return ["set"] + sorted(canonical(v) for v in value)
    if isinstance(value, dict):
        return ["dict"] + sorted([canonical(k), canonical(v)] for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [type(value).__name__] + [canonical(v) for v in value]
    if isinstance(value, bytes):
        return "b:" + value.decode("latin-1")
    if isinstance(value, bool):
        return ["bool", value]
    if isinstance(value, float):
        return ["float", repr(value)]
    if isinstance(value, BaseException):
        return ["error", type(value).__name__, str(value)]
    return [type(value).__name__, value if isinstance(value, (int, str)) or value is None else repr(value)]


def run(r, tag, spread):
    """Runs the sequence on client r: tag makes the hash-tagged keys of the transaction (one
    server through the proxy), spread are keys that map to different servers (multi-key commands
    split over them). Returns the canonical results, in order. The keys are deleted at the end."""
    out = []
    k = {n: f"{{{tag}}}:{n}" for n in ("s", "n", "h", "l", "set", "z", "f", "t1", "t2", "t3")}

    def step(fn, *args, **kw):
        try:
            out.append(canonical(fn(*args, **kw)))
        except Exception as e:  # the same error on both sides is a same result
            out.append(canonical(e))

    step(r.ping)
    step(r.set, k["s"], "v")
    step(r.get, k["s"])
    step(r.get, k["s"] + ":missing")
    step(r.append, k["s"], "w")
    step(r.strlen, k["s"])
    step(r.getrange, k["s"], 0, 0)
    step(r.set, k["n"], 10)
    step(r.incr, k["n"])
    step(r.incrbyfloat, k["n"], 0.25)
    step(r.type, k["n"])
    step(r.ttl, k["n"])
    step(r.expire, k["n"], 1000)
    step(r.persist, k["n"])
    # hashes: maps in RESP3
    step(r.hset, k["h"], mapping={"a": "1", "b": "2", "c": "x"})
    step(r.hgetall, k["h"])
    step(r.hget, k["h"], "a")
    step(r.hmget, k["h"], ["a", "nope", "b"])
    step(r.hincrbyfloat, k["h"], "a", 1.5)
    step(r.hincrby, k["h"], "b", 3)
    step(r.hkeys, k["h"])
    step(r.hvals, k["h"])
    step(r.hlen, k["h"])
    step(r.hexists, k["h"], "zz")
    step(r.hgetall, k["h"] + ":missing")
    # lists
    step(r.rpush, k["l"], "a", "b", "c", "b")
    step(r.lrange, k["l"], 0, -1)
    step(r.lpos, k["l"], "b")
    step(r.lpop, k["l"])
    step(r.lpop, k["l"], 2)
    step(r.llen, k["l"])
    step(r.lindex, k["l"], 5)
    # sets: sets in RESP3
    step(r.sadd, k["set"], "x", "y", "z")
    step(r.smembers, k["set"])
    step(r.sismember, k["set"], "y")
    step(r.smismember, k["set"], ["x", "q"])
    step(r.scard, k["set"])
    step(r.srem, k["set"], "z")
    step(r.smembers, k["set"] + ":missing")
    # sorted sets: doubles in RESP3
    step(r.zadd, k["z"], {"m1": 1.5, "m2": 2, "m3": -0.125})
    step(r.zscore, k["z"], "m1")
    step(r.zscore, k["z"], "none")
    step(r.zrange, k["z"], 0, -1)
    step(r.zrange, k["z"], 0, -1, withscores=True)
    step(r.zrangebyscore, k["z"], 0, 10, withscores=True)
    step(r.zincrby, k["z"], 0.5, "m2")
    step(r.zmscore, k["z"], ["m1", "none"])
    step(r.zrank, k["z"], "m2")
    step(r.zpopmin, k["z"])
    step(r.zcard, k["z"])
    # errors come back the same
    step(r.lpush, k["s"], "x")
    step(r.incr, k["s"])
    # a pipeline (no transaction): every reply in order
    p = r.pipeline(transaction=False)
    p.set(k["f"], "1").incr(k["f"]).get(k["f"]).hgetall(k["h"]).smembers(k["set"]).zscore(k["z"], "m2")
    p.echo("hi").ping()
    step(p.execute)
    # multi-key commands over servers: split by the proxy, merged back
    pairs = {key: f"val-{i}" for i, key in enumerate(spread)}
    step(r.mset, pairs)
    step(r.mget, list(spread) + [spread[0] + ":missing"])
    step(r.exists, *spread)
    step(r.touch, *spread)
    step(r.delete, *spread, spread[0] + ":missing")
    step(r.mget, list(spread))
    # a transaction on hash-tagged keys (one server)
    t = r.pipeline(transaction=True)
    t.set(k["t1"], "1").incr(k["t1"]).rpush(k["t2"], "a", "b").lrange(k["t2"], 0, -1)
    t.hset(k["t3"], "f", "v").hgetall(k["t3"]).get(k["t1"]).ping()
    step(t.execute)
    # still usable afterwards
    step(r.ping)
    step(r.echo, "after")
    step(r.get, k["t1"])
    step(r.delete, *k.values())
    return out
