"""pytest fixtures for the TLS tests (issue 26), loaded by conftest.py (pytest_plugins).

- `tls_certs`: a nctest.tls.Certs made once per module in its own tmp dir (CA, other CA, server,
  client, other client, a key matching nothing).
- `tls_redis_server`: a factory over conftest's `redis_server`: tls_redis_server(auth_clients="no",
  cert=None, key=None, args=()) -> (port, Popen) of a redis-server with no plain TCP port and a
  TLS port on 127.0.0.1 (certs.server_cert unless told; --tls-auth-clients as given).
- `tls_memcached_server`: the same over `memcached_server`: memcached -Z with the chain and key.
- `tls_proxy`: a factory over conftest's `nutcrackers`: tls_proxy(ports, *key_sets, threads=2,
  name="tls", **keys) -> (Proxy, listen port) of a proxy with one redis pool over the servers on
  ports (hash_tag "{}"), with the TLS keys of key_sets (nctest.tls.listener_keys, server_keys).

The backends are the conftest ones (logs attached, stopped by pid at the end of the test); only
their flags differ. A fixed port is one try for the conftest factory, so a TLS redis-server gets
a few tries with fresh ports.
"""
import pytest

from nctest import procs, tls
from nctest.procs import HOST
from nctest.wait import wait_for

START_TRIES = 3


@pytest.fixture(scope="module")
def tls_certs(tmp_path_factory):
    """The module's certificates (nctest.tls.make_certs)."""
    return tls.make_certs(tmp_path_factory.mktemp("tls-certs"))


@pytest.fixture
def tls_redis_server(redis_server, tls_certs):
    """Factory: tls_redis_server(auth_clients="no", cert=None, key=None, args=()) -> (port,
    Popen) of a TLS-only redis-server on 127.0.0.1."""

    def start(auth_clients="no", cert=None, key=None, args=()):
        last = None
        for _ in range(START_TRIES):
            port = procs.free_port()
            flags = tls.redis_tls_args(tls_certs, port, auth_clients, cert, key)
            try:
                return redis_server(port=port, args=(*flags, *args))
            except pytest.fail.Exception as e:  # the port was taken between pick and bind
                last = e
        raise last

    return start


@pytest.fixture
def tls_memcached_server(memcached_server, tls_certs):
    """Factory: tls_memcached_server(cert=None, key=None, args=()) -> (port, Popen) of a memcached
    speaking TLS only, on 127.0.0.1."""

    def start(cert=None, key=None, args=()):
        return memcached_server(args=(*tls.memcached_tls_args(tls_certs, cert, key), *args))

    return start


@pytest.fixture
def tls_proxy(nutcrackers, write_conf):
    """Factory: tls_proxy(ports, *key_sets, threads=2, name="tls", wait="listen", **keys) ->
    (Proxy, listen port): one redis pool `name` over 127.0.0.1:<port> for each of ports (hash_tag
    "{}"), the dicts of key_sets and keys added; -T threads; `wait` as the `nutcrackers`
    fixture's ("log": no start-up probe connects); the manage port up before it returns."""

    def start(ports, *key_sets, threads=2, name="tls", wait="listen", **keys):
        listen = procs.free_port()
        pool = {"listen": f"{HOST}:{listen}", "redis": True, "hash_tag": "{}"}
        for more in (*key_sets, keys):
            pool.update(more)
        pool["servers"] = [f"{HOST}:{p}:1" for p in ports]
        proxy = nutcrackers(write_conf({name: pool}), "-T", str(threads), wait=wait)
        wait_for(lambda: procs.port_accepts(proxy.manage_port), procs.START_TIMEOUT,
                 "the manage port")
        return proxy, listen

    return start
