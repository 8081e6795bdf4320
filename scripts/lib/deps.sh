# shellcheck shell=bash
# scripts/lib/deps.sh - installs what nutcrackers needs to build, test and run on Debian 12, and
# only what is missing. Sourced by scripts/test.sh and scripts/run.sh; defines functions only.
#
#   nc_install_debs      Debian packages (build tools, libraries, redis, memcached, nc, python3,
#                        clang and its sanitizer/libFuzzer runtimes for `make fuzz`, jemalloc
#                        for a unit test that runs the proxy's code under another malloc)
#   nc_install_pyreqs    the pinned Python test requirements (tests/integration/requirements.txt)
#   nc_install_node_clients  the pinned Node redis clients of tests/clients/node (npm ci), when
#                        node_modules is missing or out of date; needs Node.js >= 20 and npm
#
# Runs apt-get as root, through sudo when not root and sudo exists. `apt-get update` runs once, and
# only when something is missing. Services that Debian's packages would start at install time
# (redis-server, memcached) are kept from starting, so nothing is left running on their ports.

NC_DEB_PACKAGES=(
    build-essential autoconf automake libtool pkg-config
    libyaml-dev libevent-dev libcmocka-dev
    redis-server redis-tools memcached netcat-openbsd
    libjemalloc2
    clang libclang-rt-14-dev
)

nc_log() { printf '==> %s\n' "$*" >&2; }

nc_as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        nc_log "need root (or sudo) to run: $*"
        return 1
    fi
}

nc_deb_installed() {
    dpkg -s "$1" 2>/dev/null | grep -q '^Status: install ok installed'
}

# Prints the packages of the list that are not installed, plus python3 / python3-pip when no
# usable python3 (with pip) is on PATH: a python3 from elsewhere (pyenv, a venv) is fine.
nc_missing_debs() {
    local p
    for p in "${NC_DEB_PACKAGES[@]}"; do
        nc_deb_installed "$p" || printf '%s\n' "$p"
    done
    if ! command -v python3 >/dev/null 2>&1; then
        printf '%s\n' python3 python3-pip
    elif ! python3 -m pip --version >/dev/null 2>&1; then
        printf '%s\n' python3-pip
    fi
}

nc_install_debs() {
    if ! command -v dpkg >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
        nc_log "not a Debian system: install by hand: ${NC_DEB_PACKAGES[*]} python3 python3-pip"
        return 0
    fi
    local missing
    mapfile -t missing < <(nc_missing_debs)
    if [ "${#missing[@]}" -eq 0 ]; then
        nc_log "Debian packages: all present"
        return 0
    fi
    nc_log "installing Debian packages: ${missing[*]}"
    # policy-rc.d exit 101 = "do not start services from maintainer scripts" (Debian's own switch)
    local policy=/usr/sbin/policy-rc.d added_policy=0 rc=0
    if [ ! -e "$policy" ]; then
        nc_as_root sh -c "printf '#!/bin/sh\nexit 101\n' > $policy && chmod 755 $policy" && added_policy=1
    fi
    nc_as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q || rc=$?
    if [ "$rc" -eq 0 ]; then
        nc_as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
            "${missing[@]}" || rc=$?
    fi
    if [ "$added_policy" -eq 1 ]; then nc_as_root rm -f "$policy"; fi
    return "$rc"
}

# Installs the pinned test requirements with the python3 on PATH. Adds --break-system-packages only
# when pip refuses an "externally managed" interpreter (Debian's own python3), and --user when not
# root outside a virtualenv.
nc_install_pyreqs() {
    local req="$1" out rc=0
    local -a extra=()
    if [ "$(id -u)" -ne 0 ] && [ -z "${VIRTUAL_ENV:-}" ]; then extra+=(--user); fi
    nc_log "Python test requirements ($(python3 --version 2>&1)): $req"
    out=$(python3 -m pip install --disable-pip-version-check -q "${extra[@]}" -r "$req" 2>&1) || rc=$?
    if [ "$rc" -ne 0 ] && grep -q 'externally-managed-environment' <<<"$out"; then
        rc=0
        out=$(python3 -m pip install --disable-pip-version-check -q "${extra[@]}" \
            --break-system-packages -r "$req" 2>&1) || rc=$?
    fi
    if [ "$rc" -ne 0 ]; then printf '%s\n' "$out" >&2; fi
    return "$rc"
}

# Installs tests/clients/node's pinned packages with `npm ci` (exactly its package-lock.json, no
# install scripts), only when node_modules is missing or was installed from another lock file or
# Node.js major version (a stamp file records which). Fails (with a line saying why) without
# Node.js >= 20 and npm. A lock on the folder keeps two test runs from installing at once.
nc_install_node_clients() {
    local dir="${1:-tests/clients/node}" major want rc=0
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        nc_log "Node.js and npm are not installed: the Node client tests need Node.js >= 20 and npm"
        return 1
    fi
    major=$(node -p 'process.versions.node.split(".")[0]')
    if [ "$major" -lt 20 ]; then
        nc_log "Node.js $(node --version) is too old: the Node client tests need Node.js >= 20"
        return 1
    fi
    want="node $major $(cat "$dir/package.json" "$dir/package-lock.json" | sha256sum | cut -d' ' -f1)"
    (
        flock -w 900 9 || { nc_log "another install holds $dir/.install.lock"; exit 1; }
        if [ "$(cat "$dir/node_modules/.nutcrackers-stamp" 2>/dev/null)" = "$want" ]; then
            nc_log "Node test clients: up to date"
            exit 0
        fi
        nc_log "Node test clients: npm ci in $dir (Node.js $(node --version))"
        (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) || exit 1
        printf '%s\n' "$want" >"$dir/node_modules/.nutcrackers-stamp"
    ) 9>"$dir/.install.lock" || rc=$?
    return "$rc"
}
