#!/usr/bin/env python3
"""bench/latency.py - latency under load, open loop: the p50, p99 and p999 latency each proxy adds
over going straight to the backend, at fixed request rates, for nutcrackers -T 1 and -T 2,
twemproxy (nutcracker 0.5.0) and predixy.

Starts --servers redis-servers (and with --protos redis,mc as many memcacheds) on free 127.0.0.1
ports and writes --keys 16-byte values to each of them directly (so any routing finds every key;
`direct` goes to the first). Per protocol and per rate (--rates), the variants
run in alternation (A B C ... A B C ..., --rounds times), each on a fresh proxy process (one
pool of --servers servers): a warm-up (`ncload load`, 2,000 GETs: the server connections open), then
`ncload rate` for --seconds: GETs of random keys due at fixed intervals whatever the replies
(with --pipeline P: in batches of P written at once on one connection, each latency a batch's,
to its last reply: the servers see a pipelining client's load, at a rate every proxy can give),
spread over --conns connections, each latency measured from the request's due time (no
coordinated omission: a stalled reply is charged for the requests due behind it). Prints per
protocol and rate, the medians over the rounds of: the achieved rate (and "short" when under 98%
of the target), p50/p99/p999, the latency added over `direct` (the same percentile's difference
of medians, and their ratio), the proxy's CPU µs per request (utime + stime, all threads), the
backends' CPU µs per request and requests per backend read (the batch a server gets: `syscr` of
/proc/PID/io; memcached's EAGAIN reads count too), and
how late ncload itself wrote its requests (p99 send lag: when that is large, the load generator
fell short, not the proxy alone).

Variants: direct = ncload straight to the backend; nc1 / nc2 = nutcrackers -T 1 / -T 2 (--nc-bin);
ncb1 / ncb2 = the same with --nc-bin-b; tw = twemproxy (--tw-bin); px / px2 = predixy with 1 / 2
worker threads (--px-bin, redis only; started through --px-wrap on the same twemproxy config:
crc16/modula: other servers for the same keys, each holding every key). No CPU pinning: the proxy, the backend and ncload
share the machine's cores, as a proxy with 2 threads needs both (pinning the proxy alone on one
core, like bench.py, would leave -T 2 and px2 one core for two threads); `direct` shares them the
same way, less the proxy. Run it through `bench/run.sh latency ...`, which builds what is missing.

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
import peers  # bench/peers.py: how each proxy is started
from bench import CLK_TCK, NCLOAD, absolute_bins, chosen_variants, common_args, fmt, log, med, ncload_fields, \
    raise_nofile, write_json
from nctest import procs, wait
from nctest.conf import render_conf
from nctest.procfs import cpu_ticks, io_calls
from nctest.procs import free_port, stop_popen as stop

# name: (kind, worker threads, description)
VARIANTS = {"direct": ("direct", 0, "straight to the backend"), "nc1": ("nc", 1, "nutcrackers -T 1"),
            "nc2": ("nc", 2, "nutcrackers -T 2"), "ncb1": ("ncb", 1, "nutcrackers -T 1 (--nc-bin-b)"),
            "ncb2": ("ncb", 2, "nutcrackers -T 2 (--nc-bin-b)"), "tw": ("tw", 1, "twemproxy"),
            "px": ("px", 1, "predixy, 1 worker thread"), "px2": ("px", 2, "predixy, 2 worker threads")}
REDIS_ONLY = {"px", "px2"}
BACKEND = {"redis": "redis", "mc": "memcache"}
SHORT = 0.98  # achieved / target under this: the run fell short of its rate


class Latency:
    def __init__(self, args):
        self.args = args
        self.dir = tempfile.mkdtemp(prefix="nc-latency.")
        self.backends = {}  # proto: [(port, Popen)], the first is direct's
        self.conf = {}      # proto: (config path, listen port)

    def start_backend(self, proto):
        for _ in range(3):  # another process may take the port between its pick and the bind
            port = free_port()
            p = procs.start_backend(BACKEND[proto], port, ("--maxclients", "20000") if proto == "redis" else
                                    ("-m", "256", "-c", "20000"), cwd=self.dir)
            if p is not None:
                self.backends.setdefault(proto, []).append((port, p))
                return port
        raise RuntimeError(f"{BACKEND[proto]} did not start")

    def start(self, proto):
        ports = [self.start_backend(proto) for _ in range(self.args.servers)]
        listen = free_port()
        path = os.path.join(self.dir, f"{proto}.yml")
        with open(path, "w") as f:
            f.write(render_conf({f"lat_{proto}": {"listen": f"127.0.0.1:{listen}", "hash": "fnv1a_64",
                                                  "distribution": "ketama", "redis": proto == "redis",
                                                  "backlog": 1024,
                                                  "servers": [f"127.0.0.1:{port}:1" for port in ports]}}))
        self.conf[proto] = (path, listen)
        for port in ports:
            subprocess.run(self.ncload(proto, port, "load", "-c", "8", "-P", "32", "--seq", "--op", "set", "-d",
                                       str(self.args.value), "-n", str(self.args.keys)),
                           check=True, capture_output=True, timeout=120)

    def backend_counts(self, proto, variant):
        """(CPU ticks, read calls) of the backends the variant sends to so far."""
        bes = self.backends[proto][:1] if variant == "direct" else self.backends[proto]
        return sum(cpu_ticks(p.pid) for _, p in bes), sum(io_calls(p.pid)[0] for _, p in bes)

    def ncload(self, proto, port, mode, *args):
        return [NCLOAD, mode, "--proto", proto, "-p", str(port), "-r", str(self.args.keys), *args]

    def start_proxy(self, proto, variant):
        kind, threads, _ = VARIANTS[variant]
        conf, listen = self.conf[proto]
        logf = os.path.join(self.dir, f"{variant}-{proto}.log")
        binary = {"tw": self.args.tw_bin, "px": self.args.px_bin, "ncb": self.args.nc_bin_b}.get(kind, self.args.nc_bin)
        cmd = peers.proxy_argv({"tw": "twemproxy", "px": "predixy"}.get(kind, "nutcrackers"), binary, conf,
                               free_port(), logf, threads, self.args.px_wrap)
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=self.dir)
        procs.wait_listening(listen, p)
        return p, listen

    def one_run(self, proto, variant, rate):
        """One variant at one rate on fresh processes: ncload rate's fields, and proxy_us (CPU µs per
        request of the proxy; of the backend for direct), backend_us and backend_rpr (the backends' CPU µs
        and requests per read)."""
        direct_port, direct_p = self.backends[proto][0]
        p, port = (None, direct_port) if variant == "direct" else self.start_proxy(proto, variant)
        try:
            subprocess.run(self.ncload(proto, port, "load", "-c", str(self.args.conns), "-n", "2000"), check=True,
                           capture_output=True, timeout=60)  # warm-up: the server connections open
            wait.hold(0.2, "the warm-up's replies settled before the CPU time is read")
            pid = (p or direct_p).pid
            t0 = cpu_ticks(pid)
            b0 = self.backend_counts(proto, variant)
            out = subprocess.run(self.ncload(proto, port, "rate", "--rate", str(rate), "--seconds",
                                             str(self.args.seconds), "-c", str(self.args.conns),
                                             "-P", str(self.args.pipeline), "--timeout", "60"),
                                 capture_output=True, text=True, timeout=self.args.seconds + 90)
            if out.returncode not in (0, 1):
                raise RuntimeError(f"ncload rate failed ({out.returncode}): {out.stderr.strip()[-300:]}")
            r = ncload_fields(out.stdout)
            n = max(r["requests"], 1)
            r["proxy_us"] = (cpu_ticks(pid) - t0) / CLK_TCK * 1e6 / n
            b1 = self.backend_counts(proto, variant)
            r["backend_us"] = (b1[0] - b0[0]) / CLK_TCK * 1e6 / n
            r["backend_rpr"] = n / max(b1[1] - b0[1], 1)
            if p is not None and p.poll() is not None:
                raise RuntimeError(f"{variant} exited during the run")
        finally:
            stop(p)
        return r

    def close(self):
        for bes in self.backends.values():
            for _, p in bes:
                stop(p)
        if not self.args.keep:
            shutil.rmtree(self.dir, ignore_errors=True)


COLS = ["rps", "p50_ms", "p99_ms", "p999_ms", "max_ms", "proxy_us", "backend_us", "backend_rpr", "send_lag_p99_ms",
        "errors"]


def medians(runs):
    return {c: med([r[c] for r in runs]) for c in COLS}


def added(m, d, pct):
    """(µs added over direct, ratio over direct) of percentile pct."""
    return (m[pct] - d[pct]) * 1000.0, bench.ratio(m[pct], d[pct])


def report(proto, rate, variants, res, rounds, pipeline):
    lines = [f"### {proto} GET, {rate:,} requests/s (target), pipeline {pipeline}", "",
             f"medians of {rounds} rounds; added = the variant's percentile minus direct's (µs), x = their ratio", "",
             "| variant | achieved req/s | p50 ms | p99 ms | p999 ms | added p50 µs | added p99 µs | added p999 µs | "
             "x p50 | x p99 | x p999 | CPU µs/req (direct: the backend's) | backends' CPU µs/req | backend req/read | "
             "ncload lag p99 ms |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    ms = {v: medians(res[v]) for v in variants if res.get(v)}
    d = ms.get("direct")
    for v, m in ms.items():
        short = " (short)" if m["rps"] < SHORT * rate else ""
        cells = [f"{fmt(m['rps'], 0)}{short}", fmt(m["p50_ms"], 3), fmt(m["p99_ms"], 3), fmt(m["p999_ms"], 3)]
        if d is not None and v != "direct":
            add = [added(m, d, pct) for pct in ("p50_ms", "p99_ms", "p999_ms")]
            cells += [fmt(a, 0) for a, _ in add] + [fmt(x) for _, x in add]
        else:
            cells += [""] * 6
        cells += [fmt(m["proxy_us"]), fmt(m["backend_us"]), fmt(m["backend_rpr"]), fmt(m["send_lag_p99_ms"], 3)]
        lines.append(f"| {v} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n", ms


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", default="5000,20000,80000", help="requests per second, comma-separated")
    ap.add_argument("--seconds", type=int, default=5, help="seconds of load per run")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--conns", type=int, default=50, help="connections the load is spread over")
    ap.add_argument("--pipeline", type=int, default=1, help="requests per batch, written at once on one connection")
    ap.add_argument("--keys", type=int, default=10000, help="keys written before, GET at random")
    ap.add_argument("--value", type=int, default=16, help="value size in bytes")
    ap.add_argument("--servers", type=int, default=1, help="backends in the pool (direct uses the first)")
    ap.add_argument("--protos", default="redis", help="redis, mc or redis,mc (predixy: redis only)")
    ap.add_argument("--variants", help="of: " + ",".join(VARIANTS) + " (default: direct,nc1,nc2,tw, and px,px2 "
                                       "with --px-bin)")
    ap.add_argument("--px-bin", default=peers.default_predixy_bin(),
                    help="predixy's binary (default: as bench/run.sh builds it)")
    ap.add_argument("--px-wrap", default=peers.predixy_wrap(), help="predixy-wrap.py: runs predixy on a twemproxy config")
    common_args(ap)
    args = ap.parse_args()
    if args.variants is None:
        args.variants = "direct,nc1,nc2,tw" + (",px,px2" if args.px_bin else "")
    variants = chosen_variants(ap, args, VARIANTS)
    if any(v in REDIS_ONLY for v in variants) and not args.px_bin:
        ap.error("the px variants need --px-bin")
    protos = [x for x in args.protos.split(",") if x]
    if not protos or any(x not in BACKEND for x in protos):
        ap.error(f"unknown protocol in {args.protos}")
    absolute_bins(args)
    if args.px_bin:
        args.px_bin = os.path.abspath(args.px_bin)
    return args, variants, protos, [int(x) for x in args.rates.split(",") if x]


def main():
    args, variants, protos, rates = parse_args()
    raise_nofile()
    lat = Latency(args)
    allres = {"variants": variants, "rates": rates, "runs": {}, "loadavg_start": os.getloadavg()}
    try:
        log(f"load average at start: {os.getloadavg()}; dir {lat.dir}")
        for proto in protos:
            lat.start(proto)
            pv = [v for v in variants if proto == "redis" or v not in REDIS_ONLY]
            for rate in rates:
                res = {v: [] for v in pv}
                la0 = os.getloadavg()[0]
                for rnd in range(args.rounds):
                    for v in pv:
                        r = lat.one_run(proto, v, rate)
                        res[v].append(r)
                        log(f"{proto} {rate}/s round {rnd + 1} {v}: {r['rps']:.0f} req/s, p50 {r['p50_ms']} "
                            f"p99 {r['p99_ms']} p999 {r['p999_ms']} max {r['max_ms']} ms, lag p99 "
                            f"{r['send_lag_p99_ms']} ms, {r['proxy_us']:.1f} CPU us/req, backends "
                            f"{r['backend_us']:.1f} us/req and {r['backend_rpr']:.2f} req/read, {r['errors']:.0f} errors")
                text, ms = report(proto, rate, pv, res, args.rounds, args.pipeline)
                text += f"\nload average (1 min) before/after: {la0:.2f} / {os.getloadavg()[0]:.2f}\n"
                print(text, flush=True)
                allres["runs"][f"{proto}_{rate}"] = {"runs": res, "medians": ms}
        allres["loadavg_end"] = os.getloadavg()
        log(f"load average at end: {os.getloadavg()}")
    finally:
        lat.close()
        if args.json:
            write_json(args.json, allres)
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, bench._on_sigterm)
    sys.exit(main())
