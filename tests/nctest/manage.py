"""The proxy's manage port: text commands (`status`, `status workers`, `find_key(s)`, `slowlog`,
`reload`, ...), the JSON a silent client gets, HTTP (`/metrics`, and its samples parsed), and
waits on the stats: a counter or gauge reaching a value is an event a test can wait for.

Threads: each call opens its own connection; any thread.
"""
import http.client
import json
import socket

from . import wait
from .conn import IO_TIMEOUT, RawConn
from .procs import HOST


def command(port, *lines, timeout=IO_TIMEOUT):
    """Sends the lines (CRLF), then quit; returns everything the port answered, as text."""
    with RawConn(port, timeout=timeout, nodelay=False) as c:
        c.send(b"".join(line.encode() + b"\r\n" for line in lines) + b"quit\r\n")
        return c.read_until_closed().decode()


def status(port, *words):
    """`status` (or `status workers`, `status latency`) parsed into dicts."""
    return json.loads(command(port, " ".join(("status",) + words)))


def ordered(port):
    """`status` as nested lists of (key, value) pairs, in the document's order."""
    return json.loads(command(port, "status"), object_pairs_hook=list)


def silent(port, timeout=IO_TIMEOUT, half_close=False):
    """Connects and sends nothing (or only closes its side); returns what the port sends."""
    with RawConn(port, timeout=timeout, nodelay=False) as c:
        if half_close:
            c.sock.shutdown(socket.SHUT_WR)
        return c.read_until_closed().decode()


def http_get(port, path, method="GET", timeout=IO_TIMEOUT):
    """(status, headers dict with lower-case names, body bytes)."""
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        conn.request(method, path)
        rsp = conn.getresponse()
        body = rsp.read()
        return rsp.status, {k.lower(): v for k, v in rsp.getheaders()}, body
    finally:
        conn.close()


def metric_samples(port, part):
    """The samples of /metrics whose name contains part: {(name, sorted label pairs): value}."""
    from prometheus_client.parser import text_string_to_metric_families

    status, _, body = http_get(port, "/metrics")
    assert status == 200, (status, body)
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(body.decode()) for s in fam.samples
            if part in s.name}


def find_keys(port, pool, keys):
    """{key: server name} as the proxy routes them now (`find_keys`, 40 keys a command)."""
    out = {}
    keys = list(keys)
    for i in range(0, len(keys), 40):
        chunk = keys[i:i + 40]
        text = command(port, " ".join(["find_keys", pool, *chunk]))
        lines = text.splitlines()
        assert len(lines) == len(chunk), text
        out.update((k, line.split()[1]) for k, line in zip(chunk, lines))
    return out


def key_per_server(port, pool, candidates):
    """{server name: the first of candidates that the pool routes to it}, for the servers that
    one of them reaches."""
    out = {}
    for key, server in find_keys(port, pool, candidates).items():
        out.setdefault(server, key)
    return out


def wait_status(port, pred, timeout=5.0, what="stats", words=()):
    """Polls `status` (or `status <words>`) until pred(doc) is true; returns the doc
    (AssertionError with the last one on timeout)."""
    last = {}

    def ok():
        last["doc"] = status(port, *words)
        return pred(last["doc"])

    try:
        wait.wait_for(ok, timeout, what)
    except TimeoutError as e:
        raise AssertionError(f"{e}; last status: {json.dumps(last.get('doc'))}") from None
    return last["doc"]


def server_stat(doc, pool, server, name):
    """One per-server field of a status doc; server: its stats name ("host:port:weight" or the
    name given in the config)."""
    return doc[pool][server][name]


def wait_server_stat(port, pool, server, name, accept, timeout=10.0, what=None):
    """Waits until accept(value) for one per-server field (e.g. out_queue >= 1: a request written
    to that server and not answered yet); returns the value."""
    doc = wait_status(port, lambda d: server in d.get(pool, {}) and
                      accept(d[pool][server][name]), timeout,
                      what or f"{pool}/{server} {name}")
    return doc[pool][server][name]


def wait_pool_stat(port, pool, name, accept, timeout=10.0, what=None):
    """The same for a per-pool field (client_connections, server_ejects, ...)."""
    doc = wait_status(port, lambda d: pool in d and accept(d[pool][name]), timeout,
                      what or f"{pool} {name}")
    return doc[pool][name]


def server_failures(port, pool):
    """{server name: (server_err, server_eof, server_timedout)} of a pool: a server connection the
    proxy dropped (a framing slip is a server error) moves one of them."""
    doc = status(port)[pool]
    return {name: (s["server_err"], s["server_eof"], s["server_timedout"])
            for name, s in doc.items() if isinstance(s, dict) and "server_err" in s}
