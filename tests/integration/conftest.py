"""pytest fixtures for the integration tests.

- `redis_server` / `memcached_server`: factories that start real backends on free loopback ports
  in the test's tmp dir and return (port, Popen).
- `write_conf`: writes a YAML config (from a dict or text) into the tmp dir.
- `nutcrackers`: a factory that starts src/nutcrackers (or $NUTCRACKERS_BIN) with chosen flags and
  a log file (-o), waits (bounded) until it is up, and returns a Proxy handle.

Everything a fixture starts is stopped and reaped at the end of the test, pass or fail, including
a daemon that double-forked away (this pytest process makes itself a child subreaper, so orphans
come back to it). A failing test's report gets the proxy's log attached.
"""
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import ncutil
from ncutil import HOST, START_TIMEOUT

LOG_TAIL = 20000  # characters of each log attached to a failing test


def _terminate(signo, frame):
    raise KeyboardInterrupt(f"signal {signo}")


def pytest_configure(config):
    ncutil.become_subreaper()
    # a SIGTERM (e.g. from `timeout`) unwinds like Ctrl-C, so every fixture still cleans up
    signal.signal(signal.SIGTERM, _terminate)


def pytest_collection_modifyitems(config, items):
    # "threaded": every test that starts a proxy through the fixture (its worker threads run);
    # scripts/test.sh runs these under ThreadSanitizer with NC_TEST_THREADS=4
    for item in items:
        if "nutcrackers" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.threaded)


def pytest_sessionstart(session):
    binary = ncutil.nutcrackers_bin()
    if not os.access(binary, os.X_OK):
        raise pytest.UsageError(f"nutcrackers binary not found at {binary}: build it or set "
                                "NUTCRACKERS_BIN")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    for title, path in getattr(item, "nc_logs", []):
        text = ncutil.read_text(path)
        if len(text) > LOG_TAIL:
            text = "...\n" + text[-LOG_TAIL:]
        report.sections.append((f"{title} ({path})", text or "(empty)"))


def attach_log(request, title, path):
    """Registers a log file to attach to the report if the test fails."""
    logs = getattr(request.node, "nc_logs", None)
    if logs is None:
        logs = request.node.nc_logs = []
    logs.append((title, str(path)))


class Reaper:
    """Stops and reaps everything registered, last started first."""

    def __init__(self):
        self.popens = []
        self.pids = []

    def add_popen(self, proc):
        self.popens.append(proc)
        return proc

    def add_pid(self, pid):
        if pid not in self.pids:
            self.pids.append(pid)

    def cleanup(self):
        for pid in reversed(self.pids):
            ncutil.stop_pid(pid)
        for proc in reversed(self.popens):
            ncutil.stop_popen(proc)
        ncutil.reap_orphans()


@pytest.fixture
def reaper():
    r = Reaper()
    yield r
    r.cleanup()


def _start_backend(args_for_port, name, tmp_path, reaper, request):
    """Starts a backend on a free port (a few tries: another process may take the port between
    the pick and the bind); returns (port, Popen)."""
    binary = shutil.which(name)
    if binary is None:
        pytest.fail(f"{name} is not installed (scripts/test.sh installs it)")
    last_log = None
    for attempt in range(3):
        port = ncutil.free_port()
        workdir = tmp_path / f"{name}-{port}"
        workdir.mkdir(exist_ok=True)
        log_path = workdir / "out.log"
        with open(log_path, "wb") as log:
            proc = reaper.add_popen(subprocess.Popen(
                [binary, *args_for_port(port)], cwd=workdir, stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=ncutil.die_with_parent))
        attach_log(request, f"{name} :{port} output", log_path)
        last_log = log_path
        try:
            ncutil.wait_until(lambda: proc.poll() is not None or ncutil.port_accepts(port),
                              START_TIMEOUT, what=f"{name} on port {port}")
        except TimeoutError:
            ncutil.stop_popen(proc)
            continue
        if proc.poll() is None:
            return port, proc
    pytest.fail(f"{name} did not start; see {last_log}")


@pytest.fixture
def redis_server(tmp_path, reaper, request):
    """Factory: redis_server() -> (port, Popen) of a fresh redis-server on 127.0.0.1."""

    def start():
        return _start_backend(
            lambda port: ["--port", str(port), "--bind", HOST, "--save", "", "--appendonly", "no",
                          "--protected-mode", "no", "--daemonize", "no"],
            "redis-server", tmp_path, reaper, request)

    return start


@pytest.fixture
def memcached_server(tmp_path, reaper, request):
    """Factory: memcached_server() -> (port, Popen) of a fresh memcached on 127.0.0.1."""

    def start():
        args = ["-l", HOST, "-U", "0", "-m", "16", "-t", "1"]
        if os.geteuid() == 0:
            args += ["-u", "root"]  # memcached refuses to run as root without it
        return _start_backend(lambda port: [*args, "-p", str(port)], "memcached", tmp_path,
                              reaper, request)

    return start


@pytest.fixture
def write_conf(tmp_path):
    """Factory: write_conf(pools_dict_or_text, name="nutcrackers.yml") -> Path."""

    def write(pools, name="nutcrackers.yml"):
        path = tmp_path / name
        path.write_text(pools if isinstance(pools, str) else ncutil.render_conf(pools))
        return path

    return write


@dataclass
class Proxy:
    """A running (or exited) proxy started by the `nutcrackers` fixture."""
    proc: subprocess.Popen
    log_path: Path
    conf_path: Path
    manage_port: int
    listen_ports: list = field(default_factory=list)
    pid_file: Path = None
    daemon_pid: int = None

    @property
    def pid(self):
        return self.daemon_pid if self.daemon_pid is not None else self.proc.pid

    def log(self):
        return ncutil.read_text(self.log_path)

    def signal(self, signo):
        os.kill(self.pid, signo)

    def wait_log(self, needle, timeout=START_TIMEOUT, start=0):
        """Waits (bounded) until the log, from character `start` on, contains needle."""
        return ncutil.wait_until(lambda: needle in self.log()[start:], timeout,
                                 what=f"'{needle}' in {self.log_path}")

    def signal_and_wait(self, signo, needle, timeout=START_TIMEOUT):
        """Sends signo and waits (bounded) for new log text containing needle."""
        start = len(self.log())
        self.signal(signo)
        self.wait_log(needle, timeout=timeout, start=start)

    def wait_exit(self, timeout=START_TIMEOUT):
        """Waits (bounded) for the proxy to exit; returns its exit status."""
        if self.daemon_pid is not None:
            return ncutil.wait_pid_exit(self.daemon_pid, timeout)
        return self.proc.wait(timeout=timeout)


def _listen_ports(conf_path):
    """TCP ports of the pools' `listen:` lines in a config we wrote."""
    ports = []
    for line in Path(conf_path).read_text().splitlines():
        key, _, value = line.strip().partition(":")
        if key == "listen":
            host_port = value.strip().strip('"')
            if not host_port.startswith("/"):
                ports.append(int(host_port.rsplit(":", 1)[1].split()[0]))
    return ports


@pytest.fixture
def nutcrackers(tmp_path, reaper, request):
    """Factory: nutcrackers(conf_path, *flags, wait="listen"|"log"|None, log_name=...) -> Proxy.

    Adds `-c conf_path -o <tmp>/<log_name>`, and `-s <free port> -a 127.0.0.1` unless the flags
    set them; the proxy runs in the test's tmp dir. wait="listen": until every pool's TCP listen
    port accepts (and the manage port too with wait_manage=True); "log": until the master logs that it started and has its signal
    handlers; "signals": only the latter (for quiet -v levels); None: return at once. With -d, the launcher's exit is
    awaited and the daemon's pid is read from -p (added if absent). $NC_TEST_THREADS, when set,
    is the -T of every proxy whose test sets none."""

    def start(conf_path, *flags, wait="listen", wait_manage=False, log_name="nutcrackers.log",
              relative_log=False, timeout=START_TIMEOUT):
        flags = list(flags)
        log_path = tmp_path / log_name
        args = ["-c", str(conf_path), "-o", log_name if relative_log else str(log_path)]
        manage_port = None
        if not {"-s", "--port"} & set(flags):
            manage_port = ncutil.free_port()
            args += ["-s", str(manage_port)]
        if not {"-a", "--addr"} & set(flags):
            args += ["-a", HOST]
        threads = os.environ.get("NC_TEST_THREADS")
        if threads and not {"-T", "--thread_num", "--thread-num"} & {str(f).split("=")[0] for f in flags}:
            args += ["-T", threads]  # the test did not choose: use the run's worker count
        daemon = "-d" in flags or "--daemonize" in flags
        pid_file = None
        for i, flag in enumerate(flags):
            if flag in ("-p", "--pid-file") and i + 1 < len(flags):
                pid_file = tmp_path / flags[i + 1]  # relative: to the proxy's cwd
        if daemon and pid_file is None:
            pid_file = tmp_path / "nutcrackers.pid"
            args += ["-p", str(pid_file)]
        attach_log(request, "nutcrackers log", log_path)
        stderr_path = tmp_path / (log_name + ".stderr")
        attach_log(request, "nutcrackers stderr", stderr_path)
        with open(stderr_path, "wb") as err:
            proc = reaper.add_popen(subprocess.Popen(
                [ncutil.nutcrackers_bin(), *args, *flags], cwd=tmp_path,
                stdin=subprocess.DEVNULL, stdout=err, stderr=subprocess.STDOUT,
                start_new_session=True, preexec_fn=ncutil.die_with_parent))
        proxy = Proxy(proc=proc, log_path=log_path, conf_path=Path(conf_path),
                      manage_port=manage_port, listen_ports=_listen_ports(tmp_path / conf_path),
                      pid_file=pid_file)
        if daemon:
            rc = proc.wait(timeout=timeout)
            assert rc == 0, f"the launcher of the daemon exited {rc}"
            text = ncutil.wait_until(lambda: ncutil.read_text(pid_file).strip(), timeout,
                                     what=f"pid file {pid_file}")
            proxy.daemon_pid = int(text)
            reaper.add_pid(proxy.daemon_pid)
        if wait == "listen":
            ports = proxy.listen_ports + ([manage_port] if wait_manage and manage_port else [])
            for port in ports:
                ncutil.wait_until(
                    lambda p=port: ncutil.port_accepts(p) or not _running(proxy), timeout,
                    what=f"nutcrackers to listen on port {port}")
                assert _running(proxy), "nutcrackers exited while starting"
        elif wait in ("log", "signals"):
            def up():
                if not _running(proxy):
                    return True
                logged = wait == "signals" or "started" in proxy.log()
                return logged and ncutil.signals_caught(proxy.pid, ncutil.MASTER_SIGNALS)

            ncutil.wait_until(up, timeout, what="nutcrackers to start")
            assert _running(proxy), "nutcrackers exited while starting"
        return proxy

    return start


def _running(proxy):
    if proxy.daemon_pid is not None:
        return ncutil.pid_alive(proxy.daemon_pid)
    return proxy.proc.poll() is None


@pytest.fixture
def good_conf(write_conf):
    """A small valid config (one redis and one memcached pool) with free listen ports; backends
    are not started (the proxy connects lazily)."""
    return write_conf({
        "alpha": {"listen": f"{HOST}:{ncutil.free_port()}", "redis": True,
                  "servers": [f"{HOST}:{ncutil.free_port()}:1"]},
        "beta": {"listen": f"{HOST}:{ncutil.free_port()}",
                 "servers": [f"{HOST}:{ncutil.free_port()}:1"]},
    })



def pytest_sessionfinish(session, exitstatus):
    # last resort: nothing this run started may outlive it
    ncutil.reap_orphans()
