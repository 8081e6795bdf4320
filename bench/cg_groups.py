#!/usr/bin/env python3
"""bench/cg_groups.py - user-space instructions per request by group of the proxy's code, from two
callgrind outputs of one workload (N and 3N requests, as bench/instr.sh keeps them with
NC_INSTR_KEEP): each function's self cost in the larger run minus the smaller, over 2N, summed by
group (the source file of the code, inlined code included: callgrind names the file it came from).

    bench/cg_groups.py SMALL.out LARGE.out N [--top K]

--top K also lists the K functions with the most instructions per request.
"""
import argparse
import re
import subprocess
import sys

# (group, test on "file:function [object]"); the first that matches names the group
RULES = [
    ("libevent", lambda f, fn: "libevent" in f),
    ("libc: system call wrappers, clock", lambda f, fn: fn.split("@")[0] in (
        "read", "writev", "epoll_wait", "epoll_ctl", "__pthread_enable_asynccancel",
        "__pthread_disable_asynccancel", "clock_gettime", "__clock_gettime", "__vdso_clock_gettime",
        "syscall", "__libc_read", "__libc_writev") or "vdso" in f),
    ("libc: malloc/free", lambda f, fn: "malloc" in f or fn in ("free", "malloc", "calloc", "realloc")),
    ("libc: memchr, memcpy, ...", lambda f, fn: "libc" in f),
    ("transport wrapper (net/transport*)", lambda f, fn: "net/transport" in f),
    ("fair share (core/fair*)", lambda f, fn: "core/fair" in f),
    ("-M accounting (core/client_mem*)", lambda f, fn: "core/client_mem" in f),
    ("command lookup", lambda f, fn: "redis_cmd" in f or "memcache_cmd" in f),
    ("parser: replies", lambda f, fn: "redis_rsp" in f or "memcache_rsp" in f),
    ("parser: requests, reader loop", lambda f, fn: "/proto/" in f),
    ("hashing, routing", lambda f, fn: "/hash/" in f or "core/route" in f or "core/pool" in f),
    ("msg/mbuf get/put", lambda f, fn: "/msg/" in f),
    ("stats", lambda f, fn: "/stats/" in f),
    ("reply path (server_on_reply .. client_write)", lambda f, fn: fn in (
        "server_on_readable", "server_on_reply", "server_msg_begin", "server_parse", "request_complete",
        "request_done", "client_reply_ready", "client_write", "client_flush", "client_flush_queued",
        "request_free", "request_record_latency", "client_on_writable")),
    ("request path (client_on_readable .. server_write)", lambda f, fn: fn in (
        "client_on_readable", "client_on_msg", "client_msg_begin", "client_parse", "request_dispatch",
        "request_forward", "request_route", "request_forward_one", "server_enqueue",
        "server_conn_enqueue", "client_req_queued", "server_write", "server_flush", "server_arm_timer",
        "conn_flush_later", "conn_flush_queue", "loop_on_flush")),
    ("conn: events, read/write loops", lambda f, fn: "core/conn" in f or "core/loop" in f or fn in (
        "conn_recv", "conn_writev", "conn_on_event")),
    ("rest of the proxy", lambda f, fn: "/src/" in f),
    ("other (dynamic loader, ...)", lambda f, fn: True),
]

LINE = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*)$")


def costs(path):
    out = subprocess.run(["callgrind_annotate", "--threshold=100", "--auto=no", path], check=True,
                         capture_output=True, text=True).stdout
    res = {}
    for line in out.splitlines():
        m = LINE.match(line)
        if not m or "PROGRAM TOTALS" in line or "=>" in line:
            continue
        res[m.group(2).strip()] = res.get(m.group(2).strip(), 0) + int(m.group(1).replace(",", ""))
    return res


def group_of(name):
    obj = name[name.rfind("[") + 1:-1] if name.endswith("]") else ""
    loc = name[:name.rfind(" [")] if obj else name
    f, _, fn = loc.rpartition(":")
    fn = fn.split(".")[0]  # foo.part.0.isra.0
    for g, test in RULES:
        if test(f + " " + obj, fn):
            return g
    return RULES[-1][0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("small")
    ap.add_argument("large")
    ap.add_argument("n", type=int)
    ap.add_argument("--top", type=int, default=0)
    a = ap.parse_args()
    s, l = costs(a.small), costs(a.large)
    per = {k: (l.get(k, 0) - s.get(k, 0)) / (2 * a.n) for k in set(s) | set(l)}
    groups = {}
    for k, v in per.items():
        groups[group_of(k)] = groups.get(group_of(k), 0) + v
    total = sum(per.values())
    print(f"{'group':50s} {'instr/req':>9s} {'share':>6s}")
    for g, v in sorted(groups.items(), key=lambda kv: -kv[1]):
        if abs(v) >= 0.5:
            print(f"{g:50s} {v:9.0f} {100 * v / total:5.1f}%")
    print(f"{'total':50s} {total:9.0f}")
    for k, v in sorted(per.items(), key=lambda kv: -kv[1])[:a.top]:
        print(f"{v:8.1f}  {group_of(k):28.28s}  {k}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
