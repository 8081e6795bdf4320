#!/usr/bin/env bash
# bench/instr.sh - instructions per request of one or more nutcrackers builds, counted by
# callgrind: deterministic where bench/run.sh's CPU times are not (2 shared cores move those by
# +-10% from round to round). One client, so every request is its own loop iteration and the
# count does not depend on timing. Each build runs each workload twice, with N and 3N requests;
# the difference / 2N is the per-request count, start-up and shut-down cancelled out.
#
#   bench/instr.sh BIN [BIN...]            e.g. bench/instr.sh /tmp/nc-before build/src/nutcrackers
#   NC_INSTR_N=5000 (requests of the small run), NC_INSTR_WORKLOADS="redis_get_p1 ..."
#   NC_INSTR_KEEP=DIR keeps each run's callgrind output there (DIR/FOLDER-BIN.WORKLOAD.REQUESTS.out)
#   for callgrind_annotate or bench/cg_groups.py (instructions per request by group of code)
#
# Workloads: redis_get_p1, redis_set_p16, redis_get_p16 (not in the default set; redis-benchmark,
# 1 client), mc_get_p1, mc_get_p16, mcmeta_get_p1, mcmeta_get_p16, mcbin_get_p1, mcbin_get_p16
# (the last four not in the default set: meta `mg <key> v`, binary GET) (bench/ncload, 1 client;
# bench/instr_lib.sh). Needs valgrind, redis-server, redis-benchmark, memcached and bench/ncload
# (`make -C bench`). Only 127.0.0.1; every process it starts is stopped.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
N=${NC_INSTR_N:-5000}
WORKLOADS=${NC_INSTR_WORKLOADS:-"redis_get_p1 redis_set_p16 mc_get_p1 mc_get_p16"}
[ $# -ge 1 ] || { echo "usage: bench/instr.sh BIN [BIN...]" >&2; exit 2; }
for tool in valgrind callgrind_annotate redis-server redis-benchmark memcached; do
    command -v "$tool" >/dev/null || { echo "bench/instr.sh: $tool is missing" >&2; exit 2; }
done
PIN=""
# shellcheck source=bench/instr_lib.sh
. "$ROOT/bench/instr_lib.sh"
bench_setup instr

# count BIN WORKLOAD REQUESTS: the proxy's instructions (all threads) for that many requests
count() {
    local bin=$1 wl=$2 n=$3 d rp mp pp mcp sp vp
    d=$(mktemp -d "$WORK/run.XXXXXX")
    start_backends "$d"
    valgrind --tool=callgrind --callgrind-out-file="$d/cg.out" "$bin" -c "$d/conf.yml" -T 1 \
        -s "$sp" -a 127.0.0.1 -o "$d/proxy.log" >/dev/null 2>"$d/valgrind.log" &
    vp=$!
    wait_port "$pp"; wait_port "$mcp"
    run_load "$wl" "$n"
    kill -TERM "$vp"; wait "$vp" || true
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    PIDS=()
    if [ -n "${NC_INSTR_KEEP:-}" ]; then
        mkdir -p "$NC_INSTR_KEEP"
        cp "$d/cg.out" "$NC_INSTR_KEEP/$(basename "$(dirname "$bin")")-$(basename "$bin").$wl.$n.out"
    fi
    callgrind_annotate "$d/cg.out" | awk '/PROGRAM TOTALS/ && !done { gsub(",", "", $1); print $1; done = 1 }'
}

printf '%-14s' workload
for bin in "$@"; do printf ' %14s' "$(basename "$(dirname "$bin")")/$(basename "$bin")"; done
printf '   (instructions per request)\n'
for wl in $WORKLOADS; do
    printf '%-14s' "$wl"
    for bin in "$@"; do
        a=$(count "$bin" "$wl" "$N")
        b=$(count "$bin" "$wl" $((3 * N)))
        printf ' %14d' $(((b - a) / (2 * N)))
    done
    printf '\n'
done
