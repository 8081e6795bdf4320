"""Helpers for the integration tests: free loopback ports, bounded waits, process start/stop,
YAML config writing. The fixtures in conftest.py use them; tests may too.

Every wait here is bounded; every address is 127.0.0.1.
"""
import collections
import ctypes
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

HOST = "127.0.0.1"
REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"

START_TIMEOUT = 10.0   # seconds a backend or the proxy gets to come up
STOP_TIMEOUT = 5.0     # seconds between SIGTERM and SIGKILL

# pids of processes shared by several tests (module-scoped fixtures): reap_orphans() spares them
KEPT_PIDS = set()


def nutcrackers_bin():
    """The binary under test: $NUTCRACKERS_BIN, else <repo>/src/nutcrackers."""
    return os.environ.get("NUTCRACKERS_BIN") or str(REPO / "src" / "nutcrackers")


_RECENT_PORTS = collections.deque(maxlen=256)


def free_port():
    """A TCP port on 127.0.0.1 that nobody listens on right now (the kernel picks it), and not one
    this process was given lately: the kernel may hand out a port again as soon as it is closed,
    and a test that asks for two (a pool's and the manage port) before it starts its proxy would
    get the same one twice."""
    for _ in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((HOST, 0))
            port = s.getsockname()[1]
        if port not in _RECENT_PORTS:
            _RECENT_PORTS.append(port)
            return port
    raise RuntimeError("no fresh free port in 100 tries")


def port_accepts(port, host=HOST, timeout=0.2):
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def wait_until(pred, timeout, interval=0.05, what="condition"):
    """Polls pred() until it returns a true value (returned) or timeout seconds pass (raises)."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout:.1f}s waiting for {what}")
        time.sleep(interval)


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
    """preexec_fn for Popen: the child gets SIGKILL if this pytest process dies (even by SIGKILL),
    so a killed test run leaves no backend behind. Forks (a daemon) drop the setting."""
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


def parent_pid(pid):
    """The parent of pid (from /proc/PID/stat), or None when pid is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses
    fields = stat[stat.rfind(")") + 2:].split()
    return int(fields[1]) if len(fields) > 1 else None


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
        pid = parent_pid(pid)
    return False


def signals_caught(pid, signos):
    """True when pid has handlers installed for every signal in signos (from /proc/PID/status), so
    sending them cannot stop or kill it by their default action."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    for line in text.splitlines():
        if line.startswith("SigCgt:"):
            mask = int(line.split(":", 1)[1], 16)
            return all(mask & (1 << (signo - 1)) for signo in signos)
    return False


MASTER_SIGNALS = (signal.SIGHUP, signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGTTIN,
                  signal.SIGTTOU)


def own_children():
    """Pids whose parent is this process (with the subreaper bit: adopted orphans too)."""
    me = os.getpid()
    kids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 1 and int(fields[1]) == me:
            kids.append(int(entry.name))
    return kids


def reap_orphans(spare=True):
    """Kills and reaps every remaining child of this process: daemons whose pid a failed test
    never learnt, and exited ones adopted as subreaper (zombies are children too). With spare, the
    processes of module-scoped fixtures (KEPT_PIDS) are left alone: their fixture reaps them. Call
    only when no test process should be running."""
    kept = KEPT_PIDS if spare else set()
    for pid in own_children():
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
    result = {}

    def done():
        rc = reap(pid)
        if rc is not None:
            result["rc"] = rc
            return True
        return False

    wait_until(done, timeout, what=f"pid {pid} to exit")
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
    """SIGTERM, then SIGKILL after timeout; always waits. Returns the exit status."""
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


def run(args, timeout=20, **kw):
    """Runs the proxy binary to completion (for -V, -h, -t ...); returns CompletedProcess."""
    return subprocess.run([nutcrackers_bin(), *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, **kw)


def read_text(path):
    try:
        return Path(path).read_text(errors="replace")
    except FileNotFoundError:
        return ""


def yaml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str) and (v == "" or any(c in v for c in "{}[]#&*!|>'\"%@`")):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(v)


def render_conf(pools):
    """YAML text for {pool_name: {key: value, "servers": [..]}} (keys in the given order)."""
    lines = []
    for name, keys in pools.items():
        lines.append(f"{name}:")
        for key, value in keys.items():
            if isinstance(value, (list, tuple)):
                lines.append(f"  {key}:")
                lines.extend(f"   - {yaml_value(item)}" for item in value)
            else:
                lines.append(f"  {key}: {yaml_value(value)}")
    return "\n".join(lines) + "\n"
