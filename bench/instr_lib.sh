# shellcheck shell=bash
# bench/instr_lib.sh - what bench/instr.sh and bench/profile.sh share (sourced, not run): their
# temporary folder and the processes stopped at exit, free ports, waiting for a listener, the two
# backends with the proxy's config over them, and the one-client loads. The caller sets ROOT, and
# PIN: empty, or a command that pins what follows (e.g. "taskset -c 0"), for the backends and
# the load.

# bench_setup NAME: WORK (a temporary folder) and PIDS (processes), both gone at exit; builds
# bench/ncload if it is missing.
bench_setup() {
    [ -x "$ROOT/bench/ncload" ] || make -C "$ROOT/bench" >/dev/null
    WORK=$(mktemp -d "/tmp/nc-$1.XXXXXX")
    PIDS=()
    trap bench_cleanup EXIT
}
bench_cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

wait_port() {  # wait_port PORT: until something accepts on it (bounded: 20 s)
    for _ in $(seq 1 200); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    echo "bench: nothing listens on $1" >&2
    return 1
}

# start_backends DIR: a redis-server and a memcached on free ports, and DIR/conf.yml for the proxy
# (pool r over the redis, pool m over the memcached). Sets rp and mp (theirs), pp and mcp (the
# proxy's listeners) and sp (its stats port).
start_backends() {
    local d=$1
    rp=$(free_port); mp=$(free_port); pp=$(free_port); mcp=$(free_port)
    # shellcheck disable=SC2034
    sp=$(free_port) # the callers'
    # shellcheck disable=SC2086  # PIN is a command of several words, or nothing
    $PIN redis-server --port "$rp" --bind 127.0.0.1 --save "" --appendonly no --logfile "$d/redis.log" &
    PIDS+=($!)
    # shellcheck disable=SC2086
    $PIN memcached -u "$(id -un)" -l 127.0.0.1 -p "$mp" -U 0 &
    PIDS+=($!)
    printf 'r:\n  listen: 127.0.0.1:%s\n  redis: true\n  servers:\n   - 127.0.0.1:%s:1\nm:\n  listen: 127.0.0.1:%s\n  servers:\n   - 127.0.0.1:%s:1\n' \
        "$pp" "$rp" "$mcp" "$mp" >"$d/conf.yml"
    wait_port "$rp"; wait_port "$mp"
}

# run_load WORKLOAD N: N requests of one client on the proxy's listeners (pp, mcp), after the SET
# of the keys the GETs read (redis: the one key redis-benchmark reads; memcached: ncload's 10,000,
# so every memcached GET is a hit). Workloads: redis_get_p1, redis_get_p16, redis_set_p16 (redis-benchmark),
# mc_get_p1, mc_get_p16 (bench/ncload, 16-byte values), mcmeta_get_p1, mcmeta_get_p16 (the same
# with memcached's meta `mg <key> v`), mcbin_get_p1, mcbin_get_p16 (the same with the binary
# protocol's GET).
run_load() {
    local wl=$1 n=$2
    redis-benchmark -p "$pp" -n 1 -c 1 -t set -q >/dev/null 2>&1
    case $wl in
        mc*) "$ROOT/bench/ncload" load --proto mc -p "$mcp" -c 1 -P 32 --seq --op set -d 16 -n 10000 -r 10000 >/dev/null ;;
    esac
    # shellcheck disable=SC2086
    case $wl in
        redis_get_p1) $PIN redis-benchmark -p "$pp" -n "$n" -c 1 -t get -P 1 -q >/dev/null 2>&1 ;;
        redis_get_p16) $PIN redis-benchmark -p "$pp" -n "$n" -c 1 -t get -P 16 -q >/dev/null 2>&1 ;;
        redis_set_p16) $PIN redis-benchmark -p "$pp" -n "$n" -c 1 -t set -P 16 -q >/dev/null 2>&1 ;;
        mc_get_p1) $PIN "$ROOT/bench/ncload" load --proto mc -p "$mcp" -c 1 -P 1 -n "$n" --op get -d 16 >/dev/null ;;
        mc_get_p16) $PIN "$ROOT/bench/ncload" load --proto mc -p "$mcp" -c 1 -P 16 -n "$n" --op get -d 16 >/dev/null ;;
        mcmeta_get_p1) $PIN "$ROOT/bench/ncload" load --proto mcmeta -p "$mcp" -c 1 -P 1 -n "$n" --op get -d 16 >/dev/null ;;
        mcmeta_get_p16) $PIN "$ROOT/bench/ncload" load --proto mcmeta -p "$mcp" -c 1 -P 16 -n "$n" --op get -d 16 >/dev/null ;;
        mcbin_get_p1) $PIN "$ROOT/bench/ncload" load --proto mcbin -p "$mcp" -c 1 -P 1 -n "$n" --op get -d 16 >/dev/null ;;
        mcbin_get_p16) $PIN "$ROOT/bench/ncload" load --proto mcbin -p "$mcp" -c 1 -P 16 -n "$n" --op get -d 16 >/dev/null ;;
        *) echo "bench: unknown workload $wl" >&2; exit 2 ;;
    esac
}
