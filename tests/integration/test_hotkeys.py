"""Hot keys on the manage port against real backends (notes/hotkeys.md): a skewed load (one key
half of the requests, the rest over 1000 keys, several client connections on 2 workers) whose
hottest key `hotkeys` names first, with a rate within 2x of the rate the clients measured over the
same window; `hotkeys POOL N` gives N keys of that pool; an unknown pool is an error; an untrusted
client is refused (as `slowlog get`); /metrics has the pool's share of the hottest key near 0.5 and
no key name; a memcached pool's hot key is named too; -H 1 samples every request, -H 0 none.

Bounded: the loads stop after at most LOAD_MAX seconds, the polls give up after POLL_MAX."""
import json
import random
import threading
import time

import pytest

from nctest import manage, procs, wait
from nctest.conn import RawConn
from nctest.procs import HOST

HOT = "hk-hot-zq"            # a name that appears nowhere else (checked absent from /metrics)
COLD = "hk-cold-zq:{}"
NCOLD = 1000
BATCH = 50                   # requests a client pipelines per write
CLIENTS = 4
LOAD_MAX = 30.0              # seconds a load runs at most
POLL_MAX = 10.0              # seconds a poll waits for the hot key to show


class SkewedLoad:
    """CLIENTS connections sending pipelined GETs (redis) or gets (memcached) of missing keys: half
    of them HOT, the rest COLD keys at random. Counts the HOT requests answered, with the times
    (history) so that a rate over any recent window can be measured."""

    def __init__(self, port, redis):
        self.port, self.redis = port, redis
        self.lock = threading.Lock()
        self.hot = 0
        self.history = [(time.monotonic(), 0)]
        self.stop = threading.Event()
        self.errors = []
        self.threads = [threading.Thread(target=self._client, args=(i,), daemon=True) for i in range(CLIENTS)]

    def _request(self, key):
        if self.redis:
            return b"*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n" % (len(key), key.encode())
        return b"get %s\r\n" % key.encode()

    def _client(self, seed):
        rnd = random.Random(seed)
        reply = b"$-1\r\n" if self.redis else b"END\r\n"  # a missing key's
        deadline = time.monotonic() + LOAD_MAX
        try:
            with RawConn(self.port) as c:
                while not self.stop.is_set() and time.monotonic() < deadline:
                    keys = [HOT if rnd.random() < 0.5 else COLD.format(rnd.randrange(NCOLD)) for _ in range(BATCH)]
                    c.send(b"".join(self._request(k) for k in keys))
                    got = c.recv_exact(len(reply) * BATCH)
                    assert got == reply * BATCH, got[:200]
                    with self.lock:
                        self.hot += keys.count(HOT)
                        self.history.append((time.monotonic(), self.hot))
        except Exception as e:  # noqa: BLE001 (reported by the test)
            self.errors.append(repr(e))

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(LOAD_MAX + 10)
        assert not any(t.is_alive() for t in self.threads)

    def rate(self, seconds):
        """HOT requests per second the clients had answered over the last `seconds`."""
        with self.lock:
            now, count = self.history[-1]
            older = [(t, n) for t, n in self.history if t <= now - seconds] or self.history[:1]
            t0, n0 = older[-1]
        return (count - n0) / (now - t0) if now > t0 else 0.0


def _hotkeys(port, *args):
    text = manage.command(port, " ".join(("hotkeys",) + args))
    assert text.endswith("\r\n") and not text.startswith("ERR"), text
    return json.loads(text)


def _wait_first(port, pool, load):
    """Polls `hotkeys POOL` until HOT is its first key (at most POLL_MAX s); returns the document."""
    doc = {}

    def first_is_hot():
        nonlocal doc
        assert not load.errors, load.errors
        doc = _hotkeys(port, pool)
        keys = doc["pools"][pool]["keys"]
        return bool(keys) and keys[0]["key"] == HOT

    wait.wait_for(first_is_hot, POLL_MAX, f"{HOT} first in hotkeys {pool}")
    return doc


@pytest.fixture
def hot_proxy(nutcrackers, write_conf, redis_server, memcached_server):
    """Pools 'alpha' (redis, 2 servers) and 'mc' (memcached, 2 servers), 2 workers."""

    def start(*flags):
        pools = {
            "alpha": {"listen": f"{HOST}:{procs.free_port()}", "redis": True,
                      "servers": [f"{HOST}:{redis_server()[0]}:1" for _ in range(2)]},
            "mc": {"listen": f"{HOST}:{procs.free_port()}",
                   "servers": [f"{HOST}:{memcached_server()[0]}:1" for _ in range(2)]},
        }
        return nutcrackers(write_conf(pools), "-T", "2", *flags, wait_manage=True)

    return start


def test_redis_hot_key_named_first_with_its_rate(hot_proxy):
    proxy = hot_proxy()
    port = proxy.manage_port
    with SkewedLoad(proxy.listen_ports[0], redis=True) as load:
        doc = _wait_first(port, "alpha", load)
        wait.hold(3.5, "a whole window of the steady load")  # the window is 3 s
        doc = _hotkeys(port)
        measured = load.rate(doc["window_seconds"])
        five = _hotkeys(port, "alpha", "5")
        metrics = manage.http_get(port, "/metrics")[2].decode()
    assert not load.errors, load.errors
    assert doc["window_seconds"] <= 5 and doc["sample_every"] == 16
    assert set(doc["pools"]) == {"alpha", "mc"}
    keys = doc["pools"]["alpha"]["keys"]
    assert keys[0]["key"] == HOT and keys[0]["len"] == len(HOT)
    assert 0 < len(keys) <= 10
    assert measured > 0 and measured / 2 <= keys[0]["rate"] <= measured * 2, (keys[0], measured)
    assert all(k["key"].startswith("hk-cold-zq:") for k in keys[1:])
    assert doc["pools"]["mc"]["keys"] == []
    assert list(five["pools"]) == ["alpha"] and len(five["pools"]["alpha"]["keys"]) == 5
    assert five["pools"]["alpha"]["keys"][0]["key"] == HOT
    # Prometheus: the share of the hottest key, never a key
    assert "hk-" not in metrics
    share = manage.metric_samples(port, "hottest_key_share")
    assert 0.35 <= share[("nutcrackers_pool_hottest_key_share", (("pool", "alpha"),))] <= 0.65, share
    assert share[("nutcrackers_pool_hottest_key_share", (("pool", "mc"),))] == 0


def test_memcached_hot_key_named_first(hot_proxy):
    proxy = hot_proxy()
    with SkewedLoad(proxy.listen_ports[1], redis=False) as load:
        doc = _wait_first(proxy.manage_port, "mc", load)
    assert not load.errors, load.errors
    assert doc["pools"]["mc"]["keys"][0]["key"] == HOT
    assert doc["pools"]["mc"]["rate"] > 0


def test_hotkeys_errors_and_refusal(hot_proxy):
    proxy = hot_proxy("-N", "none")
    port = proxy.manage_port
    assert manage.command(port, "hotkeys") == (
        "ERR: 'hotkeys' is refused: it needs a trusted client (a unix socket, or an address in "
        "--manage-trust: none), and no manage password is set (--manage-auth-file)\r\n")
    assert manage.command(port, "hotkeys nope 3").startswith("ERR: 'hotkeys' is refused")
    # the same proxy's open commands still answer
    assert manage.status(port)["generation"] == 1


def test_hotkeys_unknown_pool_and_bad_count(hot_proxy):
    proxy = hot_proxy()
    port = proxy.manage_port
    assert manage.command(port, "hotkeys nope") == "ERR: pool doesn't exist!\r\n"
    assert manage.command(port, "hotkeys alpha 0") == "ERR: usage: hotkeys [<pool> [n]]\r\n"
    assert manage.command(port, "hotkeys alpha x") == "ERR: usage: hotkeys [<pool> [n]]\r\n"
    doc = _hotkeys(port, "alpha", "3")  # nothing sampled yet: no key
    assert doc["pools"] == {"alpha": {"rate": 0.0, "keys": []}}


@pytest.mark.parametrize("every", ["1", "0"])
def test_sampling_on_and_off(hot_proxy, every):
    """-H 1 samples every request, -H 0 none: GETs over two epochs (the first is published when
    the second starts) show HOT, or nothing."""
    proxy = hot_proxy("-H", every)
    with RawConn(proxy.listen_ports[0]) as c:
        for i in range(2):
            for _ in range(50):
                assert c.call("GET", HOT) is None
            if i == 0:
                wait.hold(1.2, "past the first epoch (1 s)")
    doc = _hotkeys(proxy.manage_port)
    assert doc["sample_every"] == int(every)
    keys = doc["pools"]["alpha"]["keys"]
    if every == "0":
        assert keys == [] and doc["pools"]["alpha"]["rate"] == 0
    else:
        assert [k["key"] for k in keys] == [HOT]
        assert doc["pools"]["alpha"]["rate"] > 0
