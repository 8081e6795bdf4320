#!/usr/bin/env bash
# scripts/test.sh - the whole test run on a (fresh) Debian 12 machine: installs what is missing,
# builds, runs the C unit tests (make check) and the integration tests (pytest, real redis-server
# and memcached on loopback). Exits non-zero on any failure and prints a summary.
#
#   CONFIGURE_FLAGS   extra ./configure flags, e.g. "--enable-debug=full --enable-sanitizer=address"
#   PYTEST_ARGS       extra pytest arguments, e.g. "-k daemon"
#   NC_SKIP_DEPS=1    do not install anything
#   NC_DISTCHECK=1    also run `make distcheck`
# shellcheck disable=SC2317  # functions run through step/trap look unreachable to it
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=scripts/lib/deps.sh
. scripts/lib/deps.sh

declare -A RESULT=()
STEPS=()
FAILED=0

step() {  # step NAME command...: runs it, records ok/FAILED, never aborts the script
    local name="$1" rc=0
    shift
    nc_log "$name"
    STEPS+=("$name")
    "$@" || rc=$?
    if [ "$rc" -eq 0 ]; then RESULT[$name]=ok; else RESULT[$name]="FAILED (exit $rc)"; FAILED=1; fi
    return "$rc"
}

skip() { STEPS+=("$1"); RESULT[$1]="skipped"; }

summary() {
    echo
    echo "==================== nutcrackers test summary ===================="
    local s
    for s in "${STEPS[@]}"; do printf '  %-28s %s\n' "$s" "${RESULT[$s]}"; done
    if [ "$FAILED" -eq 0 ]; then echo "  result: all steps passed"; else echo "  result: FAILED"; fi
    echo "=================================================================="
}
trap summary EXIT

deps() {
    nc_install_debs
    nc_install_pyreqs tests/integration/requirements.txt
}

build() {
    autoreconf -fi
    # shellcheck disable=SC2086  # CONFIGURE_FLAGS is a list of words
    ./configure --enable-werror ${CONFIGURE_FLAGS:-}
    make -j2
}

unit_tests() {
    local rc=0
    make -j2 check || rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "---- test-suite.log (failing unit tests) ----"
        cat test-suite.log 2>/dev/null || true
    fi
    return "$rc"
}

integration_tests() {
    # timeout sends SIGTERM first: the fixtures then stop every process they started
    # shellcheck disable=SC2086  # PYTEST_ARGS is a list of words
    NUTCRACKERS_BIN="$ROOT/src/nutcrackers" timeout --kill-after=30 1800 \
        python3 -m pytest -q -p no:cacheprovider tests/integration ${PYTEST_ARGS:-}
}

if [ "${NC_SKIP_DEPS:-0}" = 1 ]; then skip "install dependencies"; else
    step "install dependencies" deps || true
fi
if step "build" build; then
    step "unit tests (make check)" unit_tests || true
    step "integration tests (pytest)" integration_tests || true
    if [ "${NC_DISTCHECK:-0}" = 1 ]; then step "make distcheck" make -j2 distcheck || true; fi
else
    skip "unit tests (make check)"
    skip "integration tests (pytest)"
fi
exit "$FAILED"
