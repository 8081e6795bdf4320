#!/usr/bin/env bash
# bench/profile.sh - where a build's CPU goes per request, kernel and user, on bench/instr.sh's
# workloads (one client, one redis-server or memcached): the proxy (-T 1) pinned to CPU 1, the
# load and the backend to CPU 0, `perf record -e cpu-clock -g` on the proxy for the whole load,
# and its CPU per request from /proc/PID/stat (utime + stime) around it. Prints, per workload,
# the proxy's CPU µs per request and the share of its samples by where they fall: user space by
# object (the proxy, libevent, libc), the kernel under each system call (read, writev,
# epoll_wait) and the rest of the kernel; within writev, the loopback's receive side (the
# peer's TCP input runs in the writer's softirq). The user-space split by function group comes
# from callgrind instead (bench/instr.sh with NC_INSTR_KEEP, then bench/cg_groups.py).
#
#   bench/profile.sh BIN          NC_PROFILE_N=100000 (requests at pipeline 1; 10 times as many at
#                                 pipeline 16), NC_INSTR_WORKLOADS as instr.sh
#
# Needs perf, redis-server, redis-benchmark, memcached, bench/ncload. Only 127.0.0.1; every process
# it starts is stopped.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
N1=${NC_PROFILE_N:-100000}
WORKLOADS=${NC_INSTR_WORKLOADS:-"redis_get_p1 redis_get_p16 mc_get_p1 mc_get_p16"}
BIN=${1:?usage: bench/profile.sh BIN}
PIN="taskset -c 0"
# shellcheck source=bench/instr_lib.sh
. "$ROOT/bench/instr_lib.sh"
bench_setup profile

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# the shares of perf.data's samples: self by object, then (perf report --children: with what it
# calls) the kernel under each system call, and inside writev the loopback's receive side (the
# peer's TCP input, its wake-up)
shares() {
    local data=$1
    perf report -i "$data" --no-children --sort dso --stdio 2>/dev/null |
        awk '/^ +[0-9.]+%/ { gsub("%", "", $1); printf "  %-34s %5.1f%%\n", "self in " $2, $1 }' | head -6
    perf report -i "$data" --children --sort sym --stdio 2>/dev/null |
        awk '/^ +[0-9.]+% +[0-9.]+%/ {
                 gsub("%", "", $1); s = $NF; sub(/\.isra.*$/, "", s)
                 if (s ~ /^(do_writev|ksys_read|__x64_sys_epoll_wait|tcp_v4_rcv|sock_def_readable|finish_task_switch|entry_SYSCALL_64_after_hwframe)$/ && !seen[s]++)
                     printf "  %-34s %5.1f%%\n", s, $1 }'
}

for wl in $WORKLOADS; do
    N=$N1
    case $wl in *_p16) N=$((10 * N1)) ;; esac  # /proc counts 10 ms ticks: enough of them
    d=$(mktemp -d "$WORK/run.XXXXXX")
    start_backends "$d"
    taskset -c 1 "$BIN" -c "$d/conf.yml" -T 1 -s "$sp" -a 127.0.0.1 -o "$d/proxy.log" &
    np=$!
    PIDS+=("$np")
    wait_port "$pp"; wait_port "$mcp"
    perf record -e cpu-clock -g -p "$np" -o "$d/perf.data" >/dev/null 2>&1 &
    pf=$!
    sleep 1
    t0=$(cpu_ticks "$np")
    run_load "$wl" "$N"
    t1=$(cpu_ticks "$np")
    kill -INT "$pf"; wait "$pf" || true
    hz=$(getconf CLK_TCK)
    printf '%s: proxy CPU %s us per request (%s ticks of 1/%s s for %s requests)\n' "$wl" \
        "$(python3 -c "print(round(($t1 - $t0) * 1e6 / $hz / $N, 2))")" "$((t1 - t0))" "$hz" "$N"
    shares "$d/perf.data"
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    PIDS=()
done
