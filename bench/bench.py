#!/usr/bin/env python3
"""bench/bench.py - nutcrackers against twemproxy (nutcracker 0.5.0) on the same config and load.

Starts its own backends (4 redis-servers, 4 memcacheds) on free 127.0.0.1 ports, then per workload
runs the variants in alternation (A B C D A B C D ..., --rounds times), each on a fresh proxy
process, and prints per workload the medians of: requests/s, proxy CPU us per request (utime +
stime of the whole proxy process, all threads, from /proc/PID/stat), backend CPU us per request
(all backends of the pool, same way), load generator CPU us per request, p50/p99 latency, and the
ratios nutcrackers / twemproxy. Then the idle-connections test (RSS per client connection).

Variants: tw = twemproxy, nc1 = nutcrackers -T 1, both pinned: the proxy alone on CPU 1, the
load generator and every backend sharing CPU 0 (the machine has 2); twf, nc1f, nc2f (nutcrackers
-T 2) = free: every process may run on both CPUs; ncb = a second nutcrackers build (--nc-bin-b),
pinned like nc1, for A/B tests of a change. Run it through bench/run.sh, which installs and
builds what is missing.

Only loopback addresses; every load is a fixed request count with a time limit; every process
started here is stopped before it exits.
"""
import argparse
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the helper library (tests/nctest): this is where the benchmark finds it
sys.path.insert(0, os.path.join(ROOT, "tests"))

from nctest import procs, wait  # noqa: E402
from nctest.conf import render_conf  # noqa: E402
from nctest.procfs import cpu_ticks, rss_kb, set_affinity  # noqa: E402
from nctest.procs import free_port, stop_popen as stop  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")
NREDIS = 4
NMC = 4
KEYSPACE = 10000

# name, proxy kind, -T, proxy CPUs, CPUs of load and backends
VARIANTS = {
    "tw": ("twemproxy", 1, {1}, {0}),
    "nc1": ("nutcrackers", 1, {1}, {0}),
    "twf": ("twemproxy", 1, {0, 1}, {0, 1}),
    "nc1f": ("nutcrackers", 1, {0, 1}, {0, 1}),
    "nc2f": ("nutcrackers", 2, {0, 1}, {0, 1}),
    "ncb": ("nutcrackers-b", 1, {1}, {0}),  # --nc-bin-b, pinned like nc1: A/B of two builds
}
DEFAULT_VARIANTS = ["tw", "nc1", "twf", "nc1f", "nc2f"]
# the ratios printed per workload (when both variants ran)
RATIOS = [("nc1", "tw"), ("nc1f", "twf"), ("nc2f", "nc1f"), ("nc2f", "twf"), ("nc1", "ncb")]


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
    w.append(("redis_mget10_P16", "redis", "rb", ["-P", "16"] + mget, nmget, 16,
              "redis-benchmark MGET of 10 random keys (16B values, 4 servers), 50 clients, pipeline 16"))
    for op in ("get", "set"):
        for pipe, n in ((1, n1), (16, n16)):
            w.append((f"mc_{op}_16B_P{pipe}", "mc", "ncload", ["--op", op, "-d", "16", "-P", str(pipe)], n,
                      16 if op == "get" else None,
                      f"ncload memcached {op} 16B values, 50 clients, pipeline {pipe}"))
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
        self.conf = os.path.join(self.dir, "bench.yml")
        with open(self.conf, "w") as f:
            f.write(render_conf({
                f"bench_{pool}": {"listen": f"127.0.0.1:{self.port[pool]}", "hash": "fnv1a_64",
                                  "distribution": "ketama", "redis": pool == "redis", "backlog": 1024,
                                  "servers": [f"127.0.0.1:{port}:1" for port, _ in self.backends[pool]]}
                for pool in ("redis", "mc")}))

    def start_proxy(self, variant):
        kind, threads, cpus, _ = VARIANTS[variant]
        stats = free_port()
        logf = os.path.join(self.dir, f"{variant}.log")
        if kind == "twemproxy":
            cmd = [self.tw_bin, "-c", self.conf, "-s", str(stats), "-a", "127.0.0.1", "-o", logf]
        else:
            binary = self.args.nc_bin_b if kind == "nutcrackers-b" else self.nc_bin
            cmd = [binary, "-c", self.conf, "-s", str(stats), "-a", "127.0.0.1", "-o", logf,
                   "-T", str(threads)]
        cmd = ["taskset", "-c", ",".join(map(str, sorted(cpus)))] + cmd
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=self.dir)
        for pool in ("redis", "mc"):
            procs.wait_listening(self.port[pool], p)
        return p

    def pin_backends(self, cpus):
        for pool in self.backends.values():
            for _, p in pool:
                set_affinity(p.pid, cpus)

    def backend_ticks(self, pool):
        return sum(cpu_ticks(p.pid) for _, p in self.backends[pool])

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
        try:
            wait.hold(0.2, "the proxy idle a moment before its CPU time is read")
            t_proxy = cpu_ticks(p.pid)
            t_back = self.backend_ticks(pool)
            out, el, load_cpu = self.run_load(self.load_cmd(pool, tool, args, n, ocpus))
            d_proxy = (cpu_ticks(p.pid) - t_proxy) / CLK_TCK
            d_back = (self.backend_ticks(pool) - t_back) / CLK_TCK
            if p.poll() is not None:
                raise RuntimeError(f"{variant} exited during {name}")
        finally:
            stop(p)
        r = self.parse_load(tool, out)
        r.update({"proxy_us": d_proxy * 1e6 / n, "backend_us": d_back * 1e6 / n, "load_us": load_cpu * 1e6 / n,
                  "elapsed_s": el})
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


def med(vals):
    return statistics.median(vals) if vals else float("nan")


def fmt(v, digits=2):
    if v != v:
        return "-"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.{digits}f}"


def ratio(a, b):
    return a / b if b else float("nan")


def report_workload(w, variants, res):
    name, _, _, _, n, _, desc = w
    cols = ["rps", "proxy_us", "backend_us", "load_us", "p50_ms", "p99_ms"]
    m = {v: {c: med([r[c] for r in res[v]]) for c in cols} for v in variants if res.get(v)}
    lines = [f"### {name}", "", f"{desc}; {n} requests; medians of {len(next(iter(res.values())))} rounds", "",
             "| variant | req/s | proxy CPU us/req | backend CPU us/req | load CPU us/req | p50 ms | p99 ms |",
             "|---|---|---|---|---|---|---|"]
    for v in variants:
        if v not in m:
            continue
        r = m[v]
        lines.append(f"| {v} | {fmt(r['rps'], 0)} | {fmt(r['proxy_us'])} | {fmt(r['backend_us'])} | "
                     f"{fmt(r['load_us'])} | {fmt(r['p50_ms'], 3)} | {fmt(r['p99_ms'], 3)} |")
    for a_name, b_name in RATIOS:
        if a_name not in m or b_name not in m:
            continue
        a, b = m[a_name], m[b_name]
        lines.append(f"| **{a_name}/{b_name}** | **{fmt(ratio(a['rps'], b['rps']))}** | "
                     f"**{fmt(ratio(a['proxy_us'], b['proxy_us']))}** | {fmt(ratio(a['backend_us'], b['backend_us']))} | "
                     f"{fmt(ratio(a['load_us'], b['load_us']))} | {fmt(ratio(a['p50_ms'], b['p50_ms']))} | "
                     f"{fmt(ratio(a['p99_ms'], b['p99_ms']))} |")
    if "nc1" in m:
        lines.append(f"| **nc1 proxy/backend CPU** | | **{fmt(ratio(m['nc1']['proxy_us'], m['nc1']['backend_us']))}** | | | | |")
    return "\n".join(lines) + "\n", m


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


def absolute_bins(args):
    """--nc-bin, --nc-bin-b and --tw-bin as absolute paths: the proxies run in a temporary directory."""
    for name in ("nc_bin", "nc_bin_b", "tw_bin"):
        if getattr(args, name):
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="rounds of alternation (>= 3 for a report)")
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies every request count")
    ap.add_argument("--only", default="", help="comma-separated workload name prefixes (idle: the RSS test)")
    ap.add_argument("--variants", default=",".join(DEFAULT_VARIANTS), help="of: " + ",".join(VARIANTS))
    ap.add_argument("--no-idle", action="store_true", help="skip the idle-connections RSS test")
    ap.add_argument("--idle-conns", type=int, default=10000)
    ap.add_argument("--burst", type=int, default=1, help="pipelined GETs per connection in the burst")
    ap.add_argument("--burst-value", type=int, default=16, help="value size of the keys the burst GETs")
    common_args(ap)
    args = ap.parse_args()
    variants = chosen_variants(ap, args, VARIANTS)
    if os.cpu_count() < 2:
        ap.error("needs 2 CPUs (pins the proxy to CPU 1)")
    nofile = raise_nofile()
    if nofile < args.idle_conns + 512 and not args.no_idle:
        ap.error(f"RLIMIT_NOFILE is {nofile}: too low for {args.idle_conns} connections")
    only = [o for o in args.only.split(",") if o]
    ws = [w for w in workloads(args.scale) if not only or any(w[0].startswith(o) for o in only)]
    do_idle = not args.no_idle and (not only or "idle" in only)

    b = Bench(args)
    allres = {"variants": variants, "workloads": {}, "idle": {}, "machine": {}}
    out = []
    try:
        b.start_backends()
        b.write_conf()
        tw_v = subprocess.run([b.tw_bin, "-V"], capture_output=True, text=True)
        nc_v = subprocess.run([b.nc_bin, "-V"], capture_output=True, text=True)
        allres["machine"] = {"nproc": os.cpu_count(), "loadavg_start": os.getloadavg(),
                             "twemproxy": (tw_v.stdout + tw_v.stderr).strip().splitlines()[0],
                             "nutcrackers": (nc_v.stdout + nc_v.stderr).strip().splitlines()[0]}
        log(f"load average at start: {os.getloadavg()}; dir {b.dir}")
        for w in ws:
            name, pool, _, _, _, preload, _ = w
            if preload:
                b.preload(pool, preload)
            res = {v: [] for v in variants}
            la0 = os.getloadavg()[0]
            for rnd in range(args.rounds):
                for v in variants:
                    r = b.one_run(v, w)
                    res[v].append(r)
                    log(f"{name} round {rnd + 1} {v}: {r['rps']:.0f} req/s, proxy {r['proxy_us']:.2f} us/req, "
                        f"backend {r['backend_us']:.2f} us/req, p50 {r['p50_ms']} ms, p99 {r['p99_ms']} ms")
            la1 = os.getloadavg()[0]
            text, m = report_workload(w, variants, res)
            text += f"\nload average (1 min) before/after: {la0:.2f} / {la1:.2f}\n"
            out.append(text)
            allres["workloads"][name] = {"runs": res, "medians": m, "loadavg": [la0, la1]}
            print(text, flush=True)
        if do_idle:
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
            text = "\n".join(lines) + "\n"
            out.append(text)
            allres["idle"] = {"runs": res, "medians": mm}
            print(text, flush=True)
        allres["machine"]["loadavg_end"] = os.getloadavg()
        log(f"load average at end: {os.getloadavg()}")
    finally:
        b.close()
        if args.json:
            with open(args.json, "w") as f:
                json.dump(allres, f, indent=1)
    return 0


def _on_sigterm(signo, frame):
    raise KeyboardInterrupt(f"signal {signo}")  # unwinds through main's clean-up, like Ctrl-C


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _on_sigterm)
    sys.exit(main())
