#!/usr/bin/env python3
"""bench/bench.py - nutcrackers against twemproxy (nutcracker 0.5.0) and predixy on the same config and load.

Starts its own backends (4 redis-servers, 4 memcacheds) on free 127.0.0.1 ports, then per workload
runs the variants in alternation (A B C D B C D A ..., --rounds times, each round starting one
later), each on a fresh proxy process, and prints per workload the medians of: requests/s, proxy CPU
us per request (utime + stime of the whole proxy process, all threads, from /proc/PID/stat), backend
CPU us per request (all backends of the pool, same way), load generator CPU us per request, p50/p99
latency, the batch a backend gets (requests per read and per write system call of all the pool's
backends, from /proc/PID/io), and the ratios nutcrackers / twemproxy and nutcrackers / predixy; at
the end a summary of the ratios. Then the idle-connections test (RSS per client connection).

Variants: tw = twemproxy, nc1 = nutcrackers -T 1, both pinned: the proxy alone on CPU 1, the
load generator and every backend sharing CPU 0 (the machine has 2); twf, nc1f, nc2f (nutcrackers
-T 2) = free: every process may run on both CPUs; ncb = a second nutcrackers build (--nc-bin-b),
pinned like nc1, for A/B tests of a change; px = predixy with one worker thread, pinned like nc1,
pxf and px2f (one and two worker threads) free. predixy serves the redis workloads only (no
memcached) and routes by crc16/modula (no ketama): bench/peers.py. Run it through bench/run.sh,
which installs and builds what is missing (predixy too, when a px variant is asked for).

Only loopback addresses; every load is a fixed request count with a time limit; every process
started here is stopped before it exits.
"""
import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the helper library (tests/nctest): this is where the benchmark finds it
sys.path.insert(0, os.path.join(ROOT, "tests"))

from nctest import procs, wait  # noqa: E402
from nctest.conf import render_conf  # noqa: E402
from nctest.procfs import cpu_ticks, io_calls, rss_kb, set_affinity  # noqa: E402
from nctest.procs import free_port, stop_popen as stop  # noqa: E402
import peers  # noqa: E402
from peers import VARIANTS, serves  # noqa: E402
from report import fmt, med, paired_table, ratio, summary_table, workload_table  # noqa: E402 (fmt, med: storm.py's too)

CLK_TCK = os.sysconf("SC_CLK_TCK")
NREDIS = 4
NMC = 4
KEYSPACE = 10000

# px only when predixy is there (bench/run.sh builds it when asked for a px variant)
DEFAULT_VARIANTS = ["tw", "nc1", "px", "twf", "nc1f", "nc2f"]


def workloads(scale):
    """(name, pool, tool, args, requests, preload value size or None, description)"""
    n1 = int(100000 * scale)
    n16 = int(1000000 * scale)
    nmget = int(100000 * scale)
    mget = ["mget"] + ["key:__rand_int__"] * 10
    w = []
    for size, tag in ((16, "16B"), (1024, "1KB")):
        for pipe, n in ((1, n1), (16, n16)):
            w.append((f"redis_set_{tag}_P{pipe}", "redis", "rb", ["-t", "set", "-d", str(size), "-P", str(pipe)], n,
                      None, f"redis-benchmark SET {tag} values, 50 clients, pipeline {pipe}"))
            w.append((f"redis_get_{tag}_P{pipe}", "redis", "rb", ["-t", "get", "-P", str(pipe)], n, size,
                      f"redis-benchmark GET of {tag} values, 50 clients, pipeline {pipe}"))
    # answered by the proxy itself: a client read and a client write per request, no server (the
    # client half of a GET at pipeline 1: its floor, notes/performance.md "Pipeline 1: the halves")
    w.append(("redis_ping_P1", "redis", "rb", ["-t", "ping_mbulk", "-P", "1"], n1, None,
              "redis-benchmark PING, answered by the proxy, 50 clients, pipeline 1"))
    w.append(("redis_mget10_P16", "redis", "rb", ["-P", "16"] + mget, nmget, 16,
              "redis-benchmark MGET of 10 random keys (16B values, 4 servers), 50 clients, pipeline 16"))
    for op in ("get", "set"):
        for pipe, n in ((1, n1), (16, n16)):
            w.append((f"mc_{op}_16B_P{pipe}", "mc", "ncload", ["--op", op, "-d", "16", "-P", str(pipe)], n,
                      16 if op == "get" else None,
                      f"ncload memcached {op} 16B values, 50 clients, pipeline {pipe}"))
    for pipe, n in ((1, n1), (16, n16)):  # the meta commands' GET, to compare with mc_get_16B
        w.append((f"mcmeta_get_16B_P{pipe}", "mc", "ncload", ["--proto", "mcmeta", "--op", "get", "-d", "16",
                                                              "-P", str(pipe)], n, 16,
                  f"ncload memcached meta mg <key> v of 16B values, 50 clients, pipeline {pipe}"))
    for pipe, n in ((1, n1), (16, n16)):  # the binary protocol's GET, to compare with mc_get_16B
        w.append((f"mcbin_get_16B_P{pipe}", "mc", "ncload", ["--proto", "mcbin", "--op", "get", "-d", "16",
                                                             "-P", str(pipe)], n, 16,
                  f"ncload memcached binary GET (opcode 0x00) of 16B values, 50 clients, pipeline {pipe}"))
    return w


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def raise_nofile(want=65536):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(want, soft), max(want, hard)))
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


class Bench:
    def __init__(self, args):
        self.args = args
        self.dir = tempfile.mkdtemp(prefix="nc-bench.")
        self.backends = {"redis": [], "mc": []}
        self.procs = []
        self.ncload = os.path.join(ROOT, "bench", "ncload")
        self.nc_bin = args.nc_bin
        self.tw_bin = args.tw_bin
        self.bins = {"nutcrackers": args.nc_bin, "nutcrackers-b": args.nc_bin_b, "twemproxy": args.tw_bin,
                     "predixy": args.px_bin}
        self.rb_bin = shutil.which("redis-benchmark")

    # ---- processes
    def start_backends(self):
        flags = {"redis": lambda port: ("--maxclients", "20000", "--logfile",
                                        os.path.join(self.dir, f"redis-{port}.log")),
                 "mc": lambda port: ("-m", "512", "-c", "20000")}
        for pool, kind, n in (("redis", "redis", NREDIS), ("mc", "memcache", NMC)):
            for _ in range(n):
                for _ in range(3):  # another process may take the port between its pick and the bind
                    port = free_port()
                    p = procs.start_backend(kind, port, flags[pool](port), cwd=self.dir)
                    if p is not None:
                        break
                else:
                    raise RuntimeError(f"{kind} did not start")
                self.procs.append(p)
                self.backends[pool].append((port, p))

    def write_conf(self):
        self.port = {"redis": free_port(), "mc": free_port()}
        self.confs = {"all": os.path.join(self.dir, "bench.yml"), "predixy": os.path.join(self.dir, "predixy.yml")}
        pools = {pool: {"listen": f"127.0.0.1:{self.port[pool]}", "hash": "fnv1a_64", "distribution": "ketama",
                        "redis": pool == "redis", "backlog": 1024,
                        "servers": [f"127.0.0.1:{port}:1" for port, _ in self.backends[pool]]}
                 for pool in ("redis", "mc")}
        with open(self.confs["all"], "w") as f:
            f.write(render_conf({f"bench_{pool}": keys for pool, keys in pools.items()}))
        peers.write_predixy_conf(self.confs["predixy"], render_conf, pools["redis"])

    def start_proxy(self, variant):
        logf = os.path.join(self.dir, f"{variant}.log")
        cmd = peers.proxy_cmd(variant, self.bins, self.confs, free_port(), logf)
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=self.dir)
        for pool in ("redis", "mc"):
            if serves(variant, pool):
                procs.wait_listening(self.port[pool], p)
        return p

    def pin_backends(self, cpus):
        for pool in self.backends.values():
            for _, p in pool:
                set_affinity(p.pid, cpus)

    def backend_ticks(self, pool):
        return sum(cpu_ticks(p.pid) for _, p in self.backends[pool])

    def backend_calls(self, pool):
        """(read, write) system calls of all the pool's backends so far (/proc/PID/io)."""
        calls = [io_calls(p.pid) for _, p in self.backends[pool]]
        return sum(r for r, _ in calls), sum(w for _, w in calls)

    # ---- load
    def load_cmd(self, pool, tool, args, n, cpus):
        taskset = ["taskset", "-c", ",".join(map(str, sorted(cpus)))]
        port = str(self.port[pool])
        if tool == "rb":
            return taskset + [self.rb_bin, "-h", "127.0.0.1", "-p", port, "-c", "50", "-n", str(n), "-r",
                              str(KEYSPACE), "--csv", *args]
        return taskset + [self.ncload, "load", "--proto", pool, "-p", port, "-c", "50", "-n", str(n), "-r",
                          str(KEYSPACE), *args]

    def run_load(self, cmd):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        el = time.monotonic() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if out.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({out.returncode}): {out.stderr.strip()[-500:]}")
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return out.stdout, el, cpu

    @staticmethod
    def parse_load(tool, text):
        if tool == "rb":
            rows = [ln for ln in text.splitlines() if ln.startswith('"') and not ln.startswith('"test"')]
            vals = [v.strip('"') for v in rows[-1].split('","')]
            return {"rps": float(vals[1]), "p50_ms": float(vals[4]), "p99_ms": float(vals[6])}
        kv = dict(tok.split("=", 1) for tok in text.split())
        if int(kv["errors"]) != 0:
            raise RuntimeError(f"ncload reported errors: {text.strip()}")
        return {"rps": float(kv["rps"]), "p50_ms": float(kv["p50_ms"]), "p99_ms": float(kv["p99_ms"])}

    def preload(self, pool, size):
        p = self.start_proxy("tw")
        try:
            cmd = [self.ncload, "load", "--proto", pool, "-p", str(self.port[pool]), "-c", "8", "-P", "32", "--seq",
                   "--op", "set", "-d", str(size), "-n", str(KEYSPACE), "-r", str(KEYSPACE)]
            subprocess.run(cmd, check=True, capture_output=True, timeout=120)
        finally:
            stop(p)

    def one_run(self, variant, w):
        name, pool, tool, args, n, _, _ = w
        _, _, pcpus, ocpus = VARIANTS[variant]
        self.pin_backends(ocpus)
        p = self.start_proxy(variant)
        r = self.measure(p, pool, tool, self.load_cmd(pool, tool, args, n, ocpus), n, f"{variant} exited during {name}")
        if pool != "redis":
            r["req_per_write"] = float("nan")  # memcached's replies go out by sendmsg: not counted
        return r

    def measure(self, p, pool, tool, cmd, n, exited):
        """Runs the load cmd (of tool, n requests) through the proxy p, which is stopped after
        (on errors too; `exited`: the error when it exits during the load), and returns the load's
        numbers (parse_load) with the CPU us per request of the proxy (proxy_us), the pool's
        backends (backend_us) and the load generator (load_us), and the backends' read and write
        system calls (backend_reads, backend_writes, req_per_read, req_per_write)."""
        try:
            wait.hold(0.2, "the proxy idle a moment before its CPU time is read")
            t_proxy = cpu_ticks(p.pid)
            t_back = self.backend_ticks(pool)
            calls = self.backend_calls(pool)
            out, el, load_cpu = self.run_load(cmd)
            d_proxy = (cpu_ticks(p.pid) - t_proxy) / CLK_TCK
            d_back = (self.backend_ticks(pool) - t_back) / CLK_TCK
            d_reads, d_writes = (after - before for after, before in zip(self.backend_calls(pool), calls))
            if p.poll() is not None:
                raise RuntimeError(exited)
        finally:
            stop(p)
        r = self.parse_load(tool, out)
        r.update({"proxy_us": d_proxy * 1e6 / n, "backend_us": d_back * 1e6 / n, "load_us": load_cpu * 1e6 / n,
                  "elapsed_s": el, "backend_reads": d_reads, "backend_writes": d_writes,
                  "req_per_read": ratio(n, d_reads), "req_per_write": ratio(n, d_writes)})
        return r

    # ---- idle connections
    def idle_run(self, variant, conns, burst, value):
        _, _, pcpus, ocpus = VARIANTS[variant]
        self.pin_backends(ocpus)
        p = self.start_proxy(variant)
        loader = None
        try:
            # warm up: server connections open, first buffers allocated
            subprocess.run([self.ncload, "load", "--proto", "redis", "-p", str(self.port["redis"]), "-c", "4",
                            "-P", "16", "-n", "2000", "-d", "1024"], check=True, capture_output=True, timeout=60)
            wait.hold(1.5, "the warm-up's buffers trimmed (every second) before the baseline")
            rss0 = rss_kb(p.pid)
            loader = subprocess.Popen(["taskset", "-c", ",".join(map(str, sorted(ocpus))), self.ncload, "idle",
                                       "--proto", "redis", "-p", str(self.port["redis"]), "-c", str(conns),
                                       "--pid", str(p.pid), "-d", str(value), "--timeout", "120"],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            line = loader.stdout.readline()
            if not line.startswith("open"):
                raise RuntimeError(f"idle loader: {line!r}")
            wait.hold(1.0, "the idle connections settled before their RSS is read")
            rss_idle = rss_kb(p.pid)
            loader.stdin.write(f"burst {burst}\n")
            loader.stdin.flush()
            line = loader.stdout.readline()
            if not line.startswith("burst done") or "errors 0" not in line:
                raise RuntimeError(f"idle loader burst: {line!r}")
            t_done = time.monotonic()
            samples = []
            rss_burst = rss_kb(p.pid)
            for i in range(1, 11):
                wait.hold(max(t_done + 0.5 * i - time.monotonic(), 0), "an RSS sample every 0.5 s")
                samples.append((0.5 * i, rss_kb(p.pid)))
            rss_5s = [v for t, v in samples if t == 5.0][0]
            loader.stdin.write("quit\n")
            loader.stdin.flush()
            loader.wait(timeout=30)
        finally:
            if loader is not None and loader.poll() is None:
                loader.kill()
                loader.wait()
            stop(p)
        per = lambda v: (v - rss0) / conns
        return {"idle_kb": per(rss_idle), "burst_kb": per(rss_burst), "after5s_kb": per(rss_5s),
                "rss0_mb": rss0 / 1024.0}

    def close(self):
        for p in reversed(self.procs):
            stop(p)
        if not self.args.keep:
            shutil.rmtree(self.dir, ignore_errors=True)


NCLOAD = os.path.join(ROOT, "bench", "ncload")
STEADY_VALUE = 16  # the value the steady client GETs


def ncload_fields(line):
    """An ncload summary line ("requests=N errors=N ... max_ms=F") as {name: float}."""
    return {k: float(v) for k, v in (tok.split("=", 1) for tok in line.split())}


def steady_key(port):
    """Writes the steady client's one key (STEADY_VALUE bytes) through port."""
    subprocess.run([NCLOAD, "load", "--proto", "redis", "-p", str(port), "-c", "1", "--seq", "--op", "set",
                    "-d", str(STEADY_VALUE), "-n", "1", "-r", "1"], check=True, capture_output=True, timeout=30)


def steady_client(port, n, seconds=0):
    """The steady client (bench/storm.py, bench/fair_crowd.py): `ncload load -c 1 -P 1 --op get`,
    one GET of steady_key's key at a time on one connection, n requests or `seconds`, in a process
    of its own; returns its summary (rps, p50_ms, p99_ms, p999_ms, max_ms, errors, ...)."""
    out = subprocess.run([NCLOAD, "load", "--proto", "redis", "-p", str(port), "-c", "1", "-P", "1", "--op", "get",
                          "-r", "1", "-n", str(n), "--seconds", str(seconds), "--timeout", "300"],
                         capture_output=True, text=True, timeout=330)
    if out.returncode != 0:
        raise RuntimeError(f"steady client failed ({out.returncode}): {out.stderr.strip()[-300:]}")
    return ncload_fields(out.stdout)


def common_args(ap):
    """The options of this script, bench/storm.py and bench/fair_crowd.py alike: the binaries,
    --json, --keep."""
    ap.add_argument("--nc-bin", default=os.path.join(ROOT, "src", "nutcrackers"))
    ap.add_argument("--nc-bin-b", help="a second nutcrackers build, run as variant ncb (e.g. --variants nc1,ncb)")
    ap.add_argument("--tw-bin", default=shutil.which("nutcracker") or "/usr/sbin/nutcracker")
    ap.add_argument("--json", help="also write every run's numbers to this file")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory (configs, logs)")


def write_json(path, obj):
    """--json: the run's record (every script of bench/)."""
    with open(path, "w") as f:
        json.dump(obj, f, indent=1)


def absolute_bins(args):
    """--nc-bin, --nc-bin-b, --tw-bin (and --px-bin) as absolute paths: the proxies run in a temporary
    directory."""
    for name in ("nc_bin", "nc_bin_b", "tw_bin", "px_bin"):
        if getattr(args, name, None):
            setattr(args, name, os.path.abspath(getattr(args, name)))


def chosen_variants(ap, args, known):
    """--variants as a list, each one of known (ncb, ncb1, ... only with --nc-bin-b)."""
    variants = [v for v in args.variants.split(",") if v]
    for v in variants:
        if v not in known:
            ap.error(f"unknown variant {v}")
    if any(v.startswith("ncb") for v in variants) and not args.nc_bin_b:
        ap.error("the ncb variants need --nc-bin-b")
    return variants


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="rounds of alternation (>= 3 for a report)")
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies every request count")
    ap.add_argument("--only", default="", help="comma-separated workload name prefixes (idle: the RSS test)")
    ap.add_argument("--variants", help="of: " + ",".join(VARIANTS) + " (default: " + ",".join(DEFAULT_VARIANTS)
                    + ", px only when predixy is built)")
    ap.add_argument("--px-bin", default=peers.default_predixy_bin(),
                    help="predixy, for the px variants (default: build-bench/predixy/ or /tmp/predixy/, "
                         "as bench/run.sh or build-predixy.sh builds it)")
    ap.add_argument("--no-idle", action="store_true", help="skip the idle-connections RSS test")
    ap.add_argument("--idle-conns", type=int, default=10000)
    ap.add_argument("--burst", type=int, default=1, help="pipelined GETs per connection in the burst")
    ap.add_argument("--burst-value", type=int, default=16, help="value size of the keys the burst GETs")
    common_args(ap)
    args = ap.parse_args()
    asked = args.variants is not None
    args.variants = args.variants if asked else ",".join(DEFAULT_VARIANTS)
    absolute_bins(args)
    variants = chosen_variants(ap, args, VARIANTS)
    if any(peers.is_predixy(v) for v in variants) and not predixy_ready(args):
        if asked:
            ap.error(f"the px variants need --px-bin (bench/run.sh builds it) and {peers.predixy_wrap()}")
        variants = [v for v in variants if not peers.is_predixy(v)]
        log("predixy is not built (bench/run.sh --variants ...,px builds it): its variants are left out")
    if os.cpu_count() < 2:
        ap.error("needs 2 CPUs (pins the proxy to CPU 1)")
    nofile = raise_nofile()
    if nofile < args.idle_conns + 512 and not args.no_idle:
        ap.error(f"RLIMIT_NOFILE is {nofile}: too low for {args.idle_conns} connections")
    return args, variants


def predixy_ready(args):
    return bool(args.px_bin) and os.access(args.px_bin, os.X_OK) and os.path.exists(peers.predixy_wrap())


def run_peer_once_more(b, v, w, failures):
    """b.one_run; a predixy run that fails is run once more and its failure noted in failures (on
    the loaded machine predixy has answered a run's requests with "-ERR server connection close"
    once, probably its ServerTimeout of 2 s from predixy-wrap.py's config). The proxies under test
    get no second chance."""
    try:
        return b.one_run(v, w)
    except RuntimeError as e:
        if not peers.is_predixy(v):
            raise
        failures.append(f"{v}: one run failed and was run once more ({str(e).strip()[-120:]})")
        log(f"{w[0]} {failures[-1]}")
        return b.one_run(v, w)


def run_workload(b, w, variants, rounds):
    """Every variant that serves the workload's pool, in alternation; returns (table, medians, record)."""
    name, pool, _, _, _, preload, _ = w
    served = [v for v in variants if serves(v, pool)]
    if preload:
        b.preload(pool, preload)
    res = {v: [] for v in served}
    failures = []
    la0 = os.getloadavg()[0]
    for rnd in range(rounds):
        # each round starts one variant later, so that no variant always runs first (or right
        # after the same other one): a place in the round's order that costs is shared out
        for v in served[rnd % len(served):] + served[:rnd % len(served)]:
            r = run_peer_once_more(b, v, w, failures)
            res[v].append(r)
            log(f"{name} round {rnd + 1} {v}: {r['rps']:.0f} req/s, proxy {r['proxy_us']:.2f} us/req, "
                f"backend {r['backend_us']:.2f} us/req, {r['req_per_read']:.2f} req/backend read, "
                f"p50 {r['p50_ms']} ms, p99 {r['p99_ms']} ms")
    la1 = os.getloadavg()[0]
    text, m = workload_table(w, served, res, [v for v in variants if v not in served])
    text += "".join(f"{f}\n" for f in failures) + f"\nload average (1 min) before/after: {la0:.2f} / {la1:.2f}\n"
    return text, m, {"runs": res, "medians": m, "loadavg": [la0, la1], "failures": failures}


def run_idle(b, variants, args):
    """The idle-connections RSS test; returns (table, record)."""
    b.preload("redis", args.burst_value)
    iv = [v for v in variants if v in ("tw", "nc1", "nc2f", "ncb")]
    res = {v: [] for v in iv}
    for rnd in range(args.rounds):
        for v in iv:
            r = b.idle_run(v, args.idle_conns, args.burst, args.burst_value)
            res[v].append(r)
            log(f"idle round {rnd + 1} {v}: idle {r['idle_kb']:.3f} KB/conn, after burst "
                f"{r['burst_kb']:.2f}, after 5 s {r['after5s_kb']:.2f} (base RSS {r['rss0_mb']:.1f} MB)")
    lines = ["### idle_connections", "",
             f"{args.idle_conns} client connections to the redis pool; RSS growth of the proxy per "
             f"connection (KB); then each connection sends {args.burst} pipelined GETs of {args.burst_value} B values "
             f"(all connections at once); medians of {args.rounds} rounds", "",
             "| variant | idle KB/conn | right after the burst KB/conn | 5 s after KB/conn |", "|---|---|---|---|"]
    mm = {}
    for v in iv:
        mm[v] = {c: med([r[c] for r in res[v]]) for c in ("idle_kb", "burst_kb", "after5s_kb")}
        lines.append(f"| {v} | {mm[v]['idle_kb']:.3f} | {mm[v]['burst_kb']:.2f} | {mm[v]['after5s_kb']:.2f} |")
    if "tw" in mm and "nc1" in mm:
        lines.append(f"| **nc1/tw** | **{fmt(ratio(mm['nc1']['idle_kb'], mm['tw']['idle_kb']))}** | "
                     f"{fmt(ratio(mm['nc1']['burst_kb'], mm['tw']['burst_kb']))} | "
                     f"**{fmt(ratio(mm['nc1']['after5s_kb'], mm['tw']['after5s_kb']))}** |")
    return "\n".join(lines) + "\n", {"runs": res, "medians": mm}


def main():
    args, variants = parse_args()
    only = [o for o in args.only.split(",") if o]
    ws = [w for w in workloads(args.scale) if not only or any(w[0].startswith(o) for o in only)]
    do_idle = not args.no_idle and (not only or "idle" in only)
    b = Bench(args)
    allres = {"variants": variants, "workloads": {}, "idle": {}, "machine": {}}
    try:
        b.start_backends()
        b.write_conf()
        allres["machine"] = {"nproc": os.cpu_count(), "loadavg_start": os.getloadavg()}
        for v in ["tw", "nc1"] + (["px"] if any(peers.is_predixy(v) for v in variants) else []):
            allres["machine"][VARIANTS[v][0]] = peers.version(v, b.bins)
        log(f"load average at start: {os.getloadavg()}; dir {b.dir}; variants {','.join(variants)}")
        allmed = {}
        for w in ws:
            text, allmed[w[0]], allres["workloads"][w[0]] = run_workload(b, w, variants, args.rounds)
            print(text, flush=True)
        if allmed:
            print(summary_table(allmed), flush=True)
            print(paired_table({name: rec["runs"] for name, rec in allres["workloads"].items()}), flush=True)
        if do_idle:
            text, allres["idle"] = run_idle(b, variants, args)
            print(text, flush=True)
        allres["machine"]["loadavg_end"] = os.getloadavg()
        log(f"load average at end: {os.getloadavg()}")
    finally:
        b.close()
        if args.json:
            write_json(args.json, allres)
    return 0


def _on_sigterm(signo, frame):
    raise KeyboardInterrupt(f"signal {signo}")  # unwinds through main's clean-up, like Ctrl-C


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _on_sigterm)
    sys.exit(main())
