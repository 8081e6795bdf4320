"""Stats through the manage port, against real redis and memcached backends: exact request,
response and byte counts per server after known traffic from many clients over 4 workers, gauges
back to 0, fragments, latency histograms (`status latency`), `status workers`, the JSON's shape
(as monitoring agents written for twemproxy read it), Prometheus output agreeing with the JSON, -D
agreeing with the JSON, and -i."""
import json
import socket
import struct
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
          "curr_connections", "client_memory", "batch_waits", "batch_wait_offs",
          "batch_waits_longer", "batch_waits_full", "reply_holds"]
POOL_FIELDS = ["client_eof", "client_err", "client_connections", "server_ejects", "forward_error",
               "fragments", "cluster_redirections", "refused_commands", "client_idle_timeouts",
               "client_memory_closes", "client_tls_handshakes", "client_tls_handshake_failures",
               "client_tls_resumptions"]
SERVER_FIELDS = ["server_eof", "server_err", "server_timedout", "server_connections",
                 "server_ejected_at", "requests", "request_bytes", "responses", "response_bytes",
                 "in_queue", "in_queue_bytes", "out_queue", "out_queue_bytes",
                 "dedicated_connections", "server_tls_handshakes",
                 "server_tls_handshake_failures", "server_tls_resumptions"]
HIST_FIELDS = ["count", "sum", "max", "p50", "p99", "p999", "buckets"]
BUCKETS = ["1", "10", "20", "50", "100", "200", "500", "1000", "2000", "3000", "+inf"]
GAUGES = ["in_queue", "in_queue_bytes", "out_queue", "out_queue_bytes", "dedicated_connections"]


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


def wait_latencies(port, pool, n):
    """The "latency" member of `status latency` once the pool's request_latency has counted n
    requests (the histograms are a document of their own: the wait on `status` does not cover
    them)."""
    return manage.wait_status(port, lambda d: d["latency"][pool]["request_latency"]["count"] == n,
                              words=("latency",), what=f"{n} {pool} latencies")["latency"]


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
        return sum(a[s]["responses"] for s in c["redis"]) == n and a["client_connections"] == 0

    doc = manage.wait_status(c["manage"], settled, what=f"{n} responses and no clients")
    a = doc["alpha"]
    lat = wait_latencies(c["manage"], "alpha", n)["alpha"]
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
        assert lat["servers"][name]["server_latency"]["count"] == e["requests"]
    assert doc["total_connections"] == clients
    assert doc["curr_connections"] == 0
    assert a["client_eof"] == clients
    assert a["client_err"] == 0 and a["forward_error"] == 0 and a["fragments"] == 0
    lat = lat["request_latency"]
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


def _reset(conn):
    """Closes with a reset (SO_LINGER 0), as Jedis closes every connection."""
    conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


def test_client_eof_and_client_err(cluster):
    """twemproxy's split of a client's end (notes/client-close-stats.md): it ended the connection
    itself (closed its side, or QUIT, even when it resets right after the QUIT) is client_eof;
    anything else is client_err, a reset without QUIT among them: Jedis's close, counted so by
    twemproxy too."""
    c = cluster()
    with Conn(c["alpha"]) as a:  # QUIT, then a clean close
        a.send(b"PING\r\nQUIT\r\n")
        assert a.read_until_closed() == b"+PONG\r\n+OK\r\n"
    a = Conn(c["alpha"])  # QUIT and a reset at once, the +OK never read
    assert a.call("PING") == "PONG"
    a.send(b"QUIT\r\n")
    _reset(a)
    with Conn(c["alpha"]) as a:  # a clean close without QUIT
        assert a.call("PING") == "PONG"
    with Conn(c["beta"]) as b:  # memcached's quit
        b.send(b"version\r\nquit\r\n")
        assert b.read_until_closed().startswith(b"VERSION ")
    doc = manage.wait_status(c["manage"], lambda d: d["curr_connections"] == 0 and
                             d["alpha"]["client_eof"] + d["alpha"]["client_err"] == 3 and
                             d["beta"]["client_eof"] + d["beta"]["client_err"] == 1,
                             what="every close counted")
    assert (doc["alpha"]["client_eof"], doc["alpha"]["client_err"]) == (3, 0)
    assert (doc["beta"]["client_eof"], doc["beta"]["client_err"]) == (1, 0)

    a = Conn(c["alpha"])  # Jedis: a reset with no QUIT before it
    assert a.call("PING") == "PONG"
    _reset(a)
    doc = manage.wait_status(c["manage"], lambda d: d["curr_connections"] == 0 and
                             d["alpha"]["client_eof"] + d["alpha"]["client_err"] == 4,
                             what="the reset counted")
    assert (doc["alpha"]["client_eof"], doc["alpha"]["client_err"]) == (3, 1)


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
    wait_latencies(c["manage"], "alpha", len(keys) + 3)


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
        assert members == POOL_FIELDS + servers, members
        body = dict(top[pool])
        for s in servers:
            assert [k for k, _ in body[s]] == SERVER_FIELDS
    # the histograms: `status latency` and GET /latency
    for text in (manage.command(c["manage"], "status latency"),
                 manage.http_get(c["manage"], "/latency")[2].decode()):
        pairs = json.loads(text, object_pairs_hook=list)
        assert [k for k, _ in pairs] == HEADER + ["latency"]
        lat = dict(pairs)["latency"]
        assert [k for k, _ in lat] == ["alpha", "beta"]
        for pool, servers in (("alpha", ["r0", "r1", "r2"]), ("beta", ["m0", "m1"])):
            body = dict(dict(lat)[pool])
            assert list(body) == ["request_latency", "servers"]
            assert [k for k, _ in body["request_latency"]] == HIST_FIELDS
            assert [k for k, _ in body["servers"]] == servers
            for s, hists in body["servers"]:
                assert [k for k, _ in hists] == ["server_latency"]
                hist = dict(dict(hists)["server_latency"])
                assert list(hist) == HIST_FIELDS
                assert [k for k, _ in hist["buckets"]] == BUCKETS


# the top-level members that are not pools: twemproxy's, ours (generation, loaded_at) and, in
# each document of `status workers`, "worker"
NON_POOL = set(HEADER) | {"worker"}
SUMMED = ["requests", "request_bytes", "responses", "response_bytes", "server_eof", "server_err",
          "server_timedout", "server_connections"]


def agent_read(doc):
    """Reads a stats document the way monitoring agents written for twemproxy do (Diamond's
    collector; telegraf's plugin within a pool; scripts): every object-valued top-level member is
    a pool; inside a pool every object-valued member is a server, whose counters are summed by
    name, and every other member a pool counter. Returns {pool: {"counters": {field: n},
    "servers": {name: {field: n}}, "totals": {field: sum over the servers}}}."""
    pools = {}
    for key, value in doc.items():
        if not isinstance(value, dict):
            assert key in NON_POOL, f"top-level '{key}' is neither a known field nor a pool"
            continue
        counters, servers = {}, {}
        totals = dict.fromkeys(SUMMED, 0)
        for member, v in value.items():
            if isinstance(v, dict):
                for field in SUMMED:
                    totals[field] += v[field]  # a KeyError here is what such an agent hits
                servers[member] = v
            else:
                counters[member] = v
        pools[key] = {"counters": counters, "servers": servers, "totals": totals}
    for pool, seen in pools.items():  # and what it charts must be numbers
        for name, server in seen["servers"].items():
            for field, n in server.items():
                assert type(n) is int, f"{pool}.{name}.{field} is not a number: {n!r}"
    return pools


def test_agents_written_for_twemproxy_read_every_document(cluster):
    """`status`, a silent client, `GET /` and every document of `status workers`: only the pools
    are objects at the top level; a pool holds twemproxy's counters and one object per server,
    nothing else; a server object holds only twemproxy's fields, all numbers."""
    c = cluster()
    with Conn(c["alpha"]) as conn:
        for i in range(20):
            assert conn.call("SET", f"agent:{i}", "v") == "OK"
            conn.call("MGET", f"agent:{i}", f"agent:{i + 1}", f"agent:{i + 2}")
        # refused commands: counted in flat members of the pool, never in an object
        assert conn.call("MONITOR").startswith("ERR unsupported command")
        assert conn.call("NOSUCHCOMMAND").startswith("ERR unsupported command")
    with Conn(c["beta"]) as conn:
        for i in range(10):
            conn.exchange(b"set agent:%d 0 0 1\r\nx\r\n" % i, b"STORED\r\n")
        conn.exchange(b"verbosity 1\r\n", b"CLIENT_ERROR unsupported command\r\n")
    manage.wait_status(c["manage"], lambda d: d["alpha"]["client_connections"] == 0
                       and d["beta"]["client_connections"] == 0)
    refused = {"alpha": ["refused_cmd_monitor", "refused_cmd_other"], "beta": ["refused_cmd_verbosity"]}
    _, headers, body = manage.http_get(c["manage"], "/")
    docs = {"status": manage.status(c["manage"]),
            "silent client": json.loads(manage.silent(c["manage"], half_close=True)),
            "GET /": json.loads(body)}
    for w in manage.status(c["manage"], "workers")["workers"]:
        docs[f"worker {w['worker']}"] = w
    names = {"alpha": sorted(c["redis"]), "beta": sorted(c["mc"])}
    for what, doc in docs.items():
        pools = agent_read(doc)
        assert sorted(pools) == ["alpha", "beta"], (what, sorted(pools))
        for pool, seen in pools.items():
            assert sorted(seen["servers"]) == names[pool], (what, pool, sorted(seen["servers"]))
            # after the fields, the refused commands the document counts (a worker's: those it
            # saw; the silent client's and GET /'s: those of the last aggregation)
            want = [f for f in list(seen["counters"])[len(POOL_FIELDS):] if f in refused[pool]]
            assert list(seen["counters"]) == POOL_FIELDS + want, (what, pool, list(seen["counters"]))
            if what == "status":
                assert want == refused[pool], (what, pool, want)
            for name, server in seen["servers"].items():
                assert list(server) == SERVER_FIELDS, (what, pool, name, list(server))
    totals = agent_read(docs["status"])
    assert totals["alpha"]["totals"]["responses"] >= 40
    assert totals["beta"]["totals"]["requests"] == totals["beta"]["totals"]["responses"] == 10


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
    lat = wait_latencies(c["manage"], "alpha", 60)
    status, headers, body = manage.http_get(c["manage"], "/metrics")
    assert status == 200 and headers["content-type"].startswith("text/plain; version=0.0.4")
    text = body.decode()
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    samples = _samples(text)
    info = [s for s in fams["nutcrackers_info"].samples][0]
    assert info.labels == {"service": "nutcrackers", "source": doc["source"], "version": doc["version"]}
    assert samples[("nutcrackers_client_connections_accepted_total", ())] == doc["total_connections"]
    assert samples[("nutcrackers_client_connections", ())] == doc["curr_connections"]
    assert abs(samples[("nutcrackers_uptime_seconds", ())] - doc["uptime"]) <= 2
    assert abs(samples[("nutcrackers_time_seconds", ())] - doc["timestamp"]) <= 2
    assert fams["nutcrackers_uptime_seconds"].type == "gauge"
    assert fams["nutcrackers_pool_client_eof"].type == "counter"
    assert fams["nutcrackers_server_in_queue"].type == "gauge"
    assert fams["nutcrackers_server_ejected_at_seconds"].type == "gauge"
    # no name repeats its level (nutcrackers_server_server_...), every counter ends in _total and
    # nothing else does
    for name, fam in fams.items():
        assert "_server_server_" not in name, name
        assert (fam.type == "counter") == any(s.name.endswith("_total") for s in fam.samples), name
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
                name, value = f"nutcrackers_server_{f.removeprefix('server_')}", p[s][f]
                if f == "server_ejected_at":  # usec in the JSON, seconds here
                    name, value = name + "_seconds", value / 1e6
                elif f not in GAUGES and f != "server_connections":
                    name += "_total"
                assert samples[(name, labels)] == pytest.approx(value), (pool, s, f)
                checked += 1
            _check_hist(samples, "nutcrackers_server_latency_seconds", labels,
                        lat[pool]["servers"][s]["server_latency"])
        _check_hist(samples, "nutcrackers_pool_request_latency_seconds", (("pool", pool),),
                    lat[pool]["request_latency"])
    assert checked == 2 * len(POOL_FIELDS) + 5 * len(SERVER_FIELDS)


PROM_LE = ["0.00005", "0.0001", "0.0002", "0.0005", "0.001", "0.002", "0.005", "0.01", "0.02", "0.05",
           "0.1", "0.2", "0.5", "1", "2", "3", "5", "10", "+Inf"]


def _check_hist(samples, name, labels, hist):
    """The Prometheus histogram has the 50 us .. 10 s ladder; at every bound of the JSON's (meitu's)
    buckets it holds the JSON's cumulative count."""
    les = [dict(k[1])["le"] for k in samples if k[0] == name + "_bucket" and
           set(labels) <= set(k[1])]
    assert les == PROM_LE, les
    cum = 0
    for b in BUCKETS:
        cum += hist["buckets"][b]
        key = (name + "_bucket", tuple(sorted(labels + (("le", _le(b)),))))
        assert samples[key] == cum, key
    assert samples[(name + "_count", labels)] == hist["count"] == cum
    assert samples[(name + "_sum", labels)] == pytest.approx(hist["sum"] / 1e6)


def test_describe_stats_agrees_with_json(cluster):
    c = cluster()
    with Conn(c["alpha"]) as conn:  # a refused command: its count is in the document
        assert conn.call("MONITOR").startswith("ERR unsupported command")
    manage.wait_status(c["manage"], lambda d: d["alpha"]["refused_commands"] == 1)
    r = procs.run(["-D"])
    assert r.returncode == 0
    described = {}
    for line in r.stdout.splitlines():
        parts = line.split(None, 2)
        if line.startswith("  ") and len(parts) == 3 and parts[2].startswith('"'):
            described.setdefault(parts[0], parts[1])
    doc = manage.status(c["manage"])
    lat = manage.status(c["manage"], "latency")

    def json_type(key, value):
        if isinstance(value, str):
            return "string"
        if isinstance(value, dict):
            return "histogram"
        return None  # counter, gauge or timestamp: any numeric type

    seen = set()

    def check(key, value):
        if key.startswith("refused_cmd_"):  # one per name: described once, by its pattern
            key = "refused_cmd_<name>"
        assert key in described, f"-D does not describe '{key}'"
        t = json_type(key, value)
        if t is not None:
            assert described[key] == t, (key, described[key])
        else:
            assert described[key] in ("counter", "gauge", "timestamp"), key
        seen.add(key)

    def check_hist(key, hist):
        check(key, hist)
        for hk, hv in hist.items():
            check(hk, hv if hk != "buckets" else 0)

    for key, value in doc.items():
        if key in ("alpha", "beta"):
            for k, v in value.items():
                if isinstance(v, dict):  # a server
                    for sk, sv in v.items():
                        check(sk, sv)
                else:
                    check(k, v)
        else:
            check(key, value)
    for pool in lat["latency"].values():
        for k, v in pool.items():
            if k == "servers":
                for hists in v.values():
                    for hk, hv in hists.items():
                        check_hist(hk, hv)
            else:
                check_hist(k, v)
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
