"""Node clients over TLS (issue 26): ioredis 5 and 6 (`tls: {ca, servername}`) and node-redis 5
and 6 (`socket: {tls: true, ca, servername}`), pinned versions (tests/clients/node/package.json),
against a pool with `tls: true` over two plain redis-servers: tests/clients/node/tls.js sets and
gets a key, pipelines 200 commands and MGETs keys that the proxy routes to both servers; every
value is checked, and the servers are asked directly that the MGET's keys are on both.

Skips (or fails, with NC_REQUIRE_NODE_CLIENTS=1) as test_clients_node.py does when Node >= 20 or
the packages are missing.
"""
import json

import pytest

from nctest import nodeclients
from nctest.conn import redis_client
from nctest.manage import key_per_server
from nctest.procs import HOST, free_port
from nctest.wait import scale

RUN_TIMEOUT = 60.0
POOL = "tlsnode"


@pytest.fixture
def tls_pool(nutcrackers, write_conf, redis_server, tls_certs):
    """A proxy with one TLS pool over two plain redis-servers: (proxy, listen, server ports)."""
    ports = [redis_server()[0] for _ in range(2)]
    listen = free_port()
    conf = write_conf({POOL: {"listen": f"{HOST}:{listen}", "redis": True, "tls": True,
                              "tls_cert_file": str(tls_certs.server_cert),
                              "tls_key_file": str(tls_certs.server_key),
                              "servers": [f"{HOST}:{p}:1" for p in ports]}})
    return nutcrackers(conf, "-T", "2", wait="log"), listen, ports


@pytest.mark.parametrize("alias", ["ioredis5", "ioredis6", "redis5", "redis6"])
def test_node_client_over_tls(node, tls_pool, tls_certs, alias):
    proxy, listen, ports = tls_pool
    by_server = key_per_server(proxy.manage_port, POOL, [f"{i}:tlsm:{alias}" for i in range(40)])
    keys = sorted(by_server.values())
    assert len(keys) == 2, by_server  # one key on each server
    script = "tls.js"
    result, rc, out = nodeclients.run(node, [script, alias, str(listen), str(tls_certs.ca), json.dumps(keys)],
                                      RUN_TIMEOUT * scale())
    assert result is not None and result.get("ok") is True, out[-2000:]
    assert result["get"] == "over-tls"
    assert result["pipeline"] == ["OK"] * 100 + [f"v{i}" for i in range(100)]
    assert result["mget"] == [f"m-{k}" for k in keys]
    held = [sum(redis_client(p).exists(k) for k in keys) for p in ports]
    assert held == [1, 1], held
