"""The process: clean exit on SIGTERM/SIGINT, -d and -p, log reopen on SIGHUP/SIGUSR1,
SIGTTIN/SIGTTOU log levels, SIGSEGV logged, SIGPIPE ignored, and the backend fixtures themselves."""
import os
import signal
import socket
import subprocess
import sys

import pytest

from nctest import manage, procfs, procs, wait
from nctest.procs import HOST


@pytest.mark.parametrize("signo", [signal.SIGTERM, signal.SIGINT])
def test_signal_exits_cleanly(nutcrackers, good_conf, signo):
    proxy = nutcrackers(good_conf, wait="log")
    proxy.signal(signo)
    assert proxy.wait_exit() == 0
    assert "stopping" in proxy.log()


def test_sigpipe_is_ignored(nutcrackers, good_conf):
    proxy = nutcrackers(good_conf, wait="log")
    ignored = procfs.signal_mask(proxy.pid, "SigIgn")
    assert ignored & (1 << (signal.SIGPIPE - 1))


def test_threads_leave_fault_signals_unblocked(nutcrackers, good_conf):
    """Workers and the stats thread block the asynchronous signals (the master handles them) but
    not SIGSEGV and the other fault signals: a fault in a thread that blocks its signal kills the
    process without any handler, so a sanitizer could not say where it was."""
    proxy = nutcrackers(good_conf, "-T", "2", wait="log")
    # the master and the threads it names (a sanitizer's own threads block what they like); a
    # thread takes its name once it runs, maybe after the master's "started"
    named = ["nc-stats", "nc-worker-0", "nc-worker-1"]
    tasks = wait.wait_value(lambda: procfs.tasks(proxy.pid),
                            lambda t: sorted(n for n in t.values() if n.startswith("nc-")) == named,
                            10, "the named threads")
    ours = [tid for tid, name in tasks.items() if tid == proxy.pid or name.startswith("nc-")]
    for tid in ours:
        blocked = procfs.signal_mask(proxy.pid, "SigBlk", task=tid)
        for signo in (signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGABRT):
            assert not blocked & (1 << (signo - 1)), f"thread {tid} blocks {signo!r}"
        if tid != proxy.pid:  # helper threads leave SIGTERM/SIGHUP to the master
            assert blocked & (1 << (signal.SIGTERM - 1)) and blocked & (1 << (signal.SIGHUP - 1))


def test_foreground_pid_file_written_and_removed(nutcrackers, good_conf, tmp_path):
    pid_file = tmp_path / "run" / "nc.pid"
    pid_file.parent.mkdir()
    proxy = nutcrackers(good_conf, "-p", str(pid_file), wait="log")
    assert pid_file.read_text() == f"{proxy.proc.pid}\n"
    proxy.signal(signal.SIGINT)
    assert proxy.wait_exit() == 0
    assert not pid_file.exists()


def test_daemon_and_pid_file(nutcrackers, good_conf, tmp_path):
    pid_file = tmp_path / "daemon.pid"
    proxy = nutcrackers(good_conf, "-d", "-p", str(pid_file), wait="log")
    pid = proxy.daemon_pid
    assert pid != proxy.proc.pid, "the pid file must hold the daemon's pid, not the launcher's"
    assert pid_file.read_text() == f"{pid}\n"
    assert proxy.proc.returncode == 0
    # detached: its own session, no terminal, in "/", standard streams on /dev/null
    assert os.getsid(pid) != os.getsid(0)
    assert os.getsid(pid) != pid, "a daemon must not be a session leader"
    assert os.readlink(f"/proc/{pid}/cwd") == "/"
    for fd in (0, 1, 2):
        assert os.readlink(f"/proc/{pid}/fd/{fd}") == "/dev/null"
    proxy.signal(signal.SIGTERM)
    assert proxy.wait_exit() == 0
    assert not pid_file.exists(), "the pid file must be removed on SIGTERM"
    assert "stopping" in proxy.log()


def test_daemon_with_relative_paths(nutcrackers, good_conf, tmp_path):
    """-o and -p relative to the launcher's directory still work after the daemon's chdir("/")."""
    proxy = nutcrackers(good_conf.name, "-d", "-p", "rel.pid", wait="log",
                        log_name="rel.log", relative_log=True)
    assert (tmp_path / "rel.pid").read_text() == f"{proxy.daemon_pid}\n"
    (tmp_path / "rel.log").rename(tmp_path / "rel.log.1")
    proxy.signal(signal.SIGHUP)
    wait.wait_for((tmp_path / "rel.log").exists, 5, what="the reopened log")
    proxy.signal(signal.SIGTERM)
    assert proxy.wait_exit() == 0
    assert not (tmp_path / "rel.pid").exists()


def test_pid_file_of_a_running_instance_is_refused(nutcrackers, good_conf, write_conf, tmp_path):
    pid_file = tmp_path / "nc.pid"
    first = nutcrackers(good_conf, "-p", str(pid_file), wait="log")
    other_conf = write_conf({"solo": {"listen": f"{HOST}:{procs.free_port()}",
                                      "servers": [f"{HOST}:{procs.free_port()}:1"]}},
                            name="other.yml")
    second = nutcrackers(other_conf, "-p", str(pid_file), wait=None, log_name="second.log")
    assert second.wait_exit() == 1
    assert "pid file" in second.log()
    assert pid_file.read_text() == f"{first.proc.pid}\n", "the running instance's file was touched"


def test_stale_pid_file_is_replaced(nutcrackers, good_conf, tmp_path):
    pid_file = tmp_path / "stale.pid"
    pid_file.write_text("999999\n")
    proxy = nutcrackers(good_conf, "-p", str(pid_file), wait="log")
    assert pid_file.read_text() == f"{proxy.proc.pid}\n"


def test_daemon_that_fails_makes_the_launcher_fail(nutcrackers, good_conf, tmp_path):
    """A daemon that cannot start (its pid file is taken) must not let its launcher exit 0."""
    pid_file = tmp_path / "held.pid"
    nutcrackers(good_conf, "-p", str(pid_file), wait="log")
    r = procs.run(["-d", "-c", str(good_conf), "-o", str(tmp_path / "d.log"), "-p", str(pid_file),
                    "-s", str(procs.free_port()), "-a", HOST])
    assert r.returncode == 1


@pytest.mark.parametrize("busy", ["pool", "manage"])
def test_daemon_that_cannot_listen_makes_the_launcher_fail(write_conf, tmp_path, busy):
    """-d with a pool port or the manage port taken: the daemon logs "Address already in use" and
    dies, and the launcher, which waits for the daemon to report that it listens, exits 1 (it used
    to return 0 once the pid file was written, before the daemon tried to listen)."""
    with socket.socket() as taken:
        taken.bind((HOST, 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        pool_port = port if busy == "pool" else procs.free_port()
        manage_port = port if busy == "manage" else procs.free_port()
        conf = write_conf({"solo": {"listen": f"{HOST}:{pool_port}",
                                    "servers": [f"{HOST}:{procs.free_port()}:1"]}})
        log = tmp_path / "busy.log"
        r = procs.run(["-d", "-c", str(conf), "-o", str(log), "-s", str(manage_port), "-a", HOST,
                       "-p", str(tmp_path / "busy.pid")])
        assert r.returncode == 1, (r.stdout, r.stderr)
        assert "the daemon did not start" in r.stderr
        assert "Address already in use" in procs.read_text(log)
        assert not (tmp_path / "busy.pid").exists(), "the failed daemon left its pid file"


def test_daemon_launcher_returns_once_the_daemon_listens(nutcrackers, good_conf, tmp_path):
    """When -d returns 0, every pool port and the manage port already accept connections."""
    proxy = nutcrackers(good_conf, "-d", wait=None)
    assert proxy.proc.returncode == 0
    for port in [*proxy.listen_ports, proxy.manage_port]:
        with socket.create_connection((HOST, port), timeout=5):
            pass
    proxy.signal(signal.SIGTERM)
    assert proxy.wait_exit() == 0


def test_unwritable_log_file_exits_1(good_conf, tmp_path):
    r = procs.run(["-c", str(good_conf), "-o", str(tmp_path / "no" / "such" / "dir.log")])
    assert r.returncode == 1
    assert "log file" in r.stderr


@pytest.mark.parametrize("signo", [signal.SIGHUP, signal.SIGUSR1])
def test_log_reopen(nutcrackers, good_conf, signo):
    proxy = nutcrackers(good_conf, wait="log")
    rotated = proxy.log_path.with_name(proxy.log_path.name + ".1")
    proxy.log_path.rename(rotated)
    proxy.signal(signo)
    wait.wait_for(proxy.log_path.exists, 5, what="a new log file after the signal")
    # the signal's line goes to the new file: the rotated one is not read again
    proxy.wait_log("log file reopened")
    assert "reopened" not in procs.read_text(rotated)
    # the reopened file gets the next lines
    proxy.signal_and_wait(signal.SIGTTIN, "log level up")
    proxy.signal(signal.SIGTERM)
    assert proxy.wait_exit() == 0
    assert "stopping" in proxy.log()
    assert "stopping" not in procs.read_text(rotated)


def test_signals_named_in_the_log_file_logrotate_leaves(nutcrackers, good_conf):
    """twemproxy's test_signal: the log file is removed (as logrotate does before its signal),
    then SIGHUP twice, SIGTTIN, SIGTTOU and SIGSEGV; the new log file names every signal. Each
    signal is sent once the one before is seen handled (libevent handles signals that are pending
    together in signal-number order, and a SIGSEGV ends the process at once)."""
    proxy = nutcrackers(good_conf, wait="log")
    proxy.fatal_signal = signal.SIGSEGV  # the last signal is a crash on purpose
    proxy.log_path.unlink()
    # each SIGHUP's first line is in the new file: written after the reopen
    for count in (1, 2):
        proxy.signal(signal.SIGHUP)
        proxy.wait_log("signal 1 (SIGHUP): log file reopened", count=count)
        proxy.wait_log("signal 1 (SIGHUP): configuration reloaded", count=count)
    proxy.signal_and_wait(signal.SIGTTIN, "signal 21 (SIGTTIN): log level up to 6")
    proxy.signal_and_wait(signal.SIGTTOU, "signal 22 (SIGTTOU): log level down to 5")
    proxy.signal(signal.SIGSEGV)
    assert proxy.wait_exit() == -signal.SIGSEGV
    log = proxy.log()
    for name in ("HUP", "TTIN", "TTOU", "SEGV"):
        assert name in log, f"the new log file does not name {name}"
    assert "CRIT fault.c:" in log and f"signal 11 (SIGSEGV): sent by pid {os.getpid()}" in log


def test_log_level_signals(nutcrackers, good_conf):
    # at -v 4 (warn) the master's notice lines are not written
    proxy = nutcrackers(good_conf, "-v", "4", wait="signals")
    assert "started" not in proxy.log()
    wait.wait_for(lambda: procs.port_accepts(proxy.manage_port), 10, "the manage port")
    proxy.signal_and_wait(signal.SIGTTIN, "log level up to 5")  # now notices show
    start = len(proxy.log())
    # pending signals are handled in signal-number order, not in sending order: each one is sent
    # once the one before is seen handled
    proxy.signal(signal.SIGTTOU)  # back to 4: this line is silent

    def quiet_reload():
        # the master, at level 4, answers a reload without writing its notice
        mark = len(proxy.log())
        assert manage.command(proxy.manage_port, "reload").startswith("OK generation")
        return "reloading the configuration" not in proxy.log()[mark:]

    wait.wait_for(quiet_reload, 10, "a reload answered without its notice (level 4)",
                  interval=0.1)
    gen = manage.status(proxy.manage_port)["generation"]
    proxy.signal(signal.SIGHUP)  # a reopen and a reload: notices, not written at 4
    manage.wait_status(proxy.manage_port, lambda d: d["generation"] == gen + 1,
                       what="the SIGHUP's reload")
    proxy.signal_and_wait(signal.SIGTTIN, "log level up to 5")  # written again
    between = proxy.log()[start:]
    assert "reopened" not in between
    assert "log level down" not in between


def test_log_level_raised_to_max_and_lowered(nutcrackers, good_conf):
    proxy = nutcrackers(good_conf, "-v", "10", wait="log")
    proxy.signal_and_wait(signal.SIGTTIN, "log level up to 11")
    proxy.signal_and_wait(signal.SIGTTIN, "log level up to 11")  # clamped at the maximum
    proxy.signal_and_wait(signal.SIGTTOU, "log level down to 10")


def test_backend_fixtures(redis_server, memcached_server):
    """The fixtures start real, empty backends on loopback."""
    import pymemcache.client.base
    import redis

    rport, _ = redis_server()
    client = redis.Redis(host=HOST, port=rport, socket_timeout=5)
    assert client.ping()
    client.set("k", "v")
    assert client.get("k") == b"v"
    client.close()
    mport, _ = memcached_server()
    mc = pymemcache.client.base.Client((HOST, mport), connect_timeout=5, timeout=5)
    mc.set("k", "v")
    assert mc.get("k") == b"v"
    mc.close()


def _two_pool_conf(write_conf, redis_server, memcached_server):
    rport, _ = redis_server()
    mport, _ = memcached_server()
    return write_conf({
        "r": {"listen": f"{HOST}:{procs.free_port()}", "redis": True,
              "servers": [f"{HOST}:{rport}:1"]},
        "m": {"listen": f"{HOST}:{procs.free_port()}", "servers": [f"{HOST}:{mport}:1"]},
    })


def test_proxy_listens_on_its_pools(nutcrackers, write_conf, redis_server, memcached_server):
    conf = _two_pool_conf(write_conf, redis_server, memcached_server)
    proxy = nutcrackers(conf, "-T", "2", wait="listen")
    assert len(proxy.listen_ports) == 2
    for port in proxy.listen_ports:
        assert procs.port_accepts(port)
    proxy.signal(signal.SIGTERM)
    assert proxy.wait_exit() == 0


def test_proxy_listens_on_manage_port(nutcrackers, write_conf, redis_server, memcached_server):
    conf = _two_pool_conf(write_conf, redis_server, memcached_server)
    proxy = nutcrackers(conf, "-T", "2", wait="listen", wait_manage=True, timeout=3)
    doc = manage.status(proxy.manage_port)
    assert doc["service"] == "nutcrackers" and {"r", "m"} <= set(doc), doc


def _workers(pid):
    return sorted(n for n in procfs.tasks(pid).values() if n.startswith("nc-worker-"))


def test_threads_default_to_the_cpus_it_may_run_on(nutcrackers, good_conf, monkeypatch):
    """Without -T the proxy starts one worker per CPU of its affinity mask (taskset -c 0: one),
    and says so in the log."""
    monkeypatch.delenv("NC_TEST_THREADS", raising=False)
    cpu = min(os.sched_getaffinity(0))
    with procfs.affinity_of_children({cpu}):
        proxy = nutcrackers(good_conf, wait="log")
    assert "1 worker threads: -T not given, the 1 CPUs this process may run on" in proxy.log()
    wait.wait_value(lambda: _workers(proxy.pid), lambda w: w == ["nc-worker-0"], 10,
                    "one worker thread")
    assert "started on pid" in proxy.log() and "with 1 worker threads" in proxy.log()


def test_more_threads_than_cpus_warns(nutcrackers, good_conf):
    cpus = len(os.sched_getaffinity(0))
    proxy = nutcrackers(good_conf, "-T", str(cpus + 1), wait="log")
    assert f"-T {cpus + 1} is more worker threads than the {cpus} CPUs" in proxy.log()
    wait.wait_value(lambda: len(_workers(proxy.pid)), lambda n: n == cpus + 1, 10,
                    f"{cpus + 1} worker threads")


def test_backend_start_is_not_fooled_by_another_listener():
    """A backend whose port another process took (and listens on) between the pick and its bind
    exits at once; its start must say so, not take the other listener for it (the test would then
    talk to somebody else's server, and find its backend gone)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as squatter:
        squatter.bind((HOST, procs.free_port()))
        squatter.listen(8)
        port = squatter.getsockname()[1]
        assert procs.start_backend("redis", port) is None


def test_free_ports_are_outside_the_ephemeral_range_and_reserved_across_runs():
    """free_port() never picks what the kernel may hand to another run's bind(0) or outgoing
    connection, and another process (a test run beside this one) cannot pick it too."""
    low, high = (int(x) for x in open("/proc/sys/net/ipv4/ip_local_port_range").read().split())
    ports = procs.free_ports(20)
    assert len(set(ports)) == 20
    assert not [p for p in ports if low <= p <= high], (low, high, ports)
    code = (f"import sys; sys.path.insert(0, {str(procs.REPO / 'tests')!r}); "
            f"from nctest import procs; print([procs._reserve(p) for p in {ports!r}])")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert other.stdout.strip() == str([False] * 20), other.stderr
