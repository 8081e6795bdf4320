#!/usr/bin/env python3
"""bench/tls.py - TLS on both sides: nutcrackers against what twemproxy's users run instead, stunnel
(Debian's stunnel4) in front of twemproxy and stunnel between twemproxy and the TLS servers, on
the same load and the same certificates.

Starts --servers redis-servers that take TLS only (--port 0 --tls-port), certificates made with
the openssl CLI (tests/nctest/tls.py), and per variant:
- `nc`: nutcrackers -T 1, `tls: true` toward the clients and `server_tls: true` toward the servers;
- `tw`: a front stunnel (accepts TLS, connects in plain text to twemproxy), twemproxy 0.5.0, and a
  back stunnel (one service per server: accepts plain text from twemproxy, connects over TLS).
The proxy side (nutcrackers; or twemproxy and both stunnels) is pinned to CPU 1, the load
(redis-benchmark --tls, 50 clients) and the servers to CPU 0, as bench.py's pinned variants. The
variants alternate, --rounds times, each on fresh processes; per workload the medians of: requests
per second, the proxy side's CPU µs per request (all its processes, utime + stime) and the
servers'. Workloads: GET 16 B at pipeline 1 and 16 on connections kept open, and `connect`: a
PING per new connection (redis-benchmark -k 0: each request opens a TLS connection, its handshake
on both sides of a proxy that has a handshake of its own; for nutcrackers only the clients' side,
its server connections stay open): handshakes per second and CPU per handshake (5,000 of them:
behind the stunnels each is two loopback connections, and the TIME_WAIT sockets of many more
would use up the ephemeral ports).
Then the memory of idle TLS clients: --idle connections made over TLS to nutcrackers' TLS pool and
as many to a plain pool of the same process (each with a PING answered), and the proxy's RSS
growth per connection for each.

Run it through `bench/run.sh tls ...`, which installs stunnel4 and builds what is missing. Only
loopback addresses; every process started here is stopped before it exits.
"""
import argparse
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile

import bench  # bench/bench.py: the same helpers and conventions
from bench import CLK_TCK, common_args, fmt, log, med, raise_nofile, write_json
from nctest import procs, tls, wait
from nctest.conf import render_conf
from nctest.procfs import cpu_ticks, rss_kb, set_affinity
from nctest.procs import free_port, stop_popen as stop

PROXY_CPU, LOAD_CPU = {1}, {0}
KEYS = 10000
WORKLOADS = (("get_P1", ["-t", "get", "-P", "1"], 100000), ("get_P16", ["-t", "get", "-P", "16"], 1000000),
             ("connect", ["-t", "ping_mbulk", "-k", "0"], 5000))


class TlsBench:
    def __init__(self, args):
        self.args = args
        self.dir = tempfile.mkdtemp(prefix="nc-tls.")
        self.certs = tls.make_certs(os.path.join(self.dir, "certs"))
        self.servers = []  # (port, Popen)
        self.procs = []    # the running variant's processes

    def start_servers(self):
        for _ in range(self.args.servers):
            for _ in range(3):  # another process may take the port between its pick and the bind
                port = free_port()
                p = procs.start_backend("redis", port, (*tls.redis_tls_args(self.certs, port), "--maxclients",
                                                        "20000"), cwd=self.dir)
                if p is not None:
                    break
            else:
                raise RuntimeError("a TLS redis-server did not start")
            set_affinity(p.pid, LOAD_CPU)
            self.servers.append((port, p))

    def spawn(self, argv, listen):
        """Starts a process of the proxy side on PROXY_CPU (its threads too: taskset, before any
        starts) and waits until it listens on listen."""
        cpus = ",".join(map(str, sorted(PROXY_CPU)))
        p = subprocess.Popen(["taskset", "-c", cpus, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             cwd=self.dir)
        self.procs.append(p)
        procs.wait_listening(listen, p)
        return p

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def start_nc(self, with_plain=False):
        listen = free_port()
        c = self.certs
        pools = {"tlspool": {"listen": f"127.0.0.1:{listen}", "redis": True, "hash": "fnv1a_64",
                             "distribution": "ketama", "backlog": 1024, "tls": True,
                             "tls_cert_file": str(c.server_cert), "tls_key_file": str(c.server_key),
                             "server_tls": True, "server_tls_ca_cert_file": str(c.ca),
                             "servers": [f"127.0.0.1:{port}:1" for port, _ in self.servers]}}
        plain = free_port()
        if with_plain:
            pools["plainpool"] = dict(pools["tlspool"], listen=f"127.0.0.1:{plain}", tls=False)
        conf = self.write("nc.yml", render_conf(pools))
        p = self.spawn([self.args.nc_bin, "-c", conf, "-s", str(free_port()), "-a", "127.0.0.1", "-T", "1",
                        "-o", os.path.join(self.dir, "nc.log")], listen)
        if with_plain:
            procs.wait_listening(plain, p)
        return listen, plain

    def stunnel(self, name, services):
        text = f"foreground = yes\npid =\nsyslog = no\noutput = {self.dir}/{name}.log\n" + "".join(services)
        return [self.args.stunnel_bin, self.write(f"{name}.conf", text)]

    def start_tw(self):
        c = self.certs
        locals_ = [free_port() for _ in self.servers]
        back = [f"[s{i}]\nclient = yes\naccept = 127.0.0.1:{lp}\nconnect = 127.0.0.1:{port}\nCAfile = {c.ca}\n"
                "verifyChain = yes\ncheckHost = localhost\n" for i, (lp, (port, _)) in
                enumerate(zip(locals_, self.servers))]
        p = self.spawn(self.stunnel("back", back), locals_[0])
        for lp in locals_[1:]:
            procs.wait_listening(lp, p)
        twport, listen = free_port(), free_port()
        conf = self.write("tw.yml", render_conf({"tw": {
            "listen": f"127.0.0.1:{twport}", "redis": True, "hash": "fnv1a_64", "distribution": "ketama",
            "backlog": 1024, "servers": [f"127.0.0.1:{lp}:1" for lp in locals_]}}))
        self.spawn([self.args.tw_bin, "-c", conf, "-s", str(free_port()), "-a", "127.0.0.1", "-o",
                    os.path.join(self.dir, "tw.log")], twport)
        front = [f"[front]\naccept = 127.0.0.1:{listen}\nconnect = 127.0.0.1:{twport}\ncert = {c.server_cert}\n"
                 f"key = {c.server_key}\n"]
        self.spawn(self.stunnel("front", front), listen)
        return listen

    def stop_variant(self):
        for p in reversed(self.procs):
            stop(p)
        self.procs = []

    def benchmark(self, port, args, n):
        cmd = ["taskset", "-c", ",".join(map(str, sorted(LOAD_CPU))), "redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "--tls",
               "--cacert", str(self.certs.ca), "-c", "50", "-n", str(n), "-r", str(KEYS), "--csv", *args]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            raise RuntimeError(f"redis-benchmark failed: {out.stderr.strip()[-300:]}")
        rows = [ln for ln in out.stdout.splitlines() if ln.startswith('"') and not ln.startswith('"test"')]
        return float(rows[-1].split('","')[1].strip('"'))

    def one_run(self, variant, w):
        _, args, n = w
        port = self.start_nc()[0] if variant == "nc" else self.start_tw()
        try:
            self.benchmark(port, ["-t", "set", "-d", "16"], KEYS)  # the keys, and warm connections
            wait.hold(0.2, "the warm-up's replies settled before the CPU time is read")
            side0 = sum(cpu_ticks(p.pid) for p in self.procs)
            srv0 = sum(cpu_ticks(p.pid) for _, p in self.servers)
            rps = self.benchmark(port, args, n)
            side = (sum(cpu_ticks(p.pid) for p in self.procs) - side0) / CLK_TCK * 1e6 / n
            srv = (sum(cpu_ticks(p.pid) for _, p in self.servers) - srv0) / CLK_TCK * 1e6 / n
            return {"rps": rps, "proxy_us": side, "servers_us": srv}
        finally:
            self.stop_variant()

    def idle_memory(self, count):
        """RSS growth per connection of nutcrackers for count idle TLS and count plain clients."""
        tls_port, plain_port = self.start_nc(with_plain=True)
        pid = self.procs[-1].pid
        ctx = ssl.create_default_context(cafile=str(self.certs.ca))
        out = {}
        try:
            for name, port, wrap in (("plain", plain_port, None), ("tls", tls_port, ctx)):
                wait.hold(0.3, "the proxy's memory settled before the reading")
                before, conns = rss_kb(pid), []
                for _ in range(count):
                    s = socket.create_connection(("127.0.0.1", port), timeout=10)
                    s = wrap.wrap_socket(s, server_hostname="localhost") if wrap else s
                    s.sendall(b"*1\r\n$4\r\nPING\r\n")
                    if s.recv(16) != b"+PONG\r\n":
                        raise RuntimeError("no PONG")
                    conns.append(s)
                wait.hold(0.3, "the proxy's memory settled before the reading")
                out[name] = (rss_kb(pid) - before) * 1024 / count
                for s in conns:
                    s.close()
            return out
        finally:
            self.stop_variant()


def report(res, rounds):
    lines = [f"medians of {rounds} rounds; proxy side: nutcrackers (nc), or stunnel + twemproxy + stunnel (tw)", "",
             "| workload | variant | req/s | proxy side CPU µs/req | servers' CPU µs/req |", "|---|---|---|---|---|"]
    for w in res:
        m = {v: {k: med([r[k] for r in res[w][v]]) for k in ("rps", "proxy_us", "servers_us")} for v in res[w]}
        for v, row in m.items():
            lines.append(f"| {w} | {v} | {fmt(row['rps'], 0)} | {fmt(row['proxy_us'])} | {fmt(row['servers_us'])} |")
        if "nc" in m and "tw" in m:
            r = {k: m["nc"][k] / m["tw"][k] if m["tw"][k] else float("nan") for k in m["nc"]}
            lines.append(f"| {w} | **nc/tw** | **{fmt(r['rps'])}** | **{fmt(r['proxy_us'])}** | "
                         f"{fmt(r['servers_us'])} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    common_args(ap)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--servers", type=int, default=4)
    ap.add_argument("--idle", type=int, default=1000, help="idle connections of each kind for the memory figure")
    ap.add_argument("--stunnel-bin", default=shutil.which("stunnel4") or shutil.which("stunnel") or "stunnel4")
    ap.add_argument("--only", default="", help="comma-separated workload names (default: all)")
    args = ap.parse_args()
    bench.absolute_bins(args)
    raise_nofile()
    b = TlsBench(args)
    chosen = [w for w in WORKLOADS if not args.only or w[0] in args.only.split(",")]
    res = {w[0]: {"nc": [], "tw": []} for w in chosen}
    try:
        b.start_servers()
        for rnd in range(args.rounds):
            for w in chosen:
                for v in ("nc", "tw"):
                    r = b.one_run(v, w)
                    log(f"{w[0]} round {rnd + 1} {v}: {r['rps']:.0f} req/s, proxy side {r['proxy_us']:.2f} us/req, "
                        f"servers {r['servers_us']:.2f} us/req")
                    res[w[0]][v].append(r)
        print(report(res, args.rounds))
        if args.idle > 0:
            mem = b.idle_memory(args.idle)
            print(f"idle clients ({args.idle} of each): nutcrackers' RSS per connection: plain "
                  f"{mem['plain']:.0f} B, TLS {mem['tls']:.0f} B\n")
            res["idle_bytes"] = mem
        if args.json:
            write_json(args.json, res)
    finally:
        b.stop_variant()
        for _, p in b.servers:
            stop(p)
        if not args.keep:
            shutil.rmtree(b.dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
