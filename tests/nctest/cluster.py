"""A Cluster: N real backends of one kind behind a one-pool proxy, with clients set up for it
(redis-py, pymemcache, raw sockets), clients straight to each backend, keys placed on chosen
servers, and its stop. The pytest fixtures (tests/integration/conftest.py) start the processes;
start_cluster() wires them together.

Threads: a Cluster belongs to the test's thread.
"""
from dataclasses import dataclass, field
from pathlib import Path

from . import keys, manage, procs, wait
from .conn import RawConn, mc_client, redis_client
from .procs import HOST

# (backends, worker threads): the combinations the proxy-core tests run with
MATRIX = [(1, 1), (1, 4), (4, 1), (4, 4)]


def matrix_id(param):
    backends, threads = param
    return f"b{backends}-T{threads}"


@dataclass
class Cluster:
    """N backends of one kind ("redis" or "memcache") behind a one-pool proxy."""
    kind: str
    threads: int
    proxy: object
    ports: list
    procs: list
    pool: dict
    port: int = None       # the pool's listen port (None for a unix socket)
    path: Path = None      # the pool's unix socket
    backend_args: tuple = ()
    name: str = None       # the pool's name (in the stats)
    _direct: dict = field(default_factory=dict)

    @property
    def redis(self):
        return self.kind == "redis"

    @property
    def db(self):
        return self.pool.get("redis_db", 0)

    def client(self, **kw):
        if self.redis:
            return redis_client(self.port, self.path, **kw)
        return mc_client(self.port, self.path, **kw)

    def raw(self, **kw):
        return RawConn(self.port, self.path, **kw)

    def direct(self, i):
        """A (cached) client straight to backend i, bypassing the proxy."""
        if i not in self._direct:
            self._direct[i] = (redis_client(self.ports[i], db=self.db)
                               if self.redis else mc_client(self.ports[i]))
        return self._direct[i]

    def holder(self, key):
        """The indexes of the backends that hold key."""
        return keys.holders(self.ports, self.redis, key, self.db)

    def server_of(self, key):
        """The index of the backend the proxy routes key to (the manage port's find_key)."""
        from . import manage

        line = manage.command(self.proxy.manage_port, f"find_key {self.proxy.conf_path.stem} {key}")
        return self.ports.index(int(line.split()[0].split(":")[1]))

    def route_keys(self, prefix, per_server):
        """per_server fresh keys for each server, as the proxy routes them (not written): a list,
        by server, of lists of keys."""
        return keys.by_route(self.ports, per_server, prefix, lambda ks: [
            self.ports.index(int(name.split(":")[1]))
            for name in manage.find_keys(self.proxy.manage_port, self.name, ks).values()])

    def mc_size(self, i, key):
        """The size of key's value on memcached i, or None when it has no such key."""
        return keys.mc_value_size(self.ports[i], key)

    def place_keys(self, prefix, per_server):
        """per_server keys (written through the proxy) on each backend: a list, by server, of
        lists of keys. The keys hold their own name as value."""
        by_server = [[] for _ in self.ports]
        client = self.client()
        for key in keys.spread_keys(prefix, 200 * len(self.ports) * per_server):
            if all(len(ks) >= per_server for ks in by_server):
                break
            client.set(key, key)
            (where,) = self.holder(key)
            if len(by_server[where]) < per_server:
                by_server[where].append(key)
        client.close()
        assert all(len(ks) == per_server for ks in by_server), by_server
        return by_server

    def pid(self):
        return self.proxy.pid

    def queued(self):
        """Requests the proxy holds for the pool's servers now (in_queue + out_queue)."""
        from . import manage

        doc = manage.status(self.proxy.manage_port)[self.name]
        return sum(s["in_queue"] + s["out_queue"] for s in doc.values()
                   if isinstance(s, dict) and "in_queue" in s)

    def alive(self):
        return self.proxy.proc.poll() is None

    def reload_conf(self, old, new, generation=2):
        """Replaces the text old by new in the proxy's config file, has it reloaded through the
        manage port and waits until it runs that generation."""
        text = self.proxy.conf_path.read_text()
        assert old in text, f"{old!r} is not in the config"
        self.proxy.conf_path.write_text(text.replace(old, new))
        assert manage.command(self.proxy.manage_port, "reload").startswith(f"OK generation {generation}")
        manage.wait_status(self.proxy.manage_port, lambda d: d.get("generation") == generation)

    def stop(self):
        """Stops the proxy (SIGTERM) and the backends; returns the proxy's exit status."""
        for c in self._direct.values():
            c.close()
        self._direct.clear()
        rc = procs.stop_popen(self.proxy.proc)
        # the backends need no clean exit (memcached would take up to a second to notice SIGTERM)
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
        procs.stop_popens([self.proxy.proc, *self.procs])
        return rc


@dataclass
class Direct:
    """One backend with no proxy in front, in a Cluster's place where a test runs its checks
    straight against the backend (which validates the checks themselves) and through the proxy:
    the same port, ports, raw(), route_keys() (every key is on it), server_of() and holder()."""
    kind: str
    port: int

    @property
    def ports(self):
        return [self.port]

    def raw(self, **kw):
        return RawConn(self.port, **kw)

    def route_keys(self, prefix, per_server):
        return keys.by_route(self.ports, per_server, prefix, lambda ks: [0] * len(ks))

    def server_of(self, key):
        return 0

    def holder(self, key):
        return keys.holders(self.ports, self.kind == "redis", key)


def start_cluster(kind, backends, threads, start_backend, write_conf, start_proxy, name,
                  backend_args=(), ports=None, listen=None, flags=(), **pool):
    """Starts `backends` backends with start_backend(args=backend_args) (or uses `ports`: backends
    already running or deliberately absent), writes a one-pool config (extra pool keys in
    **pool, listen on a free port or `listen`) and starts the proxy with -T threads."""
    started = []
    if ports is None:
        ports = []
        for _ in range(backends):
            port, proc = start_backend(args=backend_args)
            ports.append(port)
            started.append(proc)
    port = None
    path = None
    if listen is None:
        port = procs.free_port()
        listen = f"{HOST}:{port}"
    elif listen.startswith("/"):
        path = Path(listen.split()[0])
    conf = {"listen": listen, "redis": kind == "redis", **pool,
            "servers": [f"{HOST}:{p}:1" for p in ports]}
    conf_path = write_conf({name: conf}, name=f"{name}.yml")
    proxy = start_proxy(conf_path, "-T", str(threads), *flags, log_name=f"{name}.log")
    if path is not None:
        wait.wait_for(path.exists, procs.START_TIMEOUT, f"unix socket {path}")
    return Cluster(kind=kind, threads=threads, proxy=proxy, ports=ports, procs=started, pool=pool,
                   port=port, path=path, backend_args=tuple(backend_args), name=name)
