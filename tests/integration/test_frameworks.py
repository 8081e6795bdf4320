"""Job-queue frameworks end to end through the proxy, at their own defaults (notes/frameworks.md
lists the commands each sends):

- RQ (pinned in tests/integration/requirements.txt): its keys carry no hash tags, so it runs
  behind the proxy with a pool of ONE redis-server. Two `rq worker` processes (SimpleWorker: the
  job runs in the worker, not in a fork per job) start on an empty queue and block in BLMOVE;
  1,000 jobs are enqueued through the proxy (enqueue_many: MULTI/EXEC pipelines); each job
  counts its run in a hash through the worker's own connection and returns n * n. Then each
  worker is told to shut down through its Pub/Sub command channel (PUBLISH through the proxy to
  the SUBSCRIBE its worker holds), which interrupts its BLMOVE.
- BullMQ (Node, pinned in tests/clients/node/package.json; tests/clients/node/bullmq.js): four
  queues, each with a hash-tag prefix of its own that the pool maps to a server of its own, over
  a pool of 4 redis-servers; 250 jobs each (1,000 in all), a Worker (Lua scripts, BZPOPMIN on the
  marker key) and a QueueEvents (XREAD BLOCK on the events stream) per queue.

Every job's result is checked, each job ran exactly once (the framework's own records and a
count the job keeps itself), the servers hold what the frameworks wrote where the hash tags say,
and afterwards the proxy holds no dedicated server connection and its descriptors other than
its pooled server connections are back to their count before the run.

A framework that cannot be had here (rq not importable, the npm packages not installed) fails
the test, unless NC_CLIENTS=0 (or, for BullMQ, NC_REQUIRE_NODE_CLIENTS=0): then it skips, saying
why. Without Node.js >= 20 and npm, BullMQ skips with deps.sh's line "Node client tests (...) not
run: <why>" (scripts/test.sh's summary prints it too), unless NC_REQUIRE_NODE_CLIENTS=1.
"""
import json
import os
import re
import subprocess
import sys
import uuid

import pytest

from nctest import deps, manage, nodeclients, procfs
from nctest.conn import redis_client
from nctest.keys import spread_keys
from nctest.procs import HOST, REPO, free_port
from nctest.wait import scale, steady, wait_for

RQ_VERSION = "2.12.0"   # tests/integration/requirements.txt
RQ_JOBS_DIR = REPO / "tests" / "clients" / "rq"  # nc_rq_jobs.square, the job function
JOBS = 1000
RQ_WORKERS = 2
BULL_QUEUES = 4
RUN_TIMEOUT = 60.0      # seconds (unscaled) for a framework's 1,000 jobs
SETTLE = 10.0           # seconds for the proxy to let go of connections that closed


def unavailable(why, node=False):
    """Skip when the run allows it (NC_CLIENTS=0; NC_REQUIRE_NODE_CLIENTS=0 for Node), else fail."""
    if os.environ.get("NC_CLIENTS") == "0" or (node and os.environ.get("NC_REQUIRE_NODE_CLIENTS") == "0"):
        pytest.skip(why)
    pytest.fail(f"{why} (set NC_CLIENTS=0 to let the framework tests skip)")


def pool_of(redis_server, write_conf, nutcrackers, name, nservers):
    """A proxy with one redis pool (hash_tag "{}") of nservers servers: (proxy, listen port,
    [server ports])."""
    ports = [redis_server()[0] for _ in range(nservers)]
    listen = free_port()
    conf = write_conf({name: {"listen": f"{HOST}:{listen}", "redis": True, "hash_tag": "{}",
                              "servers": [f"{HOST}:{p}:1" for p in ports]}})
    return nutcrackers(conf), listen, ports


def own_fds(pid, servers):
    """The proxy's descriptors other than its connections to the servers (listeners, clients,
    pipes, eventfds, files): {fd: what procfs.fds says}."""
    return {fd: what for fd, what in procfs.fds(pid) if not (what[0] == "tcp" and what[3] in servers)}


def fd_baseline(proxy, servers):
    """own_fds once three samples in a row agree (the proxy just started)."""
    steady(lambda: len(own_fds(proxy.pid, servers)), SETTLE, "a stable descriptor count", samples=3,
           interval=0.2)
    return own_fds(proxy.pid, servers)


def check_released(proxy, pool, servers, baseline):
    """No dedicated server connection held, no client left, and the proxy's own descriptors back
    to baseline (pooled server connections may stay: they are the pool's)."""
    def held():
        st = manage.status(proxy.manage_port)
        return {p: st[pool][f"{HOST}:{p}:1"]["dedicated_connections"] for p in servers
                if st[pool][f"{HOST}:{p}:1"]["dedicated_connections"]}

    wait_for(lambda: not held(), SETTLE, "the dedicated server connections to come back")
    manage.wait_pool_stat(proxy.manage_port, pool, "client_connections", lambda n: n == 0, SETTLE)
    try:
        wait_for(lambda: len(own_fds(proxy.pid, servers)) == len(baseline), SETTLE,
                 f"the proxy's descriptors back to {len(baseline)}")
    except TimeoutError as e:
        now = own_fds(proxy.pid, servers)
        extra = {fd: what for fd, what in now.items() if baseline.get(fd) != what}
        gone = {fd: what for fd, what in baseline.items() if now.get(fd) != what}
        raise AssertionError(f"{e}: new {extra}, gone {gone}") from None


# ------------------------------------------------------------------------------------------ RQ

@pytest.fixture
def rq():
    try:
        import rq
    except ImportError as e:
        unavailable(f"rq cannot be imported ({e}): pip install -r tests/integration/requirements.txt")
    return rq


def start_rq_worker(tmp_path, listen, queue, name):
    log = open(tmp_path / f"{name}.log", "wb")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(RQ_JOBS_DIR), *filter(None, [os.environ.get("PYTHONPATH")])]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "rq.cli", "worker", "--worker-class", "rq.worker.SimpleWorker",
         "--name", name, "--url", f"redis://{HOST}:{listen}", queue],
        cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    return proc


def stop_procs(procs):
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait(timeout=10)


def test_rq_worker_pool_of_one_server(rq, redis_server, write_conf, nutcrackers, tmp_path):
    from rq import Queue
    from rq.command import send_shutdown_command
    from rq.job import JobStatus

    assert rq.__version__ == RQ_VERSION
    proxy, listen, (server,) = pool_of(redis_server, write_conf, nutcrackers, "jobs", 1)
    baseline = fd_baseline(proxy, [server])
    tag = uuid.uuid4().hex[:8]
    queue_name, runs_key = f"fw-{tag}", f"fw-{tag}:runs"
    names = [f"w{i}-{tag}" for i in range(RQ_WORKERS)]
    workers = [start_rq_worker(tmp_path, listen, queue_name, n) for n in names]
    direct = redis_client(server)
    try:
        # both workers are up: subscribed to their command channels, blocked on the empty queue
        def ready():
            subs = dict(direct.pubsub_numsub(*[f"rq:pubsub:{n}" for n in names]))
            blocked = direct.info("clients")["blocked_clients"]
            dead = [n for n, w in zip(names, workers) if w.poll() is not None]
            assert not dead, f"worker {dead[0]} exited:\n" + (tmp_path / f"{dead[0]}.log").read_text()[-3000:]
            return all(subs[f"rq:pubsub:{n}".encode()] == 1 for n in names) and blocked == RQ_WORKERS

        wait_for(ready, RUN_TIMEOUT, "the RQ workers subscribed and blocked in BLMOVE")
        # each worker found its own address by its name in CLIENT LIST (the proxy's clients)
        for n in names:
            ip = (direct.hget(f"rq:worker:{n}", "ip_address") or b"").decode()
            assert re.fullmatch(rf"{re.escape(HOST)}:\d+", ip), (n, ip)

        with redis_client(listen, protocol=None) as r:  # redis-py's default: RESP3
            q = Queue(queue_name, connection=r)
            jobs = []
            for start in range(0, JOBS, 100):
                jobs += q.enqueue_many([Queue.prepare_data("nc_rq_jobs.square", (n, runs_key))
                                        for n in range(start, start + 100)])
            wait_for(lambda: q.finished_job_registry.count == JOBS or q.failed_job_registry.count,
                     RUN_TIMEOUT, f"{JOBS} RQ jobs finished")
            assert q.failed_job_registry.count == 0, q.failed_job_registry.get_job_ids()
            # every job: finished, its result right, one execution recorded by RQ
            for n, job in enumerate(jobs):
                job.refresh()
                assert job.get_status() == JobStatus.FINISHED, (n, job.id)
                assert job.return_value() == n * n, (n, job.id)
                assert len(job.results()) == 1, (n, job.id, job.results())
            # and one run counted by the job itself
            assert r.hgetall(runs_key) == {str(n).encode(): b"1" for n in range(JOBS)}
            assert q.count == 0

            # the shutdown command, PUBLISHed through the proxy, reaches each worker's subscriber
            for n in names:
                send_shutdown_command(r, n)
            for w in workers:
                assert w.wait(timeout=RUN_TIMEOUT * scale()) == 0, w.args
        for n in names:
            log = (tmp_path / f"{n}.log").read_text()
            assert "Received shutdown command" in log, log[-3000:]
            assert "Traceback" not in log and "pubsub thread exiting" not in log, log[-3000:]
            assert "CLIENT LIST command not supported" not in log, log[-3000:]
        # the jobs' keys are on the pool's one server, as RQ wrote them
        assert direct.zcard(f"rq:finished:{queue_name}") == JOBS
        assert direct.pubsub_numsub(*[f"rq:pubsub:{n}" for n in names]) == \
            [(f"rq:pubsub:{n}".encode(), 0) for n in names]
    finally:
        stop_procs(workers)
        direct.close()
    check_released(proxy, "jobs", [server], baseline)


# -------------------------------------------------------------------------------------- BullMQ

@pytest.fixture(scope="module")
def node():
    try:
        return nodeclients.node_with_packages()
    except deps.NoToolchain as e:
        if os.environ.get("NC_REQUIRE_NODE_CLIENTS") == "1":
            pytest.fail(f"{e} (NC_REQUIRE_NODE_CLIENTS=1: the Node client tests must run)")
        pytest.skip(str(e))
    except nodeclients.Unavailable as e:
        unavailable(str(e), node=True)


def tags_per_server(proxy, pool, servers, tag):
    """One hash-tag prefix per server of the pool, in the servers' order: "{<tag>:<suffix>}", whose
    keys the pool routes to that server."""
    candidates = [f"{{{k}}}" for k in spread_keys(tag, 40 * len(servers))]
    out = manage.key_per_server(proxy.manage_port, pool, candidates)
    names = [f"{HOST}:{p}:1" for p in servers]
    assert set(out) == set(names), f"tags reach only {sorted(out)}"
    return [out[n] for n in names]


def run_bullmq(node, plan):
    """Runs bullmq.js; returns (its JSON, its whole output)."""
    timeout = (RUN_TIMEOUT + 30) * scale()  # the script's own deadline first
    try:
        result, rc, text = nodeclients.run(node, ["bullmq.js", json.dumps(plan)], timeout)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"bullmq.js did not finish in {timeout} s:\n{e.stdout}\n{e.stderr}")
    assert rc == 0 and result is not None and "error" not in result, \
        f"bullmq.js failed (exit {rc}):\n{text[-10000:]}"
    return result, text


def test_bullmq_hash_tag_prefixes_over_four_servers(node, redis_server, write_conf, nutcrackers):
    proxy, listen, servers = pool_of(redis_server, write_conf, nutcrackers, "bull", BULL_QUEUES)
    baseline = fd_baseline(proxy, servers)
    tag = uuid.uuid4().hex[:8]
    prefixes = tags_per_server(proxy, "bull", servers, tag)
    per_queue = JOBS // BULL_QUEUES
    plan = {"port": listen, "jobs": per_queue, "concurrency": 8,
            "timeout_ms": int(RUN_TIMEOUT * scale() * 1000),
            "queues": [{"name": f"q{i}", "prefix": p} for i, p in enumerate(prefixes)]}
    result, text = run_bullmq(node, plan)
    assert result["version"] == nodeclients.pinned_versions()["bullmq"]
    assert "Eviction policy" not in text, text  # BullMQ's INFO check: nothing to warn about
    for spec, got, server in zip(plan["queues"], result["queues"], servers, strict=True):
        name, prefix = spec["name"], spec["prefix"]
        ids = got["ids"]
        assert len(ids) == per_queue and len(set(ids)) == per_queue, (name, ids)
        # each job ran exactly once, completed once, with its own result
        assert got["runs"] == {i: 1 for i in ids}, name
        assert got["completed"] == per_queue and got["events"] == per_queue, name
        assert sorted(got["results"][i][0] for i in ids) == list(range(per_queue)), name
        assert all(got["results"][i][1] == got["results"][i][0] ** 2 for i in ids), name
        assert all(got["results"][i][2] == 1 for i in ids), name  # attempts made
        assert got["counts"] == {"completed": per_queue, "failed": 0, "waiting": 0, "active": 0,
                                 "delayed": 0}, name
        # the queue's keys are all on the server its hash tag maps to, and only there
        with redis_client(server) as r:
            assert r.zcard(f"{prefix}:{name}:completed") == per_queue, name
            assert r.xlen(f"{prefix}:{name}:events") > 0, name
            keys = r.keys("*")
            assert keys and all(k.decode().startswith(f"{prefix}:{name}:") for k in keys), \
                (name, [k for k in keys if not k.decode().startswith(prefix)][:10])
    check_released(proxy, "bull", servers, baseline)
