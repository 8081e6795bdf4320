#!/usr/bin/env python3
"""Soak test (bounded, a few minutes; not part of the default CI run).

Starts 3 redis-servers and 3 memcacheds on free loopback ports and the proxy (-T 4) in front of
them with auto_eject_hosts, then runs mixed redis and memcached load from many client threads
while one backend at a time is killed (-9) and restarted every few seconds. Every reply is
checked against what that client wrote (a value may be missing after its backend restarted, but
it is never another key's value). At the end the proxy's RSS and open fd count must be back
within 10% of their baseline.

    python3 tests/soak/soak.py [--seconds 180] [--clients 40] [--bin src/nutcrackers]
Exit status 0 when every check passed.
"""
import argparse
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HOST = "127.0.0.1"


def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def wait_port(port, timeout=10.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            socket.create_connection((HOST, port), timeout=0.2).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


class Backend:
    def __init__(self, kind, workdir):
        self.kind, self.port, self.workdir, self.proc = kind, free_port(), workdir, None

    def start(self):
        if self.kind == "redis":
            args = ["redis-server", "--port", str(self.port), "--bind", HOST, "--save", "",
                    "--appendonly", "no"]
        else:
            args = ["memcached", "-u", "root", "-l", HOST, "-p", str(self.port), "-U", "0"]
        self.proc = subprocess.Popen(args, cwd=self.workdir, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        wait_port(self.port)

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)


def proc_stat(pid):
    rss = 0
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1])
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


class Client(threading.Thread):
    """One connection; writes its own keys and checks every reply it reads back."""

    def __init__(self, idx, port, redis, stop):
        super().__init__(daemon=True)
        self.idx, self.port, self.redis, self.stop = idx, port, redis, stop
        self.ok = self.errors = self.wrong = 0
        self.wrong_samples = []

    def connect(self):
        s = socket.create_connection((HOST, self.port), timeout=5)
        s.settimeout(5)
        return s, s.makefile("rb")

    def run(self):
        rnd = random.Random(self.idx)
        written = {}
        sock = f = None
        n = 0
        while not self.stop.is_set():
            try:
                if sock is None:
                    sock, f = self.connect()
                n += 1
                key = f"soak:{self.idx}:{rnd.randrange(200)}"
                val = f"{self.idx}-{n}-" + "x" * rnd.randrange(2000)
                if self.redis:
                    k, v = key.encode(), val.encode()
                    sock.sendall(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v)
                                 + b"*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n" % (len(k), k))
                    r1 = f.readline()
                    r2 = f.readline()
                    got = None
                    if r2.startswith(b"$") and r2 != b"$-1\r\n":
                        got = f.read(int(r2[1:]) + 2)[:-2].decode()
                    if r1 != b"+OK\r\n" or not r2.startswith(b"$"):
                        self.errors += 1  # an error reply (backend down): allowed
                        continue
                else:
                    sock.sendall(b"set %s 0 0 %d\r\n%s\r\nget %s\r\n" % (key.encode(), len(val), val.encode(), key.encode()))
                    r1 = f.readline()
                    line = f.readline()
                    got = None
                    if line.startswith(b"VALUE "):
                        parts = line.split()
                        if parts[1].decode() != key:
                            self.wrong += 1
                            self.wrong_samples.append((key, line))
                        got = f.read(int(parts[3]) + 2)[:-2].decode()
                        line = f.readline()
                    if r1 != b"STORED\r\n" or line != b"END\r\n":
                        self.errors += 1
                        continue
                if got is not None and got != val:
                    self.wrong += 1
                    self.wrong_samples.append((key, got[:40], val[:40]))
                written[key] = val
                self.ok += 1
            except (OSError, ValueError):
                self.errors += 1
                try:
                    sock.close()
                except Exception:
                    pass
                sock = f = None
                time.sleep(0.05)
        if sock:
            sock.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=180)
    ap.add_argument("--clients", type=int, default=40)
    ap.add_argument("--bin", default=os.environ.get("NUTCRACKERS_BIN", "src/nutcrackers"))
    args = ap.parse_args()
    for tool in ("redis-server", "memcached"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is not installed")
    work = tempfile.mkdtemp(prefix="nc-soak.")
    backends = [Backend("redis", work) for _ in range(3)] + [Backend("memcache", work) for _ in range(3)]
    proxy = None
    try:
        for b in backends:
            b.start()
        rport, mport, sport = free_port(), free_port(), free_port()
        common = "  auto_eject_hosts: true\n  server_failure_limit: 2\n  server_retry_timeout: 1000\n  timeout: 500\n"
        conf = os.path.join(work, "soak.yml")
        with open(conf, "w") as fh:
            fh.write(f"soak_redis:\n  listen: {HOST}:{rport}\n  redis: true\n{common}  servers:\n")
            fh.writelines(f"   - {HOST}:{b.port}:1\n" for b in backends[:3])
            fh.write(f"soak_mc:\n  listen: {HOST}:{mport}\n{common}  servers:\n")
            fh.writelines(f"   - {HOST}:{b.port}:1\n" for b in backends[3:])
        proxy = subprocess.Popen([args.bin, "-c", conf, "-T", "4", "-s", str(sport), "-a", HOST,
                                  "-o", os.path.join(work, "proxy.log")])
        if not (wait_port(rport) and wait_port(mport)):
            sys.exit("the proxy did not start")
        # warm-up: every worker opens its server connections; the baseline is taken after it,
        # with no client connected
        warm = threading.Event()
        warmers = [Client(i, rport if i % 2 == 0 else mport, i % 2 == 0, warm) for i in range(args.clients)]
        for c in warmers:
            c.start()
        time.sleep(3.0)
        warm.set()
        for c in warmers:
            c.join(timeout=15)
        time.sleep(2.0)
        base_rss, base_fds = proc_stat(proxy.pid)
        stop = threading.Event()
        clients = [Client(i, rport if i % 2 == 0 else mport, i % 2 == 0, stop) for i in range(args.clients)]
        for c in clients:
            c.start()
        end = time.time() + args.seconds
        rnd = random.Random(1)
        while time.time() < end:
            time.sleep(min(3.0, max(0.0, end - time.time())))
            victim = rnd.choice(backends)
            victim.kill()
            time.sleep(1.0)
            victim.start()
        stop.set()
        for c in clients:
            c.join(timeout=15)
        time.sleep(3.0)  # the proxy trims its buffers once a second
        rss, fds = proc_stat(proxy.pid)
        ok = sum(c.ok for c in clients)
        errors = sum(c.errors for c in clients)
        wrong = sum(c.wrong for c in clients)
        print(f"requests ok {ok}, error replies {errors}, WRONG replies {wrong}")
        print(f"RSS {base_rss} kB -> {rss} kB, fds {base_fds} -> {fds}")
        failed = []
        if wrong:
            failed.append(f"wrong replies: {[s for c in clients for s in c.wrong_samples][:5]}")
        if proxy.poll() is not None:
            failed.append("the proxy died")
        if rss > base_rss * 1.10 + 1024:
            failed.append("RSS not back within 10% (+1 MB) of its baseline")
        if fds > base_fds * 1.10 + 2:
            failed.append("fd count not back within 10% of its baseline")
        if ok == 0:
            failed.append("no request succeeded")
        if proxy.poll() is None:  # a clean exit too: a sanitized build reports leaks at exit
            proxy.terminate()
            try:
                status = proxy.wait(timeout=30)
            except subprocess.TimeoutExpired:
                status = "none in 30 s"
            if status != 0:
                failed.append(f"the proxy's exit status on SIGTERM: {status}")
        for f in failed:
            print("FAILED:", f)
        print("soak: " + ("1 passed, 0 failed" if not failed else "0 passed, 1 failed"))
        return 1 if failed else 0
    finally:
        if proxy and proxy.poll() is None:
            proxy.terminate()
            proxy.wait(timeout=10)
        for b in backends:
            b.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
