"""Reload of renewed TLS certificates (issue 26), under load and with bad new files: the pool's
listener reads live.pem / live.key, which the tests replace (each file at once, by a rename) before
a SIGHUP or the manage port's `reload`. Real TLS redis-servers behind a pool with TLS on both
sides (tls_fixtures.py), -T 2, and Python ssl clients byte for byte (nctest.tls.TlsConn).

- Under load: client threads connected before (a SET and a GET per exchange, every reply checked)
  and a thread opening a new connection per exchange run through four renewals, by SIGHUP and by
  `reload` in turn. No exchange fails on any connection; a connection opened once the new
  generation is in the stats (or `reload` has answered) is shown the new certificate, from every
  worker at once; no handshake fails in the whole run; the last values are on the servers.
- A bad new file (a certificate that is no PEM, a key that does not match, a key file gone): the
  reload fails both ways, the generation stays, the log and the `reload` answer name the key and
  the file, new connections on every worker get the old certificate and are served, as are the
  ones made before. A good pair afterwards is the next generation's.
"""
import re
import signal
import threading
import time

import pytest

from nctest import manage, tls
from nctest.codec import resp
from nctest.conn import redis_client
from nctest.wait import scale, wait_for

POOL = "tlsreload"
THREADS = 2
LOADERS = 6           # client threads of the load, connected before the renewals
PROGRESS = 25         # exchanges every loader makes after a step before the next
RELOAD_TIMEOUT = 30.0
RENEWALS = ("hup", "cmd", "hup", "cmd")  # how each renewal is reloaded: SIGHUP, `reload`
FAILED = "ERR: reload failed (still serving generation {}): "


class Live:
    """The certificate and key the pool's listener reads, renewed in place."""

    def __init__(self, certs, folder):
        self.cert, self.key = folder / "live.pem", folder / "live.key"
        self.put(certs.server_cert, certs.server_key)

    def put(self, cert, key):
        tls.install({self.cert: cert, self.key: key})
        self.fingerprint = tls.fingerprint(cert)


def start(tls_proxy, tls_redis_server, certs, live):
    """Two TLS redis-servers behind a pool with TLS on both sides, its listener on the live files:
    (proxy, listen port, server ports). No start-up probe connects: every client of the pool is
    the test's, every handshake one it made."""
    ports = [tls_redis_server()[0] for _ in range(2)]
    proxy, listen = tls_proxy(ports, tls.listener_keys(certs, cert=live.cert, key=live.key),
                              tls.server_keys(certs), threads=THREADS, name=POOL, wait="log")
    return proxy, listen, ports


def generation(proxy):
    return manage.status(proxy.manage_port)["generation"]


def wait_generation(proxy, gen):
    manage.wait_status(proxy.manage_port, lambda d: d.get("generation") == gen,
                       timeout=RELOAD_TIMEOUT, what=f"generation {gen}")


def each_worker(proxy, pred):
    """pred(a worker's stats of POOL) for every worker (`status workers`)."""
    workers = manage.status(proxy.manage_port, "workers")["workers"]
    return len(workers) == THREADS and all(pred(w[POOL]) for w in workers)


def new_connections(listen, ctx, fingerprint, tag):
    """2 connections per worker (round-robin): each is shown fingerprint and served."""
    for i in range(2 * THREADS):
        with tls.TlsConn(listen, ctx) as c:
            assert c.fingerprint == fingerprint, f"connection {i} after {tag}: another certificate"
            tls.set_get(c, f"{{new}}:{tag}:{i}", f"{tag}-{i}")


class Churn(threading.Thread):
    """A new connection per exchange (PING), recording (start time, certificate fingerprint) of
    each; stops at the first error (kept in `error`) or when `stop` is set."""

    def __init__(self, listen, ctx, stop):
        super().__init__(name="churn", daemon=True)
        self.listen, self.ctx, self.stop = listen, ctx, stop
        self.seen = []
        self.error = None

    def run(self):
        try:
            while not self.stop.is_set():
                t0 = time.monotonic()
                with tls.TlsConn(self.listen, self.ctx) as c:
                    c.exchange(resp("PING"), b"+PONG\r\n")
                self.seen.append((t0, c.fingerprint))
        except Exception as e:  # the test reports it
            self.error = f"churn after {len(self.seen)} connections: {e!r}"


def test_renewals_under_load(tls_proxy, tls_redis_server, tls_certs, tmp_path):
    """LOADERS connections made before, a churn of new ones, and RENEWALS renewals: not one
    failed exchange or handshake; each renewal's certificate for every connection made after it."""
    live = Live(tls_certs, tmp_path)
    proxy, listen, ports = start(tls_proxy, tls_redis_server, tls_certs, live)
    ctx = tls.client_context(tls_certs)
    stop = threading.Event()
    loaders = [tls.TlsLoader(f"load{n}", listen, ctx, stop) for n in range(LOADERS)]
    churn = Churn(listen, ctx, stop)
    first = live.fingerprint
    assert all(l.conn.fingerprint == first for l in loaders)
    threads = [*loaders, churn]

    def errors():
        return [t.error for t in threads if t.error]

    def progress(since):
        """Every loader PROGRESS exchanges past its count in since, and no thread stopped."""
        assert not errors(), errors()
        return all(l.done >= since[l.name] + PROGRESS for l in loaders)

    def wait_progress(what):
        since = {l.name: l.done for l in loaders}
        wait_for(lambda: progress(since), 30, f"every loader to go on {what}")

    for t in threads:
        t.start()
    try:
        wait_progress("at the start")
        renewed = []
        for step, via in enumerate(RENEWALS, 1):
            gen = generation(proxy)
            cert, key = tls.new_server_pair(tls_certs, f"renewed-{step}")
            live.put(cert, key)
            if via == "hup":
                proxy.signal(signal.SIGHUP)
                wait_generation(proxy, gen + 1)
            else:
                reply = manage.command(proxy.manage_port, "reload", timeout=RELOAD_TIMEOUT)
                assert reply == f"OK generation {gen + 1}\r\n", reply
            at = time.monotonic()
            # the new generation is every worker's before the master hands it another client
            new_connections(listen, ctx, live.fingerprint, f"renewal-{step}")
            renewed.append((at, live.fingerprint))
            wait_progress(f"after renewal {step} ({via})")
        last = renewed[-1][0]
        wait_for(lambda: not errors() and sum(t0 > last for t0, _ in churn.seen) >= 3, 30,
                 "new connections after the last renewal")
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=30 * scale())
    assert not errors(), errors()
    assert not any(t.is_alive() for t in threads), "a client thread did not stop"
    # every churn connection made after a renewal was seen has that certificate (or a later one)
    for t0, fp in churn.seen:
        allowed = [first] + [f for _, f in renewed]
        for at, f in renewed:
            if t0 > at:
                allowed = allowed[allowed.index(f):]
        assert fp in allowed, (t0, fp, renewed)
    fps = {fp for _, fp in churn.seen}
    assert renewed[-1][1] in fps, "the churn never saw the last certificate"
    doc = manage.status(proxy.manage_port)
    assert doc["generation"] == 1 + len(RENEWALS)
    assert doc[POOL]["client_tls_handshake_failures"] == 0, doc[POOL]
    assert doc[POOL]["client_err"] == 0, doc[POOL]
    # the last value of every key the loaders wrote is on a server
    direct = [redis_client(p, **tls.redis_ssl_kwargs(tls_certs)) for p in ports]
    for l in loaders:
        assert l.done > len(RENEWALS) * PROGRESS, l.done
        for key, value in l.last.items():
            found = [d.get(key) for d in direct]
            assert sorted(found, key=bool) == [None, value.encode()], (key, found)
    for d in direct:
        d.close()


BAD = {
    # case: (what to do to the live files, the key the error names, the file it names)
    "garbage-cert": (lambda live, certs: live.cert.write_text("no certificate\n"),
                     "tls_cert_file", "cert"),
    "mismatched-key": (lambda live, certs: tls.install({live.key: certs.wrong_key}),
                       "tls_key_file", "key"),
    "missing-key": (lambda live, certs: live.key.unlink(), "tls_key_file", "key"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_new_file_keeps_the_old_certificate(tls_proxy, tls_redis_server, tls_certs, tmp_path,
                                                case):
    """A failed reload (SIGHUP, then `reload`) names the key and the file and changes nothing:
    the old certificate for new connections on every worker, the old ones served; then a good
    pair is generation 2's."""
    spoil, key_name, which = BAD[case]
    live = Live(tls_certs, tmp_path)
    proxy, listen, ports = start(tls_proxy, tls_redis_server, tls_certs, live)
    ctx = tls.client_context(tls_certs)
    old = live.fingerprint
    held = [tls.TlsConn(listen, ctx) for _ in range(2 * THREADS)]
    for i, c in enumerate(held):
        tls.set_get(c, f"{{held}}:{i}", "before")
    # every worker has made its context of the generation (see the test below)
    assert each_worker(proxy, lambda p: p["client_tls_handshakes"] >= 1)
    spoil(live, tls_certs)
    path = str(getattr(live, which))
    mark = proxy.log_mark()
    proxy.signal(signal.SIGHUP)
    end = proxy.wait_log("failed: still serving generation 1", timeout=RELOAD_TIMEOUT, start=mark)
    logged = proxy.log()[mark:end]
    assert re.search(rf"key '{key_name}': .*'{re.escape(path)}'", logged), logged
    reply = manage.command(proxy.manage_port, "reload", timeout=RELOAD_TIMEOUT)
    assert reply.startswith(FAILED.format(1)) and reply.endswith("\r\n"), reply
    assert f"key '{key_name}'" in reply and f"'{path}'" in reply, reply
    assert generation(proxy) == 1
    new_connections(listen, ctx, old, "a failed reload")
    for i, c in enumerate(held):
        tls.set_get(c, f"{{held}}:{i}", "after")
    # a good pair again: the next generation takes it
    cert, key = tls.new_server_pair(tls_certs, "good-again")
    live.put(cert, key)
    reply = manage.command(proxy.manage_port, "reload", timeout=RELOAD_TIMEOUT)
    assert reply == "OK generation 2\r\n", reply
    new_connections(listen, ctx, live.fingerprint, "the good pair")
    for i, c in enumerate(held):
        assert c.fingerprint == old
        tls.set_get(c, f"{{held}}:{i}", "last")
        c.close()
    doc = manage.status(proxy.manage_port)
    assert doc[POOL]["client_tls_handshake_failures"] == 0, doc[POOL]


def test_bad_new_file_keeps_the_old_certificate_on_an_idle_worker(tls_proxy, tls_redis_server,
                                                                  tls_certs, tmp_path):
    """The same failed reload, with one worker that has had no client yet (no start-up probe):
    a new connection on it must get the old certificate too."""
    live = Live(tls_certs, tmp_path)
    proxy, listen, ports = start(tls_proxy, tls_redis_server, tls_certs, live)
    ctx = tls.client_context(tls_certs)
    old = live.fingerprint
    with tls.TlsConn(listen, ctx) as first:
        tls.set_get(first, "{idle}:first", "v")
    assert not each_worker(proxy, lambda p: p["client_tls_handshakes"] >= 1)
    live.cert.write_text("no certificate\n")
    reply = manage.command(proxy.manage_port, "reload", timeout=RELOAD_TIMEOUT)
    assert reply.startswith(FAILED.format(1)), reply
    new_connections(listen, ctx, old, "a failed reload")
