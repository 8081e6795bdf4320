"""go-redis v9 and Jedis 8, pinned, at their default options, against a proxy at -T 4 with two
redis pools of 2 real redis-servers each (hash_tag "{}").

Each library runs a program of its own (tests/clients/go, tests/clients/java), built once per
version of its sources by scripts/lib/deps.sh (scripts/test.sh builds them beforehand; a test run
by hand builds them on first use: conftest.py's go_client and java_client). For each pool the program connects with the library's defaults
(go-redis: HELLO 3 and its connection pool; Jedis: the classic `Jedis` connection and the pooled
`RedisClient`), runs every data type, pipelines, multi-key commands over keys on both servers, a
transaction on hash-tagged keys, WATCH, and a transaction whose keys cross servers, which must
answer EXECABORT with nothing written (the program checks each backend directly), then uses the
connection again. It checks every value itself and prints what it saw, which is checked here too,
with the backends: nothing left on them, and no dedicated server connection left held.

Without their toolchain (Go >= 1.21, which fetches the Go that go.mod asks for; a JDK >= 17 and
Maven), or with one too old, the tests skip with deps.sh's line "<group> not run: <why>", the one
scripts/test.sh's summary prints. A program that does not build with its toolchain there fails
the tests (and test.sh's client programs step).

Over TLS (issue 26): the Go program's TLS mode (tests/clients/go/tls.go) against a pool with a TLS
listener over 2 plain redis-servers: SET/GET, a pipeline of 100 commands and an MGET of keys on
both servers, with a tls.Config that trusts the tests' CA and verifies the name localhost; the
values are checked on the servers, and the program fails to connect when it trusts another CA or
expects another name.
"""
import json
import subprocess

import pytest

from nctest import manage, procs, tls
from nctest.conn import redis_client
from nctest.procs import HOST
from nctest.wait import scale, wait_for

THREADED = True  # a -T 4 proxy: the TSan stage runs these too (conftest.py)

GO_REDIS = "9.23.0"   # tests/clients/go/go.mod
JEDIS = "8.0.2"       # tests/clients/java/pom.xml
RUN_TIMEOUT = 120     # seconds for one program's whole run

TX = ["OK", 2, 2, ["x", "y"], 1, {"f": "v"}, "2"]
EXECABORT = "EXECABORT Transaction discarded because of previous errors."


@pytest.fixture(scope="module")
def pools(module_redis_server, module_write_conf, module_nutcrackers):
    """Two redis pools of 2 servers each behind one proxy at -T 4: (proxy, [(listen port,
    [backend ports], pool name)])."""
    spec = []
    conf = {}
    for name in ("alpha", "beta"):
        backends = [module_redis_server()[0] for _ in range(2)]
        port = procs.free_port()
        conf[name] = {"listen": f"{HOST}:{port}", "redis": True, "hash_tag": "{}",
                      "servers": [f"{HOST}:{b}:1" for b in backends]}
        spec.append((port, backends, name))
    proxy = module_nutcrackers(module_write_conf(conf, name="clients.yml"), "-T", "4",
                               log_name="clients.log")
    return proxy, spec


def run_program(argv, pools, prefix):
    proxy, spec = pools
    arg = {"prefix": prefix, "pools": [{"port": p, "backends": b} for p, b, _ in spec]}
    try:
        out = subprocess.run([*argv, json.dumps(arg)], stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, timeout=RUN_TIMEOUT * scale())
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"{argv[-1]} did not finish in {RUN_TIMEOUT * scale()} s: "
                             f"{e.stdout}{e.stderr}") from e
    assert out.returncode == 0, f"{argv[-1]} failed:\n{out.stdout}\n{out.stderr}"
    return json.loads(out.stdout.strip().splitlines()[-1])


def check_pool(got, backends):
    """What one client saw on one pool."""
    assert len(got["spread"]) == len(backends) and all(n > 0 for n in got["spread"])
    assert got["mget"] == [f"v{i}" for i in range(16)] + [None]
    assert got["pipeline"] == 302
    assert got["tx_err"].startswith("ERR value is not an integer"), got["tx_err"]
    assert got["tx"] == TX
    assert got["cross"] == EXECABORT
    assert got["after"] == "ok"


def check_backends(pools, prefix):
    """A program deletes every key it writes (all have its prefix): none is left on any backend
    (an aborted transaction's writes would be), and the proxy holds no dedicated server
    connection."""
    proxy, spec = pools
    for _, backends, _ in spec:
        for b in backends:
            r = redis_client(b)
            left = list(r.scan_iter(match=f"*{prefix}:*"))
            r.close()
            assert not left, f"keys left on :{b}: {left[:10]}"

    def held():
        st = manage.status(proxy.manage_port)
        return {f"{name} {b}": st[name][f"{HOST}:{b}:1"]["dedicated_connections"]
                for _, backends, name in spec for b in backends
                if st[name][f"{HOST}:{b}:1"]["dedicated_connections"]}

    wait_for(lambda: not held(), 10, "the dedicated connections to come back")


def test_go_redis_default_options(go_client, pools):
    out = run_program(go_client, pools, "go")
    assert out["client"] == "go-redis" and out["version"] == GO_REDIS
    for got, (_, backends, _) in zip(out["pools"], pools[1], strict=True):
        check_pool(got, backends)
        assert got["watch"] == "20"
        # the defaults: RESP3 (HELLO 3) and CLIENT SETINFO, both answered by the proxy
        info = got["client_info"]
        assert " resp=3 " in info and f" lib-ver={GO_REDIS}" in info, info
        assert " lib-name=go-redis(" in info, info
    check_backends(pools, "go")


def test_jedis_default_options(java_client, pools):
    out = run_program(java_client, pools, "java")
    assert out["client"] == "jedis" and out["version"] == JEDIS
    for got, (port, backends, _) in zip(out["pools"], pools[1], strict=True):
        assert got["port"] == port
        check_pool(got["jedis"], backends)
        check_pool(got["redisclient"], backends)
        assert got["jedis"]["watch"] == "20"
        # the default: RESP2, no HELLO, no CLIENT SETINFO
        assert " resp=2 " in got["jedis"]["client_info"], got["jedis"]["client_info"]
    check_backends(pools, "java")


# --- go-redis over TLS (issue 26) ---------------------------------------------------------------

TLS_POOL = "gotls"
TLS_PREFIX = "gotls"


@pytest.fixture
def tls_listener(tls_proxy, redis_server, tls_certs):
    """A pool with a TLS listener (tls_certs' server certificate: localhost, 127.0.0.1) over two
    plain redis-servers, at -T 2: (proxy, listen port, server ports)."""
    ports = [redis_server()[0] for _ in range(2)]
    proxy, listen = tls_proxy(ports, tls.listener_keys(tls_certs), name=TLS_POOL)
    return proxy, listen, ports


def run_tls(go_client, listen, ca, keys, server_name="localhost"):
    """The program's TLS mode: CompletedProcess (bounded)."""
    argv = [*go_client, "tls", "-addr", f"{HOST}:{listen}", "-ca", str(ca), "-servername",
            server_name, "-prefix", TLS_PREFIX, "-keys", ",".join(keys)]
    return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=RUN_TIMEOUT * scale())


def test_go_redis_over_tls(go_client, tls_listener, tls_certs):
    """SET/GET, a pipeline of 100 commands and an MGET of keys on both servers, every handshake
    verified against the CA and showing the proxy's certificate; the values are on the servers
    (asked directly), and a client that trusts another CA or names another host gets nothing."""
    proxy, listen, ports = tls_listener
    first = manage.key_per_server(proxy.manage_port, TLS_POOL,
                                  [f"{i}:m:{TLS_PREFIX}" for i in range(40)])
    keys = sorted(first.values())
    assert len(keys) == 2, first  # one key on each server
    out = run_tls(go_client, listen, tls_certs.ca, keys)
    assert out.returncode == 0, f"{out.stdout}\n{out.stderr}"
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["client"] == "go-redis" and got["version"] == GO_REDIS and got["mode"] == "tls"
    assert got["get"] == "over-tls"
    assert got["pipeline"] == ["OK"] * 50 + [f"v{i}" for i in range(50)]
    assert got["mget"] == [f"m-{k}" for k in keys]
    assert " resp=3 " in got["client_info"], got["client_info"]  # HELLO 3 over TLS
    assert got["handshakes"] >= 1 and got["unverified"] == 0, got
    assert got["fingerprints"] == [tls.fingerprint(tls_certs.server_cert)], got
    assert got["tls_versions"] == ["TLS 1.3"], got  # the default range's highest
    # the data, on the servers (fresh ones: every key there is the program's)
    direct = [redis_client(p) for p in ports]
    on = [{k.decode(): d.get(k).decode() for k in d.scan_iter(match="*")} for d in direct]
    for d in direct:
        d.close()
    want = {f"{TLS_PREFIX}:tls": "over-tls", **{k: f"m-{k}" for k in keys},
            **{f"{TLS_PREFIX}:p:{i}": f"v{i}" for i in range(50)}}
    assert {k: v for server in on for k, v in server.items()} == want
    assert sum(map(len, on)) == len(want)  # each key on one server
    assert [sum(k in server for k in keys) for server in on] == [1, 1]
    # verification is real: another CA, another name
    for ca, name, why in ((tls_certs.other_ca, "localhost", "unknown authority"),
                          (tls_certs.ca, "not-this-host.example", "not-this-host.example")):
        out = run_tls(go_client, listen, ca, keys, server_name=name)
        assert out.returncode == 1 and why in out.stderr, f"{out.stdout}\n{out.stderr}"
