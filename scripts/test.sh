#!/usr/bin/env bash
# scripts/test.sh - the whole test run on a (fresh) Debian 12 machine: installs what is missing,
# builds out of tree (build/), runs the C unit tests (make check) and the integration tests
# (pytest, real redis-server and memcached on loopback); then the hardening stages: an ASan+UBSan
# build (build-asan/) with the unit tests and the whole integration suite, a TSan build
# (build-tsan/) with the unit tests and the whole integration suite (-T 4 where a test does not
# choose), each integration suite in two pytest processes at once, and a short run
# of every libFuzzer target (scripts/fuzz.sh), and the Debian package: built from a copy of the
# tree, installed, its binary run, purged. Any sanitizer report fails its stage. Exits non-zero on
# any failure and prints a summary with each stage's time.
#
# The client tests need toolchains of their own: Go (go-redis), a JDK >= 17 and Maven (Jedis),
# Node.js >= 20 and npm (ioredis, node-redis, BullMQ, memjs), Ruby with Dalli 3.0.6 (Debian's
# ruby-dalli). Missing ones are installed from Debian where Debian's version is enough (Debian 12:
# the JDK, Maven, Ruby and ruby-dalli; its Go 1.19 and Node.js 18 are too old). A group whose
# toolchain is still missing or too old does not run: its tests skip, saying why, and the summary
# has one line for it ("not run: <why>, what to install"), which fails nothing. A client that does
# not build or install with its toolchain there fails its step.
#
#   CONFIGURE_FLAGS   extra ./configure flags of the main build, e.g. "--enable-debug=full"
#   PYTEST_ARGS       extra pytest arguments (every pytest stage), e.g. "-k daemon"
#   NC_SKIP_DEPS=1    do not install anything
#   NC_CLIENTS=0      do not install Go, Java, Maven, Ruby or Dalli nor build the go-redis and
#                     Jedis client programs (their tests then skip, and so do the framework tests,
#                     RQ and BullMQ, and the Dalli tests, when those cannot be had)
#   NC_REQUIRE_NODE_CLIENTS=1  fail the Node client tests when Node.js (>= 20) is missing too (by
#                     default they then skip, and the summary says so; with Node.js there, a
#                     failed install of the pinned clients fails them)
#   NC_DISTCHECK=1    also run `make distcheck`
#   NC_DEB=0          skip the Debian package stage (it installs and purges the package
#                     nutcrackers as root; skipped by itself where one is already installed)
#   NC_SANITIZERS=0   skip the ASan and TSan stages (NC_ASAN=0 / NC_TSAN=0: one of them)
#   NC_SAN_PARALLEL=0 run the sanitizer, fuzz and package stages one after the other, after the
#                     main integration stage (by default the sanitizer builds and unit tests run at
#                     the lowest priority beside the main integration stage, then the two
#                     sanitizers' integration stages, the fuzz smoke and the Debian package run at
#                     the same time: the tests mostly wait on sockets and timers, the fuzzers and
#                     the package build run at the lowest priority)
#   NC_SHARDS=N       pytest processes of each integration stage (plain, ASan, TSan), which share
#                     its test files out among themselves (default 2; 1: one process runs them all)
#   NC_FUZZ=0         skip the fuzz stage; NC_FUZZ_TIME=N: seconds per target (default 15);
#                     NC_FUZZ_JOBS=N: targets run at once (default: the number of cores)
#   NC_ASAN_PYTEST_ARGS, NC_TSAN_PYTEST_ARGS   extra pytest arguments of one sanitizer stage only,
#                     e.g. a subset ("-k 'not slow'") should the suite outgrow the time budget
#
# All builds are out of tree, so a source tree configured in place (./configure run in it) is
# cleaned first with `make distclean` (autoconf refuses out-of-tree builds of such a tree).
# shellcheck disable=SC2317  # functions run through step/trap look unreachable to it
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=scripts/lib/deps.sh
. scripts/lib/deps.sh

declare -A RESULT=()
STEPS=()
FAILED=0

step() {  # step NAME command...: runs it, records ok/FAILED and its time, never aborts the script
    local name="$1" rc=0 t0=$SECONDS
    shift
    nc_log "$name"
    STEPS+=("$name")
    "$@" || rc=$?
    local took="$((SECONDS - t0)) s"
    if [ "$rc" -eq 0 ]; then RESULT[$name]="ok ($took)"; else
        RESULT[$name]="FAILED (exit $rc, $took)"
        FAILED=1
    fi
    return "$rc"
}

skip() { STEPS+=("$1"); RESULT[$1]="skipped"; }

# The client groups whose toolchain is missing or too old here (nc_*_toolchain): group -> why
declare -A NOT_RUN=()
client_toolchains() {
    local why
    why=$(nc_go_toolchain) || NOT_RUN[$NC_GROUP_GO]="$why"
    why=$(nc_java_toolchain) || NOT_RUN[$NC_GROUP_JAVA]="$why"
    why=$(nc_node_toolchain) || NOT_RUN[$NC_GROUP_NODE]="$why"
    why=$(nc_ruby_toolchain) || NOT_RUN[$NC_GROUP_RUBY]="$why"
}
# a summary line for each group that does not run (a line, not a step: it fails nothing)
not_run_lines() {
    local g
    for g in "$NC_GROUP_GO" "$NC_GROUP_JAVA" "$NC_GROUP_NODE" "$NC_GROUP_RUBY"; do
        if [ -n "${NOT_RUN[$g]:-}" ]; then STEPS+=("$g"); RESULT[$g]="not run: ${NOT_RUN[$g]}"; fi
    done
}

summary() {
    echo
    echo "==================== nutcrackers test summary ===================="
    local s
    for s in "${STEPS[@]}"; do printf '  %-48s %s\n' "$s" "${RESULT[$s]}"; done
    echo "  total: $SECONDS s"
    if [ "$FAILED" -ne 0 ]; then echo "  result: FAILED"
    elif [ "${#NOT_RUN[@]}" -ne 0 ]; then
        echo "  result: all steps passed; ${#NOT_RUN[@]} client test group(s) not run (see above)"
    else echo "  result: all steps passed"; fi
    echo "=================================================================="
}
trap summary EXIT

deps() {
    local rc=0 node=0
    nc_install_debs test || rc=$?
    nc_install_pyreqs tests/integration/requirements.txt || rc=$?
    # without Node.js >= 20 the Node client tests do not run (the summary says so): no failure
    nc_install_node_clients tests/clients/node || node=$?
    if [ "$node" -ne 0 ] && [ "$node" -ne "$NC_NO_TOOLCHAIN" ]; then rc="$node"; fi
    return "$rc"
}

BUILD="$ROOT/build"

# configure_in DIR FLAGS...: an out-of-tree build tree in DIR (cmocka required: a test run must
# not pass by skipping the unit tests)
configure_in() {
    local dir="$1"
    shift
    mkdir -p "$dir"
    (cd "$dir" && "$ROOT/configure" --enable-werror --with-cmocka=yes "$@")
}

build() {
    autoreconf -fi
    if [ -f "$ROOT/config.status" ]; then
        nc_log "the source tree is configured in place: make distclean (builds are out of tree)"
        make -C "$ROOT" distclean
    fi
    # shellcheck disable=SC2086  # CONFIGURE_FLAGS is a list of words
    configure_in "$BUILD" ${CONFIGURE_FLAGS:-}
    make -C "$BUILD" -j2
}

# unit_tests DIR: make check in a build tree, the failing tests' logs on failure
unit_tests() {
    local rc=0
    make -C "$1" -j2 check || rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "---- test-suite.log (failing unit tests) ----"
        cat "$1/test-suite.log" 2>/dev/null || true
    fi
    return "$rc"
}

# pytest_run BINARY ARGS...: the integration tests against BINARY (all of tests/integration, or
# the files $PYTEST_FILES names)
pytest_run() {
    local bin="$1"
    shift
    # the Node client tests must run where Node.js can run them (a failed install fails them);
    # without it they skip, as the summary says
    local require=1
    if [ -n "${NOT_RUN[$NC_GROUP_NODE]:-}" ]; then require=0; fi
    # timeout sends SIGTERM first: the fixtures then stop every process they started
    # shellcheck disable=SC2086  # PYTEST_ARGS is a list of words
    NUTCRACKERS_BIN="$bin" NC_REQUIRE_NODE_CLIENTS="${NC_REQUIRE_NODE_CLIENTS:-$require}" \
        timeout --kill-after=30 1800 \
        python3 -m pytest -q -p no:cacheprovider ${PYTEST_FILES:-tests/integration} "$@" ${PYTEST_ARGS:-}
}

# the whole suite against the plain build, in two processes (pytest_shards: most of its time is in
# waits, the Redis Sentinel tests' for the sentinels above all)
integration_tests() { pytest_shards "$BUILD/integration-shard" "$BUILD/src/nutcrackers"; }
# what the sanitizer stages leave out: the tests of the test fixtures themselves (the Sentinel and
# Redis Cluster deployments and TLS servers reached directly), which run no proxy; and, to keep the
# suite's time, the config checks of redis_cluster pools and the cluster-mode client programs (the
# proxy's side of both runs under the sanitizers in the unit tests: test_conf, test_redis_cluster),
# and the memcached client programs (their proxy paths run there in test_memcache_meta*.py)
SAN_IGNORE="--ignore=tests/integration/test_sentinel_backends.py --ignore=tests/integration/test_tls_backends.py --ignore=tests/integration/test_rcluster_fixture.py --ignore=tests/integration/test_rcluster_pool_setup.py --ignore=tests/integration/test_cluster_clients.py --ignore=tests/integration/test_memcache_clients.py"

# pytest_shards LOG BINARY ARGS...: pytest_run BINARY ARGS in $NC_SHARDS (2) processes at once,
# which share the test files out among themselves (tests/integration/file_queue.py: each file runs
# whole in one of them, the first free one); each one's output into LOG.<n>, then all of it printed.
# Fails when any of them fails. An integration stage mostly waits on sockets and timers (one
# process keeps about half a core busy, under a sanitizer 0.4), so two at a time take about half
# its time.
pytest_shards() {
    local log="$1" queue n pids=() rc=0 pid
    shift
    queue=$(mktemp -d)
    for ((n = 1; n <= ${NC_SHARDS:-2}; n++)); do
        NC_TEST_QUEUE="$queue" pytest_run "$@" >"$log.$n" 2>&1 &
        pids+=("$!")
    done
    for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
    for ((n = 1; n <= ${NC_SHARDS:-2}; n++)); do
        echo "---- pytest process $n of ${NC_SHARDS:-2} ----"
        cat "$log.$n"
    done
    rm -rf "$queue"
    return "$rc"
}

# san_reports DIR: fails (and prints them) if a sanitized process wrote a report into DIR
san_reports() {
    local f found=0
    for f in "$1"/*; do
        [ -f "$f" ] || continue
        found=1
        echo "---- sanitizer report $f ----"
        cat "$f"
    done
    [ "$found" -eq 0 ] || nc_log "sanitizer reports found in $1"
    return "$found"
}

# A sanitized proxy started by the tests writes any report to <build>/san/<kind>.<pid> and exits
# with a distinctive status; the stage fails on a failed test or on any report file.
asan_build() {
    configure_in "$ROOT/build-asan" --enable-debug=yes --enable-sanitizer=address
    make -C "$ROOT/build-asan" -j2
}
asan_unit() {
    ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        unit_tests "$ROOT/build-asan"
}
# shellcheck disable=SC2086  # NC_*_PYTEST_ARGS are lists of words
asan_integration() {
    local san="$ROOT/build-asan/san" rc=0
    rm -rf "$san" && mkdir -p "$san"
    ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:exitcode=86:log_path=$san/asan" \
        UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$san/ubsan" \
        pytest_shards "$ROOT/build-asan/integration-shard" "$ROOT/build-asan/src/nutcrackers" \
        $SAN_IGNORE ${NC_ASAN_PYTEST_ARGS:-} || rc=$?
    san_reports "$san" || rc=1
    return "$rc"
}
tsan_build() {
    configure_in "$ROOT/build-tsan" --enable-debug=yes --enable-sanitizer=thread
    make -C "$ROOT/build-tsan" -j2
}
tsan_unit() {
    TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 unit_tests "$ROOT/build-tsan"
}
# shellcheck disable=SC2086
tsan_integration() {
    local san="$ROOT/build-tsan/san" rc=0
    rm -rf "$san" && mkdir -p "$san"
    # the whole suite; -T 4 for every proxy whose test does not choose -T (the command modules'
    # shared proxies choose theirs: the tests of one worker take about 40 s more in all)
    TSAN_OPTIONS="halt_on_error=1:exitcode=87:second_deadlock_stack=1:log_path=$san/tsan" \
        NC_TEST_THREADS=4 pytest_shards "$ROOT/build-tsan/integration-shard" \
        "$ROOT/build-tsan/src/nutcrackers" $SAN_IGNORE ${NC_TSAN_PYTEST_ARGS:-} || rc=$?
    san_reports "$san" || rc=1
    return "$rc"
}
fuzz_smoke() {
    FUZZ_BUILD="$BUILD" FUZZ_TIME="${NC_FUZZ_TIME:-15}" FUZZ_JOBS="${NC_FUZZ_JOBS:-$(nproc)}" \
        scripts/fuzz.sh
}
# low_priority command...: runs it at the lowest priority (what it starts too), e.g. the fuzz smoke
# and the Debian package beside the sanitizers' integration stages
low_priority() {
    renice -n 19 -p "$BASHPID" >/dev/null 2>&1 || true
    "$@"
}

# bg_step NAME LOG command...: a step run in the background, its output into LOG (bg_done
# records its result and prints LOG once it finished)
bg_step() {
    local name="$1" log="$2"
    shift 2
    nc_log "$name (in the background; output in $log)"
    STEPS+=("$name")
    RESULT[$name]="FAILED (did not finish)"
    rm -f "$log.rc"
    (
        t0=$SECONDS rc=0
        "$@" >"$log" 2>&1 || rc=$?
        echo "$rc $((SECONDS - t0))" >"$log.rc"
    ) &
}
bg_done() {
    local name="$1" log="$2" rc took
    nc_log "$name: output"
    cat "$log" || true
    read -r rc took <"$log.rc" || { rc=1 took=0; }
    if [ "$rc" -eq 0 ]; then RESULT[$name]="ok ($took s, in parallel)"; else
        RESULT[$name]="FAILED (exit $rc, $took s, in parallel)"
        FAILED=1
    fi
}

# deb_copy_tree DEST: the source files into DEST (git's tracked and untracked but not ignored
# files; outside git, all but the build trees)
deb_copy_tree() {
    if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git -C "$ROOT" ls-files -z --cached --others --exclude-standard |
            while IFS= read -r -d '' f; do [ ! -e "$f" ] || printf '%s\0' "$f"; done |
            tar -C "$ROOT" --null -T - -cf - | tar -C "$1" -xf -
    else
        tar -C "$ROOT" --exclude='./build*' -cf - . | tar -C "$1" -xf -
    fi
}

# The Debian package (debian/, notes/packaging.md): dpkg-buildpackage in a temp dir (the unit tests
# ran above: nocheck), dpkg -i, the installed binary's -V and -t on the installed config, then
# dpkg --purge, which must leave no binary, config or user behind.
deb_package() {
    local tmp rc=0
    tmp=$(mktemp -d)
    mkdir "$tmp/nutcrackers"
    deb_copy_tree "$tmp/nutcrackers"
    if ! (cd "$tmp/nutcrackers" && DEB_BUILD_OPTIONS=nocheck dpkg-buildpackage -us -uc -b) \
        >"$tmp/build.log" 2>&1; then
        tail -n 40 "$tmp/build.log"
        rm -rf "$tmp"
        return 1
    fi
    local debs=("$tmp"/nutcrackers_*.deb)
    nc_as_root dpkg -i "${debs[0]}" || rc=$?
    if [ "$rc" -eq 0 ]; then
        /usr/sbin/nutcrackers -V && /usr/sbin/nutcrackers -t -c /etc/nutcrackers/nutcrackers.yml &&
            getent passwd nutcrackers >/dev/null || rc=1
    fi
    nc_as_root dpkg --purge nutcrackers || rc=1
    if [ -e /usr/sbin/nutcrackers ] || [ -e /etc/nutcrackers ] || getent passwd nutcrackers >/dev/null ||
        getent group nutcrackers >/dev/null; then
        nc_log "dpkg --purge nutcrackers left the binary, /etc/nutcrackers, the user or the group behind"
        rc=1
    fi
    rm -rf "$tmp"
    return "$rc"
}

# deb_stage [bg]: the Debian package stage; with bg in the background at the lowest priority
# (DEB_BG=1 then: deb_done reports it once it finished)
DEB_BG=0
deb_stage() {
    if [ "${NC_DEB:-1}" = 0 ] || ! command -v dpkg-buildpackage >/dev/null 2>&1; then
        skip "Debian package"
    elif nc_deb_installed nutcrackers; then
        nc_log "a nutcrackers package is installed on this machine: the package stage leaves it alone"
        skip "Debian package"
    elif [ "${1:-}" = bg ]; then
        DEB_BG=1
        bg_step "Debian package" "$BUILD/deb.log" low_priority deb_package
    else
        step "Debian package" deb_package || true
    fi
}
deb_done() { [ "$DEB_BG" = 0 ] || bg_done "Debian package" "$BUILD/deb.log"; }

# The sanitizer stages: both builds and their unit tests, then the two integration stages. Those
# mostly wait on sockets and timers (one pytest process keeps about 0.4 of the 2 cores busy), so
# by default (NC_SAN_PARALLEL=1) the builds and unit tests run in the background at the lowest
# priority while the main integration stage runs, and the two integration stages run at the same
# time, each in NC_SHARDS (2) pytest processes (pytest_shards), beside the fuzz smoke and the
# Debian package (at nice 19): the whole run stays well inside the time budget.
# Proxies of such runs once died silently (no log line, no sanitizer report): the workers blocked
# SIGSEGV, so a fault killed the process before a sanitizer could report it. They no longer do
# (notes/thread-signals.md): a recurrence fails its stage with a report naming the line
# (notes/fuzzing.md).
san_enabled() {  # san_enabled asan|tsan
    [ "${NC_SANITIZERS:-1}" != 0 ] || return 1
    if [ "$1" = asan ]; then [ "${NC_ASAN:-1}" != 0 ]; else [ "${NC_TSAN:-1}" != 0 ]; fi
}
san_name() { if [ "$1" = asan ]; then echo "ASan+UBSan"; else echo "TSan"; fi; }
# san_prepare asan|tsan: its build (marked by build-<kind>/.built), then its unit tests; at the
# lowest priority when it runs beside the main integration stage
san_prepare() {
    renice -n 19 -p "$BASHPID" >/dev/null 2>&1 || true
    rm -f "$ROOT/build-$1/.built"
    "$1_build" || return 1
    touch "$ROOT/build-$1/.built"
    "$1_unit"
}
san_built() { [ -f "$ROOT/build-$1/.built" ]; }

# sanitizer_prepare: starts the builds and unit tests of both sanitizers in the background
sanitizer_prepare() {
    [ "${NC_SAN_PARALLEL:-1}" = 1 ] || return 0
    local k
    for k in asan tsan; do
        rm -f "$ROOT/build-$k/.built"
        if san_enabled "$k"; then
            mkdir -p "$ROOT/build-$k"
            bg_step "$(san_name "$k") build and unit tests" "$ROOT/build-$k/prepare.log" san_prepare "$k"
        else
            skip "$(san_name "$k") build and unit tests"
        fi
    done
}

sanitizer_stages() {
    local k
    if [ "${NC_SAN_PARALLEL:-1}" != 1 ]; then
        for k in asan tsan; do
            if ! san_enabled "$k"; then skip "$(san_name "$k") build and unit tests"; continue; fi
            step "$(san_name "$k") build and unit tests" san_prepare "$k" || true
            if san_built "$k"; then step "$(san_name "$k") integration tests" "${k}_integration" || true
            else skip "$(san_name "$k") integration tests"; fi
        done
        if [ "${NC_FUZZ:-1}" != 0 ]; then step "fuzz smoke (libFuzzer)" fuzz_smoke || true; else
            skip "fuzz smoke (libFuzzer)"
        fi
        return 0
    fi
    wait # the builds and unit tests started by sanitizer_prepare
    for k in asan tsan; do
        san_enabled "$k" && bg_done "$(san_name "$k") build and unit tests" "$ROOT/build-$k/prepare.log"
    done
    for k in asan tsan; do
        if san_built "$k"; then
            bg_step "$(san_name "$k") integration tests" "$ROOT/build-$k/integration.log" "${k}_integration"
        else
            skip "$(san_name "$k") integration tests"
        fi
    done
    if [ "${NC_FUZZ:-1}" != 0 ]; then
        mkdir -p "$BUILD/tests/fuzz"
        bg_step "fuzz smoke (libFuzzer)" "$BUILD/tests/fuzz/smoke.log" low_priority fuzz_smoke
    else
        skip "fuzz smoke (libFuzzer)"
    fi
    deb_stage bg
    wait
    for k in asan tsan; do
        san_built "$k" && bg_done "$(san_name "$k") integration tests" "$ROOT/build-$k/integration.log"
    done
    [ "${NC_FUZZ:-1}" = 0 ] || bg_done "fuzz smoke (libFuzzer)" "$BUILD/tests/fuzz/smoke.log"
    deb_done
}

if [ "${NC_SKIP_DEPS:-0}" = 1 ]; then skip "install dependencies"; else
    step "install dependencies" deps || true
fi
client_toolchains
# the client programs of test_clients_go_java.py (pinned go-redis and Jedis): fetched and built
# once per version of their sources, into the tests' cache, where their toolchain is here
if [ "${NC_SKIP_DEPS:-0}" = 1 ] || [ "${NC_CLIENTS:-1}" = 0 ] ||
    { [ -n "${NOT_RUN[$NC_GROUP_GO]:-}" ] && [ -n "${NOT_RUN[$NC_GROUP_JAVA]:-}" ]; }; then
    skip "client programs (go-redis, Jedis)"
else
    step "client programs (go-redis, Jedis)" nc_build_clients || true
fi
not_run_lines
if step "build" build; then
    step "unit tests (make check)" unit_tests "$BUILD" || true
    sanitizer_prepare
    step "integration tests (pytest)" integration_tests || true
    sanitizer_stages
    if [ "${NC_DISTCHECK:-0}" = 1 ]; then step "make distcheck" make -C "$BUILD" -j2 distcheck || true; fi
    # (with NC_SAN_PARALLEL=1 the package stage ran beside the sanitizer stages)
    [ "${NC_SAN_PARALLEL:-1}" = 1 ] || deb_stage
else
    skip "unit tests (make check)"
    skip "integration tests (pytest)"
fi
exit "$FAILED"
