"""TLS session resumption (issue 26), on both sides of a pool, with real TLS redis-servers
(tls_fixtures.py) and a real TLS client (Python's ssl, sessions reused by hand).

- Toward the servers: each worker keeps the last session a server gave it (per "host:port") and
  offers it on its next connection to that server. A server connection dropped by the server
  (CLIENT KILL) and made again resumes: server_tls_handshakes grows by one per connection and
  server_tls_resumptions by one per connection after each worker's first, in the stats JSON and
  in /metrics, with 1 worker and with 4. A server that cannot resume the session offered (restarted: new ticket keys) gets
  full handshakes: server_tls_resumptions stays 0. (redis-server's `tls-session-caching no` is no
  such server: with TLS 1.3 it resumes from its tickets all the same.)
- From the clients: a client that comes back with its session resumes it, on whichever worker
  takes it (the workers' contexts share the ticket keys): client_tls_resumptions counts those.
"""
import socket

import pytest

from nctest import manage, procs, tls
from nctest.conn import redis_client
from nctest.procs import HOST, free_port
from nctest.wait import scale

POOL = "resume"
TIMEOUT_MS = 10000
IO = 10.0        # seconds for one socket call of the test's own clients
RECONNECTS = 3   # server connections made again after the first


def start_proxy(nutcrackers, write_conf, port, threads, client_tls=None, server_tls=None):
    """A redis pool POOL over the server on port (server_connections 1), with the TLS keys
    given; returns (proxy, listen port). No start-up probe connects (wait="log")."""
    listen = free_port()
    pool = {"listen": f"{HOST}:{listen}", "redis": True, "timeout": TIMEOUT_MS,
            "server_connections": 1, "servers": [f"{HOST}:{port}:1"]}
    pool.update(client_tls or {})
    pool.update(server_tls or {})
    return nutcrackers(write_conf({POOL: pool}), "-T", str(threads), wait="log"), listen


def server_counts(proxy, name, pred):
    """(server_tls_handshakes, server_tls_resumptions) of server name once pred(doc's server) is
    true, the same in /metrics."""
    doc = manage.wait_status(proxy.manage_port, lambda d: pred(d[POOL][name]), 10 * scale())
    s = doc[POOL][name]
    got = (s["server_tls_handshakes"], s["server_tls_resumptions"])
    labels = (("pool", POOL), ("server", name))
    prom = manage.metric_samples(proxy.manage_port, "_tls_")
    assert (prom[("nutcrackers_server_tls_handshakes_total", labels)],
            prom[("nutcrackers_server_tls_resumptions_total", labels)]) == got, prom
    assert s["server_tls_handshake_failures"] == 0, s
    return got


def wait_server_closed(proxy, name, eofs):
    """Until the proxy has seen the server close its connection eofs times in all."""
    manage.wait_server_stat(proxy.manage_port, POOL, name, "server_eof", lambda v: v >= eofs,
                            10 * scale())


@pytest.mark.parametrize("threads", [1, 4])
def test_server_connection_made_again_resumes(nutcrackers, write_conf, tls_redis_server,
                                              tls_certs, threads):
    """One client per worker (round-robin), so each worker has its own connection to the server
    and its own session: every connection after a worker's first resumes."""
    port, _ = tls_redis_server()
    name = f"{HOST}:{port}:1"
    proxy, listen = start_proxy(nutcrackers, write_conf, port, threads,
                                server_tls=tls.server_keys(tls_certs))
    clients = [redis_client(listen) for _ in range(threads)]
    direct = redis_client(port, **tls.redis_ssl_kwargs(tls_certs))
    for i in range(RECONNECTS + 1):
        if i > 0:  # the proxy's connections are the server's other normal clients
            assert direct.client_kill_filter(_type="normal", skipme=True) == threads
            wait_server_closed(proxy, name, i * threads)
        for n, r in enumerate(clients):  # a full handshake first, resumed ones after it
            assert r.set(f"resume:{n}:{i}", f"v{i}") is True
    assert direct.get(f"resume:{threads - 1}:{RECONNECTS}") == f"v{RECONNECTS}".encode()
    expected = (threads * (RECONNECTS + 1), threads * RECONNECTS)
    assert server_counts(proxy, name, lambda s: s["server_tls_handshakes"] >= expected[0]) == \
        expected
    direct.close()
    for r in clients:
        r.close()


def test_server_that_cannot_resume_gets_full_handshakes(nutcrackers, write_conf, redis_server,
                                                        tls_redis_server, tls_certs):
    """The server is restarted on its port before each new connection: the session the proxy
    offers was issued under ticket keys the new process does not have."""
    port, proc = tls_redis_server()
    name = f"{HOST}:{port}:1"
    proxy, listen = start_proxy(nutcrackers, write_conf, port, 1,
                                server_tls=tls.server_keys(tls_certs))
    r = redis_client(listen)
    assert r.set("full:0", "v") is True
    for i in range(1, RECONNECTS + 1):
        procs.stop_popen(proc)
        wait_server_closed(proxy, name, i)
        _, proc = redis_server(port=port, args=tls.redis_tls_args(tls_certs, port))
        assert r.set(f"full:{i}", "v") is True
    assert server_counts(proxy, name, lambda s: s["server_tls_handshakes"] > RECONNECTS) == \
        (RECONNECTS + 1, 0)
    r.close()


def ping_over_tls(ctx, port, session=None):
    """A TLS client's PING through the proxy (offering session); returns (session after the
    reply, whether it was resumed). The reply is read first: a TLS 1.3 ticket comes before it."""
    with socket.create_connection((HOST, port), timeout=IO) as raw:
        with ctx.wrap_socket(raw, server_hostname="localhost", session=session) as s:
            s.sendall(b"*1\r\n$4\r\nPING\r\n")
            got = b""
            while not got.endswith(b"\r\n"):
                chunk = s.recv(64)
                assert chunk, got
                got += chunk
            assert got == b"+PONG\r\n", got
            return s.session, s.session_reused


@pytest.mark.parametrize("threads", [1, 2])
def test_client_that_comes_back_resumes(nutcrackers, write_conf, redis_server, tls_certs,
                                        threads):
    """A client's first connection, then two more with its session: client_tls_resumptions 2 of
    3 handshakes (on 2 workers, round-robin: the second connection is another worker's)."""
    port, _ = redis_server()
    proxy, listen = start_proxy(nutcrackers, write_conf, port, threads,
                                client_tls=tls.listener_keys(tls_certs))
    ctx = tls.client_context(tls_certs)
    session, resumed = ping_over_tls(ctx, listen)
    assert not resumed
    assert [ping_over_tls(ctx, listen, session)[1] for _ in range(2)] == [True, True]
    doc = manage.wait_status(proxy.manage_port,
                             lambda d: d[POOL]["client_tls_handshakes"] >= 3, 10 * scale())
    pool = doc[POOL]
    got = (pool["client_tls_handshakes"], pool["client_tls_resumptions"],
           pool["client_tls_handshake_failures"])
    assert got == (3, 2, 0), pool
    prom = manage.metric_samples(proxy.manage_port, "_tls_")
    labels = (("pool", POOL),)
    assert (prom[("nutcrackers_pool_client_tls_handshakes_total", labels)],
            prom[("nutcrackers_pool_client_tls_resumptions_total", labels)]) == got[:2], prom
