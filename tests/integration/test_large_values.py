"""1 MB and 64 MB values through the proxy (1 and 4 backends, -T 1 and -T 4): stored whole on the
backend, read back byte for byte, alone and inside multi-key replies."""
import uuid

import pytest

from nctest import codec
from nctest.keys import big_value, digest, spread_keys
from nctest.codec import array, bulk, resp
from nctest.conn import BIG_TIMEOUT

MB = 1 << 20
MEMCACHED_ARGS = ("-I", "128m", "-m", "2048")  # items up to 128 MB
SIZES = pytest.mark.parametrize("size", [1 * MB, 64 * MB], ids=["1MB", "64MB"])


@SIZES
def test_redis_large_value(redis_cluster, size):
    value = big_value(size, seed=b"%d" % size)
    key = f"big:{uuid.uuid4().hex}"
    client = redis_cluster.client(socket_timeout=BIG_TIMEOUT)
    assert client.set(key, value)
    (where,) = redis_cluster.holder(key)
    backend = redis_cluster.direct(where)
    assert backend.strlen(key) == size
    assert backend.getrange(key, size - 100, size - 1) == value[-100:]
    assert digest(client.get(key)) == digest(value)
    assert client.delete(key) == 1
    client.close()


def test_redis_large_value_in_mget(redis_cluster):
    """A 1 MB value inside an MGET split over the servers, between small values and a miss."""
    value = big_value(MB, seed=b"mget")
    key = f"big:{uuid.uuid4().hex}"
    small = spread_keys(f"small:{uuid.uuid4().hex[:6]}", 6)
    with redis_cluster.raw(timeout=BIG_TIMEOUT) as c:
        c.exchange(resp("SET", key, value) + resp("MSET", *[x for k in small for x in (k, k)]),
                   b"+OK\r\n" * 2)
        c.exchange(resp("MGET", small[0], key, "nope:" + key, *small[1:]),
                   array(bulk(small[0]), bulk(value), bulk(None), *[bulk(k) for k in small[1:]]))


def mc_store(key, value):
    return codec.mc_store("set", key, value, flags=7)


def mc_value(key, value):
    return codec.mc_value(key, value, flags=7)


@SIZES
def test_memcache_large_value(mc_cluster, size):
    value = big_value(size, seed=b"mc%d" % size)
    key = f"big:{uuid.uuid4().hex}"
    with mc_cluster.raw(timeout=BIG_TIMEOUT) as c:
        c.exchange(mc_store(key, value), b"STORED\r\n")
        (where,) = mc_cluster.holder(key)
        assert mc_cluster.mc_size(where, key) == size
        c.send(b"get %s\r\n" % key.encode())
        got = c.mc_get_reply()
        assert len(got) == len(mc_value(key, value)) + 5
        assert got == mc_value(key, value) + b"END\r\n"
        c.exchange(b"delete %s\r\n" % key.encode(), b"DELETED\r\n")


def test_memcache_large_value_in_multiget(mc_cluster):
    value = big_value(MB, seed=b"multiget")
    key = f"big:{uuid.uuid4().hex}"
    small = spread_keys(f"small{uuid.uuid4().hex[:6]}", 6)
    with mc_cluster.raw(timeout=BIG_TIMEOUT) as c:
        c.exchange(mc_store(key, value) + b"".join(mc_store(k, k.encode()) for k in small),
                   b"STORED\r\n" * (len(small) + 1))
        c.exchange(f"get {small[0]} {key} nope{key} {' '.join(small[1:])}\r\n".encode(),
                   mc_value(small[0], small[0].encode()) + mc_value(key, value) +
                   b"".join(mc_value(k, k.encode()) for k in small[1:]) + b"END\r\n")
