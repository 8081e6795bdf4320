"""Online reload, edge cases found in review: a reload that removes `timeout` while a timer armed
under the old one is pending, `client_connections` with clients still on an older generation,
and a unix listen path spelled another way for the same socket file. Each test failed before its
fix (see notes/reload.md)."""
import copy
import time

from nctest import manage, procs, wait
from nctest.codec import resp
from nctest.conn import RawConn
from nctest.procs import HOST


def _reload(proxy, spec, write_conf):
    write_conf(spec)
    reply = manage.command(proxy.manage_port, "reload", timeout=30)
    assert reply.startswith("OK generation"), reply
    return reply


def test_reload_dropping_timeout_does_not_time_out_requests(redis_server, write_conf, nutcrackers,
                                                            stopped):
    """timeout: 2000 -> no timeout. The kept backend connection takes the new config (its owner
    is the new generation), so a request sent after the reload must wait for its reply, not fail
    with a timeout when the timer armed under the old config fires."""
    port, proc = redis_server()
    spec = {"alpha": {"listen": f"{HOST}:{procs.free_port()}", "redis": True, "timeout": 2000,
                      "servers": [f"{HOST}:{port}:1 r0"]}}
    conf = write_conf(spec)
    proxy = nutcrackers(conf, "-T", "1", wait_manage=True)
    lport = int(spec["alpha"]["listen"].rsplit(":", 1)[1])
    with RawConn(lport, timeout=10) as a, RawConn(lport, timeout=10) as b:
        a.exchange(resp("SET", "k", "v"), b"+OK\r\n")
        b.exchange(resp("SET", "k2", "v2"), b"+OK\r\n")
        stopped(proc)
        t0 = time.monotonic()
        a.send(resp("GET", "k"))          # arms the 2 s timer of the server connection
        time.sleep(0.2)
        new = copy.deepcopy(spec)
        del new["alpha"]["timeout"]               # no timeout any more
        _reload(proxy, new, write_conf)
        time.sleep(0.3)
        b.send(resp("GET", "k2"))         # b is idle: it is on the new generation now
        time.sleep(max(0.0, t0 + 3.0 - time.monotonic()))
        stopped.resume()
        got = b.reply(timeout=5)
        elapsed = time.monotonic() - t0
    assert got == b"$2\r\nv2\r\n", f"{got!r} after {elapsed:.1f}s"


def test_client_connections_limit_holds_across_reload(redis_server, write_conf, nutcrackers, stopped):
    """client_connections: 1. A client busy at the reload stays on the old generation, which
    counts it; the master checks the new generation's count (0), so a second client gets in."""
    port, proc = redis_server()
    spec = {"alpha": {"listen": f"{HOST}:{procs.free_port()}", "redis": True,
                      "client_connections": 1, "servers": [f"{HOST}:{port}:1 r0"]}}
    conf = write_conf(spec)
    proxy = nutcrackers(conf, "-T", "1", wait_manage=True)
    lport = int(spec["alpha"]["listen"].rsplit(":", 1)[1])

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
        a.send(resp("GET", "k"))          # a stays busy, on generation 1
        time.sleep(0.2)
        _reload(proxy, spec, write_conf)          # an identical reload
        time.sleep(0.3)
        with RawConn(lport, timeout=5) as b:
            b.send(resp("PING"))
            got = b.line()
        stopped.resume()
        assert a.reply() == b"$1\r\nv\r\n"
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
    _reload(proxy, new, write_conf)
    time.sleep(0.3)
    assert path.exists(), "the listening socket's file was unlinked: the pool is unreachable"
    with RawConn(path=path) as c:
        c.exchange(resp("PING"), b"+PONG\r\n")
