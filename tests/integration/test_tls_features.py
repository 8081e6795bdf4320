"""More features over TLS on both sides (issue 26), beyond test_tls.py's: a pool with a TLS listener
over 2 TLS redis-servers (tls_fixtures.py), -T 2, a pool timeout of 200 ms, with redis-py over TLS
and Python ssl clients byte for byte (nctest.tls.TlsConn), the servers asked directly over TLS.

- Blocking commands: a BLPOP that blocks (on its server: blocked_clients) is woken by another
  client's RPUSH and returns the value, which leaves the list; a BLPOP whose 1 s timeout expires
  answers nil as the server does (RESP2 `*-1`, RESP3 `_`), after the second and not at the pool's
  timeout, and the connection goes on.
- HELLO 3: redis-py with protocol=3 gets RESP3 replies (HGETALL as a map) and then SETs and GETs;
  the same requests on a raw connection get the server's own bytes (a map, a RESP3 null).
- A reload of an unchanged config (SIGHUP) while a TLS client makes exchanges on its connection and
  another is blocked in BLPOP: the first goes on without one failure, the second is woken after it,
  no server connection is made again (the servers' handshakes do not grow), and a new connection
  is shown the same certificate.
"""
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from nctest import manage, tls
from nctest.codec import resp
from nctest.conn import redis_client
from nctest.wait import scale, wait_for

POOL = "tlsfeat"
POOL_TIMEOUT = 200    # ms: every block here outlives it
BLOCK = 1             # seconds a BLPOP that nothing wakes waits
RELOAD_TIMEOUT = 30.0
PROGRESS = 25         # exchanges the loader makes after a step before the next


@pytest.fixture
def both_sides(tls_proxy, tls_redis_server, tls_certs):
    """(proxy, listen port, server ports): 2 TLS redis-servers behind a pool with TLS on both
    sides."""
    ports = [tls_redis_server()[0] for _ in range(2)]
    proxy, listen = tls_proxy(ports, tls.listener_keys(tls_certs), tls.server_keys(tls_certs),
                              name=POOL, timeout=POOL_TIMEOUT)
    return proxy, listen, ports


def tls_client(certs, port, **kw):
    return redis_client(port, **tls.redis_ssl_kwargs(certs), **kw)


def raw(conn, *args):
    """The bytes of the reply to one command."""
    conn.send(resp(*args))
    return conn.reply()


def blocked_clients(certs, ports):
    """The clients blocked in a command on the servers, in all (INFO clients, over TLS)."""
    total = 0
    for p in ports:
        d = tls_client(certs, p)
        total += d.info("clients")["blocked_clients"]
        d.close()
    return total


def holder(certs, ports, key):
    """The port of the one server that has key."""
    found = []
    for p in ports:
        d = tls_client(certs, p)
        if d.exists(key):
            found.append(p)
        d.close()
    assert len(found) == 1, (key, found)
    return found[0]


def block_then(certs, ports, client, key, timeout=20):
    """Starts client.blpop(key) in a thread of ex and waits until a server has it blocked; returns
    (executor, future)."""
    ex = ThreadPoolExecutor(1)
    fut = ex.submit(client.blpop, [key], timeout)
    wait_for(lambda: fut.done() or blocked_clients(certs, ports) == 1, 10,
             "the BLPOP to block on its server")
    assert not fut.done(), fut.result()
    return ex, fut


# --- blocking commands --------------------------------------------------------------------------

def test_blpop_woken_by_another_clients_push(both_sides, tls_certs):
    proxy, listen, ports = both_sides
    key = "{blk}:woken"
    waiter = tls_client(tls_certs, listen, socket_timeout=30 * scale())
    ex, fut = block_then(tls_certs, ports, waiter, key)
    with ex:
        pusher = tls_client(tls_certs, listen)
        assert pusher.rpush(key, "pushed") == 1
        assert list(fut.result(timeout=10 * scale())) == [key.encode(), b"pushed"]
    assert pusher.exists(key) == 0  # popped: the list is gone
    wait_for(lambda: blocked_clients(tls_certs, ports) == 0, 10, "no client blocked")
    assert waiter.set("{blk}:after", "ok") is True and waiter.get("{blk}:after") == b"ok"
    assert pusher.get("{blk}:after") == b"ok"
    waiter.close()
    pusher.close()


@pytest.mark.parametrize("protocol", [2, 3])
def test_blpop_timeout_answers_nil(both_sides, tls_certs, protocol):
    """The proxy's reply is the server's (asked the same on a TLS connection of its own), after
    BLOCK seconds: not cut short by the pool's 200 ms timeout."""
    proxy, listen, ports = both_sides
    ctx = tls.client_context(tls_certs)
    key = f"{{blk}}:empty{protocol}"
    got = []
    for port in (listen, ports[0]):
        with tls.TlsConn(port, ctx, timeout=10 * scale()) as c:
            if protocol == 3:
                assert c.call("HELLO", "3")[b"proto"] == 3
            t0 = time.monotonic()
            c.send(resp("BLPOP", key, BLOCK))
            reply = c.reply()
            took = time.monotonic() - t0
            assert BLOCK - 0.1 <= took < BLOCK + 5 * scale(), (port, took)
            tls.set_get(c, f"{{blk}}:then{protocol}", "served")
            got.append(reply)
    assert got[0] == got[1] == (b"*-1\r\n" if protocol == 2 else b"_\r\n"), got


# --- HELLO 3 ------------------------------------------------------------------------------------

def test_hello_3_and_resp3_replies(both_sides, tls_certs):
    proxy, listen, ports = both_sides
    r = tls_client(tls_certs, listen, protocol=3)
    assert r.execute_command("HELLO")[b"proto"] == 3
    h = "{r3}:hash"
    assert r.hset(h, mapping={"f1": "v1", "f2": "v2"}) == 2
    assert r.hgetall(h) == {b"f1": b"v1", b"f2": b"v2"}
    assert r.set("{r3}:k", "resp3") is True and r.get("{r3}:k") == b"resp3"
    assert r.get("{r3}:absent") is None
    # the wire: a map and a RESP3 null, the server's own bytes
    ctx = tls.client_context(tls_certs)
    wire = []
    for port in (listen, holder(tls_certs, ports, h)):
        with tls.TlsConn(port, ctx) as c:
            assert c.call("HELLO", "3")[b"proto"] == 3
            wire.append((raw(c, "HGETALL", h), raw(c, "GET", "{r3}:absent")))
    assert wire[0] == wire[1], wire
    assert wire[0][0].startswith(b"%2\r\n") and wire[0][1] == b"_\r\n", wire
    r.close()


# --- reload -------------------------------------------------------------------------------------

def server_handshakes(proxy):
    doc = manage.status(proxy.manage_port)
    return sum(s["server_tls_handshakes"] for s in doc[POOL].values() if isinstance(s, dict))


def test_unchanged_reload_keeps_tls_clients(both_sides, tls_certs):
    proxy, listen, ports = both_sides
    ctx = tls.client_context(tls_certs)
    stop = threading.Event()
    loader = tls.TlsLoader("same", listen, ctx, stop)
    waiter = tls_client(tls_certs, listen, socket_timeout=60 * scale())

    def progress(since):
        assert loader.error is None, loader.error
        return loader.done >= since + PROGRESS

    loader.start()
    try:
        wait_for(lambda: progress(0), 30, "the loader's first exchanges")
        # the pusher's worker has its connection to the queue's server before the count: the
        # loader's keys may all be on the other server, and a new one would be a handshake more
        pusher = tls_client(tls_certs, listen)
        assert pusher.exists("{same}:queue") == 0
        ex, fut = block_then(tls_certs, ports, waiter, "{same}:queue", timeout=30)
        with ex:
            handshakes = server_handshakes(proxy)
            assert handshakes > 0
            since = loader.done
            proxy.signal(signal.SIGHUP)
            manage.wait_status(proxy.manage_port, lambda d: d.get("generation") == 2,
                               timeout=RELOAD_TIMEOUT, what="generation 2")
            wait_for(lambda: progress(since), 30, "the loader to go on after the reload")
            assert not fut.done()
            assert pusher.rpush("{same}:queue", "after") == 1
            assert list(fut.result(timeout=10 * scale())) == [b"{same}:queue", b"after"]
        assert server_handshakes(proxy) == handshakes
    finally:
        stop.set()
        loader.join(timeout=30 * scale())
    assert loader.error is None, loader.error
    assert not loader.is_alive()
    with tls.TlsConn(listen, ctx) as c:
        assert c.fingerprint == loader.conn.fingerprint == tls.fingerprint(tls_certs.server_cert)
        tls.set_get(c, "{same}:new", "new")
    assert waiter.get("{same}:new") == b"new"
    waiter.close()
    pusher.close()
