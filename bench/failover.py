#!/usr/bin/env python3
"""bench/failover.py - how long writes through nutcrackers fail while Redis Sentinel moves a
master (issue 27), for each kind of failover: SENTINEL FAILOVER (forced: the old master is up
and answers until the sentinels demote it) and SIGKILL of the master (the sentinels first wait
down-after-milliseconds, 1000 ms here, then elect a leader and promote the replica).

Each round starts a fresh deployment (nctest.sentinel: one shard of a master and a replica, 3
sentinels, quorum 2, down-after 1000 ms, failover-timeout 5000 ms) and a proxy (-T 2, --nc-bin)
with one pool over it, and one client (redis-py, nctest.kvcheck) writing a SET every --pace-ms
through the proxy. Once it writes, the master is moved; the round ends when the client's writes
have succeeded again for a second. Printed per round, then the medians per kind:
- switch_s: from the event (just before SENTINEL FAILOVER is sent, or the SIGKILL) to the
  +switch-master message a client subscribed to a sentinel reads;
- proxy_s: from the event to the proxy's log line of the move (its stamp, to the millisecond);
- unavailable_s: from the first write that failed to the first that succeeded after it (0 when
  none failed), and failed: how many failed in all;
- max_write_ms: the longest write sent after the event (one held, not failed, shows here);
- lost: acknowledged writes missing from the new master at the end (Redis replicates
  asynchronously: what the old master took after its replica was promoted, or just before it
  died, is gone; each write is to a key of its own, so none hides another). The proxy holds a
  master's writes from the failover leader's promotion of a replica to +switch-master, so with
  SENTINEL FAILOVER the writes of that second wait (max_write_ms) instead of being lost.

Only loopback addresses; every wait is bounded; every process started here is stopped before it
exits (--keep keeps the temporary directory: configs, logs).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import ROOT, log, write_json  # bench/bench.py (it puts tests/ on sys.path)
from nctest import procs, wait
from nctest.conf import write_conf
from nctest.kvcheck import CheckedClients
from nctest.procs import HOST, free_port
from nctest.sentinel import Deployment, addr_str
from nctest.sentinel_proxy import PoolView, logged_at

KINDS = ("failover", "kill")
KEYS = [f"bench:failover:{i}" for i in range(20000)]  # each written once in a round
WARM_WRITES = 50     # writes that succeed before the event
BACK_FOR = 1.0       # s: of writes succeeding again that end a round
ROUND_TIMEOUT = 60.0  # s: the writes back after the event
COLUMNS = ("switch_s", "proxy_s", "unavailable_s", "failed", "max_write_ms", "lost")
COUNTS = ("failed", "lost")


class ProxyProc:
    """A nutcrackers process of one round, as nctest.sentinel_proxy.PoolView wants it."""

    def __init__(self, binary, conf_path, log_path, threads):
        self.conf_path = conf_path
        self.log_path = log_path
        self.manage_port = free_port()
        self.proc = subprocess.Popen(
            [binary, "-c", str(conf_path), "-o", str(log_path), "-s", str(self.manage_port),
             "-a", HOST, "-T", str(threads)], stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=procs.die_with_parent)

    def log(self):
        return procs.read_text(self.log_path)

    def stop(self):
        procs.stop_popen(self.proc)


def start_proxy(args, d, workdir):
    port = free_port()
    pool = d.pool_conf(f"{HOST}:{port}")
    conf_path = write_conf(workdir / "nc.yml", {"failover": pool})
    proxy = ProxyProc(args.nc_bin, conf_path, workdir / "nc.log", args.threads)
    procs.wait_listening(port, proxy.proc, what="nutcrackers")
    view = PoolView(proxy, "failover", port, pool)
    view.wait_addr("shard0", addr_str(d.master_addr("shard0")))
    return proxy, view


def move(d, kind):
    """Moves shard0's master; returns (old, new, the event's monotonic and wall-clock time)."""
    if kind == "failover":
        at, wall = time.monotonic(), time.time()
        old, new = d.failover("shard0")
        return old, new, at, wall
    old, new, took = d.kill_master("shard0")
    now, wall = time.monotonic(), time.time()
    return old, new, now - took, wall - took


def one_round(args, kind, workdir):
    """One deployment, one proxy, one move of `kind`: the round's numbers (COLUMNS)."""
    d = Deployment(workdir / "deployment", shards=1).start()
    proxy = None
    try:
        proxy, view = start_proxy(args, d, workdir)
        watch = d.subscribe_switches()
        mark = view.log_mark()
        with CheckedClients(view.port, [KEYS], pace=args.pace_ms / 1000.0,
                            read_back=False) as writer:
            wait.wait_for(lambda: writer.count(op="set", outcome="ok") >= WARM_WRITES, 10.0,
                          "the writer to get going")
            old, new, at, wall = move(d, kind)
            event = watch.wait(1, "shard0")[-1]
            moved = view.wait_moved("shard0", addr_str(old), addr_str(new), mark)
            followed = time.monotonic()

            def back():
                spans = writer.outages(op="set")
                if spans and spans[-1][1] is None:
                    return False
                since = max([followed] + [s[1] for s in spans])
                ok = writer.select(op="set", outcome="ok", since=since)
                return ok and ok[-1].t0 - since >= BACK_FOR

            wait.wait_for(back, ROUND_TIMEOUT, "the writes to succeed again")
            writer.stop()
        spans = [s for s in writer.outages(op="set") if s[0] >= at - 1.0]
        after = writer.select(op="set", since=at)
        acked = [o.key for o in writer.select(op="set", outcome="ok")]
        assert len(acked) == len(set(acked)), "a key written twice: more KEYS"
        lost = [k for k, v in d.values(new, acked).items() if v not in writer.expected(0, k)]
        return {"switch_s": event.at - at, "proxy_s": logged_at(moved) - wall,
                "unavailable_s": spans[0][1] - spans[0][0] if spans else 0.0,
                "failed": sum(o.outcome == "error" for o in after),
                "max_write_ms": max((o.t1 - o.t0) * 1000 for o in after), "lost": len(lost),
                "errors": sorted({o.detail for o in after if o.outcome == "error"})}
    finally:
        if proxy is not None:
            proxy.stop()
        d.stop()


def cell(column, value):
    return f"{value:g}" if column in COUNTS else f"{value:.3f}"


def table(results):
    """The rounds, then the medians per kind, as text."""
    head = ("kind", "round", *COLUMNS)
    rows = [(kind, i + 1, *(cell(c, r[c]) for c in COLUMNS))
            for kind, rounds in results.items() for i, r in enumerate(rounds)]
    rows += [(kind, "median", *(cell(c, statistics.median(r[c] for r in rounds)) for c in COLUMNS))
             for kind, rounds in results.items() if rounds]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    return "\n".join("  ".join(str(c).rjust(w) for c, w in zip(r, widths)) for r in [head, *rows])


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nc-bin", default=os.path.join(ROOT, "build", "src", "nutcrackers"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--kinds", default=",".join(KINDS), help="of " + ",".join(KINDS))
    ap.add_argument("--threads", type=int, default=2, help="the proxy's -T")
    ap.add_argument("--pace-ms", type=float, default=5.0, help="between two writes of the client")
    ap.add_argument("--json", help="also write every round's numbers to this file")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args()
    args.nc_bin = os.path.abspath(args.nc_bin)
    args.kinds = [k for k in args.kinds.split(",") if k]
    if not set(args.kinds) <= set(KINDS) or not args.kinds:
        ap.error(f"--kinds: of {','.join(KINDS)}")
    if not os.access(args.nc_bin, os.X_OK):
        ap.error(f"no nutcrackers binary at {args.nc_bin}")
    return args


def main():
    args = parse_args()
    os.environ["NUTCRACKERS_BIN"] = args.nc_bin
    tmp = Path(tempfile.mkdtemp(prefix="nc-failover."))
    results = {kind: [] for kind in args.kinds}
    try:
        for i in range(args.rounds):  # the kinds alternate
            for kind in args.kinds:
                log(f"round {i + 1}/{args.rounds}: {kind}")
                r = one_round(args, kind, tmp / f"{kind}-{i + 1}")
                log(f"  {r}")
                results[kind].append(r)
    finally:
        if args.keep:
            log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"nutcrackers {args.nc_bin} -T {args.threads}; one client writing every "
          f"{args.pace_ms:g} ms; 1 shard, 1 replica, 3 sentinels (down-after 1000 ms)")
    print(table(results))
    if args.json:
        write_json(args.json, results)


if __name__ == "__main__":
    sys.exit(main())
