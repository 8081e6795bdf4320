#!/usr/bin/env bash
# scripts/run.sh - try nutcrackers locally: installs what is missing, builds, starts two
# redis-servers and two memcacheds on 127.0.0.1 and the proxy on conf/nutcrackers-local.yml (a
# redis pool and a memcached pool), prints how to talk to it, and stops everything on Ctrl-C.
#
# Ports: redis 6379/6380, memcached 11211/11212, pools 22121/22122, manage 22222; any that is
# taken is replaced by a free one (the proxy then runs on a copy of the config with those ports).
#   CONFIGURE_FLAGS   extra ./configure flags for a first build
#   NC_SKIP_DEPS=1    do not install anything
#   NC_THREADS=N      worker threads (-T), default 4
# shellcheck disable=SC2317  # functions run through step/trap look unreachable to it
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=scripts/lib/deps.sh
. scripts/lib/deps.sh

if [ "${NC_SKIP_DEPS:-0}" != 1 ]; then nc_install_debs run; fi  # no test tools (cmocka, clang ...)

if [ ! -f Makefile ]; then
    nc_log "configuring"
    autoreconf -fi
    # shellcheck disable=SC2086  # CONFIGURE_FLAGS is a list of words
    ./configure ${CONFIGURE_FLAGS:-}
fi
nc_log "building"
make -j2

RUNDIR=$(mktemp -d /tmp/nutcrackers-run.XXXXXX)
PIDS=()

cleanup() {
    trap - EXIT INT TERM
    local pid i
    for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do kill "${PIDS[$i]}" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    nc_log "stopped everything; logs are in $RUNDIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port_free() {  # nobody accepts on 127.0.0.1:$1 and it can be bound
    python3 - "$1" <<'PY'
import socket, sys
s = socket.socket()
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
PY
}

pick_port() {  # the wanted port if free, else one the kernel picks
    if port_free "$1"; then echo "$1"; return; fi
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_port() {  # bounded wait until 127.0.0.1:$2 accepts, while pid $1 lives
    local i
    for i in $(seq 100); do
        if nc -z 127.0.0.1 "$2" 2>/dev/null; then return 0; fi
        kill -0 "$1" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

R1=$(pick_port 6379); R2=$(pick_port 6380)
M1=$(pick_port 11211); M2=$(pick_port 11212)
P1=$(pick_port 22121); P2=$(pick_port 22122); S=$(pick_port 22222)

MC_USER=()
if [ "$(id -u)" -eq 0 ]; then MC_USER=(-u root); fi
for port in "$R1" "$R2"; do
    mkdir -p "$RUNDIR/redis-$port"
    (cd "$RUNDIR/redis-$port" && exec redis-server --port "$port" --bind 127.0.0.1 --save "" \
        --appendonly no --daemonize no >"$RUNDIR/redis-$port.log" 2>&1) &
    PIDS+=($!)
    wait_port "$!" "$port" || { nc_log "redis-server on $port did not start"; exit 1; }
done
for port in "$M1" "$M2"; do
    memcached -l 127.0.0.1 -p "$port" -U 0 -m 64 "${MC_USER[@]}" >"$RUNDIR/memcached-$port.log" 2>&1 &
    PIDS+=($!)
    wait_port "$!" "$port" || { nc_log "memcached on $port did not start"; exit 1; }
done

CONF="$RUNDIR/nutcrackers.yml"
sed -e "s/127.0.0.1:6379:/127.0.0.1:$R1:/; s/127.0.0.1:6380:/127.0.0.1:$R2:/" \
    -e "s/127.0.0.1:11211:/127.0.0.1:$M1:/; s/127.0.0.1:11212:/127.0.0.1:$M2:/" \
    -e "s/127.0.0.1:22121$/127.0.0.1:$P1/; s/127.0.0.1:22122$/127.0.0.1:$P2/" \
    conf/nutcrackers-local.yml >"$CONF"
src/nutcrackers -t -c "$CONF"

LOG="$RUNDIR/nutcrackers.log"
src/nutcrackers -c "$CONF" -o "$LOG" -s "$S" -a 127.0.0.1 -T "${NC_THREADS:-4}" \
    -p "$RUNDIR/nutcrackers.pid" &
NC_PID=$!
PIDS+=("$NC_PID")
sleep 0.5
kill -0 "$NC_PID" 2>/dev/null || { nc_log "nutcrackers exited; its log:"; cat "$LOG"; exit 1; }

cat <<INFO

nutcrackers is running (pid $NC_PID), config $CONF, log $LOG
  backends: redis-server 127.0.0.1:$R1 and :$R2, memcached 127.0.0.1:$M1 and :$M2

  redis pool:      redis-cli -p $P1 set greeting hello; redis-cli -p $P1 get greeting
  memcached pool:  printf 'set k 0 0 1\r\nv\r\nget k\r\n' | nc -q 1 127.0.0.1 $P2
  manage port:     printf 'status\r\n' | nc -q 1 127.0.0.1 $S
  log level:       kill -TTIN $NC_PID (up), kill -TTOU $NC_PID (down); reopen: kill -HUP $NC_PID

Press Ctrl-C to stop the proxy and the backends.
INFO

rc=0
wait "$NC_PID" || rc=$?
nc_log "nutcrackers exited with status $rc"
exit "$rc"
