#!/usr/bin/env python3
"""bench/cores.py - evidence that nutcrackers' workers share nothing on the request path, where
the machine has too few cores to show it by throughput (notes/many-cores.md).

CPU (the default): per workload, the proxy at -T 1 with one load generator, then at -T 2 with two
(each `bench/ncload load -c 50`, its own 50 connections; the master hands clients to the workers
in turn, so each worker serves 50), in alternation (T1 T2 T1 T2 ..., --rounds times), each run on
a fresh proxy. Around the load it reads every thread's utime + stime (/proc/PID/task/TID/stat;
threads are named: nc-worker-N, nc-stats, the master keeps the process's name) and, from the
manage port's `status workers`, each worker's requests (the replies its server connections got:
one per request for single-key GETs) and clients. Printed per workload, medians of the rounds:
each worker's share of clients and requests; its CPU per request and the ratio to -T 1's worker
(and of its user-space and kernel parts); its read- and write-like system calls and context
switches per request (/proc/PID/task/TID/io and status: how well it batches, which moves its
CPU per request more than anything else here); its minor page faults per request (pages the
once-a-second trim gave back, touched again); its CPU per such system call and the ratio to
-T 1's worker; the master's and the stats thread's CPU per request (of all requests).

--instr: the same two configurations under `valgrind --tool=callgrind --separate-threads=yes`,
one client per worker (`ncload -c 1`, so each request is its own loop iteration), each
configuration run with N and 3N requests per client: (instructions of a thread in the 3N run -
in the N run) / (its requests in the 3N run - in the N run) is its instructions per request,
start-up and shut-down cancelled out. Deterministic for pipeline 1; pipeline 16 depends on how
reads split (+-4%). Instruction counts show the work a request costs, not cache-line transfers:
that the workers write no shared line per request is notes/many-cores.md's reading of the code.

Workloads: redis GET of 16-byte values at pipeline 1 and 16, memcached get at pipeline 16
(keys written by a preload through the proxy). Backends: 4 redis-servers, 4 memcacheds
(bench.py's Bench). By default nothing is pinned: the proxy, the load generators and the backends
share the machine's cores. For a larger host (notes/many-cores.md): --threads 1,2,4,8 runs more
configurations (each against the first), --proxy-cpus puts worker i alone on the i-th CPU of its
list, --load-cpus keeps the load generators and the backends on others, --backends starts more
backends (so that they are not what limits). Only loopback addresses; every load is a fixed
request count with a time limit; every process started here is stopped before it exits.
"""
import argparse
import glob
import os
import re
import signal
import subprocess
import sys

import bench  # bench/bench.py: the same helpers and conventions
from bench import Bench, absolute_bins, common_args, fmt, log, med, raise_nofile, ratio, write_json
from nctest import manage, procs, wait
from nctest.procfs import task_counters, tasks
from nctest.procs import free_port, stop_popen as stop

CLK_TCK = os.sysconf("SC_CLK_TCK")
NONE = {"s": 0.0, "user_s": 0.0, "minflt": 0, "syscr": 0, "syscw": 0, "csw": 0}  # a thread's deltas, none yet
CONNS = 50           # connections of one load generator (CPU mode)
VALUE = 16           # bytes of every value
LOAD_TIMEOUT = 600   # seconds one load may take (valgrind is slow)
PIN = {"proxy": None, "load": None}  # --proxy-cpus, --load-cpus: lists of CPUs, None: free


def workloads(scale, instr_n):
    """(name, pool, pipeline, requests per load generator in CPU mode, N in --instr mode)"""
    # (counts such that a worker uses about a second of CPU or more: /proc counts in 10 ms ticks)
    return [("redis_get_P1", "redis", 1, int(400000 * scale), instr_n),
            ("redis_get_P16", "redis", 16, int(4000000 * scale), instr_n * 4),
            ("mc_get_P16", "mc", 16, int(4000000 * scale), instr_n * 4)]


# ---- the proxy and its load

def start_proxy(b, threads, tag, wrap=()):
    """nutcrackers -T threads on the bench config (wrap: a command it runs under, e.g. valgrind);
    returns (Popen, manage port)."""
    stats = free_port()
    if PIN["proxy"] and not wrap:
        wrap = ["taskset", "-c", ",".join(map(str, PIN["proxy"]))]
    cmd = [*wrap, b.nc_bin, "-c", b.conf, "-s", str(stats), "-a", "127.0.0.1",
           "-o", os.path.join(b.dir, f"{tag}.log"), "-T", str(threads)]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=b.dir)
    for port in (b.port["redis"], b.port["mc"], stats):
        procs.wait_listening(port, p, timeout=120)
    if PIN["proxy"] and wrap[:1] == ["taskset"]:  # worker i on the i-th proxy CPU alone
        for tid, name in tasks(p.pid).items():
            role = thread_role(name)
            if role.startswith("worker-"):
                os.sched_setaffinity(tid, {PIN["proxy"][int(role[7:]) % len(PIN["proxy"])]})
    return p, stats


def load_cmd(b, pool, conns, pipe, n, op="get", seq=False):
    taskset = ["taskset", "-c", ",".join(map(str, PIN["load"]))] if PIN["load"] else []
    cmd = taskset + [b.ncload, "load", "--proto", pool, "-p", str(b.port[pool]), "-c", str(conns),
                     "-P", str(pipe), "-n", str(n), "-r", str(bench.KEYSPACE), "--op", op, "-d", str(VALUE),
                     "--timeout", str(LOAD_TIMEOUT)]
    return cmd + (["--seq"] if seq else [])


def run_loads(cmds):
    """Runs the load generators at once; returns their summaries (ncload's fields)."""
    ps = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for c in cmds]
    outs = []
    try:
        for p in ps:
            out, err = p.communicate(timeout=LOAD_TIMEOUT + 30)
            if p.returncode != 0:
                raise RuntimeError(f"ncload failed ({p.returncode}): {err.strip()[-300:]}")
            f = bench.ncload_fields(out)
            if f["errors"] != 0:
                raise RuntimeError(f"ncload reported errors: {out.strip()}")
            outs.append(f)
    finally:
        for p in ps:
            stop(p)
    return outs


def preload(b):
    """Writes the keyspace of both pools (VALUE bytes each) through a -T 1 proxy."""
    p, _ = start_proxy(b, 1, "preload")
    try:
        run_loads([load_cmd(b, pool, 8, 32, bench.KEYSPACE, op="set", seq=True) for pool in ("redis", "mc")])
    finally:
        stop(p)


def worker_counts(stats_port, pool):
    """{worker id: (clients accepted, requests answered by its servers in pool)} from `status workers`."""
    out = {}
    for doc in manage.status(stats_port, "workers")["workers"]:
        servers = [v for v in doc.get(f"bench_{pool}", {}).values() if isinstance(v, dict)]
        out[doc["worker"]] = (doc["total_connections"], sum(s["responses"] for s in servers))
    return out


def thread_role(name):
    """A thread's role from its name: worker-N, stats, master."""
    m = re.fullmatch(r"nc-worker-(\d+)", name)
    if m:
        return f"worker-{m.group(1)}"
    return "stats" if name == "nc-stats" else "master"


# ---- CPU per request

def thread_deltas(t0, t1):
    """{role: {"s": CPU seconds, "user_s": user-space CPU seconds, "minflt", "syscr", "syscw", "csw"}}
    between two task_counters readings."""
    out = {}
    for tid, c in t1.items():
        c0 = t0.get(tid, {"ticks": 0, "uticks": 0, "minflt": 0, "syscr": 0, "syscw": 0, "csw": 0})
        d = out.setdefault(thread_role(c["name"]), dict(NONE))
        d["s"] += (c["ticks"] - c0["ticks"]) / CLK_TCK
        d["user_s"] += (c["uticks"] - c0["uticks"]) / CLK_TCK
        for k in ("minflt", "syscr", "syscw", "csw"):
            d[k] += c[k] - c0[k]
    return out


def cpu_run(b, threads, w):
    """One run: {"workers": {id: {"clients", "requests", per request "us", "user_us", "sys_us",
    "calls", "csw", "faults", and "us_call": CPU per read- or write-like system call}},
    "master_us", "stats_us", "requests"}."""
    name, pool, pipe, n, _ = w
    p, stats = start_proxy(b, threads, f"T{threads}")
    try:
        wait.hold(0.2, "the proxy idle a moment before its threads' CPU time is read")
        c0 = worker_counts(stats, pool)
        t0 = task_counters(p.pid)
        run_loads([load_cmd(b, pool, CONNS, pipe, n) for _ in range(threads)])
        t1 = task_counters(p.pid)
        c1 = worker_counts(stats, pool)
        if p.poll() is not None:
            raise RuntimeError(f"-T {threads} exited during {name}")
    finally:
        stop(p)
    d = thread_deltas(t0, t1)
    total = sum(c1[i][1] - c0[i][1] for i in c1)
    if total != n * threads:
        log(f"warning: {name} -T {threads}: the workers answered {total} requests, the loads sent {n * threads}")
    shares = {i: c1[i][0] - c0[i][0] for i in c1}
    if any(v != CONNS for v in shares.values()):
        log(f"warning: {name} -T {threads}: clients per worker {shares}, not {CONNS} each")
    r = {"workers": {}, "requests": total, "master_us": d.get("master", NONE)["s"] * 1e6 / total,
         "stats_us": d.get("stats", NONE)["s"] * 1e6 / total}
    for i in sorted(c1):
        reqs, wd = c1[i][1] - c0[i][1], d.get(f"worker-{i}", NONE)
        per = (lambda v: v / reqs) if reqs else (lambda v: float("nan"))
        calls = wd["syscr"] + wd["syscw"]
        r["workers"][i] = {"clients": c1[i][0] - c0[i][0], "requests": reqs, "us": per(wd["s"] * 1e6),
                           "user_us": per(wd["user_s"] * 1e6), "sys_us": per((wd["s"] - wd["user_s"]) * 1e6),
                           "calls": per(calls), "csw": per(wd["csw"]), "faults": per(wd["minflt"]),
                           "us_call": wd["s"] * 1e6 / calls if calls else float("nan")}
    return r


def cpu_report(w, res):
    """The table of one workload from its runs (res[threads] = list of cpu_run results)."""
    name, pool, pipe, n, _ = w
    keys = ("clients", "us", "user_us", "sys_us", "calls", "us_call", "csw", "faults")
    configs = list(res)
    m = {t: [{k: med([r["workers"][i][k] for r in res[t]]) for k in keys} for i in range(t)] for t in configs}
    base = m[configs[0]][0]
    lines = [f"### {name}", "",
             f"ncload {'memcached' if pool == 'mc' else 'redis'} get, {VALUE} B values, pipeline {pipe}, "
             f"{CONNS} connections and {n} requests per load generator; medians of {len(res[configs[0]])} rounds",
             "", f"| -T | worker | clients | share of requests | worker CPU us/req | **/ -T {configs[0]}'s** | "
             f"user / -T {configs[0]}'s | system / -T {configs[0]}'s | reads+writes/req | context switches/req | "
             f"page faults/req | CPU us per read or write | **/ -T {configs[0]}'s** | master CPU us/req | "
             "stats CPU us/req |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for threads in configs:
        runs = res[threads]
        for i, v in enumerate(m[threads]):
            share = med([r["workers"][i]["requests"] / r["requests"] for r in runs])
            lines.append(f"| {threads} | {i} | {v['clients']:.0f} | {share:.2f} | {fmt(v['us'])} | "
                         f"**{fmt(ratio(v['us'], base['us']))}** | {fmt(ratio(v['user_us'], base['user_us']))} | "
                         f"{fmt(ratio(v['sys_us'], base['sys_us']))} | {fmt(v['calls'], 3)} | {fmt(v['csw'], 3)} | "
                         f"{fmt(v['faults'], 4)} | "
                         f"{fmt(v['us_call'])} | **{fmt(ratio(v['us_call'], base['us_call']))}** | "
                         f"{fmt(med([r['master_us'] for r in runs]), 3)} | "
                         f"{fmt(med([r['stats_us'] for r in runs]), 3)} |")
    return "\n".join(lines) + "\n"


def cpu_mode(b, ws, rounds, configs):
    out = {}
    for w in ws:
        res = {t: [] for t in configs}
        la0 = os.getloadavg()[0]
        for rnd in range(rounds):
            for threads in configs:
                r = cpu_run(b, threads, w)
                res[threads].append(r)
                per = ", ".join(f"worker {i}: {v['clients']} clients, {v['requests']} req, {v['us']:.2f} us/req, "
                                f"{v['calls']:.3f} reads+writes/req, {v['csw']:.3f} csw/req, "
                                f"{v['faults']:.4f} faults/req"
                                for i, v in r["workers"].items())
                log(f"{w[0]} round {rnd + 1} -T {threads}: {per}; master {r['master_us']:.3f}, "
                    f"stats {r['stats_us']:.3f} us/req")
        text = cpu_report(w, res) + f"\nload average (1 min) before/after: {la0:.2f} / {os.getloadavg()[0]:.2f}\n"
        print(text, flush=True)
        out[w[0]] = res
    return out


# ---- instructions per request (callgrind)

def callgrind_totals(prefix):
    """{thread number: instructions} of a --separate-threads=yes run (files prefix-NN)."""
    out = {}
    for path in glob.glob(prefix + "-*"):
        m = re.search(r"-(\d+)$", path)
        if not m:
            continue
        total = None
        with open(path, errors="replace") as f:
            for line in f:
                if line.startswith(("totals:", "summary:")):
                    total = int(line.split()[1])
        if total is not None:
            out[int(m.group(1))] = total
    return out


def instr_run(b, threads, w, n):
    """One run under callgrind: ({role: instructions}, {worker id: requests})."""
    name, pool, pipe, _, _ = w
    prefix = os.path.join(b.dir, f"cg-{name}-T{threads}-{n}")  # (each such run once per invocation)
    wrap = ["valgrind", "--tool=callgrind", "--separate-threads=yes", f"--callgrind-out-file={prefix}"]
    p, stats = start_proxy(b, threads, f"cg-T{threads}", wrap)
    try:
        run_loads([load_cmd(b, pool, 1, pipe, n) for _ in range(threads)])
        counts = worker_counts(stats, pool)
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=120)  # callgrind writes its files at the exit
        finally:
            stop(p)
    # thread 1 is the master; the workers are started next, in order (thread/master.c), then the
    # stats thread
    roles = {1: "master", threads + 2: "stats"}
    roles.update({k + 2: f"worker-{k}" for k in range(threads)})
    totals = callgrind_totals(prefix)
    return {roles.get(t, f"thread-{t}"): v for t, v in totals.items()}, {i: c[1] for i, c in counts.items()}


def instr_mode(b, ws, configs):
    lines = ["### instructions per request (callgrind --separate-threads=yes)", "",
             "one client per worker (`ncload -c 1`); (3N-run - N-run) instructions / requests, per thread", "",
             f"| workload | N | -T | worker | instructions/req | **/ -T {configs[0]}'s worker 0** | master instr/req | "
             "stats instr/req |",
             "|---|---|---|---|---|---|---|---|"]
    out = {}
    for w in ws:
        n = w[4]
        per = {}
        for threads in configs:
            (i1, q1), (i3, q3) = instr_run(b, threads, w, n), instr_run(b, threads, w, 3 * n)
            reqs = sum(q3.values()) - sum(q1.values())
            per[threads] = {"workers": {k: (i3.get(f"worker-{k}", 0) - i1.get(f"worker-{k}", 0)) / (q3[k] - q1[k])
                                        for k in range(threads)},
                            "master": (i3.get("master", 0) - i1.get("master", 0)) / reqs,
                            "stats": (i3.get("stats", 0) - i1.get("stats", 0)) / reqs}
            log(f"{w[0]} -T {threads} under callgrind: {per[threads]}")
        base = per[configs[0]]["workers"][0]
        for threads in configs:
            for k, v in per[threads]["workers"].items():
                lines.append(f"| {w[0]} | {n} | {threads} | {k} | {v:,.0f} | **{fmt(ratio(v, base), 3)}** | "
                             f"{per[threads]['master']:,.1f} | {per[threads]['stats']:,.1f} |")
        out[w[0]] = per
    text = "\n".join(lines) + "\n"
    print(text, flush=True)
    return out


def cpu_list(text):
    """"0-3,8" -> [0, 1, 2, 3, 8]; None -> None."""
    if not text:
        return None
    out = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="rounds of alternation (>= 3 for a report)")
    ap.add_argument("--scale", type=float, default=0.5, help="multiplies every request count (CPU mode)")
    ap.add_argument("--only", default="", help="comma-separated workload name prefixes")
    ap.add_argument("--instr", action="store_true", help="instructions per request under callgrind instead")
    ap.add_argument("--instr-n", type=int, default=3000, help="N of --instr at pipeline 1 (x4 at pipeline 16)")
    ap.add_argument("--threads", default="1,2", help="the -T of each configuration (the first is the base)")
    ap.add_argument("--proxy-cpus", help="CPU list for the proxy (worker i alone on the i-th), e.g. 0-7")
    ap.add_argument("--load-cpus", help="CPU list for the load generators and the backends, e.g. 8-15")
    ap.add_argument("--backends", type=int, default=bench.NREDIS, help="redis-servers, and memcacheds, to start")
    common_args(ap)
    args = ap.parse_args()
    configs = [int(t) for t in args.threads.split(",") if t]
    PIN.update(proxy=cpu_list(args.proxy_cpus), load=cpu_list(args.load_cpus))
    absolute_bins(args)
    raise_nofile()
    only = [o for o in args.only.split(",") if o]
    ws = [w for w in workloads(args.scale, args.instr_n) if not only or any(w[0].startswith(o) for o in only)]
    bench.NREDIS = bench.NMC = args.backends  # (read by Bench.start_backends)
    b = Bench(args)
    allres = {"loadavg_start": os.getloadavg()}
    log(f"load average at start: {os.getloadavg()}; dir {b.dir}")
    try:
        b.start_backends()
        b.write_conf()
        if PIN["load"]:
            b.pin_backends(set(PIN["load"]))
        preload(b)
        if args.instr:
            allres["instr"] = instr_mode(b, ws, configs)
        else:
            allres["cpu"] = cpu_mode(b, ws, args.rounds, configs)
        allres["loadavg_end"] = os.getloadavg()
        log(f"load average at end: {os.getloadavg()}")
    finally:
        b.close()
        if args.json:
            write_json(args.json, {"args": vars(args), **allres})
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, bench._on_sigterm)
    sys.exit(main())
