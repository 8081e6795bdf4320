"""redis Pub/Sub through the proxy, against 4 real redis-servers behind -T 1 and -T 4: PUBLISH and
SPUBLISH are routed by their channel as a key (hash tags apply), so they reach the server a
subscriber of that channel is on."""
import uuid

import pytest

from nctest.cluster import matrix_id, start_cluster

THREADED = True  # the TSan stage runs these too (conftest.py)

PUBSUB_MATRIX = [(4, 1), (4, 4)]


@pytest.fixture(scope="module", params=PUBSUB_MATRIX, ids=matrix_id)
def ps(request, module_redis_server, module_write_conf, module_nutcrackers):
    """A Cluster: 4 redis-servers behind a proxy (-T 1 or -T 4, hash_tag "{}")."""
    backends, threads = request.param
    cluster = start_cluster("redis", backends, threads, module_redis_server,
                            module_write_conf, module_nutcrackers,
                            name=f"pubsub-{matrix_id(request.param)}", hash_tag="{}")
    yield cluster
    rc = cluster.stop()
    assert rc == 0, f"the proxy exited with status {rc}"


def fresh(prefix):
    return f"{prefix}:{uuid.uuid4().hex[:10]}"


def test_publish_reaches_the_channels_server(ps):
    """PUBLISH goes to the server its channel hashes to: a subscriber there (straight to the
    backend) gets the message, and the reply is that server's receiver count."""
    r = ps.client()
    for i in range(8):
        ch = fresh(f"pub{i}")
        where = ps.server_of(ch)
        sub = ps.direct(where).pubsub()
        sub.subscribe(ch)
        assert sub.get_message(timeout=5)["type"] == "subscribe"
        assert r.publish(ch, f"m{i}") == 1
        msg = sub.get_message(timeout=5)
        assert msg["type"] == "message" and msg["data"] == f"m{i}".encode(), msg
        sub.close()
        assert r.publish(fresh("nobody"), "x") == 0


def test_spublish_routes_by_hash_tag(ps):
    """SPUBLISH names a shard channel: routed like a key, so a hash tag keeps channels together."""
    r = ps.client()
    tag = uuid.uuid4().hex[:6]
    chans = [f"{{{tag}}}:s{i}" for i in range(4)]
    where = {ps.server_of(ch) for ch in chans}
    assert len(where) == 1
    sub = ps.direct(where.pop()).pubsub()
    sub.ssubscribe(*chans)
    for _ in chans:
        assert sub.get_sharded_message(timeout=5)["type"] == "ssubscribe"
    for i, ch in enumerate(chans):
        assert r.spublish(ch, f"v{i}") == 1
        msg = sub.get_sharded_message(timeout=5)
        assert msg["type"] == "smessage" and msg["channel"] == ch.encode() and msg["data"] == f"v{i}".encode()
    sub.close()
