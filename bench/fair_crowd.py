#!/usr/bin/env python3
"""bench/fair_crowd.py - a bystander's latency next to a crowd of clients that pipeline large
requests, or ask for large replies, on the same server connection (a client's fair share of the
shared server connections: notes/fair-share.md), for nutcrackers -T 1 and -T 2 (two builds: e.g.
this one and the one before the fair share), twemproxy 0.5.0 on the same config, and redis-server
itself with maxmemory-clients.

Each run starts, on free 127.0.0.1 ports, one redis-server holding a 1 MB value and the steady
client's 16-byte key, and (but for `redis`) a proxy over it: one pool, one server, one connection
to it per worker (server_connections 1, twemproxy's default). The crowd (nctest.crowd.ReadingCrowd,
a thread of this process): --clients clients that each pipeline --depth GETs of the 1 MB value
and read every reply, round after round (`gets:N`), or pipeline --depth SETs of a 1 MB value and
read the +OKs (`sets:N`); `none` is no crowd. Half a second after the crowd starts, the bystander,
`ncload load -c 1 -P 1 --op get` (bench.steady_client: one GET of the 16-byte value at a time, in
a process of its own), runs --seconds; then the crowd stops. Per crowd the variants run in
alternation (A B C ... A B C ..., --rounds times), each on fresh processes.

Variants: nc1 / nc2 = nutcrackers -T 1 / -T 2 (--nc-bin); ncb1 / ncb2 = the same with --nc-bin-b;
tw = twemproxy (--tw-bin); redis = the crowd and the bystander straight to the redis-server,
started with maxmemory-clients --cap (past it, it closes the clients that hold the most; a crowd
client closed connects again and starts its round over); redis-nocap = the same without
maxmemory-clients. Printed per crowd and variant, the medians of the rounds: the
bystander's requests/s and p50, p99, p999 and max latency, its errors (all rounds), the crowd's
requests/s, how many times a crowd client was closed, and the peak RSS over idle of the proxy
(of redis-server for `redis`), sampled every 10 ms. No CPU pinning: the proxy, redis, the crowd
and the bystander share the machine's cores.

Only loopback addresses; the bystander has a time limit; every process started here is stopped
before it exits.
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import bench  # bench/bench.py: the same helpers and conventions
from bench import absolute_bins, chosen_variants, common_args, fmt, log, med, raise_nofile, steady_client, \
    steady_key, write_json
from memory_crowd import size_bytes
from nctest import crowd, keys, procs, wait
from nctest.codec import bulk, resp
from nctest.conf import render_conf
from nctest.conn import RawConn
from nctest.procfs import rss_kb
from nctest.procs import free_port, stop_popen as stop

MB = 1 << 20
VARIANTS = {"nc1": "nutcrackers -T 1", "nc2": "nutcrackers -T 2", "ncb1": "nutcrackers -T 1 (--nc-bin-b)",
            "ncb2": "nutcrackers -T 2 (--nc-bin-b)", "tw": "twemproxy",
            "redis": "straight to redis-server, maxmemory-clients --cap",
            "redis-nocap": "straight to redis-server, no maxmemory-clients"}
POOL = "crowd"


def crowd_of(spec, port, depth, value):
    """The ReadingCrowd of a crowd spec (gets:N, sets:N), not started; None for `none`."""
    if spec == "none":
        return None
    kind, n = spec.split(":")
    if kind == "gets":
        return crowd.ReadingCrowd(port, int(n), resp("GET", "big") * depth, len(bulk(value)) * depth)
    if kind == "sets":
        return crowd.ReadingCrowd(port, int(n), resp("SET", "crowd", value) * depth, len(b"+OK\r\n") * depth)
    raise ValueError(spec)


class Run:
    """One variant's processes for one run: a redis-server and the proxy over it."""

    def __init__(self, args, variant, workdir):
        self.args, self.variant = args, variant
        self.dir = tempfile.mkdtemp(prefix=f"{variant}.", dir=workdir)
        self.procs = []

    def start(self, value):
        """Returns (the port the clients use, the pid whose RSS is measured)."""
        extra = ("--maxmemory-clients", str(size_bytes(self.args.cap))) if self.variant == "redis" else ()
        for _ in range(3):  # another process may take the port between its pick and the bind
            rport = free_port()
            redis = procs.start_backend("redis", rport, ("--logfile", os.path.join(self.dir, "redis.log"), *extra),
                                        cwd=self.dir)
            if redis is not None:
                break
        else:
            raise RuntimeError("redis-server did not start")
        self.procs.append(redis)
        with RawConn(rport) as c:
            c.exchange(resp("SET", "big", value), b"+OK\r\n")
        steady_key(rport)
        if self.variant.startswith("redis"):
            return rport, redis.pid
        port, stats = free_port(), free_port()
        conf = os.path.join(self.dir, "crowd.yml")
        with open(conf, "w") as f:
            f.write(render_conf({POOL: {"listen": f"127.0.0.1:{port}", "redis": True, "server_connections": 1,
                                        "servers": [f"127.0.0.1:{rport}:1"]}}))
        if self.variant == "tw":
            cmd = [self.args.tw_bin]
        else:
            binary = self.args.nc_bin_b if self.variant.startswith("ncb") else self.args.nc_bin
            cmd = [binary, "-T", self.variant[-1]]
        cmd += ["-c", conf, "-s", str(stats), "-a", "127.0.0.1", "-o", os.path.join(self.dir, "proxy.log")]
        proxy = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=self.dir)
        self.procs.append(proxy)
        procs.wait_listening(port, proxy)
        return port, proxy.pid

    def stop(self):
        for p in reversed(self.procs):
            stop(p)


def one_run(args, variant, spec, value, workdir):
    run = Run(args, variant, workdir)
    cr = None
    try:
        port, pid = run.start(value)
        steady_client(port, 2000)  # warm-up: the server connection open, the first buffers taken
        idle = min(wait.sample(lambda: rss_kb(pid), 5, 0.05))
        peak = crowd.rss_peak(pid, 0.01)
        cr = crowd_of(spec, port, args.depth, value)
        if cr is not None:
            cr.start()
            wait.hold(0.5, "the crowd under way before the bystander starts")
        rounds, t0 = (cr.rounds if cr else 0), time.monotonic()
        r = steady_client(port, 10 ** 9, args.seconds)
        elapsed = time.monotonic() - t0
        if cr is not None:
            r["crowd_rps"] = (cr.rounds - rounds) * args.depth / elapsed
            r["closed"] = cr.closed
            cr.stop()
            cr = None
        r["rss_over_mb"] = (peak.stop() - idle) / 1024
        if any(p.poll() is not None for p in run.procs):
            raise RuntimeError(f"{variant}: a process exited during the run")
        return r
    finally:
        if cr is not None:
            cr.stop()
        run.stop()


COLS = [("bystander req/s", "rps", 0), ("p50 ms", "p50_ms", 3), ("p99 ms", "p99_ms", 2),
        ("p999 ms", "p999_ms", 1), ("max ms", "max_ms", 1), ("crowd req/s", "crowd_rps", 0),
        ("crowd clients closed", "closed", 0), ("peak RSS over idle MB", "rss_over_mb", 0)]


def report(args, variants, specs, res):
    lines = [f"--depth {args.depth}, the bystander runs {args.seconds} s beside the crowd; medians of "
             f"{args.rounds} rounds (errors: all rounds)", "",
             "| crowd | variant | " + " | ".join(c[0] for c in COLS) + " | bystander errors |",
             "|---" * (len(COLS) + 3) + "|"]
    for spec in specs:
        for v in variants:
            runs = res[spec][v]
            cells = [fmt(med([r[k] for r in runs if k in r]), d) for _, k, d in COLS]
            errors = sum(r.get("errors", 0) for r in runs)
            lines.append(f"| {spec} | {v} | " + " | ".join(cells) + f" | {errors:.0f} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--crowds", default="gets:4,gets:8,sets:4,sets:8",
                    help="crowds: gets:N (N clients pipelining GETs of the 1 MB value), sets:N (1 MB SETs), none")
    ap.add_argument("--depth", type=int, default=50, help="requests a crowd client pipelines before it reads")
    ap.add_argument("--seconds", type=int, default=5, help="seconds the bystander runs, per run")
    ap.add_argument("--cap", default="64m", help="redis-server's maxmemory-clients (k, m, g suffixes)")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="of: " + ",".join(VARIANTS))
    common_args(ap)
    args = ap.parse_args()
    variants = chosen_variants(ap, args, VARIANTS)
    specs = [s for s in args.crowds.split(",") if s]
    for spec in specs:
        try:
            crowd_of(spec, 0, 1, b"")
        except ValueError:
            ap.error(f"unknown crowd {spec}")
    absolute_bins(args)
    raise_nofile()
    value = keys.big_value(MB, b"fair-crowd")
    workdir = tempfile.mkdtemp(prefix="nc-fair-crowd.")
    res = {spec: {v: [] for v in variants} for spec in specs}
    try:
        log(f"load average at start: {os.getloadavg()}; dir {workdir}")
        for spec in specs:
            for rnd in range(args.rounds):
                for v in variants:
                    r = one_run(args, v, spec, value, workdir)
                    res[spec][v].append(r)
                    log(f"{spec} round {rnd + 1} {v}: " + ", ".join(f"{k} {r[k]:g}" for k in
                                                                    ("rps", "p50_ms", "p99_ms", "p999_ms", "max_ms",
                                                                     "errors", "crowd_rps", "closed", "rss_over_mb")
                                                                    if k in r))
        print(report(args, variants, specs, res), flush=True)
        log(f"load average at end: {os.getloadavg()}")
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        if args.json:
            write_json(args.json, {"args": vars(args), "variants": variants, "runs": res})
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, bench._on_sigterm)
    sys.exit(main())
