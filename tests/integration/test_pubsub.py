"""redis Pub/Sub through the proxy, against 4 real redis-servers behind -T 1 and -T 4 (and a few
proxies of their own): PUBLISH and SPUBLISH are routed by their channel as a key (hash tags
apply); SUBSCRIBE, SSUBSCRIBE and their UNSUBSCRIBEs go to the channel's server on a dedicated
connection of the subscriber, PSUBSCRIBE to every server; the confirmations count the client's own
subscriptions as redis does (checked byte for byte against a redis-server, RESP2 and RESP3), a
message reaches a pattern subscriber once, a subscriber that leaves leaves nothing on the servers,
one that never reads is dropped at its memory limit while the others go on, and a reload keeps
subscribers served. redis-py's PubSub (get_message, run_in_thread) is used as a user would."""
import socket
import threading
import time
import uuid
from collections import Counter

import pytest

from nctest import procfs, procs
from nctest.cluster import matrix_id, start_cluster
from nctest.codec import resp
from nctest.conf import write_conf as replace_conf
from nctest.conn import Closed, RawConn, redis_client_fields
from nctest.keys import spread_keys
from nctest.manage import command as manage_command
from nctest.manage import status as manage_status
from nctest.wait import wait_for

THREADED = True  # the TSan stage runs these too (conftest.py)

PUBSUB_MATRIX = [(4, 1), (4, 4)]
WAIT = 10.0  # seconds for a message or a clean-up (scaled)


@pytest.fixture(scope="module", params=PUBSUB_MATRIX, ids=matrix_id)
def ps(request, module_redis_server, module_write_conf, module_nutcrackers):
    """A Cluster: 4 redis-servers behind a proxy (-T 1 or -T 4, hash_tag "{}")."""
    backends, threads = request.param
    cluster = start_cluster("redis", backends, threads, module_redis_server,
                            module_write_conf, module_nutcrackers,
                            name=f"pubsub-{matrix_id(request.param)}", hash_tag="{}",
                            dedicated_connections=64)
    yield cluster
    rc = cluster.stop()
    assert rc == 0, f"the proxy exited with status {rc}"


def fresh(prefix):
    return f"{prefix}:{uuid.uuid4().hex[:10]}"


def messages(sub, n, kind="get_message"):
    """The next n messages (not confirmations) of redis-py PubSub sub, bounded."""
    out = []
    end = time.monotonic() + WAIT
    while len(out) < n and time.monotonic() < end:
        m = getattr(sub, kind)(timeout=0.5)
        if m is not None and m["type"] in ("message", "pmessage", "smessage"):
            out.append(m)
    return out


def nothing_more(sub, kind="get_message"):
    """No message arrives within a short while (a duplicate would)."""
    m = getattr(sub, kind)(timeout=0.3)
    return m is None


def numsub(cluster, channel):
    """PUBSUB NUMSUB of channel summed over the backends."""
    return sum(dict(zip(*[iter(cluster.direct(i).execute_command("PUBSUB", "NUMSUB", channel))] * 2))
               .get(channel.encode(), 0) for i in range(len(cluster.ports)))


def numpat(cluster):
    return [cluster.direct(i).execute_command("PUBSUB", "NUMPAT") for i in range(len(cluster.ports))]


def backend_subscribers(cluster):
    """The backends' client connections in subscribed state (CLIENT LIST sub/psub/ssub > 0)."""
    n = 0
    for i in range(len(cluster.ports)):
        for c in cluster.direct(i).client_list():
            if int(c.get("sub", 0)) + int(c.get("psub", 0)) + int(c.get("ssub", 0)) > 0:
                n += 1
    return n


# ----------------------------------------------------------------------------- PUBLISH, SPUBLISH

def test_publish_reaches_the_channels_server(ps):
    """PUBLISH goes to the server its channel hashes to: a subscriber there (straight to the
    backend) gets the message, and the reply is that server's receiver count."""
    r = ps.client()
    for i in range(8):
        ch = fresh(f"pub{i}")
        sub = ps.direct(ps.server_of(ch)).pubsub()
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


# ----------------------------------------------------------------------------- subscribing

@pytest.mark.parametrize("protocol", [2, 3])
def test_many_channels_each_get_their_messages(ps, protocol):
    """200 channels over the 4 servers in one SUBSCRIBE: confirmations in argument order with the
    client's counts 1..200; every message published through the proxy arrives once, on its
    channel; the PUBLISH reply counts the subscriber."""
    chans = [fresh(f"many{i}") for i in range(200)]
    assert len({ps.server_of(ch) for ch in chans}) == 4
    r = ps.client(protocol=protocol)
    sub = ps.client(protocol=protocol).pubsub()
    sub.subscribe(*chans)
    confirms = [sub.get_message(timeout=5) for _ in chans]
    assert [(m["type"], m["channel"], m["data"]) for m in confirms] == \
        [("subscribe", ch.encode(), i + 1) for i, ch in enumerate(chans)]
    for round_ in range(3):
        for ch in chans:
            assert r.publish(ch, f"{ch}/{round_}") == 1
    got = messages(sub, 600)
    assert len(got) == 600
    assert Counter(m["channel"] for m in got) == Counter({ch.encode(): 3 for ch in chans})
    assert all(m["data"].startswith(m["channel"] + b"/") for m in got)
    assert nothing_more(sub)
    sub.unsubscribe()
    unsubs = [sub.get_message(timeout=5) for _ in chans]
    assert sorted(m["channel"] for m in unsubs) == sorted(ch.encode() for ch in chans)
    assert sorted(m["data"] for m in unsubs) == list(range(200))
    wait_for(lambda: numsub(ps, chans[0]) == 0, WAIT, "the channels unsubscribed on the backends")
    sub.close()


@pytest.mark.parametrize("protocol", [2, 3])
def test_pattern_receives_from_every_server_once(ps, protocol):
    """A pattern is subscribed on every server: a message published on any of them (through the
    proxy, or straight to a backend) reaches the subscriber exactly once."""
    prefix = fresh("pat")
    sub = ps.client(protocol=protocol).pubsub()
    sub.psubscribe(f"{prefix}:*")
    m = sub.get_message(timeout=5)
    assert (m["type"], m["data"]) == ("psubscribe", 1)  # one confirmation, not one per server
    assert numpat(ps) == [1, 1, 1, 1]
    chans = [f"{prefix}:{uuid.uuid4().hex}" for _ in range(40)]
    assert len({ps.server_of(ch) for ch in chans}) == 4
    r = ps.client()
    for ch in chans:
        assert r.publish(ch, "via-proxy") == 1
    for i in range(4):  # one channel name, published on each backend
        assert ps.direct(i).publish(f"{prefix}:direct", f"on{i}") == 1
    got = messages(sub, 44)
    assert len(got) == 44 and all(m["type"] == "pmessage" for m in got)
    assert Counter(m["channel"] for m in got if m["data"] == b"via-proxy") == \
        Counter({ch.encode(): 1 for ch in chans})
    assert sorted(m["data"] for m in got if m["channel"] == f"{prefix}:direct".encode()) == \
        [b"on0", b"on1", b"on2", b"on3"]
    assert nothing_more(sub)
    sub.punsubscribe()
    m = sub.get_message(timeout=5)
    assert (m["type"], m["data"]) == ("punsubscribe", 0)
    wait_for(lambda: numpat(ps) == [0, 0, 0, 0], WAIT, "the pattern gone from every backend")
    sub.close()


@pytest.mark.parametrize("protocol", [2, 3])
def test_sharded_channels(ps, protocol):
    """SSUBSCRIBE on hash-tagged and plain shard channels: SPUBLISH reaches them, the counts are
    the shard channels' own (redis counts them apart from channels and patterns)."""
    tag = uuid.uuid4().hex[:6]
    chans = [f"{{{tag}}}:a", f"{{{tag}}}:b"] + [fresh(f"shard{i}") for i in range(10)]
    sub = ps.client(protocol=protocol).pubsub()
    sub.subscribe(fresh("plain"))
    assert sub.get_message(timeout=5)["data"] == 1
    sub.ssubscribe(*chans)
    confirms = [sub.get_sharded_message(timeout=5) for _ in chans]
    assert [(m["type"], m["data"]) for m in confirms] == [("ssubscribe", i + 1) for i in range(len(chans))]
    r = ps.client()
    for ch in chans:
        assert r.spublish(ch, ch) == 1
    got = messages(sub, len(chans), "get_sharded_message")
    assert sorted(m["channel"] for m in got) == sorted(ch.encode() for ch in chans)
    assert all(m["type"] == "smessage" and m["data"] == m["channel"] for m in got)
    sub.close()


def raw_exchange(conn, steps):
    """Sends each request of steps (request args, number of replies) and returns the raw replies."""
    out = []
    for args, n in steps:
        conn.send(resp(*args))
        out.append([conn.reply() for _ in range(n)])
    return out


SEQUENCE = [
    (("SUBSCRIBE", "a", "b", "a"), 3),
    (("PSUBSCRIBE", "p*"), 1),
    (("SSUBSCRIBE", "s"), 1),
    (("UNSUBSCRIBE", "b", "x"), 2),
    (("PING",), 1),
    (("PING", "hi"), 1),
    (("UNSUBSCRIBE",), 1),
    (("UNSUBSCRIBE",), 1),
    (("PUNSUBSCRIBE", "q*"), 1),
    (("SUNSUBSCRIBE",), 1),
    (("PUNSUBSCRIBE",), 1),
    (("UNSUBSCRIBE",), 1),
    (("PING",), 1),
    (("SUBSCRIBE", "z"), 1),
    (("RESET",), 1),
    (("PING",), 1),
]
RESP2_ONLY = [
    (("SUBSCRIBE", "a"), 1),
    (("GET", "x"), 1),
    (("CLIENT", "SETNAME", "n"), 1),
    (("MULTI",), 1),
    (("UNSUBSCRIBE",), 1),
]
RESP3_ONLY = [
    (("SUBSCRIBE", "a"), 1),
    (("SET", "pubsub:k", "v"), 1),
    (("GET", "pubsub:k"), 1),
    (("UNSUBSCRIBE",), 1),
]


def against_redis(cluster, protocol, exchange):
    """exchange(conn) on a fresh connection to the proxy and to a redis-server (after HELLO 3 for
    protocol 3): {"proxy": what it returned, "redis": ...}."""
    got = {}
    for name, port in (("proxy", cluster.port), ("redis", cluster.ports[0])):
        with RawConn(port) as conn:
            if protocol == 3:
                conn.send(resp("HELLO", "3"))
                conn.reply()
            got[name] = exchange(conn)
    return got


@pytest.mark.parametrize("protocol", [2, 3])
def test_replies_as_redis(ps, protocol):
    """The replies of a sequence of (un)subscriptions, PINGs and other commands while subscribed,
    byte for byte those of a redis-server (redis is the oracle): counts, null channel, RESP2's
    subscribed mode (["pong", msg], redis 7's refusal), RESP3's pushes and normal replies."""
    steps = SEQUENCE + (RESP2_ONLY if protocol == 2 else RESP3_ONLY)
    got = against_redis(ps, protocol, lambda conn: raw_exchange(conn, steps))
    for (args, _), mine, theirs in zip(steps, got["proxy"], got["redis"]):
        assert mine == theirs, args


@pytest.mark.parametrize("protocol", [2, 3])
def test_pipelined_replies_as_redis(ps, protocol):
    """The same sequence written at once (a pipeline: confirmations still awaited while the next
    requests are answered): the replies, in order, byte for byte a redis-server's."""
    steps = SEQUENCE + (RESP2_ONLY if protocol == 2 else RESP3_ONLY)
    total = sum(n for _, n in steps)

    def pipelined(conn):
        conn.send(b"".join(resp(*args) for args, _ in steps))
        return [conn.reply() for _ in range(total)]

    got = against_redis(ps, protocol, pipelined)
    assert got["proxy"] == got["redis"]


def test_subscribe_inside_multi_is_refused(ps):
    """A subscription inside MULTI would be left on the transaction's connection: refused, and the
    transaction is aborted."""
    with RawConn(ps.port) as conn:
        assert conn.call("MULTI") == "OK"
        assert str(conn.call("SUBSCRIBE", "a")).startswith("ERR Command not allowed inside a transaction")
        assert str(conn.call("EXEC")).startswith("EXECABORT")
        assert conn.call("PING") == "PONG"


# ----------------------------------------------------------------------------- leaving

def test_subscribers_that_leave_leave_nothing(ps):
    """Subscribers (channels, patterns, shard channels, RESP2 and RESP3) that disconnect, or
    unsubscribe from everything, give their dedicated connections up: the proxy's fd count is
    back to its baseline and no backend has a subscribed client left."""
    pid = ps.pid()
    warm = ps.client()
    warm.ping()
    base = procfs.fd_count(pid)
    subs = []
    for i in range(12):
        s = ps.client(protocol=2 + i % 2).pubsub()
        s.subscribe(*[fresh(f"leave{i}.{j}") for j in range(8)])
        s.psubscribe(f"{fresh('leavep')}*")
        s.ssubscribe(fresh("leaves"))
        for _ in range(10):
            assert s.get_message(timeout=5) is not None or s.get_sharded_message(timeout=5) is not None
        subs.append(s)
    wait_for(lambda: backend_subscribers(ps) >= 12, WAIT, "the subscribers on the backends")
    assert procfs.fd_count(pid) > base
    for i, s in enumerate(subs):
        if i % 3 == 0:  # unsubscribes from everything, stays connected
            s.unsubscribe()
            s.punsubscribe()
            s.sunsubscribe()
            for _ in range(10):
                s.get_message(timeout=0.2)
        else:
            s.close()
    wait_for(lambda: backend_subscribers(ps) == 0, WAIT, "no subscribed client on any backend")
    wait_for(lambda: numpat(ps) == [0, 0, 0, 0], WAIT, "no pattern on any backend")
    for i, s in enumerate(subs):
        if i % 3 == 0:
            s.close()
    wait_for(lambda: procfs.fd_count(pid) == base, WAIT, f"the proxy's fds back to {base}")
    assert warm.ping()


def test_exhausted_dedicated_set_answers_at_once(redis_server, write_conf, nutcrackers):
    """With dedicated_connections: 1, a second subscriber to the same server gets the error at
    once; the first one's subscription works; once it leaves, the second can subscribe."""
    cluster = start_cluster("redis", 1, 1, redis_server, write_conf, nutcrackers, name="pubsub-busy",
                            dedicated_connections=1)
    first = cluster.client().pubsub()
    first.subscribe("a")
    assert first.get_message(timeout=5)["type"] == "subscribe"
    with RawConn(cluster.port) as conn:
        reply = conn.call("SUBSCRIBE", "b")
        assert str(reply).startswith("ERR no dedicated connection free to server"), reply
        assert "dedicated_connections: 1" in str(reply)
        assert conn.call("GET", "x") is None  # not subscribed: served as usual
    assert cluster.client().publish("a", "hello") == 1
    assert messages(first, 1)[0]["data"] == b"hello"
    first.close()
    second = cluster.client().pubsub()

    def subscribed():
        second.subscribe("b")
        m = second.get_message(timeout=2)
        return m is not None and m["type"] == "subscribe"

    wait_for(subscribed, WAIT, "a subscription once the first subscriber left")
    second.close()
    assert cluster.stop() == 0


# ----------------------------------------------------------------------------- slow subscribers

def test_subscriber_that_never_reads_is_dropped_others_go_on(redis_server, write_conf, nutcrackers):
    """A subscriber that never reads while messages keep coming is bounded like any slow client:
    dropped at its memory limit (the proxy's memory stays bounded), while another subscriber of
    the same channel receives every message."""
    cluster = start_cluster("redis", 2, 2, redis_server, write_conf, nutcrackers, name="pubsub-slow")
    ch = fresh("slow")
    stalled = socket.create_connection(("127.0.0.1", cluster.port))
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stalled.sendall(resp("SUBSCRIBE", ch))
    reader = cluster.client().pubsub()
    reader.subscribe(ch)
    assert reader.get_message(timeout=5)["type"] == "subscribe"
    r = cluster.client()
    wait_for(lambda: r.publish(ch, "x") == 2, WAIT, "both subscribers subscribed")
    value = b"v" * (256 << 10)
    received = []
    stop = threading.Event()

    def read_all():
        while not stop.is_set():
            m = reader.get_message(timeout=0.5)
            if m is not None and m["type"] == "message" and m["data"] != b"x":
                received.append(len(m["data"]))

    t = threading.Thread(target=read_all)
    t.start()
    sent = 0
    peak = 0
    try:
        # 256 MB held by the stalled client (its limit), plus what the sockets take
        for _ in range(2000):
            # the reader stays less than 16 MB behind (it must not reach the limit itself)
            wait_for(lambda: sent - len(received) < 64, WAIT * 3, "the reader to catch up")
            n = r.publish(ch, value)
            sent += 1
            if sent % 50 == 0:
                peak = max(peak, procfs.rss_kb(cluster.pid()))
            if n == 1:  # the stalled subscriber is gone: only the reader is left
                break
        assert n == 1, "the stalled subscriber was never dropped"
        for _ in range(20):
            assert r.publish(ch, value) == 1
            sent += 1
        wait_for(lambda: len(received) >= sent, WAIT * 3, "the reader got every message")
    finally:
        stop.set()
        t.join()
        stalled.close()
    assert len(received) == sent and all(n == len(value) for n in received)
    if not procs.sanitized_binary():  # (a sanitizer's shadow and quarantine make RSS say little)
        assert peak < 1024 * 1024, f"the proxy's RSS reached {peak} kB"
    assert "dropping the client" in cluster.proxy.log()
    reader.close()
    assert cluster.stop() == 0


# ----------------------------------------------------------------------------- reload, threads

def test_reload_keeps_subscribers(redis_server, write_conf, nutcrackers):
    """A reload (the config changed) keeps a subscriber on its connections: it goes on receiving,
    and unsubscribing afterwards works; a new subscriber after the reload works too."""
    cluster = start_cluster("redis", 2, 2, redis_server, write_conf, nutcrackers, name="pubsub-reload")
    chans = [fresh(f"rl{i}") for i in range(20)]
    sub = cluster.client().pubsub()
    sub.subscribe(*chans)
    sub.psubscribe("rlp:*")
    for _ in range(21):
        assert sub.get_message(timeout=5) is not None
    r = cluster.client()
    for ch in chans:
        assert r.publish(ch, "before") == 1
    assert len(messages(sub, 20)) == 20
    conf = {cluster.name: {"listen": f"127.0.0.1:{cluster.port}", "redis": True, "timeout": 4000,
                           "servers": [f"127.0.0.1:{p}:1" for p in cluster.ports]}}
    replace_conf(cluster.proxy.conf_path, conf)
    assert manage_command(cluster.proxy.manage_port, "reload").startswith("OK generation")
    cluster.proxy.wait_log("generation 2")
    r2 = cluster.client()
    for ch in chans:
        assert r2.publish(ch, "after") == 1
    assert r2.publish("rlp:x", "pattern") == 1
    got = messages(sub, 21)
    assert sorted(m["data"] for m in got) == [b"after"] * 20 + [b"pattern"]
    other = cluster.client().pubsub()
    other.subscribe(chans[0])
    assert other.get_message(timeout=5)["type"] == "subscribe"
    assert r2.publish(chans[0], "both") == 2
    sub.unsubscribe()
    sub.punsubscribe()
    for _ in range(21):
        sub.get_message(timeout=0.5)
    # the proxy confirms an unsubscription at once and unsubscribes its server connection after
    wait_for(lambda: numsub(cluster, chans[0]) == 1, WAIT, "sub's subscription gone from the server")
    assert r2.publish(chans[0], "one") == 1
    assert [m["data"] for m in messages(other, 2)] == [b"both", b"one"]
    sub.close()
    other.close()
    assert cluster.stop() == 0


@pytest.mark.parametrize("protocol", [2, 3])
def test_run_in_thread(ps, protocol):
    """redis-py's PubSub.run_in_thread with handlers, as an application runs it."""
    seen = []
    lock = threading.Lock()

    def handler(m):
        with lock:
            seen.append((m["channel"], m["data"]))

    chans = [fresh(f"rit{i}") for i in range(10)]
    sub = ps.client(protocol=protocol).pubsub(ignore_subscribe_messages=True)
    sub.subscribe(**{ch: handler for ch in chans})
    sub.psubscribe(**{f"{chans[0]}*": handler})
    worker = sub.run_in_thread(sleep_time=0.05, daemon=True)
    try:
        r = ps.client()
        # redis-py does not wait for the confirmations: each channel's server must have the
        # subscription before its messages count (chans[0]'s has the pattern's too)
        for ch in chans:
            want = 2 if ch == chans[0] else 1
            wait_for(lambda: r.publish(ch, "ready") == want, WAIT, f"the thread's subscription of {ch}")
        for i in range(100):
            r.publish(chans[i % 10], f"m{i}")

        def handled():
            with lock:
                return sum(1 for _, d in seen if d.startswith(b"m")) >= 110

        # chans[0]'s messages match the pattern too: 10 more
        wait_for(handled, WAIT, "every message handled")
    finally:
        worker.stop()
        worker.join(timeout=WAIT)
    with lock:
        data = Counter(d for _, d in seen)
    assert all(data[f"m{i}".encode()] == (2 if i % 10 == 0 else 1) for i in range(100))
    sub.close()


def test_lost_server_closes_the_subscriber(redis_server, write_conf, nutcrackers):
    """A backend that goes away takes the subscriptions the subscriber had there: the proxy closes
    the subscriber (as redis closing it would), says so in its log, and serves new clients."""
    cluster = start_cluster("redis", 2, 1, redis_server, write_conf, nutcrackers, name="pubsub-lost")
    chans = [fresh(f"lost{i}") for i in range(20)]
    assert len({cluster.server_of(ch) for ch in chans}) == 2
    with RawConn(cluster.port) as conn:
        conn.send(resp("SUBSCRIBE", *chans))
        for _ in chans:
            conn.reply()
        cluster.procs[0].kill()
        cluster.procs[0].wait()
        assert conn.is_closed(timeout=WAIT)
    cluster.proxy.wait_log("are lost")
    survivor = next(ch for ch in chans if cluster.server_of(ch) == 1)
    sub = cluster.client().pubsub()
    sub.subscribe(survivor)
    assert sub.get_message(timeout=5)["type"] == "subscribe"
    assert cluster.client().publish(survivor, "still") == 1
    assert messages(sub, 1)[0]["data"] == b"still"
    sub.close()
    assert cluster.stop() == 0


def test_server_that_never_confirms_times_out(redis_server, write_conf, nutcrackers, stopped):
    """A server that stops answering (SIGSTOP) leaves no subscriber hanging: a SUBSCRIBE it does not
    confirm within the pool's `timeout` gets the timeout error (once the other server confirmed its
    part), the client is then closed (its subscriptions there are gone), the server's stats count a
    timed-out connection, and nothing of the client is left on the other server."""
    cluster = start_cluster("redis", 2, 1, redis_server, write_conf, nutcrackers, name="pubsub-hung",
                            timeout=1000)
    chans = [fresh(f"hung{i}") for i in range(20)]
    on = {i: [ch for ch in chans if cluster.server_of(ch) == i] for i in (0, 1)}
    assert on[0] and on[1]
    pid = cluster.pid()
    with RawConn(cluster.port) as conn:
        assert conn.call("GET", "pubsub:none") is None  # the shared connections are open
        base = procfs.fd_count(pid)
        conn.send(resp("SUBSCRIBE", on[1][0]))
        assert conn.read() == [b"subscribe", on[1][0].encode(), 1]
        stopped(cluster.procs[0])
        conn.send(resp("SUBSCRIBE", on[1][1], on[0][0]) + resp("PING"))
        reply = conn.read(timeout=WAIT)
        assert str(reply) == "ERR Connection timed out", reply
        assert conn.read() == [b"pong", b""]  # read before: answered, then the client is closed
        assert conn.is_closed(timeout=WAIT)
        cluster.proxy.wait_log("are lost (Connection timed out)")
        wait_for(lambda: procfs.fd_count(pid) == base - 1, WAIT, f"the proxy's fds back to {base - 1}")
    wait_for(lambda: not [c for c in redis_client_fields(cluster.ports[1]) if int(c["sub"]) > 0], WAIT,
             "no subscriber left on the other server")
    doc = manage_status(cluster.proxy.manage_port)
    assert doc["pubsub-hung"][f"127.0.0.1:{cluster.ports[0]}:1"]["server_timedout"] >= 1
    stopped.resume()
    sub = cluster.client().pubsub()  # the server is back: a new subscriber is served there
    sub.subscribe(on[0][0])
    assert sub.get_message(timeout=5)["type"] == "subscribe"
    assert cluster.client().publish(on[0][0], "back") == 1
    assert messages(sub, 1)[0]["data"] == b"back"
    sub.close()
    assert cluster.stop() == 0


def test_pattern_reaches_a_server_back_from_ejection(redis_server, write_conf, nutcrackers):
    """A PSUBSCRIBE while a server is ejected (auto_eject_hosts) subscribes on the others; once the
    server is back, the proxy subscribes the client's patterns there too, so a message published on
    a channel of that server reaches the pattern subscriber, once."""
    cluster = start_cluster("redis", 2, 1, redis_server, write_conf, nutcrackers, name="pubsub-eject",
                            hash_tag="{}", auto_eject_hosts=True, server_failure_limit=1,
                            server_retry_timeout=300, timeout=2000)
    tag = fresh("ej")
    chans = [f"{tag}:{{{k}}}" for k in spread_keys(tag, 40)]
    home = {ch: cluster.server_of(ch) for ch in chans}
    ch0 = next(ch for ch in chans if home[ch] == 0)
    ch1 = next(ch for ch in chans if home[ch] == 1)
    port0 = cluster.ports[0]
    cluster.procs[0].kill()
    cluster.procs[0].wait()
    client = cluster.client()
    with pytest.raises(Exception):
        client.get(ch0)  # the failure that ejects it
    wait_for(lambda: manage_status(cluster.proxy.manage_port)["pubsub-eject"]["server_ejects"] >= 1, WAIT,
             "server 0 ejected")
    sub = client.pubsub()
    sub.psubscribe(f"{tag}:*")
    assert sub.get_message(timeout=5)["type"] == "psubscribe"
    redis_server(port=port0)  # back on its port: re-admitted by the proxy's probe
    wait_for(lambda: cluster.server_of(ch0) == 0, WAIT, "server 0 re-admitted")
    published = []
    end = time.monotonic() + WAIT
    while time.monotonic() < end and not published:
        data = f"m{len(published)}-{time.monotonic()}"
        if client.publish(ch0, data) == 1:  # the pattern is subscribed there now
            published.append(data)
        else:
            time.sleep(0.05)
    assert published, "the pattern never reached the server back from its ejection"
    assert client.publish(ch1, "other") == 1
    got = messages(sub, 2)
    # the two come from two servers, over two of the proxy's links: in either order
    assert sorted((m["channel"], m["data"]) for m in got) == sorted([(ch0.encode(), published[0].encode()),
                                                                     (ch1.encode(), b"other")])
    assert nothing_more(sub)  # each once
    sub.close()
    client.close()
    assert cluster.stop() == 0


def test_subscribed_names_count_in_the_memory_limit(redis_server, write_conf, nutcrackers):
    """The names a client subscribes to are held by the proxy, so they count in the client's memory
    limit (256 MB, as replies it does not read): a client that subscribes to names past it is
    dropped, though it reads every confirmation, and another subscriber goes on."""
    cluster = start_cluster("redis", 1, 1, redis_server, write_conf, nutcrackers, name="pubsub-names")
    other = cluster.client().pubsub()
    other.subscribe("names:other")
    assert other.get_message(timeout=5)["type"] == "subscribe"
    big = "x" * 15000  # a name is a key: it fits in a buffer (-m, 16 KiB by default)
    subscribed = 0
    with RawConn(cluster.port, timeout=30) as conn:
        with pytest.raises(Closed):
            for i in range(200):  # 20,000 names of 15 kB: 300 MB
                names = [f"{i}:{j}:{big}" for j in range(100)]
                conn.send(resp("SUBSCRIBE", *names))
                for _ in names:
                    conn.reply()
                    subscribed += 1
    assert 15000 <= subscribed < 20000, subscribed  # 256 MB: some 17,800 names
    cluster.proxy.wait_log("dropping the client")
    assert cluster.client().publish("names:other", "still") == 1
    assert messages(other, 1)[0]["data"] == b"still"
    other.close()
    assert cluster.stop() == 0


def test_refused_subscription_leaves_no_state(redis_server, write_conf, nutcrackers):
    """A server that refuses the subscription (here SSUBSCRIBE renamed away, as on a redis before
    7.0): its error is the reply, and the client is not left subscribed (RESP2 commands work)."""
    cluster = start_cluster("redis", 2, 1, redis_server, write_conf, nutcrackers, name="pubsub-refused",
                            backend_args=("--rename-command", "SSUBSCRIBE", '""'))
    pid = cluster.pid()
    with RawConn(cluster.port) as conn:
        assert conn.call("GET", "pubsub:none") is None  # its shared server connection is open
        base = procfs.fd_count(pid)
        reply = conn.call("SSUBSCRIBE", "s1")
        assert str(reply).startswith("ERR unknown command"), reply
        assert conn.call("GET", "pubsub:none") is None  # not in subscribed mode
        conn.send(resp("SUBSCRIBE", "c1"))
        assert conn.read() == [b"subscribe", b"c1", 1]
        reply = conn.call("SSUBSCRIBE", "s2")
        assert str(reply).startswith("ERR unknown command"), reply
        assert str(conn.call("GET", "x")).startswith("ERR Can't execute 'get'")  # c1 still
        conn.send(resp("UNSUBSCRIBE"))
        assert conn.read() == [b"unsubscribe", b"c1", 0]
        assert conn.call("GET", "pubsub:none") is None
        wait_for(lambda: procfs.fd_count(pid) == base, WAIT, f"the proxy's fds back to {base}")
    assert cluster.stop() == 0


def test_protocol_switch_while_subscribed(ps):
    """A RESP3 subscriber that says HELLO 2 gets its messages as RESP2 arrays from then on, as
    from a redis-server (its subscriptions were made over RESP3)."""
    ch = fresh("switch")
    got = {}
    for name, port, pub in (("proxy", ps.port, ps.client()), ("redis", ps.ports[ps.server_of(ch)],
                                                             ps.direct(ps.server_of(ch)))):
        with RawConn(port) as conn:
            conn.send(resp("HELLO", "3"))
            conn.reply()
            conn.send(resp("SUBSCRIBE", ch))
            first = conn.reply()
            assert pub.publish(ch, "in3") == 1
            in3 = conn.reply()
            conn.send(resp("HELLO", "2"))
            conn.reply()
            assert pub.publish(ch, "in2") == 1
            got[name] = [first, in3, conn.reply()]
        # the proxy closes its subscribed connection once its client left; the server sees that
        # close a moment later: only then is the direct subscriber the channel's only one
        wait_for(lambda: numsub(ps, ch) == 0, WAIT, "the proxy's subscription gone from the server")
    assert got["proxy"] == got["redis"]
    assert got["proxy"][2].startswith(b"*3\r\n")
