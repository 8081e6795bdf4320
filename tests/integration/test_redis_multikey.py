"""Redis multi-key commands whose keys land on every server (1 and 4 redis-servers, -T 1 and -T 4):
MGET reassembled in key order, DEL / UNLINK / TOUCH / EXISTS summed, MSET one +OK, each checked
byte for byte and on the backends themselves; MSETNX on one server's keys only; EVAL / EVALSHA
routed by their first key."""
import hashlib
import uuid

import pytest

from nctest.keys import spread_keys
from nctest.codec import array, bulk, integer, resp

THREADED = True  # the TSan stage runs these too (conftest.py)


@pytest.fixture
def placed(redis_cluster):
    """Three keys on each server (in server order), and three that exist nowhere."""
    prefix = f"mk:{uuid.uuid4().hex[:8]}"
    by_server = redis_cluster.place_keys(prefix, 3)
    return by_server, [f"{prefix}:missing:{i}" for i in range(3)]


def interleave(by_server):
    """One key from each server in turn: consecutive keys are on different servers."""
    return [key for group in zip(*by_server) for key in group]


def test_mget_in_key_order_with_missing_and_repeated_keys(redis_cluster, placed):
    by_server, missing = placed
    keys = interleave(by_server)
    asked = [missing[0], *keys[:4], missing[1], *keys[4:], keys[0], missing[2], keys[-1], keys[0]]
    expected = array(*[bulk(None if k in missing else k) for k in asked])
    with redis_cluster.raw() as c:
        c.exchange(resp("MGET", *asked), expected)
        # one key: not split
        c.exchange(resp("MGET", keys[-1]), array(bulk(keys[-1])))
        c.exchange(resp("MGET", *missing), array(bulk(None), bulk(None), bulk(None)))
    assert redis_cluster.client().mget(asked) == [None if k in missing else k.encode() for k in asked]


@pytest.mark.parametrize("command", ["DEL", "UNLINK"])
def test_del_and_unlink_are_summed_and_reach_every_server(redis_cluster, placed, command):
    by_server, missing = placed
    keys = interleave(by_server)
    doomed = [k for group in by_server for k in group[:2]]
    with redis_cluster.raw() as c:
        c.exchange(resp(command, missing[0], *doomed, missing[1], doomed[0]), integer(len(doomed)))
        c.exchange(resp(command, *doomed), integer(0))
    for server, group in enumerate(by_server):
        for key in group:
            assert redis_cluster.holder(key) == ([] if key in doomed else [server]), key
    assert redis_cluster.client().exists(*keys) == len(keys) - len(doomed)


def test_exists_and_touch_are_summed(redis_cluster, placed):
    by_server, missing = placed
    keys = interleave(by_server)
    with redis_cluster.raw() as c:
        c.exchange(resp("EXISTS", *keys, *missing), integer(len(keys)))
        c.exchange(resp("EXISTS", keys[0], keys[0], missing[0], keys[-1]), integer(3))
        c.exchange(resp("TOUCH", *missing, *keys), integer(len(keys)))
        c.exchange(resp("TOUCH", *missing), integer(0))


def test_mset_one_ok_and_every_key_on_its_server(redis_cluster, placed):
    by_server, _ = placed
    keys = interleave(by_server)
    pairs = []
    for i, key in enumerate(keys):
        pairs += [key, f"value-{i}-" + "x" * i]
    with redis_cluster.raw() as c:
        c.exchange(resp("MSET", *pairs), b"+OK\r\n")
        c.exchange(resp("MGET", *keys), array(*[bulk(f"value-{i}-" + "x" * i)
                                                for i in range(len(keys))]))
    for server, group in enumerate(by_server):
        for key in group:
            i = keys.index(key)
            assert redis_cluster.direct(server).get(key) == f"value-{i}-".encode() + b"x" * i


def test_msetnx_runs_on_one_server_and_refuses_keys_of_several(redis_cluster, placed):
    """MSETNX is all or nothing: on one server's keys it runs there; keys of several servers get
    the proxy's error and nothing is written anywhere."""
    by_server, _ = placed
    with redis_cluster.raw() as c:
        c.exchange(resp("DEL", *[k for group in by_server for k in group]), integer(3 * len(by_server)))
        c.exchange(resp("MSETNX", by_server[0][0], "a", by_server[0][1], "b"), integer(1))
        c.exchange(resp("MSETNX", by_server[0][0], "x", by_server[0][2], "c"), integer(0))
        if len(by_server) > 1:
            c.exchange(resp("MSETNX", by_server[0][2], "y", by_server[1][0], "z"),
                       b"-ERR the keys of 'msetnx' are on more than one server (hash tags keep them on one)\r\n")
    assert redis_cluster.direct(0).get(by_server[0][0]) == b"a"
    assert redis_cluster.direct(0).get(by_server[0][2]) is None
    if len(by_server) > 1:
        assert redis_cluster.direct(1).get(by_server[1][0]) is None


def test_many_keys_many_times(redis_cluster):
    """500 keys in one MSET / MGET / EXISTS / DEL, pipelined."""
    keys = spread_keys(f"many:{uuid.uuid4().hex[:8]}", 500)
    pairs = [x for i, k in enumerate(keys) for x in (k, str(i))]
    request = (resp("MSET", *pairs) + resp("MGET", *keys) + resp("EXISTS", *keys) +
               resp("DEL", *keys) + resp("MGET", *keys[:3]))
    expected = (b"+OK\r\n" + array(*[bulk(str(i)) for i in range(500)]) + integer(500) +
                integer(500) + array(bulk(None), bulk(None), bulk(None)))
    with redis_cluster.raw() as c:
        c.exchange(request, expected)


def test_inline_multikey(redis_cluster, placed):
    by_server, missing = placed
    keys = interleave(by_server)
    with redis_cluster.raw() as c:
        c.exchange(f"MGET {' '.join(keys)} {missing[0]}\r\n".encode(),
                   array(*[bulk(k) for k in keys], bulk(None)))
        c.exchange(f"EXISTS {' '.join(keys)}\r\n".encode(), integer(len(keys)))


SCRIPT = "redis.call('set', KEYS[1], ARGV[1]) return redis.call('get', 'whoami')"


def test_eval_and_evalsha_route_by_first_key(redis_cluster, placed):
    """Each backend holds a 'whoami' key with its index (set directly): the script tells which
    server ran it, and that must be the first key's, whatever the other keys."""
    by_server, _ = placed
    for i in range(len(redis_cluster.ports)):
        redis_cluster.direct(i).set("whoami", str(i))
    sha = hashlib.sha1(SCRIPT.encode()).hexdigest()
    n = len(by_server)
    with redis_cluster.raw() as c:
        # before any EVAL, no server knows the script
        c.send(resp("EVALSHA", sha, "1", by_server[0][0], "x"))
        assert c.reply().startswith(b"-NOSCRIPT")
        for server, group in enumerate(by_server):
            other = by_server[(server + 1) % n][0]
            c.exchange(resp("EVAL", SCRIPT, "2", group[0], other, "e"), bulk(str(server)))
            c.exchange(resp("EVALSHA", sha, "2", group[1], other, "s"), bulk(str(server)))
            assert redis_cluster.direct(server).get(group[0]) == b"e"
            assert redis_cluster.direct(server).get(group[1]) == b"s"
