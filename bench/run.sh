#!/usr/bin/env bash
# bench/run.sh - the benchmark in one command: installs what is missing (Debian: nutcracker, the
# twemproxy 0.5.0 reference, redis-server/redis-tools, memcached), builds nutcrackers optimised
# out of tree (build-bench/: ./configure without debug flags) and the load generator
# (make -C bench), and predixy when a px variant may run (the default variants, or --variants
# naming px, pxf or px2f: the peers directory's build-predixy.sh, into build-bench/predixy/), then
# runs bench/bench.py on that build with the arguments given (see `bench/run.sh --help`; a later
# --nc-bin wins); `bench/run.sh storm ...` runs bench/storm.py (connection storms next to a
# steady client) instead, `bench/run.sh latency ...` bench/latency.py (the latency each proxy adds
# at fixed request rates, open loop; with predixy, as bench.py), `bench/run.sh tls ...`
# bench/tls.py (TLS on both sides against stunnel + twemproxy + stunnel; installs stunnel4),
# `bench/run.sh failover ...` bench/failover.py (how long writes fail while Redis Sentinel moves a
# master), `bench/run.sh cluster ...` bench/cluster.py (a redis_cluster pool's CPU per request
# against a static pool's on as many servers: 3 Redis Cluster nodes and 3 plain redis-servers).
#   NC_SKIP_DEPS=1   install nothing
# Nothing is left running: bench.py stops every process it started, on errors too.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=scripts/lib/deps.sh
. scripts/lib/deps.sh

if [ "${NC_SKIP_DEPS:-0}" != 1 ]; then
    NC_DEB_RUN_PACKAGES+=(nutcracker util-linux)
    if [ "${1:-}" = tls ]; then NC_DEB_RUN_PACKAGES+=(stunnel4 openssl); fi
    nc_install_debs run
    # a nutcracker service started by the package would only take its own ports (22121, 22222),
    # never the free ones the benchmark picks; stop it anyway so it costs no CPU
    if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet nutcracker 2>/dev/null; then
        nc_as_root systemctl disable --now nutcracker || true
    fi
fi

BUILD="$ROOT/build-bench"
if [ ! -f "$BUILD/Makefile" ]; then
    nc_log "configuring (optimised, in build-bench/)"
    autoreconf -fi
    if [ -f "$ROOT/config.status" ]; then make -C "$ROOT" distclean; fi # in-tree blocks out-of-tree
    mkdir -p "$BUILD"
    (cd "$BUILD" && "$ROOT/configure" --enable-werror)
fi
if ! grep -q '^AM_CFLAGS = .* -O2 -g -DNDEBUG' "$BUILD/Makefile" || grep -q '^AM_CFLAGS = .*-fsanitize' "$BUILD/Makefile"; then
    nc_log "warning: this build is not the optimised default (configure without --enable-debug)"
fi
nc_log "building"
make -C "$BUILD" -j2 src/nutcrackers >/dev/null
make -C bench >/dev/null
SCRIPT=bench/bench.py
case "${1:-}" in
storm | latency | tls | failover | cluster)
    SCRIPT=bench/$1.py
    shift
    ;;
esac
# predixy (px, pxf, px2f; px is among bench.py's and latency.py's default variants), built from
# the peers directory (NC_PEERS_DIR, default ../shared/peers beside the repository) into
# build-bench/predixy/
variants=default
prev=
for arg in "$@"; do
    case "$prev" in --variants) variants=$arg ;; esac
    case "$arg" in --variants=*) variants=${arg#--variants=} ;; esac
    prev=$arg
done
PEERS=${NC_PEERS_DIR:-$(dirname "$ROOT")/shared/peers}
case "$SCRIPT" in bench/bench.py | bench/latency.py) with_px=1 ;; *) with_px=0 ;; esac
if [ "$with_px" = 1 ] && { [ "$variants" = default ] || [[ ",$variants," == *,px* ]]; }; then
    if [ -x "$PEERS/build-predixy.sh" ]; then
        nc_log "building predixy (build-bench/predixy/, once)"
        PX_BIN=$(nice -n 10 "$PEERS/build-predixy.sh" "$BUILD/predixy")
        set -- --px-bin "$PX_BIN" "$@"
    elif [ "$variants" != default ]; then
        nc_log "no $PEERS/build-predixy.sh: cannot build predixy for the px variants"
        exit 1
    fi
fi
exec python3 "$SCRIPT" --nc-bin "$BUILD/src/nutcrackers" "$@"
