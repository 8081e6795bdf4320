"""Stats through the manage port, against real redis and memcached backends: exact request,
response and byte counts per server after known traffic from many clients over 4 workers, gauges
back to 0, fragments, latency histograms, `status workers`, the JSON's shape, Prometheus output
agreeing with the JSON, -D agreeing with the JSON, and -i."""
import json
import threading

import pytest
from prometheus_client.parser import text_string_to_metric_families

from nctest import manage, procs, wait
from nctest.conn import RawConn as Conn
from nctest.keys import owner as backend_owner
from nctest.load import run_threads
from nctest.procs import HOST

HEADER = ["service", "source", "version", "uptime", "timestamp", "generation", "loaded_at",
          "total_connections",
          "curr_connections"]
POOL_FIELDS = ["client_eof", "client_err", "client_connections", "server_ejects", "forward_error",
               "fragments"]
SERVER_FIELDS = ["server_eof", "server_err", "server_timedout", "server_connections",
                 "server_ejected_at", "requests", "request_bytes", "responses", "response_bytes",
                 "in_queue", "in_queue_bytes", "out_queue", "out_queue_bytes"]
HIST_FIELDS = ["count", "sum", "max", "p50", "p99", "p999", "buckets"]
BUCKETS = ["1", "10", "20", "50", "100", "200", "500", "1000", "2000", "3000", "+inf"]
GAUGES = ["in_queue", "in_queue_bytes", "out_queue", "out_queue_bytes"]


@pytest.fixture
def cluster(nutcrackers, write_conf, redis_server, memcached_server):
    """A redis pool 'alpha' over 3 named redis servers and a memcached pool 'beta' over 2, behind
    a proxy with 4 workers. Returns a dict: proxy, manage (port), alpha/beta (listen ports),
    redis {name: port}, mc {name: port}, procs {name: Popen}."""

    def start(*flags, extra=None):
        redis = {f"r{i}": redis_server() for i in range(3)}
        mc = {f"m{i}": memcached_server() for i in range(2)}
        pools = {
            "alpha": {"listen": f"{HOST}:{procs.free_port()}", "redis": True, "hash": "fnv1a_64",
                      "distribution": "ketama",
                      "servers": [f"{HOST}:{port}:1 {name}" for name, (port, _) in redis.items()]},
            "beta": {"listen": f"{HOST}:{procs.free_port()}",
                     "servers": [f"{HOST}:{port}:1 {name}" for name, (port, _) in mc.items()]},
        }
        if extra:
            pools["alpha"].update(extra)
        conf = write_conf(pools)
        # wait="log": the pools and the manage port listen once the master logs "started", and no
        # start-up probe connects to a pool (the connection counts stay exact)
        proxy = nutcrackers(conf, "-T", "4", *flags, wait="log")
        return {
            "proxy": proxy, "manage": proxy.manage_port,
            "alpha": proxy.listen_ports[0], "beta": proxy.listen_ports[1],
            "redis": {n: p for n, (p, _) in redis.items()},
            "mc": {n: p for n, (p, _) in mc.items()},
            "procs": {**{n: pr for n, (_, pr) in redis.items()}, **{n: pr for n, (_, pr) in mc.items()}},
        }

    return start


def _owner(c, kind, key):
    """The name of the backend holding key (asked directly, not through the proxy)."""
    names = list(c[kind])
    return names[backend_owner([c[kind][n] for n in names], kind == "redis", key)]


def test_exact_counts_over_four_workers(cluster):
    c = cluster()
    clients, per_client = 12, 25
    log = []  # (key, request bytes, reply bytes) for every command
    lock = threading.Lock()

    def client(i):
        mine = []
        with Conn(c["alpha"]) as conn:
            for j in range(per_client):
                key, value = f"k:{i}:{j}", "v" * (j + 1)
                for args in (("SET", key, value), ("GET", key)):
                    before_s, before_r = conn.sent, conn.received
                    r = conn.call(*args)
                    assert r == ("OK" if args[0] == "SET" else value.encode()), r
                    mine.append((key, conn.sent - before_s, conn.received - before_r))
        with lock:
            log.extend(mine)

    run_threads(clients, client)
    n = clients * per_client * 2
    assert len(log) == n
    owner = {}
    expect = {name: {"requests": 0, "request_bytes": 0, "response_bytes": 0} for name in c["redis"]}
    for key, sent, got in log:
        if key not in owner:
            owner[key] = _owner(c, "redis", key)
        e = expect[owner[key]]
        e["requests"] += 1
        e["request_bytes"] += sent
        e["response_bytes"] += got
    assert sum(1 for e in expect.values() if e["requests"]) == 3, "keys should spread over 3 servers"

    def settled(doc):
        a = doc["alpha"]
        return (sum(a[s]["responses"] for s in c["redis"]) == n and a["client_connections"] == 0
                and a["request_latency"]["count"] == n)

    doc = manage.wait_status(c["manage"], settled, what=f"{n} responses and no clients")
    a = doc["alpha"]
    for name, e in expect.items():
        s = a[name]
        assert s["requests"] == e["requests"], name
        assert s["responses"] == e["requests"], name
        assert s["request_bytes"] == e["request_bytes"], name
        assert s["response_bytes"] == e["response_bytes"], name
        for g in GAUGES:
            assert s[g] == 0, (name, g)
        assert 1 <= s["server_connections"] <= 4, "one connection per worker that used the server"
        assert s["server_err"] == 0 and s["server_eof"] == 0 and s["server_timedout"] == 0
        assert s["server_latency"]["count"] == e["requests"]
    assert doc["total_connections"] == clients
    assert doc["curr_connections"] == 0
    assert a["client_eof"] == clients
    assert a["client_err"] == 0 and a["forward_error"] == 0 and a["fragments"] == 0
    lat = a["request_latency"]
    assert sum(lat["buckets"].values()) == n
    assert lat["p50"] <= lat["p99"] <= lat["p999"] <= lat["max"]
    assert lat["sum"] >= lat["max"] > 0

    # the same numbers per worker: every worker got clients, and they sum up
    workers = manage.status(c["manage"], "workers")["workers"]
    assert [w["worker"] for w in workers] == [0, 1, 2, 3]
    assert sum(w["total_connections"] for w in workers) == clients
    assert all(w["total_connections"] >= 1 for w in workers), "every worker served clients"
    for name in c["redis"]:
        for field in ("requests", "request_bytes", "responses", "response_bytes"):
            assert sum(w["alpha"][name][field] for w in workers) == a[name][field]
    assert sum(w["alpha"]["request_latency"]["count"] for w in workers) == n


def test_memcached_counts(cluster):
    c = cluster()
    log = []
    with Conn(c["beta"]) as conn:
        for j in range(40):
            key = f"mk{j}"
            for req in (b"set %s 0 0 3\r\nabc\r\n" % key.encode(), b"get %s\r\n" % key.encode()):
                s, r = conn.sent, conn.received
                conn.send(req)
                reply = conn.mc_get_reply()
                assert reply in (b"STORED\r\n", b"VALUE %s 0 3\r\nabc\r\nEND\r\n" % key.encode()), reply
                log.append((key, conn.sent - s, conn.received - r))
    expect = {name: [0, 0, 0] for name in c["mc"]}
    owners = {}
    for key, sent, got in log:
        owners.setdefault(key, _owner(c, "mc", key))
        e = expect[owners[key]]
        e[0] += 1
        e[1] += sent
        e[2] += got
    doc = manage.wait_status(c["manage"], lambda d: d["beta"]["client_connections"] == 0
                               and sum(d["beta"][m]["responses"] for m in c["mc"]) == 80)
    for name, (reqs, sent, got) in expect.items():
        s = doc["beta"][name]
        assert (s["requests"], s["responses"], s["request_bytes"], s["response_bytes"]) == \
            (reqs, reqs, sent, got), name


def test_gauges_follow_clients(cluster):
    c = cluster()
    conns = [Conn(c["alpha"]) for _ in range(8)]
    try:
        for conn in conns:
            assert conn.call("PING") == "PONG"
        doc = manage.wait_status(c["manage"], lambda d: d["alpha"]["client_connections"] == 8)
        assert doc["curr_connections"] == 8
        assert doc["total_connections"] == 8
        assert sum(w["alpha"]["client_connections"]
                   for w in manage.status(c["manage"], "workers")["workers"]) == 8
    finally:
        for conn in conns:
            conn.close()
    doc = manage.wait_status(c["manage"], lambda d: d["alpha"]["client_connections"] == 0
                               and d["curr_connections"] == 0, what="gauges back to 0")
    assert doc["total_connections"] == 8
    assert doc["alpha"]["client_eof"] == 8


def test_fragments_count_multi_key_splits(cluster):
    c = cluster()
    keys = [f"frag:{i}" for i in range(12)]
    with Conn(c["alpha"]) as conn:
        for k in keys:
            assert conn.call("SET", k, k) == "OK"
        owners = {k: _owner(c, "redis", k) for k in keys}
        servers = set(owners.values())
        assert len(servers) >= 2
        assert conn.call("MGET", *keys) == [k.encode() for k in keys]
        one = [k for k in keys if owners[k] == owners[keys[0]]]
        assert conn.call("MGET", *one) == [k.encode() for k in one]  # one server: no split
        assert conn.call("DEL", *keys) == len(keys)
    expected = 2 * len(servers)
    doc = manage.wait_status(c["manage"], lambda d: d["alpha"]["fragments"] >= expected
                               and d["alpha"]["client_connections"] == 0)
    assert doc["alpha"]["fragments"] == expected
    # every fragment is a request to its server: 12 SETs, the split MGET and DEL, the whole MGET
    assert sum(doc["alpha"][s]["requests"] for s in c["redis"]) == len(keys) + expected + 1
    assert doc["alpha"]["request_latency"]["count"] == len(keys) + 3


def test_json_shape_and_order(cluster):
    c = cluster()
    with Conn(c["alpha"]) as conn:
        conn.call("SET", "a", "b")
    pairs = manage.ordered(c["manage"])
    keys = [k for k, _ in pairs]
    assert keys == HEADER + ["alpha", "beta"]
    top = dict(pairs)
    assert top["service"] == "nutcrackers"
    assert isinstance(top["uptime"], int) and isinstance(top["timestamp"], int)
    for pool, servers in (("alpha", ["r0", "r1", "r2"]), ("beta", ["m0", "m1"])):
        members = [k for k, _ in top[pool]]
        assert members == POOL_FIELDS + servers + ["request_latency"], members
        body = dict(top[pool])
        for s in servers:
            assert [k for k, _ in body[s]] == SERVER_FIELDS + ["server_latency"]
            hist = dict(dict(body[s])["server_latency"])
            assert list(hist) == HIST_FIELDS
            assert [k for k, _ in hist["buckets"]] == BUCKETS
        assert [k for k, _ in body["request_latency"]] == HIST_FIELDS


def _samples(text):
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _le(ms):
    """The le label of a JSON bucket: its bound in seconds, as the proxy writes it."""
    if ms == "+inf":
        return "+Inf"
    ms = int(ms)
    return str(ms // 1000) if ms % 1000 == 0 else repr(ms / 1000)


def test_prometheus_parses_and_agrees_with_json(cluster):
    c = cluster()
    with Conn(c["alpha"]) as conn:
        for i in range(30):
            conn.call("SET", f"p{i}", "x")
            conn.call("MGET", f"p{i}", f"q{i}", f"r{i}")
    with Conn(c["beta"]) as conn:
        conn.exchange(b"set m 0 0 1\r\nx\r\n", b"STORED\r\n")
    doc = manage.wait_status(c["manage"], lambda d: d["alpha"]["client_connections"] == 0
                               and d["beta"]["client_connections"] == 0)
    status, headers, body = manage.http_get(c["manage"], "/metrics")
    assert status == 200 and headers["content-type"].startswith("text/plain; version=0.0.4")
    text = body.decode()
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    samples = _samples(text)
    info = [s for s in fams["nutcrackers_info"].samples][0]
    assert info.labels == {"service": "nutcrackers", "source": doc["source"], "version": doc["version"]}
    assert samples[("nutcrackers_total_connections_total", ())] == doc["total_connections"]
    assert samples[("nutcrackers_curr_connections", ())] == doc["curr_connections"]
    assert abs(samples[("nutcrackers_uptime_total", ())] - doc["uptime"]) <= 2
    assert fams["nutcrackers_pool_client_eof"].type == "counter"
    assert fams["nutcrackers_server_in_queue"].type == "gauge"
    checked = 0
    for pool, servers in (("alpha", c["redis"]), ("beta", c["mc"])):
        p = doc[pool]
        for f in POOL_FIELDS:
            name = f"nutcrackers_pool_{f}" + ("" if f == "client_connections" else "_total")
            assert samples[(name, (("pool", pool),))] == p[f], (pool, f)
            checked += 1
        for s in servers:
            labels = (("pool", pool), ("server", s))
            for f in SERVER_FIELDS:
                gauge = f in GAUGES or f in ("server_connections", "server_ejected_at")
                name = f"nutcrackers_server_{f}" + ("" if gauge else "_total")
                assert samples[(name, labels)] == p[s][f], (pool, s, f)
                checked += 1
            _check_hist(samples, "nutcrackers_server_server_latency_seconds", labels, p[s]["server_latency"])
        _check_hist(samples, "nutcrackers_pool_request_latency_seconds", (("pool", pool),),
                    p["request_latency"])
    assert checked == 2 * len(POOL_FIELDS) + 5 * len(SERVER_FIELDS)
    assert doc["alpha"]["request_latency"]["count"] == 60


def _check_hist(samples, name, labels, hist):
    cum = 0
    for b in BUCKETS:
        cum += hist["buckets"][b]
        key = (name + "_bucket", tuple(sorted(labels + (("le", _le(b)),))))
        assert samples[key] == cum, key
    assert samples[(name + "_count", labels)] == hist["count"] == cum
    assert samples[(name + "_sum", labels)] == pytest.approx(hist["sum"] / 1e6)


def test_describe_stats_agrees_with_json(cluster):
    c = cluster()
    r = procs.run(["-D"])
    assert r.returncode == 0
    described = {}
    for line in r.stdout.splitlines():
        parts = line.split(None, 2)
        if line.startswith("  ") and len(parts) == 3 and parts[2].startswith('"'):
            described.setdefault(parts[0], parts[1])
    doc = manage.status(c["manage"])

    def json_type(key, value):
        if isinstance(value, str):
            return "string"
        if isinstance(value, dict):
            return "histogram"
        return None  # counter, gauge or timestamp: any numeric type

    seen = set()

    def check(key, value):
        assert key in described, f"-D does not describe '{key}'"
        t = json_type(key, value)
        if t is not None:
            assert described[key] == t, (key, described[key])
        else:
            assert described[key] in ("counter", "gauge", "timestamp"), key
        seen.add(key)

    for key, value in doc.items():
        if key in ("alpha", "beta"):
            for k, v in value.items():
                if isinstance(v, dict) and "requests" in v:  # a server
                    for sk, sv in v.items():
                        check(sk, sv)
                        if isinstance(sv, dict):
                            for hk, hv in sv.items():
                                check(hk, hv if hk != "buckets" else 0)
                else:
                    check(k, v)
        else:
            check(key, value)
    # and nothing described is missing from the document
    assert set(described) == seen, set(described) ^ seen


def test_interval_refreshes_what_silent_clients_get(cluster):
    c = cluster("-i", "200")
    with Conn(c["alpha"]) as conn:
        assert conn.call("SET", "i", "1") == "OK"

    def refreshed():
        doc = json.loads(manage.silent(c["manage"], half_close=True))
        return sum(doc["alpha"][s]["requests"] for s in c["redis"]) == 1

    wait.wait_for(refreshed, 5, what="the cached snapshot to show the request")
