"""Online reload, edge cases found in review: a reload that removes `timeout` while a timer armed
under the old one is pending, `client_connections` with clients still on an older generation,
and a unix listen path spelled another way for the same socket file. Each test failed before its
fix (see notes/reload.md).

Events these tests wait for: a request written to a backend (its out_queue in the stats), a
worker on the new generation (a new client's PING answered: the master hands the reload to a
worker's inbox before any client it accepts afterwards, and inboxes are first in, first out)."""
import copy

from nctest import manage, procs, wait
from nctest.codec import bulk, resp
from nctest.conn import RawConn
from nctest.procs import HOST

TIMED_OUT = b"-ERR Connection timed out\r\n"


def _reload(proxy, spec, write_conf):
    write_conf(spec)
    reply = manage.command(proxy.manage_port, "reload", timeout=30)
    assert reply.startswith("OK generation"), reply
    return reply


def _written(proxy, pool, n):
    """Waits until n requests of pool are written to its server r0 and not answered."""
    manage.wait_server_stat(proxy.manage_port, pool, "r0", "out_queue", lambda v: v >= n,
                            what=f"{n} requests of {pool} written to r0")


def _worker_on_new_generation(port):
    with RawConn(port) as fresh:
        fresh.exchange(resp("PING"), b"+PONG\r\n")


def _pool(port, **keys):
    return {"listen": f"{HOST}:{procs.free_port()}", "redis": True, **keys,
            "servers": [f"{HOST}:{port}:1 r0"]}


def test_reload_dropping_timeout_does_not_time_out_requests(redis_server, write_conf, nutcrackers,
                                                            stopped):
    """timeout: 2000 -> no timeout. The kept backend connection takes the new config (its owner
    is the new generation), so a request sent after the reload must wait for its reply, not fail
    with a timeout when the timer armed under the old config fires. When that would have been:
    a request of another pool (its own connection to the same backend, the same 2 s timeout)
    written after the first one times out."""
    port, proc = redis_server()
    spec = {"alpha": _pool(port, timeout=2000), "witness": _pool(port, timeout=2000)}
    conf = write_conf(spec)
    proxy = nutcrackers(conf, "-T", "1", wait_manage=True)
    lport, wport = proxy.listen_ports
    with RawConn(lport) as a, RawConn(lport) as b, RawConn(wport) as w:
        a.exchange(resp("SET", "k", "v"), b"+OK\r\n")
        b.exchange(resp("SET", "k2", "v2"), b"+OK\r\n")
        stopped(proc)
        a.send(resp("GET", "k"))                  # arms the 2 s timer of alpha's connection
        _written(proxy, "alpha", 1)
        w.send(resp("GET", "k"))                  # arms the witness's, later
        _written(proxy, "witness", 1)
        new = copy.deepcopy(spec)
        del new["alpha"]["timeout"]               # no timeout any more
        _reload(proxy, new, write_conf)
        _worker_on_new_generation(lport)
        b.send(resp("GET", "k2"))                 # b was idle: on the new generation now
        _written(proxy, "alpha", 2)
        w.expect(TIMED_OUT)                       # the old timer's moment has passed
        stopped.resume()
        got_b, got_a = b.reply(), a.reply()
    assert got_b == bulk("v2"), f"b got {got_b!r}: the old timer fired"
    assert got_a == bulk("v"), f"a got {got_a!r}"


def test_client_connections_limit_holds_across_reload(redis_server, write_conf, nutcrackers, stopped):
    """client_connections: 1. A client busy at the reload stays on the old generation, which
    counts it; the master checks the new generation's count (0), so a second client gets in."""
    port, proc = redis_server()
    spec = {"alpha": _pool(port, client_connections=1), "other": _pool(port)}
    conf = write_conf(spec)
    proxy = nutcrackers(conf, "-T", "1", wait_manage=True)
    lport, oport = proxy.listen_ports

    def first_client():
        # the fixture's probe connection holds the one slot until the proxy has seen it close
        c = RawConn(lport, timeout=10)
        try:
            c.send(resp("SET", "k", "v"))
            if c.line() == b"+OK\r\n":
                return c
        except OSError:  # refused: the error line, then a close (or a reset)
            pass
        c.close()
        return None

    with wait.wait_for(first_client, 10, interval=0.1, what="the first client in") as a:
        with RawConn(lport, timeout=5) as refused:
            assert refused.line() == b"-ERR max number of clients reached\r\n"
        stopped(proc)
        a.send(resp("GET", "k"))                  # a stays busy, on generation 1
        _written(proxy, "alpha", 1)
        _reload(proxy, spec, write_conf)          # an identical reload
        _worker_on_new_generation(oport)
        with RawConn(lport, timeout=5) as b:
            b.send(resp("PING"))
            got = b.line()
        stopped.resume()
        assert a.reply() == bulk("v")
    assert got == b"-ERR max number of clients reached\r\n", got


def test_unix_listen_respelled_keeps_a_reachable_socket(redis_server, write_conf, nutcrackers,
                                                        tmp_path):
    """listen /dir/a.sock -> /dir/./a.sock (the same file, another text): the new listener is
    opened first (sock_listen_unix unlinks the old file and binds the path again), then the old
    one is closed and unlinks the path: the file of the new listener is gone."""
    port, proc = redis_server()
    path = tmp_path / "a.sock"
    spec = {"alpha": {"listen": str(path), "redis": True, "servers": [f"{HOST}:{port}:1 r0"]}}
    conf = write_conf(spec)
    proxy = nutcrackers(conf, "-T", "1", wait="log", wait_manage=True)
    wait.wait_for(lambda: path.exists(), 10, what="the socket file")
    wait.wait_for(lambda: manage.command(proxy.manage_port, "help"), 10, what="manage port")
    with RawConn(path=path) as c:
        c.exchange(resp("PING"), b"+PONG\r\n")
    new = copy.deepcopy(spec)
    new["alpha"]["listen"] = f"{tmp_path}/./a.sock"
    _reload(proxy, new, write_conf)  # answered once the listeners are opened and closed
    assert path.exists(), "the listening socket's file was unlinked: the pool is unreachable"
    with RawConn(path=path) as c:
        c.exchange(resp("PING"), b"+PONG\r\n")
