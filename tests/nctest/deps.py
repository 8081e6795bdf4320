"""scripts/lib/deps.sh from the tests: one of its functions (a client program's build, the Node
packages' install) run in the source root, a missing or too old toolchain told apart from a
failure. Without its toolchain a function logs "<group> not run: <why>" (the line scripts/test.sh's
summary prints too) and exits NC_NO_TOOLCHAIN; that line becomes NoToolchain's message, for the
tests to skip with.

Threads: any (the functions lock what they install or build into).
"""
import subprocess

from nctest.procs import REPO

NO_TOOLCHAIN = 3  # scripts/lib/deps.sh's NC_NO_TOOLCHAIN


class NoToolchain(RuntimeError):
    """The toolchain a client group needs is missing or too old here; the message says which
    group, why, and what to install."""


def call(function, timeout):
    """Runs `function` (with its arguments, shell words) of scripts/lib/deps.sh: its
    CompletedProcess, a failed one too. Raises NoToolchain, or subprocess.TimeoutExpired past
    timeout seconds."""
    out = subprocess.run(["bash", "-c", f". scripts/lib/deps.sh && {function}"], cwd=REPO,
                         stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
    if out.returncode == NO_TOOLCHAIN:
        lines = [line.removeprefix("==> ") for line in out.stderr.strip().splitlines()]
        raise NoToolchain(lines[-1] if lines else f"{function}: its toolchain is missing here")
    return out
