"""Real memcached clients at pinned versions, each in its own protocol, on one proxy port (issue
29: the binary protocol and meta commands beside the text protocol, on the same port):

  client                       protocol  pinned in
  pymemcache 4.0.0             text      tests/integration/requirements.txt
  pylibmc 1.6.3, binary=True   binary    tests/integration/requirements.txt
  meta-memcache 4.3.0          meta      tests/integration/requirements.txt (Python >= 3.10)
  memjs 1.3.2                  binary    tests/clients/node/package.json (program: memjs.js there)
  Dalli 3.0.6                  binary    Debian 12's ruby-dalli, scripts/lib/deps.sh
                                         (tests/clients/ruby/dalli.rb)

test_protocol_first_bytes checks the protocol column: each client's first bytes, sent to a plain
listener. Each client runs nctest.mcplan's plan on keys of its own (values of several sizes up to
100 KB, text and binary bytes, set, get, multi-get, delete, incr/decr, cas, expiry and touch, its
serializer's flags, flags it sets itself; nctest.mcclients says what each client has and why),
and what it saw is checked, then every key on the server it belongs on, read from the servers
themselves. test_cross_protocol: keys one client wrote (raw bytes, flags 0) read by each other.
test_every_client_at_once: the five through the proxy at the same time.

Each runs twice: `direct`, against a memcached 1.6 of its own with no proxy (the harness itself,
which passes today), and `proxy`, through a proxy at -T 2 over a pool of 3 memcacheds, where a key
belongs on the server the proxy's manage port names (`find_keys`). The proxy serves all three
protocols (PROXY_SERVES); a protocol left out of it would make its clients' tests through the
proxy strict xfails.

memjs runs with Node.js >= 20 (the `node` fixture), Dalli with the ruby that loads Dalli 3.0.6
(`ruby_dalli`); without them their tests skip with deps.sh's line, as test.sh's summary says.
"""
import socket
import struct
import subprocess
import threading
import uuid

import pytest

from nctest import mcclients, mcplan
from nctest.cluster import start_cluster
from nctest.conn import IO_TIMEOUT
from nctest.fake import FakeBackend
from nctest.manage import find_keys
from nctest.wait import scale

THREADED = True  # a -T 2 proxy shared by the module: the TSan stage runs these too (conftest.py)

CLIENTS = mcclients.CLIENTS
# the protocols the proxy serves (issue 29 added "meta", then "binary")
PROXY_SERVES = {"text", "meta", "binary"}
NOT_YET = {"meta": "meta commands: issue 29, not in the proxy yet",
           "binary": "binary protocol: issue 29, not in the proxy yet"}
TARGETS = ("direct", "proxy")


class Target:
    """Where the clients connect (port) and the memcacheds behind it (servers); route(keys) ->
    {key: the server port it belongs on}."""

    def __init__(self, port, servers, route):
        self.port, self.servers, self.route = port, servers, route


@pytest.fixture(scope="module")
def direct(module_memcached_server):
    port, _ = module_memcached_server()
    return Target(port, [port], lambda keys: {k: port for k in keys})


@pytest.fixture(scope="module")
def proxy(module_memcached_server, module_write_conf, module_nutcrackers):
    c = start_cluster("memcache", 3, 2, module_memcached_server, module_write_conf,
                      module_nutcrackers, name="mcclients")

    def route(keys):
        return {k: int(server.split(":")[1])
                for k, server in find_keys(c.proxy.manage_port, c.name, keys).items()}

    yield Target(c.port, c.ports, route)
    rc = c.stop()
    assert rc == 0, f"the proxy exited with status {rc}"


def marks(where, *protocols):
    """Strict xfail through the proxy for a protocol it does not serve yet."""
    missing = [p for p in ("meta", "binary") if p in protocols and p not in PROXY_SERVES]
    if where != "proxy" or not missing:
        return ()
    return (pytest.mark.xfail(strict=True, reason="; ".join(NOT_YET[p] for p in missing)),)


def timeout():
    return IO_TIMEOUT * scale()


def runner(request, name):
    """A function that runs a plan (or a cross-protocol plan) with client `name` and returns what
    it reported (any thread may call it). Skips without its toolchain (or meta-memcache without
    Python >= 3.10)."""
    if name in mcclients.EXTERNAL:
        exe = request.getfixturevalue("node" if name == "memjs" else "ruby_dalli")
        limit = mcclients.PROGRAM_TIMEOUT * scale()

        def program(plan):
            try:
                return mcclients.run_program(name, exe, plan, limit)
            except subprocess.TimeoutExpired as e:
                raise AssertionError(f"{name} did not finish in {limit} s:\n{e.stdout}\n{e.stderr}") from e
        return program
    if name == "meta-memcache" and (why := mcclients.meta_available()):
        pytest.skip(why)
    return lambda plan: (mcclients.run_cross if "write" in plan else mcclients.run_plan)(name, plan)


def run(request, name, plan):
    """Runs plan with client `name` (runner)."""
    return runner(request, name)(plan)


@pytest.fixture(scope="module")
def pins():
    return mcclients.pinned()


def first_read(seen):
    """A fake backend's serve: keeps its first read of a connection, then resets it (memjs never
    fails a request whose connection is closed with a FIN: it would wait for its step timeout)."""

    def serve(s, fake):
        while not fake.stopping.is_set():
            data = fake.recv(s)
            if data is not None:
                seen.append(data)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                return

    return serve


@pytest.mark.parametrize("name", CLIENTS)
def test_protocol_first_bytes(request, name):
    """The protocol a client speaks, from the first bytes it sends (to a listener that reads them
    and resets the connection: the client's write then fails, which is not the point here)."""
    seen = []
    fake = FakeBackend(first_read(seen))
    try:
        plan = mcplan.cross_plan(fake.port, 2.0, write=[["first-bytes", 5, "text"]])
        try:
            run(request, name, plan)
        except Exception:  # noqa: BLE001 - every client fails its own way against a closed socket
            pass
    finally:
        fake.stop()
    assert seen, f"{name} sent nothing"
    data = seen[0]
    protocol = CLIENTS[name][0]
    if protocol == "text":
        assert data.startswith(b"set first-bytes 0 0 5"), data
    elif protocol == "meta":
        assert data.startswith(b"ms first-bytes 5 "), data
    else:  # a binary request header: magic 0x80 (memjs and pylibmc: SET first; Dalli: VERSION)
        assert len(data) >= 24 and data[0] == 0x80 and data[1] in (0x01, 0x0b), data


@pytest.mark.parametrize("where,name", [
    pytest.param(w, n, marks=marks(w, CLIENTS[n][0]), id=f"{w}-{n}")
    for w in TARGETS for n in CLIENTS])
def test_client_plan(request, pins, where, name):
    target = request.getfixturevalue(where)
    plan = mcplan.make_plan(target.port, f"{name}-{where}-{uuid.uuid4().hex[:8]}", timeout())
    check_plan(run(request, name, plan), pins, name, plan, target)


def check_plan(got, pins, name, plan, target):
    """What client `name` reported of plan, and the servers behind target, are as they must be."""
    protocol, features = CLIENTS[name]
    assert (got["client"], got["version"], got["protocol"]) == (name, pins[name], protocol)
    for field, want in mcplan.expected(plan, features).items():
        assert got.get(field) == want, f"{name}'s {field} (steps done: {got['steps']})"
    problems = mcplan.backend_problems(target.route(mcplan.keys_of(plan)), target.servers, plan,
                                       features)
    assert not problems, "\n".join(problems)


def test_every_client_at_once(request, pins, proxy):
    """The five clients (text, meta and binary) on the proxy's one port at the same time, each its
    plan on keys of its own: each connection keeps its protocol, none sees another's replies."""
    runs = {name: runner(request, name) for name in CLIENTS}
    plans = {name: mcplan.make_plan(proxy.port, f"{name}-together-{uuid.uuid4().hex[:8]}", timeout())
             for name in CLIENTS}
    got, failed = {}, {}

    def one(name):
        try:
            got[name] = runs[name](plans[name])
        except Exception as e:  # noqa: BLE001 - reported below, per client
            failed[name] = e
    threads = [threading.Thread(target=one, args=(name,)) for name in CLIENTS]
    for t in threads:
        t.start()
    for t in threads:
        t.join(mcclients.PROGRAM_TIMEOUT * scale() + 30)
    assert not [t for t in threads if t.is_alive()], "a client did not finish"
    assert not failed, failed
    for name in CLIENTS:
        check_plan(got[name], pins, name, plans[name], proxy)


def written_by(request, cache, where, target, writer):
    """The cross-protocol values `writer` wrote through target (once per module), checked on the
    servers: [[key, size, kind], ...]. A failed write fails every reader of it."""
    slot = (where, writer)
    if slot not in cache:
        values = mcplan.cross_values(f"x-{writer}-{where}-{uuid.uuid4().hex[:8]}")
        try:
            got = run(request, writer, mcplan.cross_plan(target.port, timeout(), write=values))
            assert got["wrote"] == [True] * len(values), got
            route = target.route([k for k, _, _ in values])
            for key, size, kind in values:
                held = {p: mcplan.held(p, key) for p in target.servers}
                want = {p: None for p in target.servers}
                want[route[key]] = (mcplan.value_of(key, size, kind), 0, -1)
                assert held == want, f"{writer} wrote {key}: servers hold {held}"
        except Exception as e:  # noqa: BLE001 - kept for the other readers of this writer
            cache[slot] = e
        else:
            cache[slot] = values
    if isinstance(cache[slot], Exception):
        raise AssertionError(f"{writer}'s write failed: {cache[slot]}") from cache[slot]
    return cache[slot]


@pytest.fixture(scope="module")
def cross_cache():
    return {}


@pytest.mark.parametrize("where,writer,reader", [
    pytest.param(w, a, b, marks=marks(w, CLIENTS[a][0], CLIENTS[b][0]), id=f"{w}-{a}-to-{b}")
    for w in TARGETS for a in CLIENTS for b in CLIENTS if a != b])
def test_cross_protocol(request, cross_cache, where, writer, reader):
    """Raw bytes with flags 0 written by one client (ms, a text set or a binary SET) read by
    another (mg, a text get or a binary GET): the same bytes, flags 0 where the reader shows
    them (pymemcache, memjs, meta-memcache)."""
    target = request.getfixturevalue(where)
    values = written_by(request, cross_cache, where, target, writer)
    got = run(request, reader, mcplan.cross_plan(target.port, timeout(),
                                                 read=[k for k, _, _ in values]))
    for key, size, kind in values:
        seen = got["read"][key]
        want = mcplan.digest(mcplan.value_of(key, size, kind))
        assert seen is not None and seen[:2] == want, f"{reader} read {key}: {seen}, not {want}"
        assert seen[2] in (0, None), f"{reader} read {key} with flags {seen[2]}"
