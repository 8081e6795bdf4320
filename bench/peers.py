"""bench/peers.py - the proxies bench/bench.py runs side by side, and how each one is started:
twemproxy (Debian's nutcracker 0.5.0), nutcrackers (and a second build, for A/B tests of a
change) and predixy (joyieldInc/predixy, a multithreaded C++ redis proxy, built from the peers
directory's tarball by its build-predixy.sh and started by its predixy-wrap.py).

predixy has no memcached and no ketama: it serves the redis pool only, over the same 4 servers,
routed by crc16/modula (predixy-wrap.py's choice) instead of fnv1a_64/ketama. Routing is a few
hundred instructions per request either way; what a server receives (which keys) differs, not how
much. Workloads of the memcached pool skip its variants.

Used from the benchmark's one thread.
"""
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the peers: predixy's source tarball, its build script and its wrapper (outside the repository)
PEERS_DIR = os.environ.get("NC_PEERS_DIR", os.path.join(os.path.dirname(ROOT), "shared", "peers"))
# where bench/run.sh builds predixy (build-predixy.sh DIR)
PREDIXY_BUILD_DIR = os.path.join(ROOT, "build-bench", "predixy")
PREDIXY_IN_DIR = os.path.join("predixy-ca1630a", "src", "predixy")

# name: (proxy kind, threads, proxy CPUs, CPUs of the load generator and the backends)
VARIANTS = {
    "tw": ("twemproxy", 1, {1}, {0}),
    "nc1": ("nutcrackers", 1, {1}, {0}),
    "px": ("predixy", 1, {1}, {0}),
    "twf": ("twemproxy", 1, {0, 1}, {0, 1}),
    "nc1f": ("nutcrackers", 1, {0, 1}, {0, 1}),
    "pxf": ("predixy", 1, {0, 1}, {0, 1}),
    "nc2f": ("nutcrackers", 2, {0, 1}, {0, 1}),
    "px2f": ("predixy", 2, {0, 1}, {0, 1}),
    "ncb": ("nutcrackers-b", 1, {1}, {0}),  # --nc-bin-b, pinned like nc1: A/B of two builds
    "ncb2f": ("nutcrackers-b", 2, {0, 1}, {0, 1}),  # --nc-bin-b, free like nc2f
}
# the pools each kind of proxy serves
POOLS = {"twemproxy": ("redis", "mc"), "nutcrackers": ("redis", "mc"), "nutcrackers-b": ("redis", "mc"),
         "predixy": ("redis",)}


def serves(variant, pool):
    """Whether the variant's proxy serves that pool (predixy: redis only)."""
    return pool in POOLS[VARIANTS[variant][0]]


def is_predixy(variant):
    return VARIANTS[variant][0] == "predixy"


def default_predixy_bin():
    """predixy as bench/run.sh builds it (build-bench/predixy/), else build-predixy.sh's default
    (/tmp/predixy/); None when neither was built."""
    for top in (PREDIXY_BUILD_DIR, "/tmp/predixy"):
        path = os.path.join(top, PREDIXY_IN_DIR)
        if os.access(path, os.X_OK):
            return path
    return None


def predixy_wrap():
    return os.path.join(PEERS_DIR, "predixy-wrap.py")


def write_predixy_conf(path, render_conf, pool):
    """A twemproxy config holding only the redis pool, for predixy-wrap.py (which reads the first
    pool's listen and every server line of the file: the memcached pool must not be there)."""
    with open(path, "w") as f:
        f.write(render_conf({"bench_redis": pool}))


def proxy_argv(kind, binary, conf, stats_port, logf, threads=1, wrap=None):
    """The argv that starts a proxy of kind ("twemproxy", "predixy", else nutcrackers) on a
    twemproxy config (predixy: through predixy-wrap.py, `wrap` or the peers directory's)."""
    if kind == "twemproxy":
        return [binary, "-c", conf, "-s", str(stats_port), "-a", "127.0.0.1", "-o", logf]
    if kind == "predixy":
        return ["python3", wrap or predixy_wrap(), binary, conf, logf, str(threads)]
    return [binary, "-c", conf, "-s", str(stats_port), "-a", "127.0.0.1", "-o", logf, "-T", str(threads)]


def proxy_cmd(variant, bins, confs, stats_port, logf):
    """The proxy's argv (under taskset, on the variant's CPUs). bins: {"nutcrackers", "nutcrackers-b",
    "twemproxy", "predixy": path}; confs: {"all": both pools, "predixy": the redis pool alone}."""
    kind, threads, cpus, _ = VARIANTS[variant]
    conf = confs["predixy"] if kind == "predixy" else confs["all"]
    cmd = proxy_argv(kind, bins[kind], conf, stats_port, logf, threads)
    return ["taskset", "-c", ",".join(map(str, sorted(cpus)))] + cmd


def version(variant, bins):
    """The proxy's version line, for the JSON record."""
    kind = VARIANTS[variant][0]
    if kind == "predixy":
        return f"predixy ca1630a ({bins[kind]})"
    out = subprocess.run([bins[kind], "-V"], capture_output=True, text=True)
    return (out.stdout + out.stderr).strip().splitlines()[0]
