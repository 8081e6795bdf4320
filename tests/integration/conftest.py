"""pytest fixtures for the integration tests.

- `redis_server` / `memcached_server`: factories that start real backends on free loopback ports
  in the test's tmp dir and return (port, Popen); a port and extra flags may be passed.
- `write_conf`: writes a YAML config (from a dict or text) into the tmp dir.
- `nutcrackers`: a factory that starts src/nutcrackers (or $NUTCRACKERS_BIN) with chosen flags and
  a log file (-o), waits (bounded) until it is up, and returns a Proxy handle.

Everything a fixture starts is stopped and reaped at the end of the test, pass or fail, including
a daemon that double-forked away (this pytest process makes itself a child subreaper, so orphans
come back to it). A failing test's report gets the proxy's log attached.

`mc_pool` (3 memcacheds behind a proxy), `mc_direct` (a memcached alone) and `mc_target` (each
of them in turn) serve the modules that run their memcached checks both directly and through the
proxy.

`module_redis_server`, `module_memcached_server`, `module_nutcrackers` (and `module_reaper`) are
the same factories at module scope, for processes shared by the tests of one module: they are
stopped when the module's last test ends, and the per-test clean-up leaves them alone.

The client programs of the client tests: `go_client` and `java_client` (the go-redis and Jedis
programs of tests/clients, built by scripts/lib/deps.sh once per version of their sources: the
argv that runs them), `node` (the node binary, the pinned packages of tests/clients/node
installed) and `ruby_dalli` (the ruby that loads the pinned Dalli, for tests/clients/ruby);
without their toolchain a test using them skips with deps.sh's line (`node` fails instead with
NC_REQUIRE_NODE_CLIENTS=1).

The TLS backends and certificates (`tls_certs`, `tls_redis_server`, `tls_memcached_server`) are in
tls_fixtures.py, the Redis Sentinel deployments (`sentinel_deployment`) in sentinel_fixtures.py,
the Redis Cluster deployments (`rcluster`) in rcluster_fixtures.py, all loaded as plugins.
"""
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

# the helper library (tests/nctest): this is where the integration tests find it
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nctest import cluster, conf, deps, nodeclients, procfs, procs  # noqa: E402
from nctest.procs import HOST, START_TIMEOUT  # noqa: E402
from nctest.wait import scale, wait_for, wait_log  # noqa: E402

LOG_TAIL = 20000  # characters of each log attached to a failing test
LONG_LOGS = ("nutcrackers", "sentinel")  # titles whose logs get LOG_TAIL (a sentinel's events)

# the TLS fixtures (tls_certs, tls_redis_server, tls_memcached_server): tls_fixtures.py; the
# Sentinel deployments (sentinel_deployment, module_sentinel_deployment): sentinel_fixtures.py; the
# Redis Cluster deployments (rcluster, module_rcluster, rcluster_proxy): rcluster_fixtures.py; the
# test files shared out among several processes ($NC_TEST_QUEUE): file_queue.py
pytest_plugins = ["tls_fixtures", "sentinel_fixtures", "rcluster_fixtures", "file_queue"]


def _terminate(signo, frame):
    raise KeyboardInterrupt(f"signal {signo}")


def pytest_configure(config):
    procs.become_subreaper()
    # a SIGTERM (e.g. from `timeout`) unwinds like Ctrl-C, so every fixture still cleans up
    signal.signal(signal.SIGTERM, _terminate)


def pytest_collection_modifyitems(config, items):
    # "threaded": every test that starts a proxy through the fixture (its worker threads run),
    # and those of a module that sets THREADED = True on a shared (module) proxy; scripts/test.sh
    # runs them under ThreadSanitizer with NC_TEST_THREADS=4. The command modules do not set it,
    # for CI time: their paths are within one worker, with no hand-off between threads.
    for item in items:
        names = getattr(item, "fixturenames", ())
        if "nutcrackers" in names or ("module_nutcrackers" in names and
                                      getattr(item.module, "THREADED", False)):
            item.add_marker(pytest.mark.threaded)


def pytest_sessionstart(session):
    binary = procs.nutcrackers_bin()
    if not os.access(binary, os.X_OK):
        raise pytest.UsageError(f"nutcrackers binary not found at {binary}: build it or set "
                                "NUTCRACKERS_BIN")


STOP_GRACE_MS = 1000  # the proxies' -G unless a test sets it (see _proxy_factory)
BACKEND_LOG_TAIL = 2000  # a backend's log rarely says more than that it started


def _san_reports(pid):
    """Sanitizer reports a process wrote: <log_path>.<pid> of $ASAN/TSAN/UBSAN_OPTIONS."""
    found = []
    for var in ("ASAN_OPTIONS", "TSAN_OPTIONS", "UBSAN_OPTIONS"):
        for opt in os.environ.get(var, "").split(":"):
            key, _, value = opt.partition("=")
            if key == "log_path" and value:
                path = f"{value}.{pid}"
                if os.path.exists(path) and path not in found:
                    found.append(path)
    return found


def _proxy_fate(proxy):
    """(exit status or None, what became of it): running, exited, killed by a signal."""
    if proxy.daemon_pid is not None:
        return None, "a daemon: not checked"
    rc = proxy.proc.poll()
    if rc is None:
        return None, "still running"
    return rc, f"killed by signal {-rc}" if rc < 0 else f"exited with status {rc}"


def _proxy_sections(proxies):
    """What became of each proxy the test started, and any sanitizer report it wrote (a proxy
    that dies mid-test shows to its clients as a reset, nothing more)."""
    sections = []
    for proxy in proxies:
        sections.append((f"nutcrackers pid {proxy.pid}", _proxy_fate(proxy)[1]))
        for path in _san_reports(proxy.pid):
            sections.append((f"sanitizer report ({path})", procs.read_text(path)[-LOG_TAIL:]))
    return sections


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    # the proxy's fate and its stderr first: a report's excerpt may keep only its beginning
    proxies = [p for node in item.listchain() for p in getattr(node, "nc_proxies", [])]
    report.sections.extend(_proxy_sections(proxies))
    logs = [log for node in item.listchain() for log in getattr(node, "nc_logs", [])]
    logs.sort(key=lambda log: (not log[0].startswith("nutcrackers stderr"),
                               not log[0].startswith("nutcrackers")))
    for title, path in logs:
        text = procs.read_text(path)
        tail = LOG_TAIL if title.startswith(LONG_LOGS) else BACKEND_LOG_TAIL
        if len(text) > tail:
            text = "...\n" + text[-tail:]
        report.sections.append((f"{title} ({path})", text or "(empty)"))


def attach_log(request, title, path):
    """Registers a log file to attach to the report if the test fails."""
    logs = getattr(request.node, "nc_logs", None)
    if logs is None:
        logs = request.node.nc_logs = []
    if (title, str(path)) not in logs:
        logs.append((title, str(path)))


class Reaper:
    """Stops and reaps everything registered, last started first. A shared reaper (module scope)
    marks its processes as kept, so a test's clean-up (which reaps every other child) spares them."""

    def __init__(self, shared=False):
        self.popens = []
        self.pids = []
        self.shared = shared

    def add_popen(self, proc):
        self.popens.append(proc)
        if self.shared:
            procs.KEPT_PIDS.add(proc.pid)
        return proc

    def add_pid(self, pid):
        if pid not in self.pids:
            self.pids.append(pid)

    def cleanup(self):
        for pid in reversed(self.pids):
            procs.stop_pid(pid)
        procs.stop_popens(list(reversed(self.popens)))
        procs.reap_orphans()


@pytest.fixture
def reaper():
    r = Reaper()
    yield r
    r.cleanup()


@pytest.fixture(scope="module")
def module_reaper():
    r = Reaper(shared=True)
    yield r
    r.cleanup()


@pytest.fixture(scope="module")
def module_tmp_path(tmp_path_factory, request):
    return tmp_path_factory.mktemp(request.module.__name__)


def _start_backend(kind, tmp_path, reaper, request, port=None, args=()):
    """Starts a backend on a free port (a few tries: another process may take the port between
    the pick and the bind), or on the given port (one try: a restart on the port a killed backend
    had); returns (port, Popen)."""
    name = procs.BACKEND_BINARY[kind]
    if not procs.backend_installed(kind):
        pytest.fail(f"{name} is not installed (scripts/test.sh installs it)")
    last_log = None
    fixed = port
    for attempt in range(1 if fixed else 3):
        port = fixed or procs.free_port()
        workdir = tmp_path / f"{name}-{port}"
        workdir.mkdir(exist_ok=True)
        log_path = workdir / "out.log"
        attach_log(request, f"{name} :{port} output", log_path)
        last_log = log_path
        with open(log_path, "ab") as log:  # a restart on the same port appends
            proc = procs.start_backend(kind, port, args, cwd=workdir, log=log)
        if proc is not None:
            return port, reaper.add_popen(proc)
    pytest.fail(f"{name} did not start; see {last_log}")


def _redis_factory(tmp_path, reaper, request):
    def start(port=None, args=()):
        return _start_backend("redis", tmp_path, reaper, request, port, args)

    return start


def _memcached_factory(tmp_path, reaper, request):
    def start(port=None, args=()):
        """args: more flags; a later "-m" overrides the default memory limit."""
        return _start_backend("memcache", tmp_path, reaper, request, port, args)

    return start


def _conf_writer(tmp_path, reaper=None, request=None):
    """write_conf(pools_dict_or_text, name="nutcrackers.yml") -> Path."""

    def write(pools, name="nutcrackers.yml"):
        return conf.write_conf(tmp_path / name, pools)

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
    fatal_signal: int = None  # a signal the test kills it with on purpose (not a crash)

    @property
    def pid(self):
        return self.daemon_pid if self.daemon_pid is not None else self.proc.pid

    def log(self):
        return procs.read_text(self.log_path)

    def signal(self, signo):
        if self.daemon_pid is None:
            self.proc.send_signal(signo)  # a no-op once the proxy is reaped
        elif procs.is_descendant(self.daemon_pid):
            os.kill(self.daemon_pid, signo)
        else:
            raise ProcessLookupError(f"daemon {self.daemon_pid} is gone")

    def log_mark(self):
        """Where the log ends now: a `start` for wait_log."""
        return len(self.log())

    def wait_log(self, needle, timeout=START_TIMEOUT, start=0, count=1):
        """Waits (bounded, scaled) until the log, from character `start` on, contains needle
        (count times); returns the position just past it."""
        return wait_log(self.log, needle, timeout, start, count)

    def signal_and_wait(self, signo, needle, timeout=START_TIMEOUT):
        """Sends signo and waits (bounded) for new log text containing needle."""
        start = len(self.log())
        self.signal(signo)
        self.wait_log(needle, timeout=timeout, start=start)

    def wait_exit(self, timeout=START_TIMEOUT):
        """Waits (bounded) for the proxy to exit; returns its exit status."""
        if self.daemon_pid is not None:
            return procs.wait_pid_exit(self.daemon_pid, timeout)
        return self.proc.wait(timeout=timeout * scale())


CRASH_SIGNALS = {signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGABRT}
SANITIZER_EXIT_CODES = {86, 87}  # scripts/test.sh's ASan and TSan exitcode=


def _assert_no_crash(proxies):
    """At the end of a test: no proxy it started died of a fault or a sanitizer report. A proxy
    that dies between a test's last check and its end would otherwise go unnoticed."""
    dead = []
    for proxy in proxies:
        rc, fate = _proxy_fate(proxy)
        if rc is not None and proxy.fatal_signal is not None and -rc == proxy.fatal_signal:
            continue
        if rc is not None and (-rc in CRASH_SIGNALS or rc in SANITIZER_EXIT_CODES):
            dead.append(f"pid {proxy.pid}: {fate}")
    assert not dead, "a proxy crashed: " + ", ".join(dead)


def _proxy_factory(tmp_path, reaper, request):
    """nutcrackers(conf_path, *flags, wait="listen"|"log"|None, log_name=...) -> Proxy.

    Adds `-c conf_path -o <tmp>/<log_name>`, and `-s <free port> -a 127.0.0.1` unless the flags
    set them; the proxy runs in the test's tmp dir. wait="listen": until every pool's TCP listen
    port accepts (and the manage port too with wait_manage=True); "log": until the master logs that it started and has its signal
    handlers; "signals": only the latter (for quiet -v levels); None: return at once. Adds
    `-G STOP_GRACE_MS` unless the flags set it. With -d, the launcher's exit is
    awaited and the daemon's pid is read from -p (added if absent). $NC_TEST_THREADS, when set,
    is the -T of every proxy whose test sets none."""

    def start(conf_path, *flags, wait="listen", wait_manage=False, log_name="nutcrackers.log",
              relative_log=False, timeout=START_TIMEOUT):
        flags = list(flags)
        log_path = tmp_path / log_name
        args = ["-c", str(conf_path), "-o", log_name if relative_log else str(log_path)]
        manage_port = None
        if not {"-s", "--port"} & set(flags):
            manage_port = procs.free_port()
            args += ["-s", str(manage_port)]
        if not {"-a", "--addr"} & set(flags):
            args += ["-a", HOST]
        if not {"-G", "--stop-grace"} & {str(f).split("=")[0] for f in flags}:
            # a stop (SIGTERM) that waits for requests a test left in flight (to a backend it
            # stopped) ends well within procs.STOP_TIMEOUT, after which the proxy is killed
            args += ["-G", str(STOP_GRACE_MS)]
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
                [procs.nutcrackers_bin(), *args, *flags], cwd=tmp_path,
                stdin=subprocess.DEVNULL, stdout=err, stderr=subprocess.STDOUT,
                start_new_session=True, preexec_fn=procs.die_with_parent))
        proxy = Proxy(proc=proc, log_path=log_path, conf_path=Path(conf_path),
                      manage_port=manage_port, listen_ports=conf.listen_ports(tmp_path / conf_path),
                      pid_file=pid_file)
        proxies = getattr(request.node, "nc_proxies", None)
        if proxies is None:
            proxies = request.node.nc_proxies = []
            request.addfinalizer(lambda: _assert_no_crash(proxies))
        proxies.append(proxy)
        if daemon:
            rc = proc.wait(timeout=timeout * scale())
            assert rc == 0, f"the launcher of the daemon exited {rc}"
            text = wait_for(lambda: procs.read_text(pid_file).strip(), timeout,
                            f"pid file {pid_file}")
            proxy.daemon_pid = int(text)
            reaper.add_pid(proxy.daemon_pid)
        if wait == "listen":
            ports = proxy.listen_ports + ([manage_port] if wait_manage and manage_port else [])
            for port in ports:
                # its own listener (not another's on that port), and a connection it accepts
                # (some tests count this start-up probe among the pool's clients)
                wait_for(lambda p=port: (procs.listens(proxy.pid, p) and procs.port_accepts(p))
                         or not _running(proxy),
                         timeout, f"nutcrackers to listen on port {port}")
                assert _running(proxy), "nutcrackers exited while starting"
        elif wait in ("log", "signals"):
            def up():
                if not _running(proxy):
                    return True
                logged = wait == "signals" or "started" in proxy.log()
                return logged and procfs.signals_caught(proxy.pid, procs.MASTER_SIGNALS)

            wait_for(up, timeout, "nutcrackers to start")
            assert _running(proxy), "nutcrackers exited while starting"
        return proxy

    return start


@pytest.fixture
def stopped():
    """stopped(proc) SIGSTOPs a backend and waits until all its threads are stopped;
    stopped.resume(), and the end of the test in any case, SIGCONTs it (a stopped process would
    not even die of SIGTERM)."""
    held = []

    def stop(proc):
        held.append(proc)
        os.kill(proc.pid, signal.SIGSTOP)
        wait_for(lambda: procfs.stopped(proc.pid), START_TIMEOUT, f"pid {proc.pid} to stop",
                 interval=0.001)

    def resume():
        while held:
            proc = held.pop()
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)

    stop.resume = resume
    yield stop
    resume()


def _fixture_pair(factory, name, doc):
    """Two fixtures over one factory(tmp dir, reaper, request): `name` for one test, and
    `module_<name>` shared by a module's tests (its own tmp dir; log names must differ)."""

    def per_test(tmp_path, reaper, request):
        return factory(tmp_path, reaper, request)

    def per_module(module_tmp_path, module_reaper, request):
        return factory(module_tmp_path, module_reaper, request)

    per_test.__doc__ = per_module.__doc__ = doc
    return (pytest.fixture(per_test, name=name),
            pytest.fixture(per_module, name=f"module_{name}", scope="module"))


redis_server, module_redis_server = _fixture_pair(
    _redis_factory, "redis_server",
    "Factory: redis_server(port=None, args=()) -> (port, Popen) of a fresh redis-server on "
    "127.0.0.1 (on a free port, or on `port`; args: more flags).")
memcached_server, module_memcached_server = _fixture_pair(
    _memcached_factory, "memcached_server",
    "Factory: memcached_server(port=None, args=()) -> (port, Popen) of a fresh memcached on "
    "127.0.0.1 (on a free port, or on `port`; args: more flags).")
write_conf, module_write_conf = _fixture_pair(
    _conf_writer, "write_conf",
    'Factory: write_conf(pools_dict_or_text, name="nutcrackers.yml") -> Path.')
nutcrackers, module_nutcrackers = _fixture_pair(
    _proxy_factory, "nutcrackers", "Factory: see _proxy_factory.")


@pytest.fixture(scope="module")
def redis_oracle(module_redis_server):
    """The port of a redis-server of the module's own: what redis answers, to compare the proxy's
    replies with."""
    port, _ = module_redis_server()
    return port


def _cluster_fixture(kind, request, start_backend, write_conf, start_proxy):
    backends, threads = request.param
    args = getattr(request.module, "REDIS_ARGS" if kind == "redis" else "MEMCACHED_ARGS", ())
    c = cluster.start_cluster(kind, backends, threads, start_backend, write_conf, start_proxy,
                              name=f"{kind}-{cluster.matrix_id(request.param)}",
                              backend_args=args, hash_tag="{}")
    yield c
    rc = c.stop()
    assert rc == 0, f"the proxy of {c.proxy.conf_path.name} exited with status {rc}"


@pytest.fixture(scope="module", params=cluster.MATRIX, ids=cluster.matrix_id)
def redis_cluster(request, module_redis_server, module_write_conf, module_nutcrackers):
    """A nctest.cluster.Cluster: 1 or 4 redis-servers behind a proxy with -T 1 or -T 4 (hash_tag "{}"),
    shared by the module's tests. A module may set REDIS_ARGS (extra redis-server flags)."""
    yield from _cluster_fixture("redis", request, module_redis_server, module_write_conf,
                                module_nutcrackers)


@pytest.fixture(scope="module", params=cluster.MATRIX, ids=cluster.matrix_id)
def mc_cluster(request, module_memcached_server, module_write_conf, module_nutcrackers):
    """The same with memcached; a module may set MEMCACHED_ARGS (extra memcached flags)."""
    yield from _cluster_fixture("memcache", request, module_memcached_server, module_write_conf,
                                module_nutcrackers)


@pytest.fixture(scope="module")
def mc_pool(request, module_memcached_server, module_write_conf, module_nutcrackers):
    """A nctest.cluster.Cluster of 3 memcacheds behind a proxy (-T 2), shared by the module."""
    c = cluster.start_cluster("memcache", 3, 2, module_memcached_server, module_write_conf,
                              module_nutcrackers, name=f"{request.module.__name__[5:]}-pool")
    yield c
    rc = c.stop()
    assert rc == 0, f"the proxy of {c.proxy.conf_path.name} exited with status {rc}"


@pytest.fixture(scope="module")
def mc_direct(module_memcached_server):
    """A memcached of the module's own, with no proxy (a nctest.cluster.Direct)."""
    return cluster.Direct("memcache", module_memcached_server()[0])


@pytest.fixture(params=["direct", "proxy"])
def mc_target(request):
    """For checks that run twice: `direct`, on mc_direct (which checks the checks themselves),
    and `proxy`, through mc_pool, where an item belongs on the server the proxy routes its key to."""
    return request.getfixturevalue("mc_direct" if request.param == "direct" else "mc_pool")


def _running(proxy):
    if proxy.daemon_pid is not None:
        return procs.is_descendant(proxy.daemon_pid)
    return proxy.proc.poll() is None


@pytest.fixture
def good_conf(write_conf):
    """A small valid config (one redis and one memcached pool) with free listen ports; backends
    are not started (the proxy connects lazily)."""
    return write_conf({
        "alpha": {"listen": f"{HOST}:{procs.free_port()}", "redis": True,
                  "servers": [f"{HOST}:{procs.free_port()}:1"]},
        "beta": {"listen": f"{HOST}:{procs.free_port()}",
                 "servers": [f"{HOST}:{procs.free_port()}:1"]},
    })


CLIENT_BUILD_TIMEOUT = 900  # seconds: a first build fetches the modules and compiles go-redis


def _client_program(function):
    """Runs a builder of scripts/lib/deps.sh; the path of the program, or a skip without its
    toolchain."""
    try:
        out = deps.call(function, CLIENT_BUILD_TIMEOUT)
    except deps.NoToolchain as e:
        pytest.skip(str(e))
    assert out.returncode == 0, f"{function} failed:\n{out.stderr}"
    return out.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="session")
def go_client():
    return [_client_program("nc_build_go_client")]


@pytest.fixture(scope="session")
def java_client():
    return ["java", "-jar", _client_program("nc_build_java_client")]


@pytest.fixture(scope="session")
def node():
    """The node binary, with the pinned clients installed in tests/clients/node."""
    try:
        return nodeclients.node_with_packages()
    except (deps.NoToolchain, nodeclients.Unavailable) as e:
        if os.environ.get("NC_REQUIRE_NODE_CLIENTS") == "1":
            pytest.fail(f"{e} (NC_REQUIRE_NODE_CLIENTS=1: the Node client tests must run)")
        pytest.skip(str(e))


@pytest.fixture(scope="session")
def ruby_dalli():
    """The ruby binary, which loads the pinned Dalli (Debian's ruby-dalli)."""
    try:
        out = deps.call("nc_ruby_clients", 60)
    except deps.NoToolchain as e:
        pytest.skip(str(e))
    assert out.returncode == 0, f"nc_ruby_clients failed:\n{out.stderr}"
    return out.stdout.strip().splitlines()[-1]


def pytest_sessionfinish(session, exitstatus):
    # last resort: nothing this run started may outlive it
    procs.reap_orphans(spare=False)
