#!/usr/bin/env python3
"""bench/storm.py - a steady client's latency next to a connection storm, nutcrackers -T 2
against twemproxy (nutcracker 0.5.0) on the same config.

Starts one redis-server and a one-pool config on free 127.0.0.1 ports. Per storm (none, then
each of --storms) the variants run in alternation (A B C A B C ..., --rounds times), each on a
fresh proxy process: `ncload storm` (connections that each connect, send one PING, read +PONG
and close) starts, and half a second later the steady client, `ncload load -c 1 -P 1 --op get`
(one GET at a time on one connection, for --seconds); when it is done the storm stops. A storm
is `max` (as fast as the load generator goes, --storm-conns connections in flight), `N` (N
connects per second, as evenly as the millisecond allows) or `burst:N` (N connections at once,
every second: the shape of clients that all reconnect together). Prints per storm and variant
the medians over the rounds of: the storm's achieved connects per second and its own
connect-to-PONG p99, and the steady client's req/s, p50, p99, p999 and max latency.

Variants: nc = nutcrackers -T 2 (--nc-bin); ncb = a second build, -T 2 (--nc-bin-b: the one
before a change, e.g. before the bounded inbox drain); tw = twemproxy; direct = the storm on nc
while the steady client talks to redis-server itself (the machine's share of its latency: the
storm's CPU and the scheduling of 2 shared cores, no proxy in the way). No CPU pinning: the
proxy, the storm, the steady client and redis share the machine's 2 cores. Run it through
`bench/run.sh storm ...`, which builds what is missing.

Only loopback addresses; every load has a time limit; every process started here is stopped
before it exits.
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile

import bench  # bench/bench.py: the same helpers and conventions
from bench import NCLOAD, absolute_bins, chosen_variants, common_args, fmt, log, med, ncload_fields, raise_nofile, \
    steady_client, steady_key, write_json
from nctest import procs, wait
from nctest.conf import render_conf
from nctest.procs import free_port, stop_popen as stop

VARIANTS = {"nc": "nutcrackers -T 2", "ncb": "nutcrackers -T 2 (--nc-bin-b)", "tw": "twemproxy",
            "direct": "the storm on nutcrackers -T 2, the steady client straight to redis-server"}
STORM_GRACE = 30  # seconds the storm gets to end once told to
BACKLOG = 4096    # the kernel's accept queue takes a burst whole (Linux caps it at somaxconn)


class Storm:
    def __init__(self, args):
        self.args = args
        self.dir = tempfile.mkdtemp(prefix="nc-storm.")
        self.redis = None
        self.rport = None
        self.port = None
        self.conf = None

    def start(self):
        for _ in range(3):  # another process may take the port between its pick and the bind
            rport = self.rport = free_port()
            self.redis = procs.start_backend("redis", rport, ("--maxclients", "20000"), cwd=self.dir)
            if self.redis is not None:
                break
        else:
            raise RuntimeError("redis-server did not start")
        self.port = free_port()
        self.conf = os.path.join(self.dir, "storm.yml")
        with open(self.conf, "w") as f:
            f.write(render_conf({"storm": {"listen": f"127.0.0.1:{self.port}", "hash": "fnv1a_64",
                                           "distribution": "ketama", "redis": True, "backlog": BACKLOG,
                                           "servers": [f"127.0.0.1:{rport}:1"]}}))
        steady_key(rport)  # the steady client's one key, written to the backend directly

    def start_proxy(self, variant):
        stats = free_port()
        logf = os.path.join(self.dir, f"{variant}.log")
        if variant == "tw":
            cmd = [self.args.tw_bin]
        else:
            cmd = [self.args.nc_bin_b if variant == "ncb" else self.args.nc_bin, "-T", "2"]
        cmd += ["-c", self.conf, "-s", str(stats), "-a", "127.0.0.1", "-o", logf]
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=self.dir)
        procs.wait_listening(self.port, p)
        return p

    def ncload_cmd(self, mode, *args, port=None):
        return [NCLOAD, mode, "--proto", "redis", "-p", str(port or self.port), *args]

    def steady(self, n, seconds=0, port=None):
        return steady_client(port or self.port, n, seconds)

    def one_run(self, variant, storm_spec):
        p = self.start_proxy(variant)
        storm = None
        try:
            self.steady(2000)  # warm-up: the server connection open, the first buffers taken
            if storm_spec is not None:
                storm = subprocess.Popen(self.ncload_cmd("storm", *storm_args(storm_spec, self.args.storm_conns),
                                                         "--timeout", "300"),
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                wait.hold(0.5, "the storm under way before the steady client starts")
            port = self.rport if variant == "direct" else None
            r = {f"steady_{k}": v for k, v in self.steady(10 ** 9, self.args.seconds, port).items()}
            if storm is not None:
                out, _ = storm.communicate("quit\n", timeout=STORM_GRACE)
                if not out.startswith("connects="):
                    raise RuntimeError(f"storm: {out!r}")
                r.update({f"storm_{k}": v for k, v in ncload_fields(out).items()})
            if p.poll() is not None:
                raise RuntimeError(f"{variant} exited during the run")
        finally:
            if storm is not None and storm.poll() is None:
                storm.kill()
                storm.wait()
            stop(p)
        return r

    def close(self):
        stop(self.redis)
        if not self.args.keep:
            shutil.rmtree(self.dir, ignore_errors=True)


def storm_args(spec, conns):
    """ncload storm's arguments for a storm spec (max, N, burst:N)."""
    if spec == "max":
        return ["-c", str(conns)]
    if spec.startswith("burst:"):
        n = int(spec.split(":", 1)[1])
        return ["-c", str(n), "--rate", str(n), "--burst", str(n)]
    return ["-c", str(conns), "--rate", str(int(spec))]


def storm_name(spec):
    if spec is None or spec == "max":
        return spec or "none"
    if spec.startswith("burst:"):
        return f"{spec.split(':', 1)[1]} at once, every second"
    return f"{spec}/s"


def report(variants, storms, res, rounds):
    cols = ["storm_rate", "storm_errors", "storm_p99_ms", "steady_rps", "steady_p50_ms", "steady_p99_ms",
            "steady_p999_ms", "steady_max_ms"]
    lines = [f"medians of {rounds} rounds", "",
             "| storm | variant | storm connects/s | storm errors | storm connect p99 ms | steady req/s | "
             "steady p50 ms | p99 ms | p999 ms | max ms |", "|---|---|---|---|---|---|---|---|---|---|"]
    medians = {}
    for spec in storms:
        for v in variants:
            runs = res[storm_name(spec)][v]
            m = {c: med([r[c] for r in runs if c in r]) for c in cols}
            medians.setdefault(storm_name(spec), {})[v] = m
            lines.append(f"| {storm_name(spec)} | {v} | {fmt(m['storm_rate'], 0)} | {fmt(m['storm_errors'], 0)} | "
                         f"{fmt(m['storm_p99_ms'], 3)} | {fmt(m['steady_rps'], 0)} | {fmt(m['steady_p50_ms'], 3)} | "
                         f"{fmt(m['steady_p99_ms'], 3)} | {fmt(m['steady_p999_ms'], 3)} | "
                         f"{fmt(m['steady_max_ms'], 3)} |")
    return "\n".join(lines) + "\n", medians


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--storms", default="max,2000,5000,burst:2000",
                    help="storms to run besides none: max, N (connects per second), burst:N (N at once, each second)")
    ap.add_argument("--storm-conns", type=int, default=64, help="storm connections in flight at most (max, N)")
    ap.add_argument("--seconds", type=int, default=5, help="seconds the steady client runs, per run")
    ap.add_argument("--variants", default="nc,tw", help="of: " + ",".join(VARIANTS))
    common_args(ap)
    args = ap.parse_args()
    variants = chosen_variants(ap, args, VARIANTS)
    storms = [None] + [x for x in args.storms.split(",") if x]
    for spec in storms[1:]:
        try:
            storm_args(spec, 1)
        except ValueError:
            ap.error(f"unknown storm {spec}")
    absolute_bins(args)
    raise_nofile()
    s = Storm(args)
    res = {storm_name(x): {v: [] for v in variants} for x in storms}
    try:
        s.start()
        log(f"load average at start: {os.getloadavg()}; dir {s.dir}")
        for spec in storms:
            for rnd in range(args.rounds):
                for v in variants:
                    r = s.one_run(v, spec)
                    res[storm_name(spec)][v].append(r)
                    storm = (f"storm {r['storm_rate']:.0f}/s ({r['storm_errors']:.0f} errors), " if spec is not None
                             else "")
                    log(f"{storm_name(spec)} round {rnd + 1} {v}: {storm}steady {r['steady_rps']:.0f} req/s, "
                        f"p50 {r['steady_p50_ms']} p99 {r['steady_p99_ms']} p999 {r['steady_p999_ms']} "
                        f"max {r['steady_max_ms']} ms")
        text, _ = report(variants, storms, res, args.rounds)
        print(text, flush=True)
        log(f"load average at end: {os.getloadavg()}")
    finally:
        s.close()
        if args.json:
            write_json(args.json, {"variants": variants, "runs": res})
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, bench._on_sigterm)
    sys.exit(main())
