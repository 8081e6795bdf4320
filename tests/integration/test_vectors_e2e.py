"""The key-distribution vectors (tests/vectors, measured on twemproxy 0.5.0) end to end: keys SET
through a running src/nutcrackers must land on exactly the backend the vectors name.

Two ways:
- through the vectors' own black-box checker (`gen_vectors.py check`), which needs the fixed
  loopback ports the vectors were measured on (unnamed ketama hashes "host:port"); the test runs
  of the machine take turns with them (a lock), and the test skips, naming the busy ports, when
  something else holds any of them;
- on free ports, every case as one pool of a single proxy. Each server gets the name that stands
  in for its address in the original: ketama hashes a named server's name instead of "host:port"
  ("host" on port 11211), and modula orders servers by name, "host:port:weight" when unnamed.
  So every case, the port-dependent ones included, runs wherever the test runs.
"""
import contextlib
import os
import shlex
import signal
import subprocess
import sys

import pytest

from conftest import attach_log
from nctest import procfs, procs, vectors
from nctest.procs import HOST, STOP_TIMEOUT
from nctest.wait import wait_for

PORT_11211_CASE = "ketama_md5_port11211"
SCRIPT_TIMEOUT = 120.0  # seconds for one gen_vectors.py run (about 4 s for all 46 cases)
PIPELINE = 200          # SETs per pipelined write


def _proxy_wrapper(tmp_path, logdir):
    """An executable that gen_vectors.py can start as its proxy. It starts it as
    `PROXY -c CONF -s PORT -o LOG`; the wrapper adds `-a 127.0.0.1` (the manage address defaults
    to 0.0.0.0) and moves the log into logdir (the script deletes its own work directory)."""
    path = tmp_path / "nutcrackers-for-gen-vectors"
    path.write_text(f"""#!/bin/sh
logdir={shlex.quote(str(logdir))}
prev=
for arg do
    shift
    if [ "$prev" = -o ]; then arg="$logdir/${{arg##*/}}"; fi
    set -- "$@" "$arg"
    prev=$arg
done
exec {shlex.quote(procs.nutcrackers_bin())} -a {HOST} "$@"
""")
    path.chmod(0o755)
    return path


def _stop_group(proc):
    """Stops the script's whole process group (it, its redis-servers, its proxy) and reaps what
    it left behind: they come back to this process, a child subreaper (see conftest)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=STOP_TIMEOUT)
    for pid in procfs.children(os.getpid()):
        try:
            group = os.getpgid(pid)
        except ProcessLookupError:
            group = None
        if group == proc.pid:
            procs.stop_pid(pid)


def _run_gen_vectors_check(cases, tmp_path, request):
    gen = vectors.gen_vectors()
    chosen = [c for c in gen.build_cases() if c["name"] in cases]
    assert sorted(c["name"] for c in chosen) == sorted(cases)
    needed = sorted({gen.LISTEN_PORT, gen.STATS_PORT} |
                    {p for c in chosen for p in c.get("ports", gen.PORTS)})
    busy = [p for p in needed if procs.port_busy(p)]
    if busy:
        pytest.skip(f"gen_vectors.py check needs the fixed ports {needed} on {HOST} "
                    f"(unnamed ketama hashes 'host:port'); busy now: {busy}")
    logdir = tmp_path / "proxy-logs"
    logdir.mkdir()
    wrapper = _proxy_wrapper(tmp_path, logdir)
    args = [sys.executable, str(vectors.GEN_VECTORS), "check", "--proxy", str(wrapper)]
    for name in cases:
        args += ["--case", name]
    proc = subprocess.Popen(args, cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            preexec_fn=procs.die_with_parent)
    try:
        out, _ = proc.communicate(timeout=SCRIPT_TIMEOUT)
    except subprocess.TimeoutExpired:
        out = f"(gen_vectors.py check did not finish in {SCRIPT_TIMEOUT:.0f}s)"
    finally:
        _stop_group(proc)
    passed = {line.split()[1] for line in out.splitlines() if line.startswith("OK ")}
    for name in cases:
        if name not in passed:
            attach_log(request, f"nutcrackers log, case {name}", logdir / f"{name}.proxy.log")
    assert proc.returncode == 0, out
    assert passed == set(cases), out
    assert f"{len(cases)} passed, 0 failed" in out, out
    assert "WARN" not in out, out  # the script's config for a case differs from the stored .yml


@contextlib.contextmanager
def _fixed_ports_held():
    """gen_vectors.py's fixed ports for this test alone among the machine's test runs (the two
    sanitizer stages run side by side): an exclusive lock, waited for (bounded) while another run
    holds it, so that one waits rather than finds the ports busy."""
    fd = procs.lock_fd("gen-vectors-fixed-ports")
    assert fd is not None, f"cannot open a lock file in {procs.PORT_LOCK_DIR}"
    try:
        wait_for(lambda: procs.try_lock(fd), SCRIPT_TIMEOUT, "another run's gen_vectors.py check")
        yield
    finally:
        os.close(fd)  # lets the lock go


def test_vectors_through_gen_vectors_check(tmp_path, request):
    """Every case but the port-11211 one (ports 6401..6404, 22199, 22299)."""
    cases = [name for name in vectors.case_names() if name != PORT_11211_CASE]
    assert len(cases) == 45
    with _fixed_ports_held():
        _run_gen_vectors_check(cases, tmp_path, request)


def test_vector_port11211_through_gen_vectors_check(tmp_path, request):
    """ketama leaves the port out of an unnamed server's name when it is 11211 (needs 11211)."""
    with _fixed_ports_held():
        _run_gen_vectors_check([PORT_11211_CASE], tmp_path, request)


def _stand_in_server(dist, server, backend_port):
    """The server line for backend_port that routes like `server` did at its own address."""
    host, port, weight, name = server
    if name is None:
        if dist == "ketama":
            name = host if port == 11211 else f"{host}:{port}"
        else:
            name = f"{host}:{port}:{weight}"
    return f"{HOST}:{backend_port}:{weight} {name}"


def _case_pool(name, listen_port, backend_ports):
    keys, servers = vectors.case_conf(name)
    assert len(servers) == len(backend_ports) == 4
    pool = {"listen": f"{HOST}:{listen_port}", **{k: v for k, v in keys.items() if k != "listen"}}
    pool["servers"] = [_stand_in_server(keys["distribution"], s, p)
                       for s, p in zip(servers, backend_ports)]
    return pool


def _check_case(gen, listen_port, backends, rows):
    """SETs every key of a case through the proxy, then finds each on the backends. Returns a
    list of problems (empty when every key is stored once, where the vectors say)."""
    for b in backends:
        assert b.call("FLUSHALL") == "OK"
    proxy = gen.Resp(listen_port)
    problems = []
    try:
        for i in range(0, len(rows), PIPELINE):
            chunk = rows[i:i + PIPELINE]
            replies = proxy.pipeline([(b"SET", key, b"v") for key, _ in chunk])
            problems += [f"SET {key!r}: {r!r}" for (key, _), r in zip(chunk, replies) if r != "OK"]
    finally:
        proxy.close()
    where = {}
    for idx, b in enumerate(backends):
        for key in b.call("KEYS", "*"):
            if key in where:
                problems.append(f"{key!r} on backends {where[key]} and {idx}")
            where[key] = idx
    wrong = [(key, want, where.get(key)) for key, want in rows if where.get(key) != want]
    if wrong:
        problems.append(f"{len(wrong)}/{len(rows)} keys misplaced, e.g. " + ", ".join(
            f"{key!r} want {want} got {got}" for key, want, got in wrong[:3]))
    sent = {key for key, _ in rows}  # the *_hashtag cases list 3 keys twice
    if len(where) != len(sent):
        problems.append(f"{len(where)} keys on the backends, {len(sent)} distinct keys sent")
    return problems


def test_vectors_on_free_ports(redis_server, write_conf, nutcrackers):
    """All 46 cases, each a pool of one proxy (default -T 8; each case on its own client
    connection, so the master hands consecutive cases to different workers)."""
    gen = vectors.gen_vectors()
    backend_ports = [redis_server()[0] for _ in range(4)]
    names = vectors.case_names()
    assert len(names) == 46
    listen_ports = dict(zip(names, procs.free_ports(len(names))))
    conf = write_conf({name: _case_pool(name, listen_ports[name], backend_ports)
                       for name in names})
    nutcrackers(conf)
    backends = [gen.Resp(p) for p in backend_ports]
    failed = {}
    try:
        for name in names:
            problems = _check_case(gen, listen_ports[name], backends, vectors.case_expected(name))
            if problems:
                failed[name] = problems
    finally:
        for b in backends:
            b.close()
    assert not failed, "\n".join(f"{name}: {'; '.join(p)}" for name, p in failed.items())
