"""The command line: -V, -h, -D, bad flags and values, -t on good and bad configuration files."""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from nctest import procs
from nctest.procs import REPO

DATA = Path(__file__).resolve().parent / "data"

FLAGS = [
    ("-h", "--help", None),
    ("-V", "--version", None),
    ("-t", "--test-conf", None),
    ("-d", "--daemonize", None),
    ("-D", "--describe-stats", None),
    ("-v", "--verbose=N", "(default: 5, min: 0, max: 11)"),
    ("-o", "--output=S", "(default: stderr)"),
    ("-c", "--conf-file=S", "(default: conf/nutcrackers.yml)"),
    ("-s", "--port=N", "(default: 22222)"),
    ("-a", "--addr=S", "(default: 0.0.0.0)"),
    ("-i", "--interval=N", "(default: 30000 msec)"),
    ("-p", "--pid-file=S", "(default: off)"),
    ("-m", "--mbuf-size=N", "(default: 16384 bytes"),
    ("-T", "--thread_num=N", "(default: the CPUs it may run on"),
    ("-S", "--slowlog=N", "(default: 10000 usec)"),
    ("-N", "--manage-trust=S", "(default: 127.0.0.0/8,::1)"),
    ("-K", "--manage-auth-file=S", "(default: off)"),
    ("-L", "--log-interval=N", "(default: 10000 msec)"),
    ("-G", "--stop-grace=N", "(default: 5000 msec)"),
    ("-M", "--max-memory=N", "(default: 0 bytes: no cap)"),
    ("-W", "--batch-wait=N", "(default: 100 usec"),
    ("-H", "--hotkeys-sample=N", "(default: 16, min: 0, max: 1048576)"),
]

POOL_METRICS = ["client_eof", "client_err", "client_connections", "server_ejects",
                "forward_error", "fragments", "refused_commands", "client_idle_timeouts",
                "client_memory_closes", "client_tls_handshakes", "client_tls_handshake_failures",
                "client_tls_resumptions"]
SERVER_METRICS = ["server_eof", "server_err", "server_timedout", "server_connections",
                  "server_ejected_at", "requests", "request_bytes", "responses", "response_bytes",
                  "in_queue", "in_queue_bytes", "out_queue", "out_queue_bytes",
                  "dedicated_connections", "server_tls_handshakes",
                  "server_tls_handshake_failures", "server_tls_resumptions"]
HEADER_FIELDS = ["service", "source", "version", "uptime", "timestamp", "generation", "loaded_at",
                 "total_connections",
                 "curr_connections", "client_memory", "batch_waits", "batch_wait_offs",
                 "batch_waits_longer", "batch_waits_full", "reply_holds"]


@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_version(flag):
    """The version, and when the binary was built from a git checkout (this one, with git
    installed), the commit (`git describe`); a build from a tarball prints only the version."""
    r = procs.run([flag])
    assert r.returncode == 0
    m = re.fullmatch(r"This is nutcrackers-\d+\.\d+\.\d+( \(git (?:\S+-g)?([0-9a-f]{7,40})(?:-dirty)?\))?\n",
                     r.stdout)
    assert m, r.stdout
    if (REPO / ".git").exists() and shutil.which("git"):
        assert m.group(2), f"built from a git checkout, and -V names no commit: {r.stdout}"
        known = subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", m.group(2) + "^{commit}"],
                               capture_output=True)
        assert known.returncode == 0, f"-V names {m.group(2)}, not a commit of {REPO}"


@pytest.mark.parametrize("flag", ["-h", "--help", "-?"])
def test_help_lists_every_flag_with_default(flag):
    r = procs.run([flag])
    assert r.returncode == 0
    out = r.stdout
    assert out.startswith("This is nutcrackers-")
    assert "Usage: nutcrackers [-?hVdDt] [-v verbosity level] [-o output file]" in out
    for short, long_form, default in FLAGS:
        line = next((l for l in out.splitlines() if l.strip().startswith(f"{short}, ")), None)
        assert line is not None, f"help has no line for {short}"
        assert long_form in line
        if default:
            assert default in line, line


@pytest.mark.parametrize("flag", ["-D", "--describe-stats"])
def test_describe_stats_lists_every_metric(flag):
    r = procs.run([flag])
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert "pool stats:" in lines and "server stats:" in lines
    described = {}
    for line in lines:
        m = re.match(r'^  (\w+)\s+(counter|gauge|timestamp|string)\s+"(.+)"$', line)
        if m:
            described[m.group(1)] = (m.group(2), m.group(3))
    for name in POOL_METRICS + SERVER_METRICS + HEADER_FIELDS:
        assert name in described, f"-D does not describe {name}"
    assert described["client_connections"][0] == "gauge"
    assert described["client_eof"] == ("counter", "# eof on client connections")
    assert described["server_ejected_at"][0] == "timestamp"
    assert described["out_queue_bytes"] == ("gauge", "current request bytes in outgoing queue")


@pytest.mark.parametrize("args, needle", [
    (["-T", "0"], "option -T/--thread_num: '0' is out of range (1..1024)"),
    (["--thread-num=2000"], "-T/--thread_num"),
    (["-v", "12"], "-v/--verbose"),
    (["--verbose=-1"], "-v/--verbose"),
    (["-s", "0"], "-s/--port"),
    (["-s", "65536"], "-s/--port"),
    (["-m", "511"], "-m/--mbuf-size"),
    (["-m", "16777217"], "-m/--mbuf-size"),
    (["-i", "0"], "-i/--interval"),
    (["-S", "-1"], "-S/--slowlog"),
    (["-G", "-1"], "-G/--stop-grace"),
    (["-T", "12x"], "-T/--thread_num: '12x' is not a number"),
    (["-m", ""], "-m/--mbuf-size"),
    (["-s", "99999999999999999999999"], "-s/--port"),
    (["-c"], "-c/--conf-file"),
    (["-x"], "unknown option '-x'"),
    (["--stats-port=22222"], "unknown option '--stats-port=22222'"),
    (["-d", "extra"], "unexpected argument 'extra'"),
])
def test_bad_flag_exits_1_with_one_line(args, needle):
    r = procs.run(args)
    assert r.returncode == 1
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("nutcrackers: ")
    assert needle in lines[0]


def _ok_line(path):
    return f"nutcrackers: configuration file '{path}' syntax is ok"


def _invalid_line(path):
    return f"nutcrackers: configuration file '{path}' syntax is invalid"


@pytest.mark.parametrize("path", [
    DATA / "good_all_keys.yml",
    REPO / "conf" / "nutcrackers.yml",
    REPO / "conf" / "nutcrackers-local.yml",
])
@pytest.mark.parametrize("flag", ["-t", "--test-conf"])
def test_test_conf_ok(path, flag):
    r = procs.run([flag, "-c", str(path)])
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines()[-1] == _ok_line(path)


def test_test_conf_prints_the_connections_each_backend_receives(write_conf):
    """-t: one line per pool and server, -T x server_connections (and, in a redis pool, the
    dedicated connections transactions may add), on stdout; the verdict stays last on stderr."""
    path = write_conf({
        "rd": {"listen": "127.0.0.1:1", "redis": True, "server_connections": 3,
               "dedicated_connections": 2, "servers": ["127.0.0.1:2:1 one", "127.0.0.1:3:1 two"]},
        "mc": {"listen": "127.0.0.1:4", "server_connections": 2, "servers": ["127.0.0.1:5:1"]},
    })
    r = procs.run(["-t", "-T", "1", "-c", str(path)])
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines()[-1] == _ok_line(path)
    assert r.stdout.splitlines() == [
        "pool 'rd': server 'one': connections: 3 (-T 1 x server_connections 3), "
        "up to 5 with transactions (+ -T 1 x dedicated_connections 2)",
        "pool 'rd': server 'two': connections: 3 (-T 1 x server_connections 3), "
        "up to 5 with transactions (+ -T 1 x dedicated_connections 2)",
        "pool 'mc': server '127.0.0.1:5:1': connections: 2 (-T 1 x server_connections 2)",
    ]
    cpus = len(os.sched_getaffinity(0))
    r = procs.run(["-t", "-T", str(cpus + 1), "-c", str(path)])
    assert r.returncode == 0, r.stderr
    assert f"-T {cpus + 1} is more worker threads than the {cpus} CPUs" in r.stderr
    n = cpus + 1
    assert f"pool 'mc': server '127.0.0.1:5:1': connections: {2 * n} (-T {n} x server_connections 2)" \
        in r.stdout.splitlines()


def test_test_conf_default_path_is_conf_nutcrackers_yml():
    r = procs.run(["-t"], cwd=REPO)
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines()[-1] == _ok_line("conf/nutcrackers.yml")


# file -> the line the error must name
BAD_CONFS = {
    "bad_unknown_key.yml": 4,
    "bad_hash.yml": 3,
    "bad_distribution.yml": 4,
    "bad_timeout.yml": 3,
    "bad_listen.yml": 2,
    "bad_server_weight.yml": 5,
    "bad_boolean.yml": 3,
    "bad_yaml_indent.yml": 4,
}


@pytest.mark.parametrize("name", sorted(BAD_CONFS))
def test_test_conf_bad_file_names_its_line(name):
    path = DATA / name
    r = procs.run(["-t", "-c", str(path)])
    assert r.returncode == 1
    lines = r.stderr.splitlines()
    assert lines[-1] == _invalid_line(path)
    errors = lines[:-1]
    assert errors, "no error line before the verdict"
    assert all(l.startswith("nutcrackers: ") for l in errors), r.stderr
    assert any(f"{path}:{BAD_CONFS[name]}:" in l for l in errors), \
        f"no error names {path}:{BAD_CONFS[name]}:\n{r.stderr}"


def test_test_conf_missing_file(tmp_path):
    path = tmp_path / "absent.yml"
    r = procs.run(["-t", "-c", str(path)])
    assert r.returncode == 1
    lines = r.stderr.splitlines()
    assert lines[-1] == _invalid_line(path)
    assert len(lines) >= 2 and str(path) in lines[0]


def test_bad_conf_does_not_start(nutcrackers):
    """A normal start with a bad file exits 1, naming the problem, and does not stay up."""
    path = DATA / "bad_hash.yml"
    proxy = nutcrackers(path, wait=None)
    assert proxy.wait_exit(timeout=10) == 1
    assert f"{path}:3:" in proxy.log()


UNIT_CONF_DATA = REPO / "tests" / "unit" / "data" / "conf"


@pytest.mark.parametrize("path", sorted((UNIT_CONF_DATA / "bad").glob("*.yml")),
                         ids=lambda p: p.name)
def test_test_conf_every_bad_unit_file_gives_line_numbered_errors(path):
    """The config parser's own bad files, through the binary: exit 1, and every error line names
    the file and a line number."""
    r = procs.run(["-t", "-c", str(path)])
    assert r.returncode == 1
    lines = r.stderr.splitlines()
    assert lines[-1] == _invalid_line(path)
    assert len(lines) >= 2
    for line in lines[:-1]:
        assert re.match(rf"^nutcrackers: {re.escape(str(path))}:\d+(:\d+)?: \S", line), line


@pytest.mark.parametrize("path", sorted((UNIT_CONF_DATA / "good").glob("*.yml")),
                         ids=lambda p: p.name)
def test_test_conf_every_good_unit_file_is_ok(path):
    r = procs.run(["-t", "-c", str(path)])
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines()[-1] == _ok_line(path)
