"""Client libraries of pinned versions that the test interpreter's own packages do not have
(redis-py 5.x beside the newest): installed apart by pip (`--target`, once per version, cached in
$NC_TEST_CACHE or ~/.cache/nutcrackers-tests) and used from a child Python process whose sys.path
starts there, so that two versions never meet in one interpreter.

Threads: any; the install is atomic (a rename), so two processes installing at once both end with
the same directory.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

INSTALL_TIMEOUT = 300.0  # seconds for pip, download included
RUN_TIMEOUT = 120.0      # seconds for the child's whole script

TESTS_DIR = Path(__file__).resolve().parents[1]


class Unavailable(RuntimeError):
    """The pinned package cannot be installed here (no index, no network): pip's output."""


def cache_dir():
    base = os.environ.get("NC_TEST_CACHE") or os.path.join(os.path.expanduser("~"), ".cache",
                                                           "nutcrackers-tests")
    return Path(base)


def install(spec):
    """The directory holding spec ("redis==5.3.1") and its dependencies, installed on first use."""
    target = cache_dir() / spec.replace("==", "-")
    if (target / ".complete").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        out = subprocess.run([sys.executable, "-m", "pip", "install", "--disable-pip-version-check",
                              "-q", "--no-input", "--target", str(tmp), spec],
                             stdin=subprocess.DEVNULL, capture_output=True, text=True,
                             timeout=INSTALL_TIMEOUT)
    except subprocess.TimeoutExpired as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise Unavailable(f"pip install {spec} took over {INSTALL_TIMEOUT}s") from e
    if out.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise Unavailable(f"pip install {spec} failed:\n{out.stdout}{out.stderr}")
    (tmp / ".complete").write_text(spec + "\n")
    try:
        os.rename(tmp, target)
    except OSError:  # another process got there first
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def run(spec, code, arg):
    """Runs code (a Python script) in a child interpreter that imports spec's package first
    (then tests/, for nctest), with the JSON value `arg` in sys.argv[1]; the script prints one
    JSON value, which is returned. A failing script raises AssertionError with its output."""
    path = install(spec)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(path), str(TESTS_DIR)]),
               PYTHONNOUSERSITE="1")
    out = subprocess.run([sys.executable, "-c", code, json.dumps(arg)], env=env,
                         stdin=subprocess.DEVNULL, capture_output=True, text=True,
                         timeout=RUN_TIMEOUT)
    assert out.returncode == 0, f"the {spec} script failed:\n{out.stdout}{out.stderr}"
    return json.loads(out.stdout.strip().splitlines()[-1])
