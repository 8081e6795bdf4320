"""Many clients at once, and requests cut into single bytes (1 and 4 backends, -T 1 and -T 4).

50 concurrent clients each pipeline 1000 mixed commands (single-key, multi-key split over the
servers, proxy-answered, rejected) on keys of their own, written all at once; each client's reply
stream must be exactly the bytes a model of its own keys predicts, so a reply that reached the
wrong client, or came out of order, fails the test. Then a pipeline fed one byte per write.
"""
import random
import uuid

from nctest import load, manage, wait
from nctest.keys import spread_keys
from nctest.codec import array, bulk, integer, mc_value, resp

THREADED = True  # the TSan stage runs these too (conftest.py)
CLIENTS = 50
COMMANDS = 1000
KEYS = 12
COUNTERS = 3


def redis_script(prefix, seed):
    """(request bytes, expected reply bytes) for one client's pipeline of COMMANDS commands."""
    rnd = random.Random(seed)
    keys = spread_keys(f"{prefix}:s", KEYS)
    counters = spread_keys(f"{prefix}:n", COUNTERS)
    model = {}
    counts = {}
    req, rep = [], []
    for i in range(COMMANDS):
        op = rnd.randrange(12)
        k = rnd.choice(keys)
        value = f"{prefix}/{i}/" + "v" * rnd.randrange(40)
        if op == 0:
            req.append(resp("SET", k, value))
            rep.append(b"+OK\r\n")
            model[k] = value
        elif op == 1:
            req.append(resp("GET", k))
            rep.append(bulk(model.get(k)))
        elif op == 2:
            c = rnd.choice(counters)
            counts[c] = counts.get(c, 0) + 1
            req.append(resp("INCR", c))
            rep.append(integer(counts[c]))
        elif op == 3:
            model[k] = model.get(k, "") + f"+{i}"
            req.append(resp("APPEND", k, f"+{i}"))
            rep.append(integer(len(model[k])))
        elif op == 4:
            some = rnd.sample(keys, 3)
            req.append(resp("DEL", *some))
            rep.append(integer(sum(1 for s in some if model.pop(s, None) is not None)))
        elif op == 5:
            some = [rnd.choice(keys) for _ in range(rnd.randrange(2, 7))]
            req.append(resp("MGET", *some))
            rep.append(array(*[bulk(model.get(s)) for s in some]))
        elif op == 6:
            some = rnd.sample(keys, 4)
            pairs = []
            for j, s in enumerate(some):
                model[s] = f"{value}:{j}"
                pairs += [s, model[s]]
            req.append(resp("MSET", *pairs))
            rep.append(b"+OK\r\n")
        elif op == 7:
            some = rnd.sample(keys, 5)
            req.append(resp("EXISTS", *some))
            rep.append(integer(sum(1 for s in some if s in model)))
        elif op == 8:
            req.append(resp("STRLEN", k))
            rep.append(integer(len(model.get(k, ""))))
        elif op == 9:
            req.append(resp("PING", value))
            rep.append(bulk(value))
        elif op == 10:
            req.append(resp("SLOWLOG", "GET"))
            rep.append(b"-ERR unsupported command 'slowlog'\r\n")
        else:
            req.append(f"GET {k}\r\n".encode())  # inline
            rep.append(bulk(model.get(k)))
    return b"".join(req), b"".join(rep)


def mc_script(prefix, seed):
    rnd = random.Random(seed)
    keys = spread_keys(f"{prefix}:s", KEYS)
    counters = spread_keys(f"{prefix}:n", COUNTERS)
    model = {}
    counts = {c: 0 for c in counters}
    req = [b"".join(f"set {c} 0 0 1\r\n0\r\n".encode() for c in counters)]
    rep = [b"STORED\r\n" * COUNTERS]
    for i in range(COMMANDS):
        op = rnd.randrange(10)
        k = rnd.choice(keys)
        value = f"{prefix}/{i}/" + "v" * rnd.randrange(40)
        if op == 0:
            req.append(f"set {k} 0 0 {len(value)}\r\n{value}\r\n".encode())
            rep.append(b"STORED\r\n")
            model[k] = value
        elif op == 1:
            req.append(f"set {k} 0 0 {len(value)} noreply\r\n{value}\r\n".encode())
            model[k] = value
        elif op == 2:
            req.append(f"get {k}\r\n".encode())
            rep.append((mc_value(k, model[k]) if k in model else b"") + b"END\r\n")
        elif op == 3:
            some = [rnd.choice(keys) for _ in range(rnd.randrange(2, 8))]
            req.append(f"get {' '.join(some)}\r\n".encode())
            rep.append(b"".join(mc_value(s, model[s]) for s in some if s in model) + b"END\r\n")
        elif op == 4:
            req.append(f"add {k} 0 0 {len(value)}\r\n{value}\r\n".encode())
            rep.append(b"NOT_STORED\r\n" if k in model else b"STORED\r\n")
            model.setdefault(k, value)
        elif op == 5:
            req.append(f"append {k} 0 0 {len(str(i))}\r\n{i}\r\n".encode())
            rep.append(b"STORED\r\n" if k in model else b"NOT_STORED\r\n")
            if k in model:
                model[k] += str(i)
        elif op == 6:
            req.append(f"delete {k}\r\n".encode())
            rep.append(b"DELETED\r\n" if model.pop(k, None) is not None else b"NOT_FOUND\r\n")
        elif op == 7:
            c = rnd.choice(counters)
            counts[c] += i
            req.append(f"incr {c} {i}\r\n".encode())
            rep.append(b"%d\r\n" % counts[c])
        elif op == 8:
            req.append(b"bogus command\r\n")
            rep.append(b"ERROR\r\n")
        else:
            req.append(f"touch {k} 1000\r\n".encode())
            rep.append(b"TOUCHED\r\n" if k in model else b"NOT_FOUND\r\n")
    return b"".join(req), b"".join(rep)


def run_and_check(cluster, make_script):
    run = uuid.uuid4().hex[:6]
    scripts = [make_script(f"{run}c{i}", seed=i) for i in range(CLIENTS)]
    bad = load.run_clients(cluster.port, scripts)
    details = [f"client {i}: " + load.first_difference(got, scripts[i][1])
               for i, got in sorted(bad.items())[:5]]
    assert not bad, f"{len(bad)} of {CLIENTS} clients got wrong bytes:\n" + "\n".join(details)
    assert cluster.alive()


def test_redis_50_clients_pipelining(redis_cluster):
    run_and_check(redis_cluster, redis_script)


def test_memcache_50_clients_pipelining(mc_cluster):
    run_and_check(mc_cluster, mc_script)


def test_redis_request_one_byte_at_a_time(redis_cluster):
    keys = spread_keys(f"byte:{uuid.uuid4().hex[:6]}", 4)
    request = (resp("SET", keys[0], "a\r\nb") + resp("MSET", keys[1], "x", keys[2], "y") +
               resp("MGET", *keys) + f"EXISTS {' '.join(keys)}\r\n".encode() +
               resp("PING") + resp("NOSUCH", "arg"))
    expected = (b"+OK\r\n" * 2 + array(bulk("a\r\nb"), bulk("x"), bulk("y"), bulk(None)) +
                integer(3) + b"+PONG\r\n" + b"-ERR unsupported command 'nosuch'\r\n")
    with redis_cluster.raw() as c:
        load.drip(c.send, request)
        c.expect(expected)


def test_memcache_request_one_byte_at_a_time(mc_cluster):
    keys = spread_keys(f"byte{uuid.uuid4().hex[:6]}", 4)
    request = (f"set {keys[0]} 5 0 4\r\na\r\nb\r\n".encode() +
               f"set {keys[1]} 0 0 1 noreply\r\nx\r\n".encode() +
               f"get {' '.join(keys)}\r\n".encode() + b"nosuch\r\n" +
               f"delete {keys[1]} 0\r\n".encode())
    expected = (b"STORED\r\n" + b"VALUE %s 5 4\r\na\r\nb\r\n" % keys[0].encode() +
                mc_value(keys[1], "x") + b"END\r\nERROR\r\nDELETED\r\n")
    with mc_cluster.raw() as c:
        load.drip(c.send, request)
        c.expect(expected)


# --- regression: client back-pressure deadlock. A client that writes its whole pipeline before
# reading any reply (as redis-py's pipeline does) got stuck: after 4096 queued requests the proxy
# stopped reading it while the replies it could not deliver filled the client's socket, so both
# sides waited for each other. Now only requests still waiting for a server pause a client.

BIG_PIPELINE = 10000
STUCK = 20.0  # seconds: the pipelines take about one; before the fix they never ended


def test_back_pressure_deadlock_redis_py_pipeline(redis_cluster):
    client = redis_cluster.client(socket_timeout=STUCK)
    keys = spread_keys(f"bp{uuid.uuid4().hex[:6]}", BIG_PIPELINE)
    pipe = client.pipeline(transaction=False)
    for i, key in enumerate(keys):
        pipe.set(key, f"{i:04d}" * 256)
        pipe.get(key)
    assert pipe.execute() == [x for i in range(BIG_PIPELINE) for x in (True, f"{i:04d}".encode() * 256)]
    client.close()


def test_back_pressure_deadlock_memcache_raw_pipeline(mc_cluster):
    keys = spread_keys(f"bp{uuid.uuid4().hex[:6]}", BIG_PIPELINE)
    values = [(f"{i:04d}" * 256) for i in range(BIG_PIPELINE)]
    request = b"".join(f"set {k} 0 0 {len(v)}\r\n{v}\r\nget {k}\r\n".encode()
                       for k, v in zip(keys, values))
    expected = b"".join(b"STORED\r\n" + mc_value(k, v) + b"END\r\n" for k, v in zip(keys, values))
    with mc_cluster.raw(timeout=STUCK) as c:
        c.send(request)  # all of it before reading anything (bounded by the socket timeout)
        c.expect(expected)


def client_memory(cluster):
    """What the proxy holds for its clients now (the stats' client_memory gauge)."""
    return lambda: manage.status(cluster.proxy.manage_port)["client_memory"]


def test_paused_client_resumes_when_servers_answer(redis_cluster, stopped):
    """The back-pressure that remains: while the servers are stopped, a client's 30000 queued
    requests pause it (the proxy stops taking its requests once it holds a few thousand: the
    rest waits in the socket); once they answer, it is read again and every reply comes, in
    order. Of those it holds, a few hundred are on the server connections, the rest wait for the
    client's share of them (core/fair.h): what it holds for the client (the client_memory gauge,
    about 600 bytes a request) shows how many it took."""
    keys = spread_keys(f"slow{uuid.uuid4().hex[:6]}", 50)
    client = redis_cluster.client()
    client.mset({k: k for k in keys})
    client.close()
    n = 30000
    request = b"".join(resp("GET", keys[i % len(keys)]) for i in range(n))
    expected = b"".join(bulk(keys[i % len(keys)]) for i in range(n))
    for proc in redis_cluster.procs:
        stopped(proc)
    client = load.start_clients(redis_cluster.port, [(request, expected)])
    try:
        wait.wait_value(redis_cluster.queued, lambda q: q >= 100, 30,
                        "the proxy sending the client's requests")
        held = wait.steady(client_memory(redis_cluster), 30, "what the proxy holds to stop growing",
                           samples=5)
        assert held > 1000 * 512, f"the proxy holds {held} bytes: fewer requests than it should take"
        assert held < n * 512, f"the proxy holds {held} bytes: it took all {n} requests, not paused"
    finally:
        stopped.resume()
        bad = load.finish_clients(client)
    assert not bad, load.first_difference(bad[0], expected)
