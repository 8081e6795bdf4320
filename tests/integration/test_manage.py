"""The manage port protocol against a running proxy with real backends: find_key/find_keys agree
with where keys really landed, slowlog records a request to a backend stopped with SIGSTOP,
garbage and over-long lines get an error while the proxy keeps serving, silent clients get the
JSON (twemproxy's stats port behaviour), HTTP (curl, Prometheus), help/quit/unknown commands, and
slow or stalled manage clients do not hold up anybody else."""
import json
import os
import re
import signal
import socket
import threading
import time

import pytest

from nctest import manage, procs, wait
from nctest.conn import RawConn as Conn
from nctest.keys import owner as backend_owner
from nctest.procs import HOST


@pytest.fixture
def proxy3(nutcrackers, write_conf, redis_server):
    """A redis pool 'alpha' over 3 named servers (r0..r2), 4 workers. Returns (proxy, {name:
    (port, Popen)})."""

    def start(*flags, extra=None, wait="listen"):
        redis = {f"r{i}": redis_server() for i in range(3)}
        pool = {"listen": f"{HOST}:{procs.free_port()}", "redis": True,
                "servers": [f"{HOST}:{port}:1 {name}" for name, (port, _) in redis.items()]}
        pool.update(extra or {})
        conf = write_conf({"alpha": pool})
        proxy = nutcrackers(conf, "-T", "4", *flags, wait=wait, wait_manage=True)
        return proxy, redis

    return start


def _owner(redis, key):
    """The name of the backend holding key (asked directly, not through the proxy)."""
    names = list(redis)
    return names[backend_owner([redis[n][0] for n in names], True, key)]


def test_find_key_agrees_with_where_keys_landed(proxy3):
    proxy, redis = proxy3()
    keys = [f"user:{i}" for i in range(200)]
    with Conn(proxy.listen_ports[0]) as c:
        for k in keys:
            assert c.call("SET", k, "1") == "OK"
    text = manage.command(proxy.manage_port, *[f"find_key alpha {k}" for k in keys])
    lines = text.splitlines()
    assert len(lines) == len(keys)
    names = set()
    for k, line in zip(keys, lines):
        m = re.fullmatch(r"127\.0\.0\.1:(\d+):1 (r\d)", line)
        assert m, line
        name = m.group(2)
        assert int(m.group(1)) == redis[name][0]
        assert name == _owner(redis, k), k
        names.add(name)
    assert len(names) >= 2
    # find_keys: one line per key, in order
    multi = manage.command(proxy.manage_port, "find_keys alpha " + " ".join(keys[:10]))
    assert multi.splitlines() == lines[:10]


def test_find_key_unknown_pool(proxy3):
    proxy, _ = proxy3()
    assert manage.command(proxy.manage_port, "find_key nope k") == "ERR: pool doesn't exist!\r\n"


def test_slowlog_records_a_request_to_a_stopped_backend(proxy3):
    proxy, redis = proxy3("-S", "400000")  # 400 ms
    port = proxy.listen_ports[0]
    with Conn(port) as c:
        assert c.call("SET", "slow:key", "v") == "OK"  # opens the server connection
        assert manage.command(proxy.manage_port, "slowlog reset") == "OK\r\n"
        assert c.call("SET", "slow:key", "v") == "OK"  # fast: not recorded
    assert manage.command(proxy.manage_port, "slowlog len") == "0\r\n"
    line = manage.command(proxy.manage_port, "find_key alpha slow:key").strip()
    name = line.split()[1]
    backend = redis[name][1]
    result = {}

    def get():
        with Conn(port, timeout=20) as c:
            result["reply"] = c.call("GET", "slow:key")

    backend.send_signal(signal.SIGSTOP)
    try:
        t = threading.Thread(target=get)
        t.start()
        # the GET written to the stopped backend, then kept waiting past the 500 ms bucket
        manage.wait_server_stat(proxy.manage_port, "alpha", name, "out_queue", lambda n: n >= 1)
        wait.hold(0.7, "a request slower than 500 ms")
    finally:
        backend.send_signal(signal.SIGCONT)
    t.join(20)
    assert result.get("reply") == b"v"

    def recorded():
        return manage.command(proxy.manage_port, "slowlog len") == "1\r\n"

    wait.wait_for(recorded, 5, what="the slow request in the slowlog")
    text = manage.command(proxy.manage_port, "slowlog get")
    lines = text.splitlines()
    assert lines[-1] == "END" and len(lines) == 2, text
    m = re.fullmatch(r'1\) id=\d+ worker=\d time=(\d+)\.\d{6} duration_us=(\d+) pool="alpha" '
                     r'server="(\w+)" command="(\w+)" key="slow:key" key_len=8', lines[0])
    assert m, lines[0]
    assert abs(int(m.group(1)) - time.time()) < 60
    assert 500000 <= int(m.group(2)) < 20000000
    assert m.group(3) == name
    assert m.group(4).lower() == "get"
    # the histograms saw it too
    lat = manage.status(proxy.manage_port, "latency")["latency"]["alpha"]
    slow_buckets = ["500", "1000", "2000", "3000", "+inf"]
    assert sum(lat["request_latency"]["buckets"][b] for b in slow_buckets) == 1
    assert sum(lat["servers"][name]["server_latency"]["buckets"][b] for b in slow_buckets) == 1
    assert lat["request_latency"]["max"] >= 500000
    assert manage.command(proxy.manage_port, "slowlog reset", "slowlog len") == "OK\r\n0\r\n"


def _still_serves(proxy):
    with Conn(proxy.listen_ports[0]) as c:
        assert c.call("SET", "alive", "yes") == "OK"
        assert c.call("GET", "alive") == b"yes"
    doc = manage.status(proxy.manage_port)
    assert doc["service"] == "nutcrackers"


def _blast(port, payload):
    """Sends payload from a thread while reading; returns everything read until the close."""
    with Conn(port, timeout=10, nodelay=False) as c:
        def send():
            try:
                c.sock.sendall(payload)
            except OSError:  # the proxy may close before all of it is read
                pass

        t = threading.Thread(target=send)
        t.start()
        data = c.read_until_closed()
        t.join(10)
    return data


@pytest.mark.parametrize("kind", ["random", "one_long_line"])
def test_one_megabyte_of_garbage(proxy3, kind):
    proxy, _ = proxy3()
    payload = os.urandom(1 << 20) if kind == "random" else b"x" * (1 << 20)
    data = _blast(proxy.manage_port, payload)
    assert data.startswith(b"ERR"), data[:200]
    if kind == "one_long_line":
        assert data == b"ERR: line too long (the limit is 4096 bytes)\r\n"
    else:
        assert data.endswith(b"ERR: too many errors, closing\r\n") or b"line too long" in data
    _still_serves(proxy)


def test_silent_client_gets_the_json(proxy3):
    proxy, _ = proxy3()
    start = time.monotonic()
    doc = json.loads(manage.silent(proxy.manage_port))
    assert time.monotonic() - start < 3
    assert doc["service"] == "nutcrackers"
    assert "alpha" in doc and "r0" in doc["alpha"]
    # `printf "" | nc host port`: the client closes its side at once
    doc = json.loads(manage.silent(proxy.manage_port, half_close=True))
    assert list(doc)[:3] == ["service", "source", "version"]


def test_http(proxy3):
    proxy, _ = proxy3()
    status, headers, body = manage.http_get(proxy.manage_port, "/")
    assert status == 200 and headers["content-type"] == "application/json"
    assert int(headers["content-length"]) == len(body)
    assert json.loads(body)["service"] == "nutcrackers"
    status, headers, body = manage.http_get(proxy.manage_port, "/latency")
    assert status == 200 and headers["content-type"] == "application/json"
    assert "request_latency" in json.loads(body)["latency"]["alpha"]
    status, headers, body = manage.http_get(proxy.manage_port, "/metrics")
    assert status == 200 and b"# TYPE nutcrackers_server_requests_total counter" in body
    status, _, body = manage.http_get(proxy.manage_port, "/metrics", method="HEAD")
    assert status == 200 and body == b""
    assert manage.http_get(proxy.manage_port, "/nope")[0] == 404
    assert manage.http_get(proxy.manage_port, "/", method="POST")[0] == 405


def test_help_quit_unknown(proxy3):
    proxy, _ = proxy3()
    text = manage.command(proxy.manage_port, "help")
    assert text.startswith("*****\r\n") and text.endswith("*****\r\n")
    for cmd in ("status", "status workers", "status latency", "find_key", "find_keys", "slowlog get",
                "slowlog len", "slowlog reset", "quit"):
        assert cmd in text
    assert manage.command(proxy.manage_port, "config set x y") == "ERR: unknown command, try 'help'\r\n"
    # LF alone works as a line end; quit closes the connection after earlier replies
    with Conn(proxy.manage_port, nodelay=False) as c:
        c.send(b"slowlog len\nquit\nslowlog len\n")
        assert c.read_until_closed() == b"0\r\n"


def test_stalled_manage_clients_do_not_block_anybody(proxy3):
    proxy, _ = proxy3()
    stalled = []
    try:
        for _ in range(20):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect((HOST, proxy.manage_port))
            s.setblocking(False)
            try:  # pipelines many commands and never reads a reply
                s.send(b"status workers\r\n" * 2000)
            except BlockingIOError:
                pass
            stalled.append(s)
        idle = [socket.create_connection((HOST, proxy.manage_port)) for _ in range(20)]
        stalled.extend(idle)  # connected, mid-line, never finishing it
        for s in idle:
            s.sendall(b"stat")
        start = time.monotonic()
        # the workers and the manage port keep answering promptly (a slowlog check would be
        # load-sensitive: any request may pass the 10 ms -S threshold on a busy 2-core machine)
        for _ in range(5):
            _still_serves(proxy)
            assert manage.command(proxy.manage_port, "slowlog len").endswith("\r\n")
        assert time.monotonic() - start < 5
    finally:
        for s in stalled:
            s.close()
    _still_serves(proxy)


def test_manage_port_in_use_is_fatal(write_conf, tmp_path):
    """As twemproxy: a manage port that cannot be listened on stops the start (exit 1, logged)."""
    conf = write_conf({"alpha": {"listen": f"{HOST}:{procs.free_port()}", "redis": True,
                                 "servers": [f"{HOST}:{procs.free_port()}:1"]}})
    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        taken.bind((HOST, 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        log = tmp_path / "nc.log"
        r = procs.run(["-c", str(conf), "-s", str(port), "-a", HOST, "-o", str(log)])
    assert r.returncode == 1
    assert f"cannot listen on the manage port {HOST}:{port}" in procs.read_text(log)


# The restricted commands (they change state or show key names) and who may run them. A test can
# only connect from loopback, so the untrusted cases take loopback out of the trusted networks
# (-N none): the proxy then treats 127.0.0.1 as it treats any other address (notes/manage-auth.md).
RESTRICTED = ("slowlog get", "slowlog reset", "reload")


def _open_commands_answer(proxy):
    """What twemproxy serves stays open: the status JSON, the silent client's JSON, HTTP."""
    assert manage.status(proxy.manage_port)["service"] == "nutcrackers"
    assert json.loads(manage.silent(proxy.manage_port, half_close=True))["service"] == "nutcrackers"
    assert manage.http_get(proxy.manage_port, "/metrics")[0] == 200
    assert manage.command(proxy.manage_port, "slowlog len", "find_key alpha k").count("\r\n") == 2


def test_restricted_commands_run_from_loopback(proxy3):
    proxy, _ = proxy3()  # the default trusted networks: 127.0.0.0/8 and ::1
    assert manage.command(proxy.manage_port, *RESTRICTED) == "END\r\nOK\r\nOK generation 2\r\n"
    _open_commands_answer(proxy)


def test_restricted_commands_are_refused_to_an_untrusted_client(proxy3):
    proxy, _ = proxy3("-N", "none")
    text = manage.command(proxy.manage_port, *RESTRICTED)
    lines = text.splitlines()
    assert len(lines) == 3, text
    for cmd, line in zip(RESTRICTED, lines):
        assert line == (f"ERR: '{cmd}' is refused: it needs a trusted client (a unix socket, or an address "
                        "in --manage-trust: none), and no manage password is set (--manage-auth-file)")
    assert manage.command(proxy.manage_port, "auth x") == \
        "ERR: no manage password is set (--manage-auth-file)\r\n"
    _open_commands_answer(proxy)
    assert manage.status(proxy.manage_port)["generation"] == 1  # nothing was reloaded
    _still_serves(proxy)


def test_restricted_commands_run_after_auth(proxy3, tmp_path):
    pw = tmp_path / "manage.pw"
    pw.write_text("s3cret-Pa55\n")
    pw.chmod(0o600)
    proxy, _ = proxy3("-N", "none", "-K", str(pw))
    refused = manage.command(proxy.manage_port, "reload")
    assert refused.startswith("ERR: 'reload' is refused: ") and refused.endswith(
        " or 'auth <password>' first\r\n"), refused
    assert manage.command(proxy.manage_port, "auth s3cret", "reload").startswith(
        "ERR: invalid password\r\nERR: 'reload' is refused")
    assert manage.command(proxy.manage_port, "auth s3cret-Pa55", *RESTRICTED) == \
        "OK\r\nEND\r\nOK\r\nOK generation 2\r\n"
    # auth holds for its connection only
    assert manage.command(proxy.manage_port, "reload").startswith("ERR: 'reload' is refused")
    assert "a wrong password from 127.0.0.1:" in proxy.log()
    assert "can be read by other users" not in proxy.log()
    _open_commands_answer(proxy)


def _auth_answers(port, password):
    """What `auth <password>` gets on a new connection."""
    return manage.command(port, f"auth {password}")


def test_a_reload_reads_the_password_file_again(proxy3, tmp_path):
    """-K is read again at every reload (the manage port's `reload` and SIGHUP): a new password
    replaces the old one for new `auth` commands, a session already in stays in; a file that is
    now invalid or missing keeps the password in force, with a warning naming the file. The
    password itself is never logged."""
    pw = tmp_path / "manage.pw"
    pw.write_text("old-Pa55\n")
    pw.chmod(0o600)
    proxy, _ = proxy3("-N", "none", "-K", str(pw))
    with Conn(proxy.manage_port, nodelay=False) as early:
        early.send(b"auth old-Pa55\r\n")
        assert early.line() == b"OK\r\n"
        pw.write_text("new-Pa55\n")
        assert manage.command(proxy.manage_port, "auth old-Pa55", "reload") == "OK\r\nOK generation 2\r\n"
        assert _auth_answers(proxy.manage_port, "old-Pa55") == "ERR: invalid password\r\n"
        assert _auth_answers(proxy.manage_port, "new-Pa55") == "OK\r\n"
        early.send(b"slowlog reset\r\n")  # authenticated before the rotation: still in
        assert early.line() == b"OK\r\n"
    proxy.wait_log(f"manage port: the password of '{pw}' is in force for new 'auth' commands (changed)")

    # invalid now (SIGHUP): the new password stays
    pw.write_text("two words\n")
    proxy.signal_and_wait(signal.SIGHUP, f"reload: the manage password was not re-read: '{pw}': "
                          "the password has a blank or a control character; the password in force is kept")
    assert _auth_answers(proxy.manage_port, "new-Pa55") == "OK\r\n"
    assert _auth_answers(proxy.manage_port, "two") == "ERR: invalid password\r\n"

    # missing now (`reload`): the same
    pw.unlink()
    mark = proxy.log_mark()
    assert manage.command(proxy.manage_port, "auth new-Pa55", "reload") == "OK\r\nOK generation 4\r\n"
    proxy.wait_log(f"reload: the manage password was not re-read: cannot open '{pw}': No such file",
                   start=mark)
    assert _auth_answers(proxy.manage_port, "new-Pa55") == "OK\r\n"

    # back, the same password again
    pw.write_text("new-Pa55\n")
    pw.chmod(0o600)
    proxy.signal_and_wait(signal.SIGHUP, "is in force for new 'auth' commands (unchanged)")
    log = proxy.log()
    assert "Pa55" not in log and "two words" not in log
    _still_serves(proxy)


WRONG = 50


def test_wrong_passwords_are_logged_at_most_once_an_interval(proxy3, tmp_path):
    """A client trying passwords in a loop: one log line per -L interval, the first of a later
    interval saying how many were left out; every attempt is accounted for."""
    pw = tmp_path / "manage.pw"
    pw.write_text("s3cret\n")
    pw.chmod(0o600)
    interval_ms = 1000
    proxy, _ = proxy3("-N", "none", "-K", str(pw), "-L", str(interval_ms))
    def logged():
        """(lines, the others they say were left out)"""
        notes = re.findall(r"manage port: a wrong password from 127\.0\.0\.1:\d+(?: \((\d+) more suppressed\))?$",
                           proxy.log(), re.M)
        return len(notes), sum(int(n) for n in notes if n)

    started = time.monotonic()
    for i in range(0, WRONG, 10):  # 10 a connection: 16 errors close one
        assert manage.command(proxy.manage_port, *[f"auth guess{j}" for j in range(i, i + 10)]) == \
            "ERR: invalid password\r\n" * 10
    elapsed = time.monotonic() - started
    lines, _ = logged()
    assert 1 <= lines <= 2 + int(elapsed * 1000 / interval_ms), proxy.log()
    time.sleep(interval_ms / 1000 * 1.5)  # a new interval: its first line counts the others
    assert _auth_answers(proxy.manage_port, "once-more") == "ERR: invalid password\r\n"
    wait.wait_for(lambda: sum(logged()) == WRONG + 1, 10, "a line for every attempt, or a count")
    assert logged()[1] > 0
    assert "guess" not in proxy.log() and "once-more" not in proxy.log()


@pytest.mark.parametrize("flags, error", [
    (["-N", "localhost"], "option -N/--manage-trust: 'localhost' is not an IPv4 or IPv6 address"),
    (["-N", "10.0.0.0/33"], "option -N/--manage-trust: '10.0.0.0/33': the prefix length must be 0..32"),
    (["-K", "no-such-file"], "option -K/--manage-auth-file: cannot open"),
])
def test_bad_manage_auth_flags_stop_the_start(proxy3, flags, error):
    proxy, _ = proxy3(*flags, wait=None)
    assert proxy.wait_exit() == 1
    assert error in proxy.log()


def test_a_unix_manage_socket_is_trusted(nutcrackers, write_conf, redis_server, tmp_path):
    """-a /path: the manage port on a unix socket (mode 0600); its clients are trusted even with
    -N none; the socket file is removed at exit."""
    port, _ = redis_server()
    conf = write_conf({"alpha": {"listen": f"{HOST}:{procs.free_port()}", "redis": True,
                                 "servers": [f"{HOST}:{port}:1"]}})
    path = tmp_path / "manage.sock"
    proxy = nutcrackers(conf, "-a", str(path), "-N", "none")
    wait.wait_for(lambda: path.exists(), 10, "the manage socket")
    assert (path.stat().st_mode & 0o777) == 0o600
    with Conn(path=path, nodelay=False) as c:
        c.send(b"slowlog get\r\nreload\r\nquit\r\n")
        assert c.read_until_closed() == b"END\r\nOK generation 2\r\n"
    with Conn(path=path, nodelay=False) as c:  # a silent client still gets the JSON
        assert json.loads(c.read_until_closed())["service"] == "nutcrackers"
    proxy.signal(signal.SIGTERM)
    assert proxy.wait_exit() == 0
    assert not path.exists()


def _healthz(port, method="GET"):
    status, headers, body = manage.http_get(port, "/healthz", method=method)
    assert headers["content-type"] == "text/plain; charset=utf-8"
    return status, body.decode()


def _poke(listen, n=40):
    """n requests with distinct keys (so every server of the pool gets some); replies, errors
    included, are read and dropped."""
    with Conn(listen) as c:
        for i in range(n):
            c.call("GET", f"health:{i}")


def test_healthz_follows_ejections_and_failures(nutcrackers, write_conf, redis_server):
    """200 while every pool has a live server; 503 naming the pools without one: 'ejected' with
    auto_eject_hosts, 'failing' (server_failure_limit failures in a row) without; 200 again once a
    server of that pool answers."""
    alpha = [redis_server() for _ in range(2)]
    beta = [redis_server() for _ in range(2)]
    gamma = [redis_server()]
    ports = {name: procs.free_port() for name in ("alpha", "beta", "gamma")}
    common = {"redis": True, "server_failure_limit": 2, "timeout": 2000}
    conf = write_conf({
        "alpha": {"listen": f"{HOST}:{ports['alpha']}", **common,
                  "servers": [f"{HOST}:{p}:1" for p, _ in alpha]},
        "beta": {"listen": f"{HOST}:{ports['beta']}", **common, "auto_eject_hosts": True,
                 "server_retry_timeout": 600000, "servers": [f"{HOST}:{p}:1" for p, _ in beta]},
        "gamma": {"listen": f"{HOST}:{ports['gamma']}", **common, "auto_eject_hosts": False,
                  "servers": [f"{HOST}:{p}:1" for p, _ in gamma]},
    })
    proxy = nutcrackers(conf, "-T", "2", wait="listen", wait_manage=True)
    for name in ports:
        _poke(ports[name])
    assert _healthz(proxy.manage_port) == (200, "ok: every pool (3) has a live server\n")
    assert _healthz(proxy.manage_port, "HEAD") == (200, "")

    for _, proc in beta:  # every backend of beta dies: both are ejected
        procs.kill_popen(proc)

    def beta_down():
        _poke(ports["beta"])
        return _healthz(proxy.manage_port)[0] == 503

    wait.wait_for(beta_down, 20, "beta's servers ejected")
    assert _healthz(proxy.manage_port) == \
        (503, "pool beta: no live server (2 servers: 2 ejected, 0 failing)\n")

    gport, gproc = gamma[0]  # gamma never ejects: its one server fails to connect
    procs.kill_popen(gproc)

    def gamma_down():
        _poke(ports["gamma"], 4)
        return "gamma" in _healthz(proxy.manage_port)[1]

    wait.wait_for(gamma_down, 20, "gamma's server failing")
    status, body = _healthz(proxy.manage_port)
    assert status == 503 and body == ("pool beta: no live server (2 servers: 2 ejected, 0 failing)\n"
                                      "pool gamma: no live server (1 server: 0 ejected, 1 failing)\n")
    assert manage.http_get(proxy.manage_port, "/healthz", method="HEAD")[0] == 503

    redis_server(port=gport)  # back on its port: the next request reaches it, the count resets

    def gamma_up():
        with Conn(ports["gamma"]) as c:
            c.call("SET", "health:back", "1")
        return "gamma" not in _healthz(proxy.manage_port)[1]

    wait.wait_for(gamma_up, 20, "gamma's server answering again")
    assert _healthz(proxy.manage_port) == \
        (503, "pool beta: no live server (2 servers: 2 ejected, 0 failing)\n")
    _poke(ports["alpha"])  # alpha was never named
    assert "alpha" not in _healthz(proxy.manage_port)[1]
