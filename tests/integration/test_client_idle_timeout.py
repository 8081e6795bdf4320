"""client_idle_timeout: a client that for that long sends nothing, reads no reply and waits for no
server is closed, and so is one that stopped in the middle of a request (slowloris); a client
waiting for a reply (BLPOP) or for its messages (a subscriber) is not idle, nor is one that keeps
talking. Counted in the pool's client_idle_timeouts."""
import uuid

from nctest import manage, wait
from nctest.cluster import start_cluster
from nctest.codec import array, bulk, resp

TIMEOUT_MS = 600
WAIT = 20


def start(redis_server, write_conf, nutcrackers, name="alpha", **pool):
    return start_cluster("redis", 1, 2, redis_server, write_conf, nutcrackers, name, **pool)


def idle_timeouts(cluster):
    return manage.status(cluster.proxy.manage_port)[cluster.name]["client_idle_timeouts"]


def test_idle_and_slowloris_closed_waiting_ones_kept(redis_server, write_conf, nutcrackers):
    c = start(redis_server, write_conf, nutcrackers, client_idle_timeout=TIMEOUT_MS)
    key = f"idle:{uuid.uuid4().hex[:8]}"
    chan = f"idle:ch:{uuid.uuid4().hex[:8]}"
    blocked, subscriber, slow, watcher = (c.raw() for _ in range(4))
    control = None
    try:
        blocked.send(resp("BLPOP", key, "0"))
        subscriber.exchange(resp("SUBSCRIBE", chan), b"*3\r\n$9\r\nsubscribe\r\n$%d\r\n%s\r\n:1\r\n"
                            % (len(chan), chan.encode()))
        slow.send(b"*2\r\n$3\r\nGET\r\n$10\r\nab")  # a request it never finishes
        watcher.exchange(resp("WATCH", key), b"+OK\r\n")  # a WATCH waits for nothing
        # the control client connects last and sends nothing: once it is closed, every other one
        # has been without a byte for longer, and would have been closed too were it idle
        control = c.raw()
        assert control.is_closed(timeout=WAIT), "an idle client is closed"
        assert slow.is_closed(timeout=WAIT), "a client stopped in the middle of a request is closed"
        assert watcher.is_closed(timeout=WAIT), "a client holding a WATCH and sending nothing is closed"
        manage.wait_status(c.proxy.manage_port, lambda d: d["alpha"]["client_idle_timeouts"] == 3,
                           timeout=WAIT, what="three idle clients counted")
        with c.client() as r:
            assert r.lpush(key, "v") == 1
            assert r.publish(chan, "m") == 1
        assert blocked.reply() == array(bulk(key), bulk("v")), "the blocked client waited and got its value"
        assert subscriber.reply() == array(bulk("message"), bulk(chan), bulk("m")), "the subscriber is still there"
        assert idle_timeouts(c) == 3
    finally:
        for conn in (blocked, subscriber, slow, watcher, control):
            if conn is not None:
                conn.close()


def test_a_client_that_keeps_talking_stays(redis_server, write_conf, nutcrackers):
    """Requests, replies read, and a drip of bytes faster than the timeout: never idle."""
    c = start(redis_server, write_conf, nutcrackers, client_idle_timeout=TIMEOUT_MS)
    with c.raw() as quiet, c.raw() as talker, c.raw() as dripper:
        request = resp("SET", "drip", "v")
        for i in range(6):  # three timeouts' worth
            talker.exchange(resp("PING"), b"+PONG\r\n")
            dripper.send(request[i:i + 1])
            wait.pace(TIMEOUT_MS / 1000 / 2)
        # the quiet one, connected with them, has been closed meanwhile: the time was long enough
        assert quiet.is_closed(timeout=WAIT)
        talker.exchange(resp("PING"), b"+PONG\r\n")
        dripper.send(request[6:])
        dripper.expect(b"+OK\r\n")
    assert idle_timeouts(c) == 1


def test_no_timeout_by_default(redis_server, write_conf, nutcrackers):
    """Without the key (twemproxy's behaviour) an idle client stays: a pool with a timeout beside
    it closes its own idle client, which shows the time has passed."""
    c = start(redis_server, write_conf, nutcrackers)
    t = start(redis_server, write_conf, nutcrackers, name="timed", client_idle_timeout=TIMEOUT_MS)
    with c.raw() as quiet:
        with t.raw() as control:  # connected after the quiet one
            assert control.is_closed(timeout=WAIT)
        quiet.exchange(resp("PING"), b"+PONG\r\n")
    assert idle_timeouts(c) == 0
