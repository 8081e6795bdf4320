"""The pinned Node.js packages of tests/clients/node (the redis clients of test_clients_node.py,
BullMQ for test_frameworks.py, memjs for test_memcache_clients.py): the node binary, once they are
installed by scripts/lib/deps.sh (nc_install_node_clients: `npm ci` when node_modules is missing
or out of date).

Threads: any (the install takes a lock on the folder).
"""
import json
import shutil
import subprocess

from nctest import deps
from nctest.procs import REPO

NODE_DIR = REPO / "tests" / "clients" / "node"
INSTALL_TIMEOUT = 600.0  # seconds for npm ci, downloads included


class Unavailable(RuntimeError):
    """The packages cannot be installed here (Node.js >= 20 and npm are there); the message says
    why."""


def pinned_versions():
    """{name or alias: version} from package.json ("npm:ioredis@5.11.1" -> "5.11.1")."""
    pins = json.loads((NODE_DIR / "package.json").read_text())["dependencies"]
    return {name: spec.rsplit("@", 1)[-1] for name, spec in pins.items()}


def node_with_packages():
    """The node binary, with the pinned packages installed in NODE_DIR. Raises
    deps.NoToolchain without Node.js >= 20 and npm (deps.sh's nc_node_toolchain says why), and
    Unavailable when the install fails."""
    try:
        out = deps.call("nc_install_node_clients", INSTALL_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise Unavailable(f"npm ci in {NODE_DIR} took over {INSTALL_TIMEOUT} s") from None
    if out.returncode != 0:
        raise Unavailable(f"the Node packages cannot be installed here:\n{out.stdout}{out.stderr}")
    return shutil.which("node")


def run(node, args, timeout, env=None):
    """Runs `node args...` in NODE_DIR (a program that prints one JSON line last): (that JSON, or
    None when the last line is not one; its exit code; its stdout and stderr). Raises
    subprocess.TimeoutExpired past timeout seconds."""
    out = subprocess.run([node, *args], cwd=NODE_DIR, env=env, capture_output=True, text=True,
                         timeout=timeout, stdin=subprocess.DEVNULL)
    lines = out.stdout.strip().splitlines()
    result = None
    if lines:
        try:
            result = json.loads(lines[-1])
        except ValueError:
            pass
    return result, out.returncode, out.stdout + out.stderr
