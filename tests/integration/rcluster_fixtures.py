"""pytest fixtures for the Redis Cluster tests (issue 28), loaded by conftest.py (pytest_plugins).
(Not `redis_cluster`: conftest.py's fixture of that name is N plain redis-servers behind a proxy.)

- `rcluster`: a factory, rcluster(nodes=6, replicas=1, node_timeout_ms=None, args=()) ->
  nctest.rcluster.RCluster, started: `nodes` redis-server nodes in cluster mode, `replicas`
  replicas per master (3 masters by default), every node ok and agreeing on the slot map, the
  replicas synced.
- `module_rcluster`: the same factory at module scope, for a cluster shared by the tests of a
  module (each test then finds the slots and masters where the last one left them: ask nodes()).
- `rcluster_proxy`: a factory, rcluster_proxy(cluster, *flags, seeds=1, pool="rc", name="nc",
  **keys) -> nctest.sentinel_proxy.PoolView of a proxy started (the `nutcrackers` fixture) with
  one pool of the cluster (its pool_conf: `redis_cluster: true`, the first `seeds` masters as
  servers), `keys` added (read_from, ...); `name` names its config and log files.
  `module_rcluster_proxy`: the same over the module's proxies.

The processes are the conftest reaper's too: the clusters stop by pid when the test (or the module)
ends, pass or fail; every node's output and redis-cli's are attached to a failing test's report.
A cluster's dir (nodes.conf files, logs) is removed at its stop when no test failed meanwhile (a
failing test's report still reads its logs).
"""
import shutil

import pytest

from conftest import attach_log
from nctest.rcluster import RCluster
from nctest.procs import HOST, free_port
from nctest.sentinel_proxy import PoolView


def _run(workdir, reaper, request):
    """The factory over one tmp dir and reaper; at the end, stops what it made (last first)."""
    made = []
    failed_before = request.session.testsfailed

    def start(nodes=6, replicas=1, **kw):
        cluster = RCluster(workdir / f"rcluster-{len(made)}", track=reaper.add_popen,
                          on_log=lambda title, path: attach_log(request, title, path),
                          nodes=nodes, replicas=replicas, **kw)
        made.append(cluster)
        return cluster.start()

    yield start
    for cluster in reversed(made):
        cluster.stop()
        if request.session.testsfailed == failed_before:
            shutil.rmtree(cluster.workdir, ignore_errors=True)


@pytest.fixture
def rcluster(tmp_path, reaper, request):
    """Factory: rcluster(nodes=6, replicas=1, **kw) -> a started nctest.rcluster.RCluster,
    stopped at the end of the test."""
    yield from _run(tmp_path, reaper, request)


@pytest.fixture(scope="module")
def module_rcluster(module_tmp_path, module_reaper, request):
    """The same factory at module scope: its clusters stop when the module's last test ends."""
    yield from _run(module_tmp_path, module_reaper, request)


def _proxy_factory(write_conf, nutcrackers):
    def start(cluster, *flags, seeds=1, pool="rc", name="nc", **keys):
        port = free_port()
        conf = cluster.pool_conf(f"{HOST}:{port}", seeds=seeds, **keys)
        path = write_conf({pool: conf}, name=f"{name}.yml")
        return PoolView(nutcrackers(path, *flags, log_name=f"{name}.log"), pool, port, conf)

    return start


@pytest.fixture
def rcluster_proxy(write_conf, nutcrackers):
    """Factory: rcluster_proxy(cluster, *flags, seeds=1, pool="rc", name="nc", **keys) -> a
    PoolView of a running proxy with a redis_cluster pool (see the module's docstring)."""
    return _proxy_factory(write_conf, nutcrackers)


@pytest.fixture(scope="module")
def module_rcluster_proxy(module_write_conf, module_nutcrackers):
    """The same at module scope (names must differ between the module's proxies)."""
    return _proxy_factory(module_write_conf, module_nutcrackers)
