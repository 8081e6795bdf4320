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

The processes are the conftest reaper's: stopped by pid when the test (or the module) ends, pass
or fail; every server's and sentinel's output is attached to a failing test's report.
"""
import pytest

from conftest import attach_log
from nctest import sentinel


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
