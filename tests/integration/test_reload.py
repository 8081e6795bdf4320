"""Online reload (issue 9): SIGHUP and the manage port's `reload` re-read the config file.

The rig: pool "alpha" over 3 named redis servers (r0..r2; more started on demand) and pool
"beta" over one (b0), a proxy at -T 4, and 50 clients (35 on alpha, 15 on beta) of a steady
self-checking load (nctest.load.Load: SET k v + GET k in one write, unique values, the exact
reply bytes checked). Across every test: no client connection is dropped except on a removed pool
or port, no request fails, no reply reaches the wrong client; an identical reload opens no
backend connection and keeps every listening socket; connections and listeners no longer needed
are closed; routing follows the new config for existing clients; counters are not reset; and
afterwards (Rig.finish) the proxy's open descriptors are exactly back to their baseline (every
worker connected to every backend, no client) and its RSS near its baseline (not checked under a
sanitizer, where freed memory sits in quarantine).

Timing: every wait is bounded and generous (the suite also runs under ASan and TSan at -T 4 on a
busy 2-core machine); the test of 20 reloads is marked slow.
"""
import copy
import os
import re
import signal
import socket
import threading
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from nctest import manage, procfs, wait
from nctest.conf import render_conf, write_conf as replace_conf
from nctest.codec import Err, bulk, resp
from nctest.conn import RawConn
from nctest.keys import backend_keys, spread_keys
from nctest.load import Load, describe
from nctest.procs import HOST, free_port, read_text, sanitized_binary

THREADS = 4
ALPHA_CLIENTS, BETA_CLIENTS = 35, 15
RELOAD_TIMEOUT = 30.0   # seconds for a reload to be answered / logged
SETTLE = 15.0           # seconds for closes (fds) and trims (RSS) to happen
STUCK = 2.0             # seconds a request to a stopped backend has waited: forwarded long since
RSS_SLACK_KB = 24 * 1024
WARM_CLIENTS = 24       # per pool: enough that every worker reaches every backend
PROGRESS = 16           # exchanges per client after a reload: every key written twice since
PAUSE = 0.02            # seconds a load's client waits between exchanges


class Rig:
    """A proxy over named backends, its config as a dict (spec), the loads running on it, and the
    baseline of its descriptors and RSS."""

    def __init__(self, proxy, backends, procs, kinds, spec, start):
        self.proxy = proxy
        self.backends = backends   # name -> port
        self.procs = procs         # name -> Popen
        self.kinds = kinds         # name -> "redis" | "memcache"
        self.base = spec           # the config at start
        self.spec = copy.deepcopy(spec)
        self._start = start        # kind -> backend factory
        self.gen = 1
        self.loads = []
        self.fd_base = None
        self.rss_base = None

    @property
    def pid(self):
        return self.proxy.pid

    @property
    def manage(self):
        return self.proxy.manage_port

    # --- config
    def add_backend(self, name, kind="redis"):
        self.backends[name], self.procs[name] = self._start[kind]()
        self.kinds[name] = kind
        return self.backends[name]

    def server(self, name):
        return f"{HOST}:{self.backends[name]}:1 {name}"

    def variant(self, **pools):
        """The starting config with some pools' keys changed (None: the pool removed; a new name:
        a new pool)."""
        spec = copy.deepcopy(self.base)
        for name, change in pools.items():
            if change is None:
                del spec[name]
            elif name in spec:
                spec[name].update(change)
            else:
                spec[name] = change
        return spec

    def pool(self, names, listen_port=None, redis=True, **keys):
        port = listen_port or free_port()
        return {"listen": f"{HOST}:{port}", "redis": redis, **keys,
                "servers": [self.server(n) for n in names]}

    def write(self, spec_or_text):
        """Replaces the config file at once (a reload never reads half a file)."""
        replace_conf(self.proxy.conf_path, spec_or_text)

    def port_of(self, pool, spec=None):
        return int((spec or self.spec)[pool]["listen"].rsplit(":", 1)[1])

    # --- reloading
    def reload_reply(self):
        return manage.command(self.manage, "reload", timeout=RELOAD_TIMEOUT)

    def reload(self, spec=None, via="cmd"):
        """Writes spec (if given) and reloads through the manage port ("cmd") or SIGHUP ("hup");
        checks the reply, the notice in the log and the generation in the stats."""
        if spec is not None:
            self.write(spec)
        start = len(self.proxy.log())
        if via == "cmd":
            reply = self.reload_reply()
            assert reply == f"OK generation {self.gen + 1}\r\n", reply
        else:
            self.proxy.signal(signal.SIGHUP)
        self.reloaded(start, spec)

    def reloaded(self, start, spec=None):
        """Waits for the next generation's notice in the log (after character `start`) and in
        the stats; spec (if given) is the config it serves."""
        gen = self.gen + 1
        pattern = re.compile(rf"generation {gen}\b")
        wait.wait_for(lambda: pattern.search(self.proxy.log()[start:]), RELOAD_TIMEOUT,
                      f"'generation {gen}' in the log")
        manage.wait_status(self.manage, lambda d: d.get("generation") == gen,
                             timeout=RELOAD_TIMEOUT, what=f"generation {gen} in the stats")
        self.gen = gen
        if spec is not None:
            self.spec = copy.deepcopy(spec)

    # --- load
    def load(self, pool, nclients, **kw):
        kw.setdefault("redis", self.spec[pool]["redis"])
        kw.setdefault("prefix", pool)
        kw.setdefault("pause", PAUSE)
        listen = self.spec[pool]["listen"]
        if listen.startswith("/"):
            load = Load(path=listen.split()[0], nclients=nclients, **kw)
        else:
            load = Load(self.port_of(pool), nclients=nclients, **kw)
        load.start()
        self.loads.append(load)
        return load

    def steady(self):
        """The 50 clients of the standard load: (alpha's, beta's), once each answered."""
        alpha = self.load("alpha", ALPHA_CLIENTS)
        beta = self.load("beta", BETA_CLIENTS)
        for load in (alpha, beta):
            load.wait_progress(each=3)
        return alpha, beta

    def stop_loads(self):
        for load in self.loads:
            load.stop()

    def forget(self, load):
        """Stops a load whose problems the test judges itself (finish() does not check it)."""
        load.stop()
        self.loads.remove(load)

    # --- descriptors and memory
    def tcp(self):
        return [d for _, d in procfs.fds(self.pid) if d[0] == "tcp"]

    def listeners(self):
        """{port: socket inode} of the proxy's listening sockets."""
        return {d[2]: d[4] for d in self.tcp() if d[1] == "LISTEN"}

    def conns_to(self, port):
        """The proxy's connections to a backend: {local port: state}."""
        return {d[2]: d[1] for d in self.tcp() if d[1] != "LISTEN" and d[3] == port}

    def backend_conns(self):
        """{backend name: set of the proxy's local ports connected to it}."""
        return {name: set(self.conns_to(port)) for name, port in self.backends.items()}

    def wait_no_conns(self, name):
        wait.wait_for(lambda: not self.conns_to(self.backends[name]), SETTLE,
                      f"the proxy's connections to {name} to close")

    def backends_in(self, spec=None):
        return [line.split()[1] for pool in (spec or self.spec).values()
                for line in pool["servers"]]

    def warm(self, rounds=6):
        """Clients on every pool until every worker has its connection to every backend of the
        config (the state the baseline is taken in)."""
        for _ in range(rounds):
            for pool in self.spec:
                load = Load(self.port_of(pool), redis=self.spec[pool]["redis"],
                            nclients=WARM_CLIENTS, pause=0.002, prefix="warm")
                load.start()
                try:
                    load.wait_progress(each=8)
                finally:
                    load.stop()
                load.assert_clean("(warming)")
            counts = {n: len(self.conns_to(self.backends[n])) for n in self.backends_in()}
            if all(c == THREADS for c in counts.values()):
                return
        raise AssertionError(f"workers not connected to every backend: {counts}")

    def settled_fds(self):
        return wait.steady(lambda: procfs.fd_count(self.pid), SETTLE,
                           "the proxy's fd count to settle", samples=5)

    def take_baseline(self):
        self.warm()
        self.fd_base = self.settled_fds()
        if not sanitized_binary():
            self.rss_base = min(wait.sample(lambda: procfs.rss_kb(self.pid), 7))

    def finish(self):
        """Every load stopped and clean; the proxy alive and serving every pool; its descriptors
        exactly the baseline's number: listeners for the config's pools and the manage port, no
        client socket, one established connection per worker to each backend of the config and
        none to others; RSS near the baseline."""
        self.stop_loads()
        for load in self.loads:
            load.assert_clean()
        assert self.proxy.proc.poll() is None, "the proxy died"
        self.warm()
        now = self.settled_fds()
        tcp = self.tcp()
        text = "\n".join(f"{fd}: {d}" for fd, d in procfs.fds(self.pid))
        assert set(self.listeners()) == {self.port_of(p) for p in self.spec} | {self.manage}, text
        wanted = {self.backends[n] for n in self.backends_in()}
        conns = [d for d in tcp if d[1] != "LISTEN"]
        assert all(d[1] == "ESTABLISHED" and d[3] in wanted for d in conns), \
            f"client sockets, dead connections or connections to removed backends:\n{text}"
        assert now == self.fd_base, f"{now} descriptors, baseline {self.fd_base}:\n{text}"
        if self.rss_base is not None:
            wait.settle(lambda: procfs.rss_kb(self.pid), self.rss_base + RSS_SLACK_KB, SETTLE,
                        f"RSS back near {self.rss_base} kB")


@pytest.fixture
def rig(redis_server, memcached_server, write_conf, nutcrackers):
    """rig(kind="redis"|"memcache", beta=True, **alpha_keys) -> Rig with its baseline taken:
    alpha over r0..r2 (of kind), beta over the redis b0."""
    made = []

    def make(kind="redis", beta=True, **alpha_keys):
        start = {"redis": redis_server, "memcache": memcached_server}
        backends, procs, kinds = {}, {}, {}
        for name in ["r0", "r1", "r2"] + (["b0"] if beta else []):
            k = "redis" if name == "b0" else kind
            backends[name], procs[name] = start[k]()
            kinds[name] = k
        spec = {"alpha": {"listen": f"{HOST}:{free_port()}", "redis": kind == "redis",
                          "hash": "fnv1a_64", "distribution": "ketama", **alpha_keys,
                          "servers": [f"{HOST}:{backends[n]}:1 {n}" for n in ("r0", "r1", "r2")]}}
        if beta:
            spec["beta"] = {"listen": f"{HOST}:{free_port()}", "redis": True,
                            "servers": [f"{HOST}:{backends['b0']}:1 b0"]}
        conf = write_conf(spec)
        proxy = nutcrackers(conf, "-T", str(THREADS))
        r = Rig(proxy, backends, procs, kinds, spec, start)
        made.append(r)
        r.take_baseline()
        return r

    yield make
    for r in made:
        try:
            r.stop_loads()
        except AssertionError:
            pass


# --------------------------------------------------------------------------- helpers

def owners(rig, pool, keys):
    """{key: server name} as the manage port's find_keys routes them now."""
    return manage.find_keys(rig.manage, pool, keys)


def backend_get(rig, name, key):
    """key's value read straight from backend `name` (None: absent)."""
    return backend_keys(rig.backends[name], rig.kinds[name] == "redis", [key]).get(key)


def assert_routed_by_current_config(rig, pool, load):
    """Every key's last value (written by the load's clients, connected before the reload) is on
    the server the current config routes the key to: existing clients moved to the new config."""
    latest = dict(load.latest)
    where = owners(rig, pool, latest)
    wrong = [(k, where[k]) for k, v in latest.items() if backend_get(rig, where[k], k) != v]
    assert not wrong, f"{len(wrong)} of {len(latest)} keys not on their server: {wrong[:5]}"
    return where


def stats_counters(doc, pool, names):
    return {n: (doc[pool][n]["requests"], doc[pool][n]["responses"]) for n in names}


def refused(port):
    try:
        socket.create_connection((HOST, port), timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


def settle_after(rig, *loads, each=PROGRESS):
    since = time.monotonic()
    for load in loads:
        load.wait_progress(each=each, since=since)


def kept_conns(rig, conns, *changed):
    """The backend connections of conns' backends other than `changed`, now and then."""
    now = rig.backend_conns()
    return ({n: c for n, c in now.items() if n in conns and n not in changed},
            {n: c for n, c in conns.items() if n not in changed})


# --------------------------------------------------------------------------- identical reload

def test_identical_reload_changes_nothing(rig):
    r = rig()
    alpha, beta = r.steady()
    inodes = r.listeners()
    conns = r.backend_conns()
    fds = r.settled_fds()   # with the 50 clients connected
    doc0 = manage.status(r.manage)
    r.reload(via="cmd")
    settle_after(r, alpha, beta, each=4)
    r.reload(via="hup")
    settle_after(r, alpha, beta, each=4)
    assert r.listeners() == inodes, "a listening socket was replaced"
    assert r.backend_conns() == conns, "backend connections opened or closed"
    assert r.settled_fds() == fds
    doc = manage.status(r.manage)
    for pool, names in (("alpha", ["r0", "r1", "r2"]), ("beta", ["b0"])):
        before, after = stats_counters(doc0, pool, names), stats_counters(doc, pool, names)
        assert all(after[n][0] > before[n][0] and after[n][1] > before[n][1] for n in names), \
            (before, after)
        assert [doc[pool][n]["server_connections"] for n in names] == [THREADS] * len(names)
    assert doc["total_connections"] == doc0["total_connections"]
    assert doc["alpha"]["client_connections"] == ALPHA_CLIENTS
    assert doc["beta"]["client_connections"] == BETA_CLIENTS
    assert len(manage.status(r.manage, "workers")["workers"]) == THREADS  # -T is not reloaded
    r.finish()


# --------------------------------------------------------------------------- servers

def add_server_and_back(r, kind="redis", **change):
    """Under the steady load: r3 added to alpha (with `change` to alpha's other keys), then the
    starting config again. r3 serves, existing clients route by the new config, the other
    servers keep their connections; then r3's connections close and its keys go back."""
    r.add_backend("r3", kind)
    alpha, beta = r.steady()
    conns = r.backend_conns()
    r.reload(r.variant(alpha={**change,
                              "servers": [r.server(n) for n in ("r0", "r1", "r2", "r3")]}))
    settle_after(r, alpha, beta)
    assert manage.status(r.manage)["alpha"]["r3"]["requests"] > 0, "r3 gets no requests"
    now, before = kept_conns(r, conns, "r3")
    assert now == before, "connections of the servers that stay changed"
    alpha.stop()
    assert "r3" in assert_routed_by_current_config(r, "alpha", alpha).values()
    alpha = r.load("alpha", ALPHA_CLIENTS)
    alpha.wait_progress(each=3)
    r.reload(r.base, via="hup")
    settle_after(r, alpha, beta)
    r.wait_no_conns("r3")
    assert "r3" not in manage.status(r.manage)["alpha"]
    alpha.stop()
    assert set(assert_routed_by_current_config(r, "alpha", alpha).values()) <= {"r0", "r1", "r2"}
    now, before = kept_conns(r, conns, "r3")
    assert now == before
    r.finish()


def test_add_server_then_remove_it(rig):
    add_server_and_back(rig())


def test_remove_server_closes_its_connections_after_outstanding_replies(rig, stopped):
    """r2 removed while it holds requests (stopped): they are answered once it resumes, by the
    same connections, which close then; the other servers keep theirs; no request fails."""
    r = rig()
    alpha, beta = r.steady()
    conns = r.backend_conns()
    owner = owners(r, "alpha", [k for c in alpha.clients for k in c.keys])
    stopped(r.procs["r2"])

    def blocked(min_age=0.0):
        # waiting for r2 for min_age seconds: long since forwarded (a request sent just now may
        # still reach the proxy after the reload, and go to r0 or r1)
        now = time.monotonic()
        return {c.cid for c in alpha.clients
                if c.busy and owner[c.key] == "r2" and now - c.t_sent >= min_age}

    wait.wait_for(lambda: len(blocked(STUCK)) >= 10, SETTLE, what="clients waiting for r2")
    stuck = blocked(STUCK)
    r.reload(r.variant(alpha={"servers": [r.server(n) for n in ("r0", "r1")]}), via="hup")
    assert stuck <= blocked() and r.backend_conns()["r2"] == conns["r2"], \
        "r2's connections closed with replies outstanding"
    stopped.resume()
    settle_after(r, alpha, beta)
    r.wait_no_conns("r2")
    now, before = kept_conns(r, conns, "r2")
    assert now == before, "connections of the servers that stay changed"
    info = re.compile(rb"total_commands_processed:(\d+)")
    with RawConn(r.backends["r2"]) as c:
        first = int(info.search(c.call("INFO", "stats"))[1])
        alpha.wait_progress(each=8)
        # r2 processed only our first INFO since: no request of the load reaches it any more
        assert int(info.search(c.call("INFO", "stats"))[1]) == first + 1
    alpha.stop()
    assert set(assert_routed_by_current_config(r, "alpha", alpha).values()) <= {"r0", "r1"}
    r.reload(r.base)
    r.finish()


def test_change_hash_and_distribution_keeps_connections(rig):
    r = rig()
    alpha, beta = r.steady()
    conns = r.backend_conns()
    keys = alpha.clients[0].keys + alpha.clients[1].keys
    before = owners(r, "alpha", keys)
    r.reload(r.variant(alpha={"hash": "murmur", "distribution": "modula"}))
    assert owners(r, "alpha", keys) != before, "the new hash routes these keys the same"
    settle_after(r, alpha, beta)
    assert r.backend_conns() == conns, "same servers: the connections must be kept"
    alpha.stop()
    assert_routed_by_current_config(r, "alpha", alpha)
    alpha = r.load("alpha", ALPHA_CLIENTS)
    alpha.wait_progress(each=3)
    r.reload(r.base, via="hup")
    settle_after(r, alpha, beta)
    alpha.stop()
    assert owners(r, "alpha", keys) == before
    assert_routed_by_current_config(r, "alpha", alpha)
    assert r.backend_conns() == conns
    r.finish()


# --------------------------------------------------------------------------- pools and ports

def test_add_memcache_pool_on_new_port_then_remove_it(rig):
    r = rig()
    r.add_backend("m0", "memcache")
    alpha, beta = r.steady()
    inodes = r.listeners()
    conns = r.backend_conns()
    with_gamma = r.variant(gamma=r.pool(["m0"], redis=False))
    gport = r.port_of("gamma", with_gamma)
    assert refused(gport)
    r.reload(with_gamma, via="hup")
    gamma = r.load("gamma", 10)
    gamma.wait_progress(each=8)
    assert {p: i for p, i in r.listeners().items() if p != gport} == inodes
    assert gport in r.listeners()
    # removing it: its clients are closed (none gets a partial or wrong reply), its port
    # refuses, its backend connections close; the other pools do not notice
    r.reload(r.base)
    wait.wait_for(lambda: not gamma.open_clients(), SETTLE, what="gamma's clients closed")
    r.forget(gamma)
    bad = [p for p in gamma.problems_of() if p.kind != "closed" or p.partial]
    assert not bad, describe(bad)
    assert refused(gport)
    r.wait_no_conns("m0")
    assert "gamma" not in manage.status(r.manage)
    settle_after(r, alpha, beta, each=4)
    assert r.listeners() == inodes
    now, before = kept_conns(r, conns, "m0")
    assert now == before
    r.finish()


def test_unix_socket_pool_added_then_removed(rig):
    r = rig()
    r.add_backend("u0")
    alpha, beta = r.steady()
    path = r.proxy.conf_path.parent / "delta.sock"
    with_delta = r.variant(delta={"listen": f"{path} 0666", "redis": True,
                                  "servers": [r.server("u0")]})
    r.reload(with_delta)
    assert path.is_socket() and path.stat().st_mode & 0o777 == 0o666
    delta = r.load("delta", 6)
    delta.wait_progress(each=8)
    r.reload(r.base, via="hup")
    wait.wait_for(lambda: not delta.open_clients(), SETTLE, what="delta's clients closed")
    r.forget(delta)
    bad = [p for p in delta.problems_of() if p.kind != "closed" or p.partial]
    assert not bad, describe(bad)
    assert not path.exists(), "the removed pool's unix socket was not unlinked"
    r.wait_no_conns("u0")
    settle_after(r, alpha, beta, each=4)
    r.finish()


def test_remove_pool_serves_in_flight_requests_then_closes(rig, stopped):
    r = rig()
    alpha = r.load("alpha", ALPHA_CLIENTS)
    # beta's clients pause 1 s between exchanges: the close after a reply comes before the next
    beta = r.load("beta", BETA_CLIENTS, pause=1.0)
    for load in (alpha, beta):
        load.wait_progress(each=1)
    bport, aport = r.port_of("beta"), r.port_of("alpha")
    alpha_inode = r.listeners()[aport]
    # beta's backend stops answering: every beta client ends up with an exchange in flight
    stopped(r.procs["b0"])
    # waiting STUCK seconds: long since read by the proxy (a request it reads after the reload
    # finds no pool, and its client is closed with the request unanswered, rightly)
    wait.wait_for(lambda: sum(c.busy and time.monotonic() - c.t_sent >= STUCK
                                  for c in beta.clients) == BETA_CLIENTS,
                      SETTLE + STUCK, what="every beta client waiting for a reply")
    in_flight = {c.cid: c.t_sent for c in beta.clients}
    r.reload(r.variant(beta=None))
    wait.wait_for(lambda: refused(bport), SETTLE, what=f"beta's port {bport} to refuse")
    assert set(r.listeners()) == {aport, r.manage} and r.listeners()[aport] == alpha_inode
    assert len(beta.open_clients()) == BETA_CLIENTS, "clients closed with requests in flight"
    stopped.resume()
    wait.wait_for(lambda: not beta.open_clients(), SETTLE, what="beta's clients closed")
    r.forget(beta)
    # each got the reply to the exchange it had in flight, then the close
    late = [c.cid for c in beta.clients if in_flight[c.cid] not in c.sent_at]
    assert not late, f"beta clients {late} closed before the reply in flight"
    problems = beta.problems_of()
    assert sorted(p.cid for p in problems) == list(range(BETA_CLIENTS)), describe(problems)
    assert all(p.kind == "closed" and not p.partial and not p.busy for p in problems), \
        describe(problems)
    r.wait_no_conns("b0")
    assert "beta" not in manage.status(r.manage)
    settle_after(r, alpha)
    r.reload(r.base, via="hup")   # beta again, on its old port, for the final check
    r.finish()


def test_connections_waiting_in_the_backlog_survive_a_reload(rig, stopped):
    """The proxy is stopped (SIGSTOP) while 20 clients connect and send their first request: they
    wait in the kernel's backlog of alpha's listener. A SIGHUP with a changed config is pending when
    it resumes; the reload keeps the listening socket, so every one of them is served."""
    r = rig()
    beta = r.load("beta", BETA_CLIENTS)
    beta.wait_progress(each=3)
    inodes = r.listeners()
    stopped(r.proxy.proc)
    waiting = r.load("alpha", 20, prefix="backlog")
    wait.wait_for(lambda: len(waiting.busy_clients()) == 20, SETTLE,
                      what="every waiting client's request sent")
    changed = r.variant(alpha={"hash": "murmur"})
    r.write(changed)
    start = len(r.proxy.log())
    r.proxy.signal(signal.SIGHUP)
    stopped.resume()
    r.reloaded(start, changed)
    waiting.wait_progress(each=8)
    assert r.listeners() == inodes
    r.finish()


def test_change_pool_port(rig):
    r = rig()
    alpha, beta = r.steady()
    old = r.port_of("alpha")
    beta_inode = r.listeners()[r.port_of("beta")]
    beta_conns = r.backend_conns()["b0"]
    r.reload(r.variant(alpha={"listen": f"{HOST}:{free_port()}"}), via="hup")
    new = r.port_of("alpha")
    wait.wait_for(lambda: refused(old), SETTLE, what=f"the old port {old} to refuse")
    fresh = r.load("alpha", 10, prefix="fresh")
    fresh.wait_progress(each=8)
    # alpha's clients of the old port: either still served, or closed cleanly
    settle_after(r, alpha, beta, each=4)
    r.forget(alpha)
    bad = [p for p in alpha.problems_of() if p.kind != "closed" or p.partial]
    assert not bad, describe(bad)
    assert r.listeners()[r.port_of("beta")] == beta_inode
    assert r.backend_conns()["b0"] == beta_conns
    assert set(r.listeners()) == {new, r.port_of("beta"), r.manage}
    r.finish()


# --------------------------------------------------------------------------- invalid files

def line_of(text, needle):
    """The 1-based number of the line of text that contains needle."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_invalid_file_changes_nothing(rig):
    r = rig()
    alpha, beta = r.steady()
    inodes = r.listeners()
    conns = r.backend_conns()
    path = r.proxy.conf_path
    text = render_conf(r.variant(alpha={"hash": "nosuchhash"},
                                        beta={"distribution": "nosuchdist"}))
    lines = [line_of(text, "nosuchhash"), line_of(text, "nosuchdist")]
    r.write(text)
    start = len(r.proxy.log())
    reply = r.reload_reply()
    assert re.fullmatch(r"ERR: reload failed \(still serving generation 1\): \S.*; \S.*\r\n",
                        reply), reply
    for line in lines:
        r.proxy.wait_log(f"{path}:{line}:", start=start)
    # the same through SIGHUP
    start = len(r.proxy.log())
    r.proxy.signal(signal.SIGHUP)
    for line in lines:
        r.proxy.wait_log(f"{path}:{line}:", start=start, timeout=RELOAD_TIMEOUT)
    # a file that is not there
    os.rename(path, path.with_suffix(".away"))
    reply = r.reload_reply()
    assert reply.startswith("ERR: reload failed (still serving generation 1): "), reply
    assert reply.endswith("\r\n") and reply.count("\r\n") == 1, reply
    os.rename(path.with_suffix(".away"), path)
    # a valid file whose new listen address is taken
    with socket.socket() as taken:
        taken.bind((HOST, 0))
        taken.listen(1)
        r.write(r.variant(gamma=r.pool(["b0"], listen_port=taken.getsockname()[1])))
        reply = r.reload_reply()
    assert reply.startswith("ERR: reload failed (still serving generation 1): "), reply
    assert manage.status(r.manage)["generation"] == 1
    assert r.listeners() == inodes and r.backend_conns() == conns
    settle_after(r, alpha, beta, each=4)
    # the old config served all along (alpha still routes by fnv1a_64 and ketama)
    alpha.stop()
    assert_routed_by_current_config(r, "alpha", alpha)
    # a good file again: generation 2
    alpha = r.load("alpha", ALPHA_CLIENTS)
    r.reload(r.base)
    settle_after(r, alpha, beta, each=4)
    r.finish()


# --------------------------------------------------------------------------- pipelines

def test_pipeline_in_flight_across_reload_gets_replies_from_one_config(rig, stopped):
    """A client with requests in flight stays on its config for the requests it sends meanwhile,
    even after a reload; once nothing is in flight, it moves. Key K is routed to server A by the
    old config and to B by the new one (another hash); A is stopped while the pipeline is sent in
    two halves, the reload between them."""
    r = rig(beta=False)
    other = r.variant(alpha={"hash": "murmur"})
    candidates = spread_keys("pipe", 40)
    old_owner = owners(r, "alpha", candidates)
    r.reload(other)
    new_owner = owners(r, "alpha", candidates)
    r.reload(r.base)
    key = next(k for k in candidates if old_owner[k] != new_owner[k])
    a, b = old_owner[key], new_owner[key]
    for name in ("r0", "r1", "r2"):
        with RawConn(r.backends[name]) as c:
            assert c.call("SET", key, f"on-{name}") == "OK"
    n = 100
    half = resp("GET", key) * n
    with RawConn(r.port_of("alpha"), timeout=RELOAD_TIMEOUT) as conn:
        assert conn.call("GET", key) == f"on-{a}".encode()
        sent0 = manage.status(r.manage)["alpha"]

        def forwarded(count):
            manage.wait_status(
                r.manage, lambda d: sum(d["alpha"][s]["requests"] - sent0[s]["requests"]
                                        for s in ("r0", "r1", "r2")) >= count,
                timeout=SETTLE, what=f"{count} requests forwarded")

        stopped(r.procs[a])
        conn.send(half)
        forwarded(n)
        r.reload(other)
        conn.send(half)
        forwarded(2 * n)
        stopped.resume()
        replies = [conn.reply() for _ in range(2 * n)]
        wrong = [i for i, rep in enumerate(replies) if rep != bulk(f"on-{a}")]
        assert not wrong, f"replies {wrong[:10]} of {2 * n} not from {a}: {replies[wrong[0]]!r}"
        # nothing in flight any more: the next request is routed by the new config
        assert conn.call("GET", key) == f"on-{b}".encode()
    r.finish()


# --------------------------------------------------------------------------- memcached

def test_memcache_pool_reload(rig):
    add_server_and_back(rig(kind="memcache"), "memcache", hash="md5")


# --------------------------------------------------------------------------- stats

def test_stats_keep_counting_and_show_the_generation(rig):
    t_start = time.time()
    r = rig()
    r.add_backend("r3")
    pairs = manage.ordered(r.manage)
    keys = [k for k, _ in pairs]
    assert keys[:8] == ["service", "source", "version", "uptime", "timestamp", "generation",
                        "loaded_at", "total_connections"], keys
    top = dict(pairs)
    assert top["generation"] == 1
    assert isinstance(top["loaded_at"], int) and int(t_start) <= top["loaded_at"] <= time.time()
    alpha, beta = r.steady()
    samples, latency = [], []
    sampling = threading.Event()

    def sample():
        while not sampling.wait(0.05):
            samples.append(manage.status(r.manage))
            lat = manage.status(r.manage, "latency")["latency"]
            latency.append(lat["alpha"]["request_latency"]["count"])

    poller = threading.Thread(target=sample, daemon=True)
    poller.start()
    try:
        t_reload = time.time()
        r.reload(r.variant(alpha={"servers": [r.server(n) for n in ("r0", "r1", "r2", "r3")]}))
        settle_after(r, alpha, beta, each=8)
        doc = manage.wait_status(r.manage, lambda d: d["alpha"]["r3"]["responses"] > 0)
        assert doc["generation"] == 2 and int(t_reload) <= doc["loaded_at"] <= time.time()
        r.reload(r.base, via="hup")
        settle_after(r, alpha, beta, each=8)
    finally:
        sampling.set()
        poller.join(RELOAD_TIMEOUT)
    assert len(samples) > 5
    # the counters of the servers and pools that stay only grow
    for field in ("requests", "responses", "request_bytes", "response_bytes"):
        for pool, names in (("alpha", ("r0", "r1", "r2")), ("beta", ("b0",))):
            for name in names:
                seq = [d[pool][name][field] for d in samples]
                assert seq == sorted(seq) and seq[-1] > seq[0], (pool, name, field, seq)
    for field in ("total_connections", "uptime"):
        seq = [d[field] for d in samples]
        assert seq == sorted(seq), (field, seq)
    assert len(latency) > 5 and latency == sorted(latency), latency
    doc = manage.status(r.manage)
    assert doc["generation"] == 3 and "r3" not in doc["alpha"]
    assert doc["alpha"]["client_connections"] == ALPHA_CLIENTS
    assert doc["beta"]["client_connections"] == BETA_CLIENTS
    status, _, body = manage.http_get(r.manage, "/metrics")
    assert status == 200
    metrics = {s.name: s.value for fam in text_string_to_metric_families(body.decode())
               for s in fam.samples}
    assert metrics["nutcrackers_config_generation"] == 3
    assert metrics["nutcrackers_config_loaded_at_seconds"] == doc["loaded_at"]
    r.finish()


# --------------------------------------------------------------------------- ejection

def test_ejected_server_stays_ejected_across_reload(rig):
    r = rig(beta=False, auto_eject_hosts=True, server_failure_limit=1,
            server_retry_timeout=600000, timeout=2000)
    r.procs["r1"].kill()
    r.procs["r1"].wait(5)
    keys = spread_keys("eject", 60)
    start = len(r.proxy.log())
    with RawConn(r.port_of("alpha")) as c:
        for k in keys:   # until one request meets r1 and ejects it
            if isinstance(c.call("GET", k), Err):
                break
    r.proxy.wait_log("ejected", start=start)
    doc0 = manage.wait_status(r.manage, lambda d: d["alpha"]["r1"]["server_ejected_at"] > 0)
    r.reload(r.variant(alpha={"timeout": 3000}))
    assert "r1" not in owners(r, "alpha", keys).values(), "r1 is back in the distribution"
    with RawConn(r.port_of("alpha")) as c:
        for k in keys:
            assert c.call("SET", k, "v") == "OK" and c.call("GET", k) == b"v", k
    doc = manage.status(r.manage)
    assert doc["alpha"]["r1"]["server_ejected_at"] == doc0["alpha"]["r1"]["server_ejected_at"]
    assert doc["alpha"]["server_ejects"] == doc0["alpha"]["server_ejects"] == 1
    assert r.proxy.proc.poll() is None


# --------------------------------------------------------------------------- log

def test_sighup_still_reopens_the_log(rig):
    """Rotation as for twemproxy: rename the log, SIGHUP; the reload's notice and what follows go to
    a new file. A worker thread has written to the old file before (it logged the ejection of a
    server of pool zeta, which has nothing listening)."""
    r = rig(beta=False)
    with_zeta = r.variant(zeta={"listen": f"{HOST}:{free_port()}", "redis": True,
                                "auto_eject_hosts": True, "server_failure_limit": 1,
                                "server_retry_timeout": 600000,
                                "servers": [f"{HOST}:{free_port()}:1 dead"]})
    r.reload(with_zeta)
    start = len(r.proxy.log())
    with RawConn(r.port_of("zeta")) as c:
        assert isinstance(c.call("GET", "k"), Err)
    r.proxy.wait_log("ejected", start=start)
    log = r.proxy.log_path
    rotated = log.with_suffix(".1")
    os.rename(log, rotated)
    r.proxy.signal(signal.SIGHUP)
    wait.wait_for(log.exists, RELOAD_TIMEOUT, "a new log file")
    r.reloaded(0)   # generation 3, noticed in the new file
    r.reload(r.base)
    assert "generation 4" in read_text(log)
    assert "generation 3" not in read_text(rotated)
    r.finish()


def test_sighup_log_lines_name_the_signal(nutcrackers, write_conf, redis_server):
    """Operators grep the log for SIGHUP after a logrotate or a reload: the lines name the signal
    (number and name, like the other signals' lines) and say what it did, for a reload that
    worked and for one that failed."""
    port, _ = redis_server()
    spec = {"alpha": {"listen": f"{HOST}:{free_port()}", "redis": True,
                      "servers": [f"{HOST}:{port}:1 r0"]}}
    conf = write_conf(spec)
    proxy = nutcrackers(conf)
    hup = f"signal {int(signal.SIGHUP)} (SIGHUP): "
    start = len(proxy.log())
    proxy.signal(signal.SIGHUP)
    proxy.wait_log(hup + "configuration reloaded: generation 2", timeout=RELOAD_TIMEOUT,
                   start=start)
    assert hup + "log file reopened, reloading the configuration" in proxy.log()[start:]
    spec["alpha"]["hash"] = "nosuchhash"
    write_conf(spec)
    start = len(proxy.log())
    proxy.signal(signal.SIGHUP)
    proxy.wait_log(hup + "configuration not reloaded: still serving generation 2",
                   timeout=RELOAD_TIMEOUT, start=start)
    assert manage.status(proxy.manage_port)["generation"] == 2


# --------------------------------------------------------------------------- many reloads

@pytest.mark.slow
def test_twenty_reloads_in_quick_succession_under_load(rig):
    r = rig()
    r.add_backend("r3")
    other = r.variant(alpha={"hash": "murmur", "distribution": "modula",
                             "servers": [r.server(n) for n in ("r0", "r1", "r2", "r3")]},
                      beta={"hash": "md5"})
    alpha, beta = r.steady()
    loads = [alpha, beta,
             # clients that connect anew for every exchange: the listeners never miss one
             r.load("alpha", 3, churn=True, pause=0.03, prefix="churn"),
             r.load("beta", 2, churn=True, pause=0.03, prefix="churn"),
             # pipelines of 4 SET/GET pairs: one split across two configs would misroute a GET
             r.load("alpha", 5, depth=4, pause=0.01, prefix="deep")]
    for i in range(1, 21):
        r.reload(other if i % 2 else r.base, via="hup" if i % 2 else "cmd")
        if i % 5 == 0:
            settle_after(r, *loads, each=2)
    assert r.gen == 21
    settle_after(r, *loads)
    r.wait_no_conns("r3")
    r.stop_loads()
    assert_routed_by_current_config(r, "alpha", alpha)
    r.finish()
