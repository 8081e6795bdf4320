#!/usr/bin/env bash
# scripts/fuzz.sh - builds the libFuzzer targets (`make fuzz`, clang, ASan+UBSan) and runs each one
# for a bounded time from its seed corpus (tests/fuzz/corpus/<target>/). Exits non-zero when a
# target crashes (a failed check, a sanitizer report, a leak, a timeout); the crashing input is
# kept and printed (base64), and its log is printed. scripts/test.sh runs it as its fuzz stage.
#
#   scripts/fuzz.sh [TARGET...]     targets: redis_req redis_rsp mc_req mc_rsp mc_bin_req mc_bin_rsp
#                                   conf manage_line manage_http (default: all)
#
#   FUZZ_TIME=60        seconds per target (libFuzzer -max_total_time)
#   FUZZ_BUILD=<dir>    a configured build tree to run `make fuzz` in (default: build/, configured
#                       here, out of tree, when it has no Makefile)
#   FUZZ_OUT=<dir>      working corpora, logs and crashes (default: <build>/tests/fuzz/run); the
#                       repo's seed corpora are never written to
#   FUZZ_NICE=19        nice level of the fuzzers
#   FUZZ_ARGS           extra libFuzzer flags, e.g. "-max_len=2048"
#   FUZZ_JOBS=1         how many targets run at the same time (each is one process on one core)
# shellcheck disable=SC2317
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ALL_TARGETS=(redis_req redis_rsp mc_req mc_rsp mc_bin_req mc_bin_rsp conf manage_line manage_http)
TIME=${FUZZ_TIME:-60}
BUILD=${FUZZ_BUILD:-$ROOT/build}
NICE=${FUZZ_NICE:-19}

log() { printf '==> %s\n' "$*" >&2; }

if [ ! -f "$BUILD/Makefile" ]; then
    [ -x "$ROOT/configure" ] || (cd "$ROOT" && autoreconf -fi)
    mkdir -p "$BUILD"
    log "configuring $BUILD"
    (cd "$BUILD" && "$ROOT/configure" --enable-werror >/dev/null)
fi
BUILD=$(cd "$BUILD" && pwd)
OUT=${FUZZ_OUT:-$BUILD/tests/fuzz/run}
log "make fuzz (in $BUILD)"
make -C "$BUILD" -j2 fuzz

targets=("$@")
[ "${#targets[@]}" -gt 0 ] || targets=("${ALL_TARGETS[@]}")
JOBS=${FUZZ_JOBS:-1}
# any sanitizer report is fatal; leaks too (libFuzzer reports them as crashes)
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allocator_may_return_null=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

# fuzz_target T: runs one target; its verdict (and, on failure, the log's tail and the inputs)
# goes to $OUT/T/verdict, printed by the caller, so targets run side by side do not interleave
fuzz_target() {
    local t="$1" bin="$BUILD/tests/fuzz/bin/fuzz_$1" seeds="$ROOT/tests/fuzz/corpus/$1"
    local dict="$ROOT/tests/fuzz/dict/$1.dict" verdict="$OUT/$1/verdict" rc=0 runs a
    mkdir -p "$OUT/$t/corpus"
    rm -f "$OUT/$t"/crash-* "$OUT/$t"/leak-* "$OUT/$t"/timeout-* "$OUT/$t"/oom-*
    # -max_len=4096: the smallest length that still reaches every limit (a memcached line over
    # MC_LINE_MAX 2048, a 4096-byte mbuf filling up) and libFuzzer's own default; pinned so that a
    # bigger seed cannot raise it (time per input grows with its length). The manage port's line
    # buffer is 4096 bytes (MANAGE_LINE_MAX): a line that does not fit, after a line and the
    # header, and an HTTP header line too long after its request line, need 8192
    local maxlen=4096
    case "$t" in manage_*) maxlen=8192 ;; esac
    local args=(-max_total_time="$TIME" -max_len="$maxlen" -timeout=10 -rss_limit_mb=2048
                -print_final_stats=1 -artifact_prefix="$OUT/$t/")
    [ -f "$dict" ] && args+=(-dict="$dict")
    # shellcheck disable=SC2206  # FUZZ_ARGS is a list of words
    args+=(${FUZZ_ARGS:-})
    log "fuzzing $t for ${TIME}s (log: $OUT/$t/fuzz.log)"
    nice -n "$NICE" "$bin" "${args[@]}" "$OUT/$t/corpus" "$seeds" >"$OUT/$t/fuzz.log" 2>&1 || rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$OUT/$t/fuzz.log" | tail -1)
    if [ "$rc" -eq 0 ]; then
        echo "==> $t: ok, ${runs:-?} executions in ${TIME}s without a crash" >"$verdict"
        return 0
    fi
    {
        echo "==> $t: FAILED (exit $rc) after ${runs:-?} executions"
        tail -n 60 "$OUT/$t/fuzz.log"
        for a in "$OUT/$t"/crash-* "$OUT/$t"/leak-* "$OUT/$t"/timeout-* "$OUT/$t"/oom-*; do
            [ -f "$a" ] || continue
            echo "==> input $a (base64):"
            base64 -w 76 "$a"
        done
    } >"$verdict"
    return 1
}

failed=0
for t in "${targets[@]}"; do
    [ -x "$BUILD/tests/fuzz/bin/fuzz_$t" ] || { log "no such target: $t"; failed=1; }
done
[ "$failed" -eq 0 ] || exit 1
# at most JOBS targets at once; each verdict is printed when all are done
running=0
for t in "${targets[@]}"; do
    if [ "$running" -ge "$JOBS" ]; then
        wait -n || true
        running=$((running - 1))
    fi
    mkdir -p "$OUT/$t" && rm -f "$OUT/$t/verdict"
    fuzz_target "$t" &
    running=$((running + 1))
done
wait || true
for t in "${targets[@]}"; do
    if [ -f "$OUT/$t/verdict" ]; then cat "$OUT/$t/verdict" >&2; else
        echo "==> $t: FAILED (no verdict: the run did not finish)" >&2
    fi
    grep -q '^==> [^ ]*: ok,' "$OUT/$t/verdict" 2>/dev/null || failed=1
done
exit "$failed"
