"""pytest fixtures for the Redis Sentinel tests (issue 27), loaded by conftest.py (pytest_plugins).

- `sentinel_deployment`: a factory, sentinel_deployment(shards=2, replicas=1, sentinel_pass=None,
  master_pass=None, down_after_ms=1000, failover_timeout_ms=5000) -> nctest.sentinel.Deployment,
  started: S shards (shard0, shard1, ...) of a master and R synced replicas, 3 sentinels (quorum
  2) that know every master, its replicas and each other. sentinel_pass: the sentinels'
  requirepass (the proxy's sentinel_auth); master_pass: requirepass and masterauth of the servers
  (the sentinels' auth-pass, the proxy's redis_auth).
- `module_sentinel_deployment`: the same factory at module scope, for deployments shared by the
  tests of a module (each test then finds the masters where the last one left them: ask
  master_addr()).
- `sentinel_proxy`: a factory, sentinel_proxy(deployment, *flags, pool="sent", name="nc",
  servers=None, sentinels=None, **keys) -> nctest.sentinel_proxy.PoolView of a proxy started
  (the `nutcrackers` fixture) with one pool of the deployment (its pool_conf: the sentinels, a
  server per master name where the sentinels say it is now), `servers` and `sentinels` replacing
  those lists, `keys` added; `name` names its config and log files (several proxies per test).

The processes are the conftest reaper's: stopped by pid when the test (or the module) ends, pass
or fail; every server's and sentinel's output is attached to a failing test's report.
"""
import pytest

from conftest import attach_log
from nctest import sentinel
from nctest.procs import HOST, free_port
from nctest.sentinel_proxy import PoolView


def _factory(workdir, reaper, request):
    """The factory over one tmp dir and reaper, and the deployments it made (to stop)."""
    made = []

    def start(shards=2, replicas=1, sentinel_pass=None, master_pass=None, **kw):
        deployment = sentinel.Deployment(
            workdir / f"sentinel-deployment-{len(made)}", track=reaper.add_popen,
            on_log=lambda title, path: attach_log(request, title, path), shards=shards,
            replicas=replicas, sentinel_pass=sentinel_pass, master_pass=master_pass, **kw)
        made.append(deployment)
        return deployment.start()

    return start, made


def _run(workdir, reaper, request):
    start, made = _factory(workdir, reaper, request)
    yield start
    for deployment in reversed(made):
        deployment.stop()


@pytest.fixture
def sentinel_deployment(tmp_path, reaper, request):
    """Factory: sentinel_deployment(shards=2, replicas=1, sentinel_pass=None, master_pass=None,
    **kw) -> a started nctest.sentinel.Deployment, stopped at the end of the test."""
    yield from _run(tmp_path, reaper, request)


@pytest.fixture(scope="module")
def module_sentinel_deployment(module_tmp_path, module_reaper, request):
    """The same factory at module scope: its deployments stop when the module's last test ends."""
    yield from _run(module_tmp_path, module_reaper, request)


@pytest.fixture
def sentinel_proxy(write_conf, nutcrackers):
    """Factory: sentinel_proxy(deployment, *flags, pool="sent", name="nc", servers=None,
    sentinels=None, **keys) -> a PoolView of a running proxy (see the module's docstring)."""

    def start(deployment, *flags, pool="sent", name="nc", servers=None, sentinels=None, **keys):
        port = free_port()
        conf = deployment.pool_conf(f"{HOST}:{port}", **keys)
        if servers is not None:
            conf["servers"] = list(servers)
        if sentinels is not None:
            conf["sentinels"] = list(sentinels)
        path = write_conf({pool: conf}, name=f"{name}.yml")
        return PoolView(nutcrackers(path, *flags, log_name=f"{name}.log"), pool, port, conf)

    return start
