# shellcheck shell=bash
# scripts/lib/deps.sh - installs what nutcrackers needs to build, test and run on Debian 12, and
# only what is missing. Sourced by scripts/test.sh and scripts/run.sh; defines functions only.
#
#   nc_install_debs [run|test]
#                        Debian packages. `run` (scripts/run.sh): what building the daemon and
#                        running it beside local backends need: build tools, libyaml, libevent,
#                        OpenSSL (libssl-dev, and the openssl CLI that makes the tests' certificates),
#                        redis, memcached, nc, python3. `test` (the default; scripts/test.sh): those
#                        and what only the tests need: cmocka (unit tests), pip, clang and its
#                        sanitizer/libFuzzer runtimes for `make fuzz`, jemalloc for a unit test
#                        that runs the proxy's code under another malloc; and the client tests'
#                        toolchains that are missing from PATH, where Debian's version is enough:
#                        golang-go (Go >= 1.21), default-jdk-headless (Java >= 17), maven, nodejs
#                        and npm (Node.js >= 20), ruby and ruby-dalli (Dalli 3.0.6); Debian 12's
#                        JDK, Maven, Ruby and Dalli are, its Go (1.19) and Node.js (18) are not
#   nc_install_pyreqs    the pinned Python test requirements (tests/integration/requirements.txt)
#   nc_go_toolchain, nc_java_toolchain, nc_node_toolchain, nc_ruby_toolchain
#                        whether a client group's tests can run here; if not, print why
#   nc_build_go_client   the go-redis test program (tests/clients/go), built once per source
#   nc_build_java_client the Jedis test program (tests/clients/java), built once per source
#   nc_build_clients     both, where their toolchain is here (what scripts/test.sh runs)
#   nc_install_node_clients  the pinned Node packages of tests/clients/node (redis clients,
#                        BullMQ, memjs: npm ci), when node_modules is missing or out of date; needs
#                        Node.js >= 20 and npm
#   nc_ruby_clients      the ruby that runs tests/clients/ruby (Dalli, pinned: Debian 12's
#                        ruby-dalli), or "<group> not run: <why>"
#
# Runs apt-get as root, through sudo when not root and sudo exists. `apt-get update` runs once, and
# only when something is missing. Services that Debian's packages would start at install time
# (redis-server, memcached) are kept from starting, so nothing is left running on their ports.

NC_DEB_RUN_PACKAGES=(
    build-essential autoconf automake libtool pkg-config
    libyaml-dev libevent-dev libssl-dev openssl
    redis-server redis-tools memcached netcat-openbsd
)
NC_DEB_TEST_PACKAGES=(
    libcmocka-dev
    libjemalloc2
    clang libclang-rt-14-dev
    libsystemd-dev debhelper  # sd_notify (a Type=notify unit); the Debian package stage
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

# The packages of a set (run or test), one a line.
nc_deb_set() {
    printf '%s\n' "${NC_DEB_RUN_PACKAGES[@]}"
    if [ "$1" = test ]; then printf '%s\n' "${NC_DEB_TEST_PACKAGES[@]}"; fi
}

# Prints the packages of set $1 that are not installed, plus python3 (and, for test, python3-pip)
# when no usable python3 (with pip) is on PATH: a python3 from elsewhere (pyenv, a venv) is fine;
# for test, also the client toolchains that are missing where Debian's are enough
# (nc_toolchain_debs).
nc_missing_debs() {
    local p
    while read -r p; do
        nc_deb_installed "$p" || printf '%s\n' "$p"
    done < <(nc_deb_set "$1")
    if ! command -v python3 >/dev/null 2>&1; then
        printf '%s\n' python3
        if [ "$1" = test ]; then printf '%s\n' python3-pip; fi
    elif [ "$1" = test ] && ! python3 -m pip --version >/dev/null 2>&1; then
        printf '%s\n' python3-pip
    fi
    if [ "$1" = test ]; then nc_toolchain_debs; fi
}

nc_install_debs() {
    local set="${1:-test}"
    case "$set" in
    run | test) ;;
    *) nc_log "nc_install_debs: unknown set '$set' (run or test)"; return 1 ;;
    esac
    if ! command -v dpkg >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
        nc_log "not a Debian system: install by hand: $(nc_deb_set "$set" | tr '\n' ' ')python3"
        return 0
    fi
    local missing
    mapfile -t missing < <(nc_missing_debs "$set")
    if [ "${#missing[@]}" -eq 0 ]; then
        nc_log "Debian packages ($set): all present"
        return 0
    fi
    nc_log "missing Debian packages ($set): ${missing[*]}"
    # policy-rc.d exit 101 = "do not start services from maintainer scripts" (Debian's own switch)
    local policy=/usr/sbin/policy-rc.d added_policy=0 rc=0
    if [ ! -e "$policy" ]; then
        nc_as_root sh -c "printf '#!/bin/sh\nexit 101\n' > $policy && chmod 755 $policy" && added_policy=1
    fi
    nc_as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q || rc=$?
    if [ "$rc" -eq 0 ]; then
        # again, with the package lists just fetched: before them (a new machine) apt-cache may
        # have known no candidate, or an old one, for a toolchain (nc_toolchain_debs)
        mapfile -t missing < <(NC_APT_UPDATED=1 nc_missing_debs "$set")
        nc_log "installing Debian packages ($set): ${missing[*]:-none after all}"
    fi
    if [ "$rc" -eq 0 ] && [ "${#missing[@]}" -ne 0 ]; then
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

# ------------------------------------------------------------------------------------------------
# The toolchains of the client tests: Go for go-redis (tests/clients/go), a JDK >= 17 and Maven for
# Jedis (tests/clients/java), Node.js >= 20 and npm for the Node clients, BullMQ and memjs
# (tests/clients/node), Ruby with Dalli for tests/clients/ruby. nc_install_debs test installs
# Debian's package of a toolchain only when the tool is missing from PATH (never beside or over one
# already there) and Debian's version is enough for its client; Debian 12's JDK (17), Maven
# (3.8.7), Ruby (3.1) and ruby-dalli (3.0.6, the pinned Dalli) are, its Go (1.19) and Node.js (18)
# are not. nc_go_toolchain, nc_java_toolchain, nc_node_toolchain and nc_ruby_toolchain say whether
# a group's tests can run here: they return 0 silently, or print why not (what is missing or too
# old, and what to install) and return NC_NO_TOOLCHAIN. scripts/test.sh's summary prints that
# reason on one line per group that did not run, and the tests skip with the same line.

NC_CLIENTS_SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/tests/clients"
NC_NO_TOOLCHAIN=3
NC_GO_SWITCH=1.21  # the first Go that fetches the newer Go a go.mod asks for (GOTOOLCHAIN)
NC_GROUP_GO="go-redis client tests"
NC_GROUP_JAVA="Jedis client tests"
NC_GROUP_NODE="Node client tests (ioredis, node-redis, BullMQ, memjs)"
NC_GROUP_RUBY="Ruby client tests (Dalli)"
# Dalli as Debian 12 packages it (ruby-dalli 3.0.6-1.1): Dalli 3.0.6 speaks the binary protocol
# only (later 3.x versions added the meta protocol). tests/clients/ruby/dalli.rb runs with it;
# another version, from Debian or a gem, does not count.
NC_DALLI_VERSION=3.0.6

# nc_version_ge A B: A >= B, both dotted versions ("1.21" < "1.26.0"; an empty A is the oldest)
nc_version_ge() {
    [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n 1)" = "$2" ]
}

# nc_deb_candidate PKG: the upstream version of the package apt would install ("2:1.19~1" ->
# "1.19"); nothing when there is none or this is not a Debian system
nc_deb_candidate() {
    command -v apt-cache >/dev/null 2>&1 || return 0
    LC_ALL=C apt-cache policy "$1" 2>/dev/null | awk '$1 == "Candidate:" && $2 != "(none)" {
        v = $2; sub(/^[0-9]+:/, "", v); sub(/[-~+].*/, "", v); print v }'
}

# nc_deb_hint PKG VERSION MIN: what Debian offers, for a reason: "Debian's PKG is VERSION, too old"
# or "Debian: apt-get install PKG"; nothing without a candidate
nc_deb_hint() {
    if [ -z "$2" ]; then return 0; fi
    if nc_version_ge "$2" "$3"; then printf 'Debian: apt-get install %s' "$1"; else
        printf "Debian's %s is %s, too old" "$1" "$2"
    fi
}

# nc_deb_owned CMD: the CMD on PATH comes from a Debian package (installing another one of the same
# kind from Debian then hides nothing)
nc_deb_owned() {
    dpkg -S "$(readlink -f "$(command -v "$1")")" >/dev/null 2>&1
}

nc_go_wanted() {  # the Go that tests/clients/go/go.mod asks for
    sed -n 's/^go \([0-9][0-9.]*\).*/\1/p' "$NC_CLIENTS_SRC/go/go.mod"
}
nc_go_version() {  # the go on PATH's own version (outside any module: no toolchain switch)
    (cd / && GOTOOLCHAIN=local go env GOVERSION 2>/dev/null) | grep -o 'go[0-9][0-9.]*' |
        head -n 1 | cut -c3-
}
nc_java_min() {  # the Java release tests/clients/java/pom.xml compiles for
    sed -n 's/.*<maven.compiler.release>\([0-9]*\)<.*/\1/p' "$NC_CLIENTS_SRC/java/pom.xml"
}
nc_java_major() {  # the java on PATH's major version ("1.8.0_392" -> 8, "17.0.15" -> 17)
    java -version 2>&1 | sed -n '1s/^[^"]*"\([0-9][0-9.]*\).*/\1/p' |
        awk -F. '{ print ($1 == 1 ? $2 : $1) }'
}
nc_deb_java() {  # the Java of Debian's default-jdk-headless ("1.17" -> 17)
    nc_deb_candidate default-jdk-headless | sed 's/^1\.//'
}
nc_node_min() {  # the Node.js major version tests/clients/node/package.json's engines ask for
    sed -n 's/.*"node": *">= *\([0-9]*\).*/\1/p' "$NC_CLIENTS_SRC/node/package.json" | head -n 1
}

# nc_why PROBLEM WHAT [DETAIL...]: a reason, "PROBLEM: install WHAT to run them (DETAIL; ...)",
# empty DETAILs left out
nc_why() {
    local problem="$1" what="$2" d details=""
    shift 2
    for d in "$@"; do
        if [ -n "$d" ]; then details="${details:+$details; }$d"; fi
    done
    printf '%s: install %s to run them%s\n' "$problem" "$what" "${details:+ ($details)}"
}

nc_go_toolchain() {
    local want have detail hint
    want=$(nc_go_wanted)
    detail="go.mod asks for Go $want, which a Go >= $NC_GO_SWITCH fetches itself"
    hint=$(nc_deb_hint golang-go "$(nc_deb_candidate golang-go)" "$NC_GO_SWITCH")
    if ! command -v go >/dev/null 2>&1; then
        nc_why "no go on PATH" "Go >= $NC_GO_SWITCH" "$detail" "$hint"
        return "$NC_NO_TOOLCHAIN"
    fi
    have=$(nc_go_version)
    if ! nc_version_ge "$have" "$want" && ! nc_version_ge "$have" "$NC_GO_SWITCH"; then
        nc_why "Go ${have:-?} < $NC_GO_SWITCH" "Go >= $NC_GO_SWITCH" "$detail" "$hint"
        return "$NC_NO_TOOLCHAIN"
    fi
}

nc_java_toolchain() {
    local min have hint
    min=$(nc_java_min)
    hint=$(nc_deb_hint default-jdk-headless "$(nc_deb_java)" "$min")
    if ! command -v java >/dev/null 2>&1; then
        nc_why "no java on PATH" "a JDK >= $min" "$hint"
        return "$NC_NO_TOOLCHAIN"
    fi
    have=$(nc_java_major)
    if ! nc_version_ge "$have" "$min"; then
        nc_why "Java ${have:-?} < $min" "a JDK >= $min" "pom.xml compiles for Java $min" "$hint"
        return "$NC_NO_TOOLCHAIN"
    fi
    if ! command -v javac >/dev/null 2>&1; then
        nc_why "no javac on PATH (Java $have without its compiler)" "a JDK >= $min" "$hint"
        return "$NC_NO_TOOLCHAIN"
    fi
    if ! command -v mvn >/dev/null 2>&1; then
        nc_why "no mvn on PATH" Maven "$(nc_deb_hint maven "$(nc_deb_candidate maven)" 0)"
        return "$NC_NO_TOOLCHAIN"
    fi
}

nc_node_toolchain() {
    local min have detail hint
    min=$(nc_node_min)
    detail="ioredis 6 and node-redis 6 need Node.js $min"
    hint=$(nc_deb_hint nodejs "$(nc_deb_candidate nodejs)" "$min")
    if ! command -v node >/dev/null 2>&1; then
        nc_why "no node on PATH" "Node.js >= $min" "$detail" "$hint"
        return "$NC_NO_TOOLCHAIN"
    fi
    have=$(node -p process.versions.node 2>/dev/null)
    if ! nc_version_ge "${have%%.*}" "$min"; then
        nc_why "Node.js ${have:-?} < $min" "Node.js >= $min" "$detail" "$hint"
        return "$NC_NO_TOOLCHAIN"
    fi
    if ! command -v npm >/dev/null 2>&1; then
        nc_why "no npm on PATH (Node.js $have is there)" npm
        return "$NC_NO_TOOLCHAIN"
    fi
}

nc_dalli_version() {  # the Dalli the ruby on PATH loads (nothing without one)
    ruby -e 'require "dalli"; print Dalli::VERSION' 2>/dev/null
}

nc_ruby_toolchain() {
    local have hint
    hint=$(nc_deb_candidate ruby-dalli)
    if [ "$hint" = "$NC_DALLI_VERSION" ]; then hint="Debian: apt-get install ruby ruby-dalli"
    elif [ -n "$hint" ]; then hint="Debian's ruby-dalli is $hint, not $NC_DALLI_VERSION"; fi
    if ! command -v ruby >/dev/null 2>&1; then
        nc_why "no ruby on PATH" "Ruby with Dalli $NC_DALLI_VERSION" "$hint"
        return "$NC_NO_TOOLCHAIN"
    fi
    have=$(nc_dalli_version)
    if [ "$have" != "$NC_DALLI_VERSION" ]; then
        if [ -n "$have" ]; then have="Dalli $have"; else have="no Dalli"; fi
        nc_why "the ruby on PATH loads $have" "Dalli $NC_DALLI_VERSION (the binary protocol)" \
            "$hint"
        return "$NC_NO_TOOLCHAIN"
    fi
}

# The Debian packages of the client toolchains that are missing from PATH, where Debian's version
# is enough (nc_missing_debs test). Go, Java and Ruby only when the client programs are wanted
# (not NC_CLIENTS=0). A JDK or Maven only when no java is on PATH or it is Debian's own: Maven
# brings Debian's Java, which could hide another one. Likewise ruby-dalli only for Debian's ruby
# (or none), and only when Debian's Dalli is the pinned one (or apt knows none yet: a machine
# whose package lists were never fetched; nc_install_debs asks again after apt-get update).
nc_toolchain_debs() {
    if [ "${NC_CLIENTS:-1}" != 0 ]; then
        if ! command -v go >/dev/null 2>&1 &&
            nc_version_ge "$(nc_deb_candidate golang-go)" "$NC_GO_SWITCH"; then
            echo golang-go
        fi
        if ! command -v java >/dev/null 2>&1 || nc_deb_owned java; then
            if ! command -v javac >/dev/null 2>&1 &&
                nc_version_ge "$(nc_deb_java)" "$(nc_java_min)"; then
                echo default-jdk-headless
            fi
            if ! command -v mvn >/dev/null 2>&1 && [ -n "$(nc_deb_candidate maven)" ]; then
                echo maven
            fi
        fi
        local dalli
        dalli=$(nc_deb_candidate ruby-dalli)
        if [ -z "$dalli" ] && [ -z "${NC_APT_UPDATED:-}" ]; then
            dalli=$NC_DALLI_VERSION  # none known yet: nc_install_debs asks again after an update
        fi
        if { ! command -v ruby >/dev/null 2>&1 || nc_deb_owned ruby; } &&
            [ "$(nc_dalli_version)" != "$NC_DALLI_VERSION" ] &&
            [ "$dalli" = "$NC_DALLI_VERSION" ]; then
            command -v ruby >/dev/null 2>&1 || echo ruby
            echo ruby-dalli
        fi
    fi
    if ! command -v node >/dev/null 2>&1 &&
        nc_version_ge "$(nc_deb_candidate nodejs)" "$(nc_node_min)"; then
        echo nodejs
        # a nodejs that carries its own npm (NodeSource's) conflicts with Debian's npm
        if ! command -v npm >/dev/null 2>&1 && ! LC_ALL=C apt-cache show --no-all-versions nodejs \
            2>/dev/null | grep -q '^Provides:.*\bnpm\b'; then
            echo npm
        fi
    fi
}

# ------------------------------------------------------------------------------------------------
# The client programs the integration tests drive the proxy with (test_clients_go_java.py): built
# into $NC_TEST_CACHE (default ~/.cache/nutcrackers-tests, shared with tests/nctest/pinned.py)
# under clients/<name>-<hash of the sources>/, so a build happens once per version of the sources
# and a changed pin or program is rebuilt. Each prints the path of what it built on stdout (its
# log goes to stderr); without its toolchain it logs "<group> not run: <why>" and returns
# NC_NO_TOOLCHAIN.

nc_clients_cache() {
    printf '%s/clients\n' "${NC_TEST_CACHE:-$HOME/.cache/nutcrackers-tests}"
}

# nc_src_hash DIR: a short hash of the files under DIR (names and contents), build output aside
nc_src_hash() {
    (cd "$1" && find . -type f ! -path './target/*' -print0 | LC_ALL=C sort -z |
        xargs -0 sha256sum | sha256sum | cut -c1-16)
}

# nc_client_build NAME PRODUCT BUILDER: runs BUILDER TMPDIR unless <cache>/NAME-<hash>/PRODUCT
# exists; the build goes to a temporary folder renamed into place, so a failed or concurrent
# build never leaves half a product
nc_client_build() {
    local name="$1" product="$2" builder="$3" src="$NC_CLIENTS_SRC/$1" dir tmp rc=0
    dir="$(nc_clients_cache)/$name-$(nc_src_hash "$src")"
    if [ -e "$dir/$product" ]; then
        printf '%s\n' "$dir/$product"
        return 0
    fi
    mkdir -p "$(dirname "$dir")"
    tmp=$(mktemp -d "$dir.XXXXXX")
    nc_log "building the $name client program into $dir"
    (cd "$src" && "$builder" "$tmp") >&2 || rc=$?
    if [ "$rc" -ne 0 ] || [ ! -e "$tmp/$product" ]; then
        rm -rf "$tmp"
        nc_log "the $name client program did not build (exit $rc)"
        return 1
    fi
    mv -T "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp"  # another build may have got there first
    printf '%s\n' "$dir/$product"
}

nc_go_builder() {  # in tests/clients/go: go.sum pins every module; -mod=readonly keeps it so.
    # A go older than go.mod's fetches that version through the module proxy (GOTOOLCHAIN=auto:
    # Debian's and Go's own go.env may say local)
    local have want
    have=$(nc_go_version) want=$(nc_go_wanted)
    if nc_version_ge "$have" "$want"; then
        go build -mod=readonly -buildvcs=false -trimpath -o "$1/client" .
    else
        nc_log "Go $have < $want (go.mod): go fetches Go $want (GOTOOLCHAIN=auto)"
        GOTOOLCHAIN=auto go build -mod=readonly -buildvcs=false -trimpath -o "$1/client" .
    fi
}

nc_java_builder() {  # in tests/clients/java: offline from the local Maven repository when it
    # has everything, else once online (the one-time fetch of Jedis and the pinned plugins)
    mvn -q -B -o -Dnc.build="$1" package >/dev/null 2>&1 || mvn -q -B -Dnc.build="$1" package
}

nc_build_go_client() {
    local why
    if ! why=$(nc_go_toolchain); then
        nc_log "$NC_GROUP_GO not run: $why"
        return "$NC_NO_TOOLCHAIN"
    fi
    nc_client_build go client nc_go_builder
}

nc_build_java_client() {
    local why
    if ! why=$(nc_java_toolchain); then
        nc_log "$NC_GROUP_JAVA not run: $why"
        return "$NC_NO_TOOLCHAIN"
    fi
    nc_client_build java nc-jedis-client.jar nc_java_builder
}

# Both, where their toolchain is here: fails only when one whose toolchain is here did not build
nc_build_clients() {
    local rc=0 one f
    for f in nc_build_go_client nc_build_java_client; do
        one=0
        "$f" >/dev/null || one=$?
        if [ "$one" -ne 0 ] && [ "$one" -ne "$NC_NO_TOOLCHAIN" ]; then rc="$one"; fi
    done
    return "$rc"
}

# The ruby on PATH, when it loads the pinned Dalli (tests/clients/ruby needs nothing else: Debian's
# ruby-dalli, installed by nc_install_debs test); else it logs "<group> not run: <why>" and returns
# NC_NO_TOOLCHAIN.
nc_ruby_clients() {
    local why
    if ! why=$(nc_ruby_toolchain); then
        nc_log "$NC_GROUP_RUBY not run: $why"
        return "$NC_NO_TOOLCHAIN"
    fi
    command -v ruby
}

# Installs tests/clients/node's pinned packages (redis clients, BullMQ, memjs) with `npm ci`
# (exactly its package-lock.json, no install scripts), only when node_modules is missing or was
# installed from another lock file or Node.js major version (a stamp file records which). Without
# Node.js >= 20 and npm it logs "<group> not run: <why>" and returns NC_NO_TOOLCHAIN. A lock on the
# folder keeps two test runs from installing at once.
nc_install_node_clients() {
    local dir="${1:-tests/clients/node}" why major want rc=0
    if ! why=$(nc_node_toolchain); then
        nc_log "$NC_GROUP_NODE not run: $why"
        return "$NC_NO_TOOLCHAIN"
    fi
    major=$(node -p 'process.versions.node.split(".")[0]')
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
