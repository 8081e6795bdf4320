#!/usr/bin/env python3
"""bench/memory_crowd.py - what a crowd of clients that never read makes the proxy hold, with and
without -M (--max-memory), next to redis-server's own maxmemory-clients, and what a bystander
gets meanwhile.

The crowd (none of its clients reads; 4 kB receive buffers): 8 clients that pipeline 24 GETs of a
1 MB value, 4 that block their replies with 4 such GETs then pipeline 24 SETs of 1 MB, and 8
stopped 8 MB into a value announced as 100 MB: about 370 MB that the proxy would hold for them.
It stays --hold seconds, then leaves (closes every socket).

The bystander: one client, in a process of its own, SET then GET of its own key with a fresh
value each time, one request at a time, every reply checked; its latency is each request's round
trip, while the crowd is there (or over the same span with no crowd).

Variants, each round on fresh processes, alternated (A B C ... A B C ...):
  nc-alone   nutcrackers -T 2 -M <cap> over 2 redis-servers, the bystander alone
  nc-M       the same with the crowd; the crowd's keys on one server, the bystander's on the other
  nc         the same crowd with no -M
  redis      the crowd and the bystander straight to one redis-server with maxmemory-clients <cap>
  redis-alone  the bystander alone on that redis-server
Printed: per variant the medians of the rounds of the idle RSS, the peak RSS over it (sampled
every 10 ms), the RSS 2 s after the crowd left, the crowd clients closed (nutcrackers'
client_memory_closes, redis' evicted_clients), the bystander's requests, errors, and
p50 / p99 / max latency over the crowd's stay, and p99 / max after its first second (the flood
over: the crowd closed, paused or done). Only 127.0.0.1; every process started here is stopped
before it exits.
"""
import argparse
import json
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from nctest import crowd, manage, procs, wait  # noqa: E402
from nctest.codec import resp  # noqa: E402
from nctest.conf import render_conf  # noqa: E402
from nctest.conn import KvConn, RawConn  # noqa: E402
from nctest.procfs import rss_kb  # noqa: E402
from nctest.procs import free_port, stop_popen  # noqa: E402

MB = 1 << 20
VARIANTS = ["nc-alone", "nc-M", "nc", "redis", "redis-alone"]
POOL = "crowd"


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def size_bytes(text):
    """"64m" -> 64 MiB (k, m, g as -M reads them; redis would read "64m" as 64,000,000)."""
    shift = {"k": 10, "m": 20, "g": 30}.get(text[-1:].lower(), 0)
    return int(text[:-1] if shift else text) << shift


def pct(sorted_vals, p):
    if not sorted_vals:
        return float("nan")
    return sorted_vals[min(len(sorted_vals) - 1, int(p / 100.0 * len(sorted_vals)))]


def bystander_main(port, key, stopping, out):
    """The bystander's process: SET then GET of key until stopping is set; sends (latencies as
    (start, seconds), errors) on out."""
    lat, errors = [], []
    try:
        with KvConn(port, True, timeout=30) as c:
            i = 0
            while not stopping.is_set():
                value = f"{key}.{i}".encode()
                t0 = time.monotonic()
                r = c.kv_set(key, value)
                t1 = time.monotonic()
                got = c.kv_get(key)
                t2 = time.monotonic()
                lat += [(t0, t1 - t0), (t1, t2 - t1)]
                if r is not True or got != value:
                    errors.append(f"SET {r!r}, GET {got[:40] if got else got!r}")
                i += 1
    except Exception as e:  # noqa: BLE001 - reported in the table
        errors.append(repr(e))
    out.send((lat, errors))
    out.close()


class Bystander:
    """The well-behaved client, in a process of its own (the crowd's writer thread would share
    this one's interpreter lock with it): SET/GET of its key, latencies kept (seconds)."""

    def __init__(self, port, key):
        self.stopping = multiprocessing.Event()
        self.recv, send = multiprocessing.Pipe(duplex=False)
        self.proc = multiprocessing.Process(target=bystander_main, args=(port, key, self.stopping, send),
                                            daemon=True)
        self.lat, self.errors = [], []

    def start(self):
        self.proc.start()
        return self

    def stop(self):
        self.stopping.set()
        if self.recv.poll(60):
            self.lat, self.errors = self.recv.recv()
        else:
            self.errors.append("the bystander did not report within 60 s")
        self.proc.join(10)
        if self.proc.is_alive():
            self.proc.kill()
        return self


def the_crowd(port):
    return [
        crowd.Crowd(port, 8, crowd.redis_gets("big", 24)),
        crowd.Crowd(port, 4, lambda i: crowd.redis_sets(f"crowd:{i}", b"s" * MB, 24, blockers=4,
                                                        big_key="big")),
        crowd.Crowd(port, 8, crowd.redis_unfinished_bulk(8 * MB)),
    ]


class Run:
    def __init__(self, args, variant, workdir):
        self.args, self.variant = args, variant
        self.dir = tempfile.mkdtemp(prefix=f"{variant}.", dir=workdir)
        self.procs = []
        self.proxy = None
        self.manage = None

    def start_redis(self, *extra):
        for _ in range(3):
            port = free_port()
            p = procs.start_backend("redis", port, ("--logfile", os.path.join(self.dir, f"redis-{port}.log"),
                                                    *extra), cwd=self.dir)
            if p is not None:
                self.procs.append(p)
                return port, p
        raise RuntimeError("redis-server did not start")

    def start(self):
        """Returns (the port the clients use, the pid whose RSS is measured, the bystander key)."""
        cap = size_bytes(self.args.cap)
        if self.variant.startswith("redis"):
            port, p = self.start_redis("--maxmemory-clients", str(cap))
            self.redis_port = port
            return port, p.pid, f"bystander:{uuid.uuid4().hex[:8]}"
        ports = [self.start_redis()[0] for _ in range(2)]
        port, self.manage = free_port(), free_port()
        conf = os.path.join(self.dir, "crowd.yml")
        with open(conf, "w") as f:
            f.write(render_conf({POOL: {"listen": f"127.0.0.1:{port}", "redis": True, "timeout": 30000,
                                        "servers": [f"127.0.0.1:{p}:1" for p in ports]}}))
        cmd = [self.args.nc_bin, "-c", conf, "-s", str(self.manage), "-a", "127.0.0.1", "-T",
               str(self.args.threads), "-o", os.path.join(self.dir, "nc.log")]
        if self.variant != "nc":
            cmd += ["-M", str(cap)]
        self.proxy = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      cwd=self.dir)
        self.procs.append(self.proxy)
        procs.wait_listening(port, self.proxy)
        procs.wait_listening(self.manage, self.proxy)
        # the bystander's key on the server that does not hold the crowd's
        where = manage.find_keys(self.manage, POOL, ["big"] + [f"crowd:{i}" for i in range(4)])
        crowd_servers = set(where.values())
        for i in range(1000):
            key = f"bystander:{i}"
            if manage.find_keys(self.manage, POOL, [key])[key] not in crowd_servers:
                break
        return port, self.proxy.pid, key

    def closes(self):
        if self.proxy is None:
            with RawConn(self.redis_port) as c:
                info = c.call("INFO", "stats").decode()
            return int(next(line.split(":")[1] for line in info.splitlines()
                            if line.startswith("evicted_clients:")))
        return manage.status(self.manage)[POOL]["client_memory_closes"]

    def gauge(self):
        if self.proxy is None:
            return None
        return manage.status(self.manage)["client_memory"]

    def stop(self):
        for p in reversed(self.procs):
            stop_popen(p)


def one_run(args, variant, workdir):
    run = Run(args, variant, workdir)
    try:
        port, pid, key = run.start()
        with RawConn(port) as c:
            c.exchange(resp("SET", "big", b"b" * MB), b"+OK\r\n")
        warm = Bystander(port, key).start()
        wait.hold(0.3, "a few bystander requests before the baseline")
        warm.stop()
        wait.hold(1.2, "a trim (every second) before the idle RSS")
        idle = min(wait.sample(lambda: rss_kb(pid), 5, 0.05))
        peak = crowd.rss_peak(pid, 0.01)
        by = Bystander(port, key).start()
        t_in = time.monotonic()
        crowds = [] if variant.endswith("alone") else [cr.start() for cr in the_crowd(port)]
        wait.hold(args.hold, "the crowd's stay")
        gauge = run.gauge()
        by.stop()
        for cr in crowds:
            cr.leave()
        top = peak.stop()
        closes = run.closes()
        wait.hold(2.0, "two trims after the crowd left")
        after = rss_kb(pid)
        lat = sorted(d for _, d in by.lat)
        # after the first second: the crowd is closed, paused or done (its flood is over)
        later = sorted(d for t, d in by.lat if t >= t_in + 1.0)
        return {"idle_mb": idle / 1024, "peak_over_mb": (top - idle) / 1024, "after_mb": after / 1024,
                "closes": closes, "gauge_mb": gauge / MB if gauge is not None else None,
                "requests": len(lat), "errors": len(by.errors), "error_sample": by.errors[:3],
                "p50_ms": pct(lat, 50) * 1000, "p99_ms": pct(lat, 99) * 1000,
                "max_ms": (lat[-1] if lat else float("nan")) * 1000,
                "p99_later_ms": pct(later, 99) * 1000,
                "max_later_ms": (later[-1] if later else float("nan")) * 1000}
    finally:
        run.stop()


def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--hold", type=float, default=3.0, help="seconds the crowd stays")
    ap.add_argument("--cap", default="64m", help="-M and maxmemory-clients (k, m, g suffixes)")
    ap.add_argument("--threads", type=int, default=2, help="nutcrackers -T")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="of: " + ",".join(VARIANTS))
    ap.add_argument("--nc-bin", default=os.path.join(ROOT, "src", "nutcrackers"))
    ap.add_argument("--json", help="also write every run's numbers to this file")
    args = ap.parse_args()
    args.nc_bin = os.path.abspath(args.nc_bin)
    variants = [v for v in args.variants.split(",") if v]
    for v in variants:
        if v not in VARIANTS:
            ap.error(f"unknown variant {v}")
    if not shutil.which("redis-server"):
        ap.error("redis-server is not installed")
    workdir = tempfile.mkdtemp(prefix="nc-memory-crowd.")
    res = {v: [] for v in variants}
    la0 = os.getloadavg()[0]
    try:
        for rnd in range(args.rounds):
            for v in variants:
                r = one_run(args, v, workdir)
                res[v].append(r)
                log(f"round {rnd + 1} {v}: " + ", ".join(
                    f"{k} {r[k]:.1f}" if isinstance(r[k], float) else f"{k} {r[k]}" for k in r))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    la1 = os.getloadavg()[0]
    cols = [("idle RSS MB", "idle_mb", ".1f"), ("peak RSS over idle MB", "peak_over_mb", ".0f"),
            ("RSS 2 s after MB", "after_mb", ".1f"), ("closed", "closes", ".0f"),
            ("client_memory at the end MB", "gauge_mb", ".1f"), ("bystander requests", "requests", ".0f"),
            ("errors", "errors", ".0f"), ("p50 ms", "p50_ms", ".3f"), ("p99 ms", "p99_ms", ".2f"),
            ("max ms", "max_ms", ".1f"), ("p99 after 1 s ms", "p99_later_ms", ".2f"),
            ("max after 1 s ms", "max_later_ms", ".1f")]
    lines = [f"cap {args.cap}, nutcrackers -T {args.threads}, crowd stays {args.hold:g} s, "
             f"medians of {args.rounds} rounds (errors: all rounds); load average (1 min) "
             f"{la0:.1f} / {la1:.1f}", "",
             "| variant | " + " | ".join(c[0] for c in cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for v in variants:
        m = {k: med([r[k] for r in res[v]]) for _, k, _ in cols}
        m["errors"] = sum(r["errors"] for r in res[v])
        lines.append(f"| {v} | " + " | ".join(fmt(m[k], f) for _, k, f in cols) + " |")
    print("\n".join(lines), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "runs": res}, f, indent=1)


if __name__ == "__main__":
    main()
