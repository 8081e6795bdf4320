#!/usr/bin/env python3
"""Soak test (bounded, a few minutes; not part of the default CI run).

Starts 3 redis-servers and 3 memcacheds on free loopback ports and the proxy (-T 4) in front of
them with auto_eject_hosts, then runs mixed redis and memcached load from many clients while one
backend at a time is killed (-9) and restarted every few seconds. Every reply is checked against
what that client wrote (a value may be missing after its backend restarted, and a request may
fail while a backend is down, but a value is never another key's or an older one). At the end
the proxy's RSS and open fd count must be back within 10% of their baseline.

    python3 tests/soak/soak.py [--seconds 180] [--clients 40] [--bin src/nutcrackers]
Exit status 0 when every check passed.

Threads: the main thread drives the backends; each pool's load runs its own thread (nctest.load).
"""
import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# the helper library (tests/nctest): this is where the soak finds it
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nctest import procfs, procs, wait  # noqa: E402
from nctest.conf import render_conf  # noqa: E402
from nctest.load import Load, describe  # noqa: E402
from nctest.procs import HOST  # noqa: E402

UP_EVERY = 3.0     # seconds between two kills
DOWN_FOR = 1.0     # seconds a killed backend stays down
SETTLE = 30.0      # seconds the proxy gets to close and trim after the load (it trims every second)


class Backend:
    def __init__(self, kind, workdir):
        self.kind, self.port, self.workdir, self.proc = kind, procs.free_port(), workdir, None

    def start(self):
        self.proc = procs.start_backend(self.kind, self.port, cwd=self.workdir)
        if self.proc is None:
            raise RuntimeError(f"{self.kind} did not start on port {self.port}")

    def kill(self):
        if self.proc is not None:
            procs.kill_popen(self.proc)


def soak_load(port, redis, nclients):
    """Clients that write 200 keys each, values up to 2 kB, SET and GET in one write, carrying on
    through error replies and reconnecting (a backend is down on purpose)."""
    return Load(port, redis, nclients, nkeys=200, prefix="soak", strict=False, reconnect=True,
                record_ok=False, value_pad=2000, hang=10.0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=180)
    ap.add_argument("--clients", type=int, default=40)
    ap.add_argument("--bin", default=os.environ.get("NUTCRACKERS_BIN", "src/nutcrackers"))
    args = ap.parse_args()
    os.environ["NUTCRACKERS_BIN"] = os.path.abspath(args.bin)  # waits scale for a sanitized one
    for kind in ("redis", "memcache"):
        if not procs.backend_installed(kind):
            sys.exit(f"{procs.BACKEND_BINARY[kind]} is not installed")
    work = tempfile.mkdtemp(prefix="nc-soak.")
    backends = [Backend("redis", work) for _ in range(3)] + [Backend("memcache", work) for _ in range(3)]
    proxy = None
    loads = []
    try:
        for b in backends:
            b.start()
        rport, mport, sport = procs.free_ports(3)
        common = {"auto_eject_hosts": True, "server_failure_limit": 2,
                  "server_retry_timeout": 1000, "timeout": 500}
        conf = Path(work) / "soak.yml"
        conf.write_text(render_conf({
            "soak_redis": {"listen": f"{HOST}:{rport}", "redis": True, **common,
                           "servers": [f"{HOST}:{b.port}:1" for b in backends[:3]]},
            "soak_mc": {"listen": f"{HOST}:{mport}", **common,
                        "servers": [f"{HOST}:{b.port}:1" for b in backends[3:]]}}))
        proxy = subprocess.Popen([args.bin, "-c", str(conf), "-T", "4", "-s", str(sport), "-a", HOST,
                                  "-o", os.path.join(work, "proxy.log")],
                                 stdin=subprocess.DEVNULL, preexec_fn=procs.die_with_parent)
        for port in (rport, mport):
            procs.wait_listening(port, proxy, what="the proxy to listen")
        half = args.clients // 2
        # warm-up: every worker opens its server connections; the baseline is taken after it,
        # with no client connected and the fd count steady
        warm = [soak_load(rport, True, args.clients - half), soak_load(mport, False, half)]
        for load in warm:
            load.start()
        for load in warm:
            load.wait_progress(each=20)
            load.stop()
        base_fds = wait.steady(lambda: procfs.fd_count(proxy.pid), SETTLE, "a steady fd count")
        base_rss = min(wait.sample(lambda: procfs.rss_kb(proxy.pid), 13))
        loads = [soak_load(rport, True, args.clients - half), soak_load(mport, False, half)]
        for load in loads:
            load.start()
        rnd = random.Random(1)
        for _ in range(max(int(args.seconds / (UP_EVERY + DOWN_FOR)), 1)):
            wait.hold(UP_EVERY, "the soak's rhythm: all backends up")
            victim = rnd.choice(backends)
            victim.kill()
            wait.hold(DOWN_FOR, "the soak's rhythm: one backend down")
            victim.start()
        for load in loads:
            load.stop()
        fds = wait.settle(lambda: procfs.fd_count(proxy.pid), base_fds * 1.10 + 2, SETTLE,
                          "the fd count back near its baseline")
        failed = []
        try:
            rss = wait.settle(lambda: procfs.rss_kb(proxy.pid), base_rss * 1.10 + 1024, SETTLE,
                              "RSS back near its baseline")
        except AssertionError as e:
            rss = procfs.rss_kb(proxy.pid)
            failed.append(f"RSS not back within 10% (+1 MB) of its baseline: {e}")
        ok = sum(len(c.sent_at) for load in loads for c in load.clients)
        counts = {}
        for load in loads:
            for e in load.problems_of():
                counts[e.kind] = counts.get(e.kind, 0) + 1
        wrong = [e for load in loads for e in load.problems_of(kinds=("wrong", "stale"))]
        print(f"exchanges ok {ok}, other outcomes {counts}")
        print(f"RSS {base_rss} kB -> {rss} kB, fds {base_fds} -> {fds}")
        if wrong:
            failed.append(f"wrong replies:\n{describe(wrong)}")
        if proxy.poll() is not None:
            failed.append("the proxy died")
        if ok == 0:
            failed.append("no request succeeded")
        if proxy.poll() is None:  # a clean exit too: a sanitized build reports leaks at exit
            status = procs.stop_popen(proxy, timeout=30)
            if status != 0:
                failed.append(f"the proxy's exit status on SIGTERM: {status}")
        for f in failed:
            print("FAILED:", f)
        print("soak: " + ("1 passed, 0 failed" if not failed else "0 passed, 1 failed"))
        return 1 if failed else 0
    finally:
        for load in loads:
            if load.thread is not None and load.thread.is_alive():
                load.stop()
        procs.stop_popen(proxy, timeout=10)
        for b in backends:
            b.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
