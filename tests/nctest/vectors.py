"""Access to the shared key-distribution vectors (tests/vectors): the stored cases (.yml and
.tsv), and the vectors' own scripts loaded as modules (gen_vectors.py for its RESP client and its
`check` mode, model_check.py for its Python model of the hashes and ketama).

The scripts are shared byte for byte with the other implementations; they are imported, never
edited or copied here.

Threads: plain functions, any thread (model() redirects stdout while it runs: call it from one).
"""
import contextlib
import importlib.util
import io

from .procs import REPO

VECTORS = REPO / "tests" / "vectors"
GEN_VECTORS = VECTORS / "gen_vectors.py"
MODEL_CHECK = VECTORS / "model_check.py"


def gen_vectors():
    """tests/vectors/gen_vectors.py as a module (its main() runs only as a script)."""
    spec = importlib.util.spec_from_file_location("nc_gen_vectors", GEN_VECTORS)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def model():
    """Runs tests/vectors/model_check.py (it checks 11 vector files at import, then exits) and
    returns (namespace, exit_status, output): the namespace holds its functions (fnv1a_64, md5h,
    ketama, ...); exit_status 0 means the model reproduced those files with no mismatch."""
    ns = {"__name__": "nc_model_check", "__file__": str(MODEL_CHECK)}
    out = io.StringIO()
    status = 0
    with contextlib.redirect_stdout(out):
        try:
            exec(compile(MODEL_CHECK.read_text(), str(MODEL_CHECK), "exec"), ns)
        except SystemExit as e:
            status = e.code or 0
    return ns, status, out.getvalue()


def case_names():
    """Every case in cases.tsv, in its order."""
    lines = (VECTORS / "cases.tsv").read_text().splitlines()[1:]
    return [line.split("\t", 1)[0] for line in lines if line]


def case_conf(name):
    """The stored <name>.yml of a case as (pool_keys, servers): pool_keys maps each scalar key to
    its text, without YAML quotes ("hash": "md5", "hash_tag": "{}", ...); servers is a list of
    (host, port, weight, name or None) in config order. The files are twemproxy's flat one-pool
    form."""
    keys, servers = {}, []
    for line in (VECTORS / f"{name}.yml").read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("- "):
            addr, _, srv_name = stripped[2:].strip().partition(" ")
            host, port, weight = addr.rsplit(":", 2)
            servers.append((host, int(port), int(weight), srv_name.strip() or None))
        elif line.startswith("  ") and ":" in stripped:
            key, _, value = stripped.partition(":")
            if value.strip():
                keys[key] = value.strip().strip('"')
    return keys, servers


def case_expected(name):
    """The stored <name>.tsv as a list of (key bytes, server index), in file order."""
    rows = []
    for line in (VECTORS / f"{name}.tsv").read_text().splitlines():
        key_hex, _, idx = line.partition("\t")
        rows.append((bytes.fromhex(key_hex), int(idx)))
    return rows

