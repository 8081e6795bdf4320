"""Routing is the same in every worker at every moment: a key never goes to one server from one
worker and to another server from another worker.

-T 8, 4 redis backends, 48 client connections (6 a worker), each on its own thread, each SETting
2000 distinct keys, reading them back, and, while the others are still writing, reading what a
client on another worker has written. Afterwards every key is read once more through a client
on a different worker than its writer, and looked up on the backends directly: it must be on
exactly one, the one that fnv1a_64 + ketama predicts (the vectors' Python model,
tests/vectors/model_check.py).

Which worker holds a client is not reported anywhere, so the test makes it known: the master
hands accepted clients to the workers round-robin, and the clients connect one at a time, each
answered (PING) before the next connects, so client i is on worker (b + i) % 8 for some b.
That every worker did carry traffic is seen on the backends: each worker has its own connection
to each server (server_connections: 1), so each backend must see 8 connections from the proxy.
"""
import bisect
import threading

from nctest import procs, vectors
from nctest.procs import HOST

NWORKERS = 8
NCLIENTS = 48           # a multiple of NWORKERS: 6 clients a worker
KEYS_PER_CLIENT = 2000
BATCH = 100             # commands per pipelined round trip
NBACKENDS = 4
THREAD_TIMEOUT = 120.0  # seconds for all the clients together
VERIFIER = "nc-routing-test"


def _key(client, j):
    key = b"c%02d:k%05d" % (client, j)
    if j % 4 == 0:  # bytes >= 0x80, which fnv1a_64 sign-extends
        key += b":\xc3\xa9\xff"
    return key


def _value(client, j):
    return b"v:%d:%d" % (client, j)


def _batches(indices):
    indices = list(indices)
    for i in range(0, len(indices), BATCH):
        yield indices[i:i + BATCH]


def _check_gets(conn, client, js, reader):
    """GETs keys js of `client` through conn; raises on any value that is not the one SET."""
    replies = conn.pipeline([(b"GET", _key(client, j)) for j in js])
    bad = [(_key(client, j), r) for j, r in zip(js, replies) if r != _value(client, j)]
    if bad:
        raise AssertionError(f"client {reader} read {len(bad)} keys of client {client} wrong, "
                             f"e.g. {bad[:3]}")


class Clients:
    """The 48 client threads and what they share."""

    def __init__(self, conns):
        self.conns = conns
        self.written = [0] * len(conns)  # per client: keys acknowledged so far (a prefix)
        self.lock = threading.Lock()
        self.barrier = threading.Barrier(len(conns), timeout=THREAD_TIMEOUT)
        self.errors = []
        self.broken = []  # clients that left at a broken barrier (a timeout, or another's error)

    def run(self, i):
        try:
            self._run(i)
        except threading.BrokenBarrierError:
            with self.lock:
                self.broken.append(i)
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            with self.lock:
                self.errors.append(f"client {i}: {e!r}")
            self.barrier.abort()

    def _run(self, i):
        conn = self.conns[i]
        nclients = len(self.conns)
        neighbour = (i + 1) % nclients  # on the next worker
        seen = 0                         # neighbour's keys read so far
        self.barrier.wait()
        for js in _batches(range(KEYS_PER_CLIENT)):
            replies = conn.pipeline([(b"SET", _key(i, j), _value(i, j)) for j in js])
            if any(r != "OK" for r in replies):
                raise AssertionError(f"SET replies {[r for r in replies if r != 'OK'][:3]}")
            _check_gets(conn, i, js, i)
            with self.lock:
                self.written[i] = js[-1] + 1
                upto = self.written[neighbour]
            # the neighbour's writes so far, read while everybody is still writing
            for njs in _batches(range(seen, upto)):
                _check_gets(conn, neighbour, njs, i)
            seen = upto
        self.barrier.wait()
        for njs in _batches(range(seen, KEYS_PER_CLIENT)):
            _check_gets(conn, neighbour, njs, i)
        # every key once more, from one of the 7 other workers: key j of client t is read by
        # client t + d, d = 1 + j % 7, which is d workers further on
        for d in range(1, NWORKERS):
            writer = (i - d) % nclients
            for js in _batches(range(d - 1, KEYS_PER_CLIENT, NWORKERS - 1)):
                _check_gets(conn, writer, js, i)


def _ketama_model(ports):
    ns, status, out = vectors.model()
    assert status == 0, f"model_check.py disagrees with the vectors:\n{out}"
    continuum = ns["ketama"]([b"%s:%d" % (HOST.encode(), p) for p in ports], [1] * len(ports))
    points = [point for point, _ in continuum]
    fnv1a_64 = ns["fnv1a_64"]

    def server_of(key):
        h = fnv1a_64(key) if key else 0
        at = bisect.bisect_left(points, h)
        return continuum[at % len(continuum)][1]

    return server_of


def _proxy_connections(backend):
    """Connections a backend has other than this test's own (which is named VERIFIER)."""
    text = backend.call("CLIENT", "LIST").decode()
    return [line for line in text.splitlines() if line and f" name={VERIFIER} " not in line]


def test_routing_is_the_same_in_every_worker(redis_server, write_conf, nutcrackers):
    gen = vectors.gen_vectors()
    ports = [redis_server()[0] for _ in range(NBACKENDS)]
    listen = procs.free_port()
    conf = write_conf({"shared": {
        "listen": f"{HOST}:{listen}", "hash": "fnv1a_64", "distribution": "ketama",
        "redis": True, "timeout": 10000, "server_connections": 1,
        "servers": [f"{HOST}:{p}:1" for p in ports]}})
    nutcrackers(conf, "-T", str(NWORKERS))

    conns = []
    try:
        for _ in range(NCLIENTS):  # one at a time: consecutive workers (see the docstring)
            conns.append(gen.Resp(listen, timeout=THREAD_TIMEOUT / 4))
            assert conns[-1].call("PING") == "PONG"
        clients = Clients(conns)
        threads = [threading.Thread(target=clients.run, args=(i,), daemon=True)
                   for i in range(NCLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(THREAD_TIMEOUT)
        assert not any(t.is_alive() for t in threads), "the clients did not finish in time"
        assert not clients.errors, (f"{len(clients.errors)} clients failed:\n" +
                                    "\n".join(clients.errors[:8]))
        # a barrier that timed out with no error would skip the cross-worker reads silently
        assert not clients.broken, f"clients {clients.broken[:8]} gave up at a broken barrier"
    finally:
        for c in conns:
            c.close()

    server_of = _ketama_model(ports)
    where, twice = {}, []
    for idx, port in enumerate(ports):
        backend = gen.Resp(port)
        try:
            assert backend.call("CLIENT", "SETNAME", VERIFIER) == "OK"
            from_proxy = _proxy_connections(backend)
            assert len(from_proxy) == NWORKERS, (
                f"backend {port}: {len(from_proxy)} connections from the proxy, expected one "
                f"per worker ({NWORKERS}):\n" + "\n".join(from_proxy))
            for key in backend.call("KEYS", "*"):
                if key in where:
                    twice.append(key)
                where[key] = idx
        finally:
            backend.close()
    assert not twice, f"{len(twice)} keys on two backends, e.g. {twice[:5]}"
    every_key = [_key(i, j) for i in range(NCLIENTS) for j in range(KEYS_PER_CLIENT)]
    missing = [k for k in every_key if k not in where]
    assert not missing, f"{len(missing)} keys on no backend, e.g. {missing[:5]}"
    assert len(where) == len(every_key), "keys this test did not write are on the backends"
    wrong = [(k, where[k], server_of(k)) for k in every_key if where[k] != server_of(k)]
    assert not wrong, f"{len(wrong)} keys not where ketama puts them (key, on, expected): " \
                      f"{wrong[:5]}"
    per_backend = [sum(1 for i in where.values() if i == b) for b in range(NBACKENDS)]
    assert min(per_backend) > 0, per_backend
