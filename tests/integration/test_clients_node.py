"""Today's Node redis clients against the proxy with their DEFAULT options, pinned versions
(tests/clients/node/package.json): ioredis 5 (INFO ready check) and 6 (HELLO 3, then INFO),
node-redis 5 (RESP2, CLIENT SETINFO) and 6 (HELLO 3, CLIENT SETINFO and CLIENT
MAINT_NOTIFICATIONS in its first write). A proxy at -T 4 serves two redis pools of two
redis-servers each; each client runs tests/clients/node/lib.js on both pools: connect, every data
type (odd and large values too), pipelines (up to 2000 commands), multi-key commands over both
servers, INFO (the servers' version), a transaction on hash-tagged keys, a WATCH that aborts one,
8 connections incrementing one key in transactions at once, a transaction whose keys cross
servers (refused, EXECABORT) and the connection serving afterwards, checking every value it gets.
The test then asks the redis-servers directly: the multi-key keys are on both servers with their
values, the transactions' keys on one, the crossing transaction's keys nowhere, and exactly the
transactions that ran reached a server.

The packages are installed by scripts/lib/deps.sh (nc_install_node_clients: `npm ci` when
node_modules is missing or out of date), which this module calls too. Without Node >= 20 and npm
the tests skip with deps.sh's line "Node client tests (...) not run: <why>" (scripts/test.sh's
summary prints it too); so do they when the install fails. NC_REQUIRE_NODE_CLIENTS=1 fails them
instead, in both cases; scripts/test.sh sets it where Node.js >= 20 and npm are there.
"""
import json
import os
import re
import subprocess
import uuid

import pytest

from nctest import nodeclients
from nctest.conn import redis_client
from nctest.keys import spread_keys
from nctest.manage import find_keys
from nctest.procs import HOST, free_port
from nctest.wait import scale

RUN_TIMEOUT = 120.0     # seconds for one client's whole sequence on both pools (unscaled)

# (npm alias, adapter script, the protocol its defaults speak, the lib-name it reports)
CLIENTS = [
    ("ioredis5", "ioredis.js", 2, "ioredis"),
    ("ioredis6", "ioredis.js", 3, "ioredis"),
    ("redis5", "node_redis.js", 2, "node-redis"),
    ("redis6", "node_redis.js", 3, "node-redis"),
]
STEPS = ["connect", "handshake", "string", "list", "hash", "set", "zset", "pipeline", "multikey",
         "transaction", "watch", "concurrent transactions", "cross-server transaction",
         "usable afterwards", "quit"]
# lib.js's transactions that reach a server: the tagged one, the watched one, 8 connections x 20
# at once, the last
TRANSACTIONS = 3 + 8 * 20


@pytest.fixture
def pools(redis_server, write_conf, nutcrackers):
    """A proxy at -T 4 with two pools (alpha, beta) of two redis-servers each (hash_tag "{}"):
    (proxy, {pool name: (listen port, [server ports])}, {pool name: [server Popens]})."""
    spec, procs = {}, {}
    for name in ("alpha", "beta"):
        started = [redis_server() for _ in range(2)]
        spec[name] = (free_port(), [port for port, _ in started])
        procs[name] = [proc for _, proc in started]
    conf = write_conf({name: {"listen": f"{HOST}:{port}", "redis": True, "hash_tag": "{}",
                              "servers": [f"{HOST}:{p}:1" for p in ports]}
                       for name, (port, ports) in spec.items()})
    return nutcrackers(conf, "-T", "4"), spec, procs


def by_server(proxy, pool, ports, prefix, n):
    """n fresh keys per server of the pool, as the proxy routes them: a list per server."""
    names = [f"{HOST}:{p}:1" for p in ports]
    out = [[] for _ in ports]
    routed = find_keys(proxy.manage_port, pool, spread_keys(prefix, 40 * n))
    for key, server in routed.items():
        i = names.index(server)
        if len(out[i]) < n:
            out[i].append(key)
    assert all(len(keys) == n for keys in out), f"keys per server: {out}"
    return out


def plan_of(proxy, spec, client):
    """lib.js's plan (per pool: its port, a key prefix, keys on both servers, two crossing keys)
    and the keys the test checks afterwards."""
    plan = []
    for name, (port, ports) in spec.items():
        prefix = f"{client}-{name}-{uuid.uuid4().hex[:8]}"
        first, second = by_server(proxy, name, ports, f"{prefix}:mk", 4)
        spread = [k for pair in zip(first, second) for k in pair]  # alternating servers
        a, b = by_server(proxy, name, ports, f"{prefix}:cross", 1)
        plan.append({"port": port, "prefix": prefix, "spread": spread, "cross": [a[0], b[0]]})
    return {"pools": plan}


def run_client(node, alias, script, plan):
    """Runs the adapter; returns (its JSON, its whole output)."""
    env = dict(os.environ, REDIS_DEBUG_MAINTENANCE="1")  # node-redis 6 prints its handshake's fate
    try:
        result, rc, text = nodeclients.run(node, [script, alias, json.dumps(plan)], RUN_TIMEOUT * scale(), env)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{alias} did not finish in {RUN_TIMEOUT * scale()} s:\n{e.stdout}\n{e.stderr}")
    assert rc == 0 and result is not None and "error" not in result, f"{alias} failed (exit {rc}):\n{text}"
    return result, text


def commandstats(port, name):
    """Calls of a command on the redis-server on port."""
    with redis_client(port) as r:
        return r.info("commandstats").get(f"cmdstat_{name}", {}).get("calls", 0)


def exists(port, key):
    with redis_client(port) as r:
        return r.exists(key) == 1


def check_backends(spec, plan, result):
    """What each pool's redis-servers hold after the client's run, asked of them directly."""
    all_ports = [p for _, ports in spec.values() for p in ports]
    for (name, (_, ports)), pool, got in zip(spec.items(), plan["pools"], result["pools"]):
        directs = [redis_client(p) for p in ports]
        try:
            # multi-key: the odd keys stay, on the server the proxy routes them to, on both servers
            for i, key in enumerate(pool["spread"]):
                want = f"m{i}".encode() if i % 2 else None
                values = [d.get(key) for d in directs]
                assert values[i % 2] == want and values[1 - i % 2] is None, (name, key, values)
            # the transactions' keys: on one server, with the values the transactions left
            prefix = pool["prefix"]
            tag = f"{{{prefix}:tx}}"
            holder = [d for d in directs if d.exists(f"{tag}:a")]
            assert len(holder) == 1, f"{tag}:a on {len(holder)} servers"
            d = holder[0]
            assert d.get(f"{tag}:a") == b"3"
            assert d.lrange(f"{tag}:l", 0, -1) == [b"x", b"y"]
            assert d.hgetall(f"{tag}:h") == {b"f": b"v"}
            assert d.get(f"{tag}:w") == b"other"  # the watched transaction did not run
            assert d.get(f"{tag}:ctr") == b"160"  # the concurrent ones ran each once
            # the crossing transaction: nothing on any server of any pool
            for key in [*pool["cross"], f"{tag}:x"]:
                assert not [p for p in all_ports if exists(p, key)], key
            # exactly the transactions that ran reached a server (MULTI..EXEC on a dedicated
            # connection); the crossing ones sent nothing
            assert got["transactions"] == TRANSACTIONS
            assert sum(commandstats(p, "multi") for p in ports) == TRANSACTIONS
            assert sum(commandstats(p, "exec") for p in ports) == TRANSACTIONS
            # the other pool's servers never saw this pool's keys
            others = [p for other, (_, ps) in spec.items() if other != name for p in ps]
            for p in others:
                with redis_client(p) as r:
                    assert r.keys(f"{prefix}*") == [] and r.keys(f"{{{prefix}*") == []
        finally:
            for d in directs:
                d.close()


@pytest.mark.parametrize("alias,script,protocol,lib_name", CLIENTS, ids=[c[0] for c in CLIENTS])
def test_node_client_defaults(node, pools, alias, script, protocol, lib_name):
    proxy, spec, _ = pools
    plan = plan_of(proxy, spec, alias)
    result, text = run_client(node, alias, script, plan)
    version = nodeclients.pinned_versions()[alias]
    assert result["version"] == version
    with redis_client(spec["alpha"][1][0]) as r:
        server_version = r.info("server")["redis_version"]
    for got in result["pools"]:
        assert got["redis_version"] == server_version  # INFO's version is the servers'

        assert got["steps"] == STEPS
        assert got["resp"] == protocol  # HELLO 3 took for the RESP3 clients
        assert got["lib_name"] == lib_name and got["lib_ver"] == version  # CLIENT SETINFO
        # the crossing command's error names the two servers; EXEC answers EXECABORT
        assert re.match(r"ERR keys of one transaction on two servers, '.+' and '.+'", got["cross_raw"][2])
        assert got["cross_raw"][3] == "EXECABORT Transaction discarded because of previous errors."
    if alias == "redis6":
        # CLIENT MAINT_NOTIFICATIONS got redis's answer for a feature it does not have, which
        # node-redis's default ("auto") takes as "no maintenance notifications here"
        assert "handshake failed: SimpleError: ERR unknown subcommand 'MAINT_NOTIFICATIONS'" in text, text
    check_backends(spec, plan, result)


@pytest.mark.parametrize("alias,script", [c[:2] for c in CLIENTS], ids=[c[0] for c in CLIENTS])
def test_node_client_with_a_server_down(node, pools, alias, script):
    """One server of the pool is down: the client still connects with its defaults (ioredis's INFO
    ready check and the HELLO of the RESP3 clients are answered by the server that is up), the
    live server's keys work, the dead one's get the proxy's error, and the connection serves on."""
    proxy, spec, procs = pools
    port, ports = spec["beta"]
    procs["beta"][1].kill()
    procs["beta"][1].wait(timeout=10)
    (up,), (down,) = by_server(proxy, "beta", ports, f"{alias}-down-{uuid.uuid4().hex[:8]}", 1)
    result, _ = run_client(node, alias, script, {"pools": [{"port": port, "down": {"up": up, "down": down}}]})
    assert result["pools"][0]["steps"] == ["connect", "degraded", "quit"]
