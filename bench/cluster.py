#!/usr/bin/env python3
"""bench/cluster.py - what a Redis Cluster pool (`redis_cluster: true`) costs against a static pool
on the same kind and number of servers: nutcrackers' CPU per request, requests/s and the servers'
CPU per request, for GET and SET at pipeline 1 and 16.

Starts --nodes (3) redis-servers with `--cluster-enabled yes` (each in a directory of its own, no
persistence), makes them one cluster (`redis-cli --cluster create ... --cluster-replicas 0`) and
waits for cluster_state:ok on each, and --nodes plain redis-servers beside them. Two configs of one
pool each: "static" over the plain servers (fnv1a_64, ketama, hash_tag "{}", as bench/bench.py's
redis pool) and "cluster" over the cluster's nodes (every node a seed; the proxy routes by the
slot map it asks the nodes for). With --control, a third: "static_cm", the static pool over
--nodes more redis-servers in cluster mode that each own all 16384 slots (one-node clusters): the
servers pay cluster mode's cost per command (the slot of each command's key checked), the proxy
runs a static pool, so cluster against static_cm is the proxy's own cost of the cluster pool.

Per workload (bench.py's redis GET/SET workloads and request counts, 16-byte values by default,
driven by bench/ncload: GET or SET of key:NNN, 50 connections, a 10,000-key space) the kinds run
in alternation, --rounds times, each run on a fresh `nutcrackers -T 1` pinned as bench.py's nc1
variant (the proxy alone on CPU 1, the load generator and every redis-server on CPU 0). Printed
per workload: the medians of proxy CPU us per request (utime + stime from /proc/PID/stat),
requests/s and the servers' CPU us per request (all the pool's redis-servers), for each kind and
as cluster/static (and cluster/static_cm); then the servers' batch (requests per read and per
write system call, /proc/PID/io) and the latencies.

Processes, CPU accounting and the load runs are bench.py's (Bench, peers.proxy_cmd). Only
loopback addresses; every wait is bounded; every process started here is stopped by its pid
before the script exits, on errors too (--keep keeps the temporary directory: configs, logs).
Run it through `bench/run.sh cluster ...` (builds nutcrackers and ncload) or directly with
--nc-bin.
"""
import argparse
import os
import re
import signal
import subprocess
import sys

from bench import (KEYSPACE, Bench, _on_sigterm, absolute_bins, common_args, log,
                   raise_nofile, workloads, write_json)  # bench.py puts tests/ on sys.path
from nctest import procs, wait
from nctest.conf import render_conf
from nctest.procs import HOST, free_port, stop_popen as stop
from peers import VARIANTS, proxy_cmd
from report import fmt, med, ratio

KINDS = ("static", "cluster")
CONTROL = "static_cm"  # --control: the static pool over one-node clusters
PINNED = "nc1"        # bench.py's variant whose CPUs the proxy and the rest get
CLUSTER_TIMEOUT = 30  # s: the cluster made and ok on every node, the proxy serving
SIZES = {16: "16B", 1024: "1KB"}
# (key of a run's result, title, digits): the main table, cluster against static
MAIN = [("proxy_us", "proxy CPU us/req", 2), ("rps", "req/s", 0), ("backend_us", "servers CPU us/req", 2)]
# the second table: how the servers are fed, and the latency
DETAIL = [("req_per_read", "server req/read", 2), ("req_per_write", "server req/write", 2),
          ("p50_ms", "p50 ms", 3), ("p99_ms", "p99 ms", 3)]


def redis_cli(*argv, timeout=30):
    """redis-cli with argv; its output (raises when it fails)."""
    out = subprocess.run(["redis-cli", *argv], capture_output=True, text=True, timeout=timeout,
                         stdin=subprocess.DEVNULL)
    if out.returncode != 0:
        raise RuntimeError(f"redis-cli {' '.join(argv)} failed: {(out.stdout + out.stderr).strip()[-500:]}")
    return out.stdout


def cluster_ok(port, nodes):
    """True when the node on port says cluster_state:ok and knows all `nodes` nodes."""
    info = redis_cli("-h", HOST, "-p", str(port), "cluster", "info", timeout=5)
    fields = dict(line.split(":", 1) for line in info.split() if ":" in line)
    return fields.get("cluster_state") == "ok" and fields.get("cluster_known_nodes") == str(nodes)


def cluster_workloads(scale, sizes, only):
    """bench.py's redis GET/SET workloads of the value sizes asked for (its names and request
    counts), as (name, ncload args, requests, value size to preload or None, description)."""
    chosen = []
    for name, _, _, args, n, preload, _ in workloads(scale):
        m = re.fullmatch(r"redis_(get|set)_(\w+)_P(\d+)", name)
        if not m or (only and not any(name.startswith(o) for o in only)):
            continue
        op, tag, pipe = m.group(1), m.group(2), int(m.group(3))
        size = preload if op == "get" else int(args[args.index("-d") + 1])
        if size in sizes:
            chosen.append((name, ["--op", op, "-d", str(size), "-P", str(pipe)], n, preload,
                           f"ncload {op.upper()} of {tag} values, 50 clients, pipeline {pipe}"))
    return chosen


class ClusterBench(Bench):
    """bench.Bench over two sets of servers instead of its redis and memcached pools: "static"
    (plain redis-servers) and "cluster" (the cluster's nodes), each behind a config of its own.
    Bench gives the temporary directory, pin_backends, backend_ticks, backend_calls, run_load,
    parse_load and close (which stops every process of self.procs)."""

    def __init__(self, args):
        super().__init__(args)
        self.kinds = KINDS + ((CONTROL,) if args.control else ())
        self.backends = {kind: [] for kind in self.kinds}
        self.nodes = args.nodes

    def start_redis(self, kind, i, extra=()):
        """One redis-server of `kind` in its own directory (a cluster node writes nodes.conf
        there), on a free port; recorded in self.procs and self.backends at once."""
        workdir = os.path.join(self.dir, f"{kind}-{i}")
        os.makedirs(workdir)
        for _ in range(3):  # another process may take the port between its pick and the bind
            port = free_port()
            p = procs.start_backend("redis", port, ("--maxclients", "20000", "--logfile",
                                                    os.path.join(workdir, "redis.log"), *extra), cwd=workdir)
            if p is not None:
                self.procs.append(p)
                self.backends[kind].append((port, p))
                return
        raise RuntimeError(f"a {kind} redis-server did not start")

    def start_backends(self):
        for i in range(self.nodes):
            self.start_redis("static", i)
            for kind in self.kinds[1:]:
                self.start_redis(kind, i, ("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                                           "--cluster-node-timeout", "5000"))
        redis_cli("--cluster", "create", *(f"{HOST}:{port}" for port, _ in self.backends["cluster"]),
                  "--cluster-replicas", "0", "--cluster-yes", timeout=60)
        for port, _ in self.backends.get(CONTROL, []):
            redis_cli("-h", HOST, "-p", str(port), "cluster", "addslotsrange", "0", "16383")
        for kind, nodes in (("cluster", self.nodes), (CONTROL, 1)):
            for port, _ in self.backends.get(kind, []):
                wait.wait_for(lambda: cluster_ok(port, nodes), CLUSTER_TIMEOUT,
                              f"cluster_state:ok on the {kind} node of port {port}")

    def write_conf(self):
        self.port = {kind: free_port() for kind in self.kinds}
        static = {"hash": "fnv1a_64", "hash_tag": "{}", "distribution": "ketama"}
        pools = {"static": static, "cluster": {"redis_cluster": True}, CONTROL: static}
        self.confs = {}
        for kind in self.kinds:
            pool = {"listen": f"{HOST}:{self.port[kind]}", "redis": True, **pools[kind], "backlog": 1024,
                    "servers": [f"{HOST}:{port}:1" for port, _ in self.backends[kind]]}
            self.confs[kind] = os.path.join(self.dir, f"{kind}.yml")
            with open(self.confs[kind], "w") as f:
                f.write(render_conf({f"bench_{kind}": pool}))

    def start_proxy(self, kind):
        """nutcrackers -T 1 on kind's config, pinned as bench.py's nc1; returns once it answers a
        request (the cluster pool has asked a node for the slot map by then)."""
        logf = os.path.join(self.dir, f"nc-{kind}.log")
        cmd = proxy_cmd(PINNED, self.bins, {"all": self.confs[kind]}, free_port(), logf)
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, cwd=self.dir, preexec_fn=procs.die_with_parent)
        try:
            procs.wait_listening(self.port[kind], p)

            def serves():
                out = subprocess.run(["redis-cli", "-h", HOST, "-p", str(self.port[kind]), "set", "bench:probe", "1"],
                                     capture_output=True, text=True, timeout=5, stdin=subprocess.DEVNULL)
                return out.stdout.strip() == "OK"

            wait.wait_for(serves, CLUSTER_TIMEOUT, f"the {kind} pool to serve a SET")
        except BaseException:
            stop(p)
            raise
        return p

    def ncload_cmd(self, kind, args, n, cpus, extra=("-c", "50")):
        return ["taskset", "-c", ",".join(map(str, sorted(cpus))), self.ncload, "load", "--proto", "redis",
                "-p", str(self.port[kind]), *extra, "-n", str(n), "-r", str(KEYSPACE), *args]

    def preload(self, kind, size):
        """Every key of the keyspace set to a `size`-byte value, through kind's proxy."""
        p = self.start_proxy(kind)
        try:
            self.run_load(self.ncload_cmd(kind, ["--seq", "--op", "set", "-d", str(size)], KEYSPACE, {0, 1},
                                          extra=("-c", "8", "-P", "32")))
        finally:
            stop(p)

    def one_run(self, kind, w):
        """One load of workload w through a fresh proxy on kind's pool: bench.py's numbers."""
        name, args, n, _, _ = w
        cmd = self.ncload_cmd(kind, args, n, VARIANTS[PINNED][3])
        return self.measure(self.start_proxy(kind), kind, "ncload", cmd, n, f"the {kind} proxy exited during {name}")


def run_workload(b, w, rounds):
    """static, cluster (, static_cm), static, cluster ... (rounds times); returns {kind: [run
    results]}."""
    name, _, _, preload, _ = w
    if preload:
        for kind in b.kinds:
            b.preload(kind, preload)
    res = {kind: [] for kind in b.kinds}
    for rnd in range(rounds):
        for kind in b.kinds:
            r = b.one_run(kind, w)
            res[kind].append(r)
            log(f"{name} round {rnd + 1} {kind}: {r['rps']:.0f} req/s, proxy {r['proxy_us']:.2f} us/req, "
                f"servers {r['backend_us']:.2f} us/req, {r['req_per_write']:.2f} req/server write, "
                f"p50 {r['p50_ms']} ms, p99 {r['p99_ms']} ms")
    return res


def medians(res):
    """{kind: {column: median over the rounds}}."""
    return {kind: {c: med([r[c] for r in runs]) for c in runs[0]} for kind, runs in res.items()}


def tables(ws, allmed, kinds, args):
    """The two markdown tables: per workload each kind's medians and cluster against the static
    kinds (the ratios in bold), then the servers' batch and the latencies."""
    bases = [k for k in kinds if k != "cluster"]
    head = [f"nutcrackers -T 1 (pinned to CPU 1; ncload and the servers on CPU 0), {args.nodes} servers per pool; "
            f"medians of {args.rounds} rounds", ""]
    main = ["| workload | " + " | ".join(" | ".join([f"{t} {k}" for k in kinds] + [f"{t} cluster/{k}" for k in bases])
                                         for _, t, _ in MAIN) + " |",
            "|---" * (1 + (len(kinds) + len(bases)) * len(MAIN)) + "|"]
    detail = ["| workload | " + " | ".join(f"{t} {k}" for _, t, _ in DETAIL for k in kinds) + " |",
              "|---" * (1 + len(kinds) * len(DETAIL)) + "|"]
    for name, _, n, _, desc in ws:
        m = allmed[name]
        cells = []
        for c, _, digits in MAIN:
            cells += [fmt(m[k][c], digits) for k in kinds]
            cells += [f"**{fmt(ratio(m['cluster'][c], m[k][c]))}**" for k in bases]
        main.append(f"| {name} | " + " | ".join(cells) + " |")
        detail.append(f"| {name} | " + " | ".join(fmt(m[k][c], d) for c, _, d in DETAIL for k in kinds) + " |")
    notes = ["", "workloads: " + "; ".join(f"{name}: {desc}, {n} requests" for name, _, n, _, desc in ws),
             "servers CPU: utime + stime of all the pool's redis-servers over the requests (a cluster node's "
             "cluster bus included); server req/read, req/write: requests over the read and write system "
             "calls of those redis-servers (/proc/PID/io)"]
    if CONTROL in kinds:
        notes.append(f"{CONTROL}: the static pool over redis-servers in cluster mode that each own every slot")
    return "\n".join(head + main + ["", "Servers' batch and latency:", ""] + detail + notes) + "\n"


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="rounds of alternation (static, cluster)")
    ap.add_argument("--control", action="store_true",
                    help=f"also {CONTROL}: the static pool over one-node clusters (servers in cluster mode)")
    ap.add_argument("--nodes", type=int, default=3, help="cluster nodes, and plain servers of the static pool")
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies every request count")
    ap.add_argument("--sizes", default="16", help="value sizes, of 16,1024 (bench.py's 16B and 1KB)")
    ap.add_argument("--only", default="", help="comma-separated workload name prefixes (redis_get, redis_set_16B_P16)")
    common_args(ap)
    args = ap.parse_args()
    args.px_bin = None  # Bench's binaries: only --nc-bin runs here
    absolute_bins(args)
    args.sizes = {int(s) for s in args.sizes.split(",") if s}
    if not args.sizes or not args.sizes <= set(SIZES):
        ap.error("--sizes: of " + ",".join(map(str, SIZES)))
    if args.nodes < 3:
        ap.error("--nodes: a Redis Cluster needs 3 masters at least")
    if os.cpu_count() < 2:
        ap.error("needs 2 CPUs (pins the proxy to CPU 1)")
    if not os.access(args.nc_bin, os.X_OK):
        ap.error(f"no nutcrackers binary at {args.nc_bin}")
    raise_nofile()
    args.only = [o for o in args.only.split(",") if o]
    return args


def main():
    args = parse_args()
    os.environ.setdefault("NUTCRACKERS_BIN", args.nc_bin)  # nctest.wait's deadlines scale with its build
    ws = cluster_workloads(args.scale, args.sizes, args.only)
    if not ws:
        log("no workload matches --only and --sizes")
        return 2
    b = ClusterBench(args)
    record = {"nodes": args.nodes, "rounds": args.rounds, "workloads": {}}
    try:
        b.start_backends()
        b.pin_backends(VARIANTS[PINNED][3])
        b.write_conf()
        log(f"load average at start: {os.getloadavg()}; dir {b.dir}")
        allmed = {}
        for w in ws:
            res = run_workload(b, w, args.rounds)
            allmed[w[0]] = medians(res)
            record["workloads"][w[0]] = {"runs": res, "medians": allmed[w[0]]}
        print(tables(ws, allmed, b.kinds, args), flush=True)
        log(f"load average at end: {os.getloadavg()}")
    finally:
        b.close()
        if args.keep:
            log(f"kept {b.dir}")
        if args.json:
            write_json(args.json, record)
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _on_sigterm)
    sys.exit(main())
