"""Processes and ports: free loopback ports (never the same one twice in a row), the binary under
test and whether it is sanitized, the command lines of real backends (redis-server, memcached) and
starting them, and stopping and reaping what a run started (signals only ever go to our own
descendants: pids wrap quickly when runs go side by side).

Threads: the functions are safe from any thread; the recent-ports memory is shared by the process
(a lock guards it).
"""
import collections
import ctypes
import functools
import os
import random
import resource
import shutil
import signal
import socket
import subprocess
import threading
from pathlib import Path

from . import procfs

HOST = "127.0.0.1"
REPO = Path(__file__).resolve().parents[2]

START_TIMEOUT = 10.0   # seconds a backend or the proxy gets to come up
STOP_TIMEOUT = 5.0     # seconds between SIGTERM and SIGKILL

# pids of processes shared by several tests (module-scoped fixtures): reap_orphans() spares them
KEPT_PIDS = set()

MASTER_SIGNALS = (signal.SIGHUP, signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGTTIN,
                  signal.SIGTTOU)

_RECENT_PORTS = collections.deque(maxlen=256)
_PORTS_LOCK = threading.Lock()


def nutcrackers_bin():
    """The binary under test: $NUTCRACKERS_BIN, else <repo>/src/nutcrackers."""
    return os.environ.get("NUTCRACKERS_BIN") or str(REPO / "src" / "nutcrackers")


@functools.lru_cache(maxsize=None)
def _sanitizers_of(path):
    try:
        data = Path(path).read_bytes()
    except OSError:
        return frozenset()  # no binary (yet): nothing to scale for
    return frozenset(name for name, mark in (("asan", b"__asan_init"), ("tsan", b"__tsan_init"))
                     if mark in data)


def sanitized_binary(path=None):
    """True when the proxy under test is built with ASan or TSan (several times slower; RSS says
    little: freed memory sits in quarantine)."""
    return bool(_sanitizers_of(path or nutcrackers_bin()))


def tsan_binary(path=None):
    """True when the proxy under test is a TSan build (hundreds of MB through it take minutes)."""
    return "tsan" in _sanitizers_of(path or nutcrackers_bin())


# Ports are picked below the kernel's ephemeral range (ip_local_port_range), from PORT_FLOOR up:
# the kernel hands ephemeral ports to anyone's bind(0) and to every outgoing connection, so a port
# it picked for us and that we closed again may be taken, before our server binds it, by another
# test run on the machine (its own pick, or a client's local port). Below the range only another
# picker like this one could take it, and pickers reserve what they pick (see _reserve).
PORT_FLOOR = 23000        # above the fixed ports the tests and examples use (6379, 11211, 22121 ...)
PORT_MIN_SPAN = 1000      # fewer free numbers than this below the range: pick above it instead
PORT_LOCK_DIR = Path(os.environ.get("NC_TEST_PORT_DIR") or "/tmp/nctest-ports")
PORT_LOCKS_HELD = 128     # reservations this process keeps, the most recent ones
_PORT_LOCKS = collections.deque()


def _port_span():
    """(first, last) of the ports free_port picks from: below the ephemeral range if there is room,
    else above it; None when neither has room (then the kernel picks)."""
    try:
        low, high = (int(x) for x in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except (OSError, ValueError):
        low, high = 32768, 60999  # Linux's default
    if low - PORT_FLOOR >= PORT_MIN_SPAN:
        return PORT_FLOOR, low - 1
    if 65535 - high >= PORT_MIN_SPAN:
        return high + 1, 65535
    return None


def lock_fd(name):
    """A descriptor of the lock file PORT_LOCK_DIR/<name>, shared by the test runs of this machine
    (every user's), for try_lock(); None when it cannot be opened (another user's file)."""
    try:
        if not PORT_LOCK_DIR.is_dir():
            PORT_LOCK_DIR.mkdir(exist_ok=True)
            os.chmod(PORT_LOCK_DIR, 0o1777)  # every user's runs share it (umask aside)
        return os.open(PORT_LOCK_DIR / name, os.O_RDONLY | os.O_CREAT, 0o666)
    except OSError:
        return None


def try_lock(fd):
    """Takes the exclusive flock of a lock_fd() descriptor for this process (until the descriptor
    is closed); False when another process holds it."""
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def _reserve(port):
    """Reserves port among the test runs of this machine: an exclusive flock on
    PORT_LOCK_DIR/<port>, held by this process (released at its exit, or after PORT_LOCKS_HELD
    newer reservations, by when a server listens on the port or it was given up). False when
    another process holds it."""
    fd = lock_fd(str(port))
    if fd is None:
        return False  # another user's file we cannot open: take another port
    if not try_lock(fd):
        os.close(fd)
        return False
    _PORT_LOCKS.append(fd)
    while len(_PORT_LOCKS) > PORT_LOCKS_HELD:
        os.close(_PORT_LOCKS.popleft())
    return True


def _bindable(port):
    """Nobody holds 127.0.0.1:port (or the wildcard) now, not even in TIME_WAIT."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((HOST, port))
        except OSError:
            return False
    return True


def _kernel_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def free_port():
    """A TCP port on 127.0.0.1 that nobody listens on right now, outside the kernel's ephemeral
    range and reserved against the other test runs of the machine (see PORT_FLOOR), and not one
    this process was given lately (a caller that asks for two, a pool's and the manage port,
    before it starts its proxy must get two)."""
    span = _port_span()
    for _ in range(200):
        port = random.randint(*span) if span else _kernel_port()
        with _PORTS_LOCK:
            if port in _RECENT_PORTS or not _bindable(port) or (span and not _reserve(port)):
                continue
            _RECENT_PORTS.append(port)
            return port
    raise RuntimeError("no fresh free port in 200 tries")


def free_ports(n):
    return [free_port() for _ in range(n)]


def port_accepts(port, host=HOST, timeout=0.2):
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def port_busy(port):
    """True when a server could not bind 127.0.0.1:port now (something listens on it or on the
    wildcard address). SO_REUSEADDR as servers use it, so TIME_WAIT leftovers do not count."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((HOST, port))
        except OSError:
            return True
    return False


# --- backends ---------------------------------------------------------------------------------

def redis_argv(port, *args):
    """redis-server on 127.0.0.1:port, no persistence, in the foreground; args: more flags."""
    return ["redis-server", "--port", str(port), "--bind", HOST, "--save", "", "--appendonly",
            "no", "--protected-mode", "no", "--daemonize", "no", *args]


def memcached_argv(port, *args):
    """memcached on 127.0.0.1:port (TCP only, 16 MB, one thread); args: more flags (a later -m,
    -t, ... overrides these)."""
    flags = ["-l", HOST, "-U", "0", "-m", "16", "-t", "1"]
    if os.geteuid() == 0:
        flags += ["-u", "root"]  # memcached refuses to run as root without it
    return ["memcached", *flags, *args, "-p", str(port)]


BACKEND_ARGV = {"redis": redis_argv, "memcache": memcached_argv}
BACKEND_BINARY = {"redis": "redis-server", "memcache": "memcached"}


def backend_installed(kind):
    return shutil.which(BACKEND_BINARY[kind]) is not None


def unix_accepts(path, timeout=0.2):
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(str(path))
            return True
    except OSError:
        return False


UNIX_ARGS = {"redis": lambda path: ("--unixsocket", str(path)),
             "memcache": lambda path: ("-s", str(path))}


def start_backend(kind, port, args=(), cwd=None, log=None, path=None, **popen):
    """Starts a redis ("redis") or memcached ("memcache") backend on port and waits (bounded)
    until it accepts. With path, on that unix socket alone instead (port unused; redis-server
    --port 0 --unixsocket, memcached -s: no TCP at all). Returns the Popen, or None when it exited
    or did not listen in time (the port may have been taken between its pick and the bind: try
    another; whoever took it may be listening there, so what counts is that proc listens). Its output goes to the open file log (default: discarded)."""
    from . import wait  # (wait needs procs for its sanitizer scale)

    if path is not None:
        port, args = 0, (*UNIX_ARGS[kind](path), *args)
    out = subprocess.DEVNULL if log is None else log
    proc = subprocess.Popen(BACKEND_ARGV[kind](port, *args), cwd=cwd, stdin=subprocess.DEVNULL,
                            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                            preexec_fn=die_with_parent, **popen)
    # ready when it listens itself: the port accepting is not enough, another process may listen
    # there (then this one's bind failed and it is about to exit)
    ready = (lambda: unix_accepts(path)) if path is not None else (lambda: listens(proc.pid, port))
    try:
        wait.wait_for(lambda: proc.poll() is not None or ready(), START_TIMEOUT,
                      f"{kind} on {path or f'port {port}'}")
    except TimeoutError:
        stop_popen(proc)
        return None
    return proc if proc.poll() is None else None


def listens(pid, port):
    """True when process pid itself has a listening TCP socket on port (False when it is gone)."""
    try:
        return any(state == "LISTEN" and local == port
                   for state, local, _, _ in procfs.tcp_of(pid, listeners=True))
    except OSError:
        return False


def wait_listening(port, proc, timeout=START_TIMEOUT, what=None):
    """Waits (bounded) until proc listens on port; raises if proc exits first."""
    from . import wait

    wait.wait_for(lambda: proc.poll() is not None or listens(proc.pid, port), timeout,
                  what or f"port {port} to accept")
    if proc.poll() is not None:
        raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode} before listening on {port}")


def nofile_at_least(need, pid=0):
    """Raises the open-file soft limit of pid (0: this process) to `need` when it is lower (a
    proxy raises its own to its hard limit at start: this checks that it has enough). Returns the
    (soft, hard) limits it had, to restore, or None when its hard limit is below need (nothing
    changed)."""
    soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < need:
        return None
    if soft != resource.RLIM_INFINITY and soft < need:
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (need, hard))
    return soft, hard


# --- our descendants --------------------------------------------------------------------------

def become_subreaper():
    """Makes this process adopt orphaned descendants (Linux PR_SET_CHILD_SUBREAPER), so a daemon
    that double-forks away from the proxy we started is still our child: we can reap it and read
    its exit status. Returns False where that is not available."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def die_with_parent():
    """preexec_fn for Popen: the child gets SIGKILL if this process dies (even by SIGKILL), so a
    killed run leaves no backend behind. Forks (a daemon) drop the setting."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def is_descendant(pid):
    """True while pid is a process this one started (a child, a child's child, or an orphan it
    adopted as subreaper). A pid we already reaped may belong to anybody by now: pids wrap in
    minutes when test runs go side by side, so a signal to a stale pid could kill another run's
    proxy. Every signal to a pid that is not a Popen we hold goes through this check."""
    me = os.getpid()
    for _ in range(64):  # bounded walk up the tree
        if pid is None or pid <= 1:
            return False
        if pid == me:
            return True
        pid = procfs.parent_pid(pid)
    return False


def reap_orphans(spare=True):
    """Kills and reaps every remaining child of this process: daemons whose pid a failed test
    never learnt, and exited ones adopted as subreaper (zombies are children too). With spare, the
    processes of module-scoped fixtures (KEPT_PIDS) are left alone: their fixture reaps them. Call
    only when no test process should be running."""
    kept = KEPT_PIDS if spare else set()
    for pid in procfs.children(os.getpid()):
        if pid not in kept:
            stop_pid(pid)
    while not kept:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def reap(pid):
    """Non-blocking reap of a child (or adopted) pid: its exit status as a Popen-style return
    code (negative = killed by that signal), or None while it runs. If it is not our child, returns
    0 once it is gone."""
    try:
        got, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return None if is_descendant(pid) else 0
    if got == 0:
        return None
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def wait_pid_exit(pid, timeout):
    """Waits (bounded) for a pid to exit; returns its status as reap() gives it, or raises."""
    from . import wait

    result = {}

    def done():
        rc = reap(pid)
        if rc is not None:
            result["rc"] = rc
            return True
        return False

    wait.wait_for(done, timeout, f"pid {pid} to exit", scaled=False)
    return result["rc"]


def stop_pid(pid, timeout=STOP_TIMEOUT):
    """SIGTERM, then SIGKILL after timeout; always reaps. Returns the exit status or None. A pid
    that is no longer ours (reaped before, its number maybe reused) is left alone."""
    if not is_descendant(pid):
        return reap(pid)
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return reap(pid)
    try:
        return wait_pid_exit(pid, timeout)
    except TimeoutError:
        if not is_descendant(pid):
            return reap(pid)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            return wait_pid_exit(pid, timeout)
        except TimeoutError:
            return None


def stop_popen(proc, timeout=STOP_TIMEOUT):
    """SIGTERM, then SIGKILL after timeout; always waits. Returns the exit status (None for
    None)."""
    if proc is None:
        return None
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=timeout)
    return proc.returncode


def stop_popens(procs, timeout=STOP_TIMEOUT):
    """stop_popen for several at once: SIGTERM to all first, then the waits (memcached notices
    SIGTERM only on its one-second tick, so one after the other would add up)."""
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    for proc in procs:
        stop_popen(proc, timeout)
        KEPT_PIDS.discard(proc.pid)


def kill_popen(proc, timeout=STOP_TIMEOUT):
    """SIGKILL (a backend crash) and wait for it."""
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=timeout)


def run(args, timeout=20, **kw):
    """Runs the proxy binary to completion (for -V, -h, -t ...); returns CompletedProcess."""
    return subprocess.run([nutcrackers_bin(), *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, **kw)


def read_text(path):
    try:
        return Path(path).read_text(errors="replace")
    except FileNotFoundError:
        return ""
