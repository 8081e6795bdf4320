"""redis transactions through the proxy (MULTI, EXEC, DISCARD, WATCH, UNWATCH), against real
redis-servers, 2 of them behind -T 1 and -T 4: a transaction whose keys map to one server runs
there with redis's own semantics on a dedicated server connection; one whose keys cross servers
is refused whole (nothing reaches any backend, EXEC answers -EXECABORT); WATCH aborts EXEC when a
watched key changes; a client that leaves mid-transaction leaves nothing behind; an exhausted
dedicated set answers an error at once. The reply texts are checked byte for byte against a
redis-server answering the same sequence (redis is the oracle)."""
import uuid

import pytest
import redis

import ncmanage
import ncproxy
from ncproxy import RawConn, resp

THREADED = True  # the TSan stage runs these too (conftest.py)

TXN_MATRIX = [(2, 1), (2, 4)]


@pytest.fixture(scope="module", params=TXN_MATRIX, ids=ncproxy.matrix_id)
def txn(request, module_redis_server, module_write_conf, module_nutcrackers):
    """A Cluster: 2 redis-servers behind a proxy (-T 1 or -T 4, hash_tag "{}"), shared by the
    module's tests."""
    backends, threads = request.param
    cluster = ncproxy.start_cluster("redis", backends, threads, module_redis_server,
                                    module_write_conf, module_nutcrackers,
                                    name=f"txn-{ncproxy.matrix_id(request.param)}", hash_tag="{}")
    yield cluster
    rc = cluster.stop()
    assert rc == 0, f"the proxy exited with status {rc}"


def server_of(cluster, key):
    """The index of the server the proxy routes key to (asked from the manage port)."""
    line = ncmanage.command(cluster.proxy.manage_port, f"find_key {cluster.proxy.conf_path.stem} {key}")
    addr = line.split()[0]
    port = int(addr.split(":")[1])
    return cluster.ports.index(port)


def keys_apart(cluster, prefix):
    """Two fresh keys that the proxy routes to two different servers: (key0, key1, name0, name1)
    with the servers' stats names."""
    keys = ncproxy.spread_keys(f"{prefix}:{uuid.uuid4().hex[:8]}", 64)
    first = keys[0]
    s0 = server_of(cluster, first)
    for k in keys[1:]:
        s1 = server_of(cluster, k)
        if s1 != s0:
            return first, k, stats_name(cluster, s0), stats_name(cluster, s1)
    raise AssertionError("no two keys on different servers")


def stats_name(cluster, i):
    return f"127.0.0.1:{cluster.ports[i]}:1"


def nowhere(cluster, *keys):
    """True when no backend holds any of keys."""
    return all(cluster.holder(k) == [] for k in keys)


def test_cross_server_pipeline_transaction_writes_nothing(txn):
    """redis-py's default pipeline is a MULTI/EXEC transaction: when its keys cross servers it
    must fail whole, with nothing written anywhere, and the connection stays usable."""
    a, b, name_a, name_b = keys_apart(txn, "cross")
    r = txn.client()
    pipe = r.pipeline(transaction=True)
    pipe.set(a, "1")
    pipe.set(b, "2")
    pipe.incr(a)
    with pytest.raises(redis.ResponseError):
        pipe.execute()
    assert nowhere(txn, a, b)
    assert r.ping()
    assert r.set(a, "x") and r.get(a) == b"x"
    r.delete(a)
    r.close()


def test_hash_tagged_pipeline_transaction_applies(txn):
    tag = uuid.uuid4().hex[:8]
    a, b = f"{{t{tag}}}:a", f"{{t{tag}}}:b"
    r = txn.client()
    pipe = r.pipeline(transaction=True)
    pipe.set(a, "1").incr(a).rpush(b, "x", "y").lrange(b, 0, -1).get(a)
    assert pipe.execute() == [True, 2, 2, [b"x", b"y"], b"2"]
    (where,) = txn.holder(a)
    assert txn.holder(b) == [where]
    assert txn.direct(where).get(a) == b"2"
    r.delete(a, b)
    r.close()
