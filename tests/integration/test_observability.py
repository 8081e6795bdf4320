"""What an operator sees: refused commands counted per name in the stats JSON and /metrics (a
name no command has in one "other" bucket) and logged at notice level, at most one line per name
per log interval (-L) with the count of the lines left out; a dead backend's connect failures
logged at notice level (the default -v 5, never compiled out), at most one line per server per
interval; every log line with its severity and a timestamp with its zone."""
import re
import time

from nctest import manage, procs, wait
from nctest.codec import resp
from nctest.conn import RawConn as Conn
from nctest.procs import HOST

LINE = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} [+-]\d{4}\] "
                  r"(EMERG|ALERT|CRIT|ERROR|WARN|NOTICE|INFO|DEBUG|VERB|VVERB|VVVERB|PVERB) \S+:\d+ ")
MORE = re.compile(r" \((\d+) more suppressed\)$")


def _start(nutcrackers, write_conf, redis_server, memcached_server, *flags):
    port, _ = redis_server()
    mport, _ = memcached_server()
    conf = write_conf({
        "alpha": {"listen": f"{HOST}:{procs.free_port()}", "redis": True,
                  "servers": [f"{HOST}:{port}:1 r0"]},
        "beta": {"listen": f"{HOST}:{procs.free_port()}", "servers": [f"{HOST}:{mport}:1 m0"]},
    })
    return nutcrackers(conf, "-T", "2", "-v", "5", *flags, wait="log")


def _lines(proxy, needle):
    return [x for x in proxy.log().splitlines() if needle in x]


def _pipeline(port, requests, reply_end, n):
    """Sends the requests in one write and reads n replies (each ending with reply_end)."""
    with Conn(port) as c:
        c.send(b"".join(requests))
        for _ in range(n):
            c.recv_until(reply_end)


def test_refused_commands_counted_per_name_and_logged_once(nutcrackers, write_conf, redis_server,
                                                           memcached_server):
    proxy = _start(nutcrackers, write_conf, redis_server, memcached_server, "-L", "600000")
    alpha, beta = proxy.listen_ports
    garbage = [f"nosuch{i}" for i in range(50)] + ["x" * 300, "sub\x01scribe"]
    reqs = [resp("MONITOR")] * 1000 + [resp("wait", "0", "0")] * 7 + [resp(g) for g in garbage]
    _pipeline(alpha, reqs, b"\r\n", len(reqs))
    _pipeline(beta, [b"verbosity 1\r\n", b"mn\r\n", b"bogus 1 2\r\n"], b"\r\n", 3)  # mn: served
    want = {"refused_cmd_monitor": 1000, "refused_cmd_wait": 7, "refused_cmd_other": len(garbage)}
    doc = manage.wait_status(proxy.manage_port, lambda d: d["alpha"]["refused_commands"] == len(reqs)
                             and d["beta"]["refused_commands"] == 2, what="refused commands counted")
    assert {k: v for k, v in doc["alpha"].items() if k.startswith("refused_cmd_")} == want
    assert {k: v for k, v in doc["beta"].items() if k.startswith("refused_cmd_")} == {
        "refused_cmd_verbosity": 1, "refused_cmd_other": 1}
    # per worker, summed by the stats thread: the documents of `status workers` add up
    workers = manage.status(proxy.manage_port, "workers")["workers"]
    assert sum(w["alpha"].get("refused_cmd_monitor", 0) for w in workers) == 1000

    status, _, body = manage.http_get(proxy.manage_port, "/metrics")
    assert status == 200
    text = body.decode()
    assert "# TYPE nutcrackers_refused_commands_total counter\n" in text
    for pool, name, n in (("alpha", "monitor", 1000), ("alpha", "wait", 7), ("alpha", "other", 52),
                          ("beta", "verbosity", 1), ("beta", "other", 1)):
        assert f'nutcrackers_refused_commands_total{{pool="{pool}",command="{name}"}} {n}\n' in text
    assert 'command="nosuch' not in text  # garbage never becomes a label

    # one notice line per name in the interval, whatever the workers (they share the limiter)
    proxy.wait_log("refused command 'wait'")
    assert len(_lines(proxy, "refused command 'MONITOR'")) == 1
    assert len(_lines(proxy, "refused command 'wait'")) == 1
    other = [x for x in _lines(proxy, "(unknown: counted as other)") if "pool 'alpha'" in x]
    assert len(other) == 1 and "refused command 'nosuch0'" in other[0], other
    line = _lines(proxy, "refused command 'MONITOR'")[0]
    assert LINE.match(line) and "] NOTICE " in line, line
    assert len(_lines(proxy, "pool 'beta': refused command")) == 2


def test_refused_lines_bounded_and_suppressed_counted(nutcrackers, write_conf, redis_server,
                                                     memcached_server):
    """1000 refused commands, then one more after the interval: a few lines at most, and the
    lines plus the suppressed counts they report account for every one."""
    interval_ms = 500
    proxy = _start(nutcrackers, write_conf, redis_server, memcached_server, "-L", str(interval_ms))
    alpha = proxy.listen_ports[0]
    t0 = time.monotonic()
    _pipeline(alpha, [resp("MONITOR")] * 1000, b"\r\n", 1000)
    elapsed = time.monotonic() - t0
    proxy.wait_log("refused command 'MONITOR'")
    wait.hold(interval_ms / 1000 + 0.1, "one log interval passes: the next line opens a new window")
    before = len(_lines(proxy, "refused command 'MONITOR'"))
    _pipeline(alpha, [resp("MONITOR")], b"\r\n", 1)
    proxy.wait_log("refused command 'MONITOR'", count=before + 1)
    lines = _lines(proxy, "refused command 'MONITOR'")
    # a window per interval the 1000 took (one, unless the machine is very slow), and the last
    assert len(lines) <= 2 + int(elapsed * 1000 / interval_ms), lines
    suppressed = sum(int(m.group(1)) for m in (MORE.search(x) for x in lines) if m)
    assert len(lines) + suppressed == 1001, lines
    assert MORE.search(lines[-1]), lines[-1]
    doc = manage.wait_status(proxy.manage_port, lambda d: d["alpha"]["refused_commands"] == 1001)
    assert doc["alpha"]["refused_cmd_monitor"] == 1001


def test_dead_backend_logged_at_notice_bounded(nutcrackers, write_conf):
    """A backend nobody listens on, at the default level -v 5 (the debug levels are off): its
    connect failures are notice lines, one per log interval, whatever the load."""
    dead = procs.free_port()
    conf = write_conf({"alpha": {"listen": f"{HOST}:{procs.free_port()}", "redis": True,
                                 "auto_eject_hosts": False, "servers": [f"{HOST}:{dead}:1 d0"]}})
    proxy = nutcrackers(conf, "-T", "2", "-L", "600000", wait="log")
    n = 300
    with Conn(proxy.listen_ports[0]) as c:
        for i in range(n):
            c.send(resp("GET", f"k{i}"))
            reply = c.read()
            assert reply.startswith("ERR"), reply
    doc = manage.wait_status(proxy.manage_port, lambda d: d["alpha"]["d0"]["server_err"] >= n,
                             what="every connect counted")
    assert doc["alpha"]["d0"]["server_err"] >= n
    proxy.wait_log("connect failed")
    lines = _lines(proxy, f"server d0 ({HOST}:{dead})")
    assert len(lines) == 1, lines
    assert "] NOTICE " in lines[0] and "Connection refused" in lines[0], lines[0]
    assert LINE.match(lines[0]), lines[0]


def _get_errors(port, k):
    with Conn(port) as c:
        for i in range(k):
            c.send(resp("GET", f"k{i}"))
            assert c.read().startswith("ERR")


def test_dead_backend_next_line_counts_the_suppressed(nutcrackers, write_conf):
    """After the interval, the next failure line says how many were left out before it."""
    dead = procs.free_port()
    conf = write_conf({"alpha": {"listen": f"{HOST}:{procs.free_port()}", "redis": True,
                                 "auto_eject_hosts": False, "servers": [f"{HOST}:{dead}:1 d0"]}})
    interval_ms = 400
    proxy = nutcrackers(conf, "-T", "2", "-L", str(interval_ms), wait="log")
    t0 = time.monotonic()
    _get_errors(proxy.listen_ports[0], 50)
    elapsed = time.monotonic() - t0
    proxy.wait_log("connect failed")
    wait.hold(interval_ms / 1000 + 0.1, "one log interval passes: the next line opens a new window")
    before = len(_lines(proxy, "server d0 ("))
    _get_errors(proxy.listen_ports[0], 1)
    proxy.wait_log("server d0 (", count=before + 1)
    lines = _lines(proxy, "server d0 (")
    assert len(lines) <= 2 + int(elapsed * 1000 / interval_ms), lines
    suppressed = sum(int(m.group(1)) for m in (MORE.search(x) for x in lines) if m)
    assert len(lines) + suppressed == 51, lines


def test_ejection_and_probes_logged(nutcrackers, write_conf):
    """With auto_eject_hosts: the failures, the ejection and the failed probes of a dead backend
    are logged at the default level."""
    dead = procs.free_port()
    conf = write_conf({"alpha": {"listen": f"{HOST}:{procs.free_port()}", "redis": True,
                                 "auto_eject_hosts": True, "server_failure_limit": 2,
                                 "server_retry_timeout": 200, "servers": [f"{HOST}:{dead}:1 d0"]}})
    proxy = nutcrackers(conf, "-T", "2", wait="log")
    _get_errors(proxy.listen_ports[0], 20)
    proxy.wait_log("server d0 ejected after 2 consecutive failures")
    proxy.wait_log("server d0 still does not answer", count=2)
    for x in _lines(proxy, "d0"):
        assert LINE.match(x), x
        assert "] NOTICE " in x or "] WARN " in x, x


def test_every_line_has_severity_and_zone(nutcrackers, write_conf, redis_server, memcached_server):
    proxy = _start(nutcrackers, write_conf, redis_server, memcached_server)
    lines = proxy.log().splitlines()
    assert lines
    for x in lines:
        assert LINE.match(x), x
