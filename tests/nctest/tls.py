"""TLS material for the tests of TLS (issue 26): certificates made with the `openssl` CLI into a
folder (a pytest tmp dir), and ssl contexts for Python clients that trust them.

make_certs(folder) writes, every key RSA 2048 and every certificate valid one day:
  ca.pem / ca.key            the CA: signs the server and client certificates
  other-ca.pem / other-ca.key  a second, unrelated CA (what a peer that trusts the wrong CA has)
  server.pem / server.key    CN=localhost, subjectAltName IP:127.0.0.1 and DNS:localhost
  client.pem / client.key    CN=nctest-client, extendedKeyUsage clientAuth
  other-client.pem / .key    a client certificate signed by other-ca (refused by ca)
  wrong.key                  a key that matches no certificate
and returns a Certs naming them. new_server_pair(certs, tag) makes one more server pair (for a
reload that swaps certificates); fingerprint(pem) is what a client compares to tell them apart,
install(files) puts new contents in place of the files a proxy reads (each replaced at once).

The proxy's side: listener_keys / server_keys are the pool keys of TLS on the listener / toward
the servers; TlsConn is a RawConn over TLS (byte-exact exchanges, the certificate it was shown);
peer_fingerprint(port, ctx) is the certificate a new connection is shown; set_get(conn, key, value)
is one checked exchange; TlsLoader a client thread making such exchanges until told to stop.

Threads: make_certs writes files, call it from one thread; a TlsConn belongs to one thread; a
TlsLoader runs its own (its counters and `error` are read by others); the rest are pure.

Every openssl call is bounded (OPENSSL_TIMEOUT) and fails loudly with its output.
"""
import hashlib
import os
import shutil
import ssl
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from .codec import bulk, resp
from .conn import IO_TIMEOUT, Closed, RawConn
from .keys import spread_keys
from .procs import HOST

OPENSSL_TIMEOUT = 30.0  # seconds for one openssl call (RSA 2048 key generation included)
DAYS = "1"


@dataclass
class Certs:
    """Paths of the files make_certs wrote (Path objects)."""
    folder: Path
    ca: Path
    ca_key: Path
    other_ca: Path
    other_ca_key: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_client_cert: Path
    other_client_key: Path
    wrong_key: Path


def openssl(*args, cwd=None):
    """Runs `openssl args...` (bounded); returns its stdout; raises with its output on failure."""
    out = subprocess.run(["openssl", *map(str, args)], cwd=cwd, capture_output=True, text=True,
                         timeout=OPENSSL_TIMEOUT, stdin=subprocess.DEVNULL)
    if out.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(map(str, args))} exited {out.returncode}:\n"
                           f"{out.stdout}{out.stderr}")
    return out.stdout


def new_key(path):
    openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", path)
    return Path(path)


def new_ca(folder, name):
    """A self-signed CA: (cert, key) as folder/<name>.pem and folder/<name>.key."""
    key = new_key(folder / f"{name}.key")
    cert = folder / f"{name}.pem"
    openssl("req", "-x509", "-new", "-key", key, "-sha256", "-days", DAYS, "-subj",
            f"/O=nctest/CN={name}", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign", "-out", cert)
    return cert, key


def signed_pair(folder, name, ca, ca_key, cn, extensions):
    """A key and a certificate for cn signed by (ca, ca_key), with the given v3 extension lines:
    (cert, key) as folder/<name>.pem and folder/<name>.key."""
    key = new_key(folder / f"{name}.key")
    csr = folder / f"{name}.csr"
    cert = folder / f"{name}.pem"
    ext = folder / f"{name}.ext"
    ext.write_text("\n".join(extensions) + "\n")
    openssl("req", "-new", "-key", key, "-subj", f"/O=nctest/CN={cn}", "-out", csr)
    openssl("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
            "-sha256", "-days", DAYS, "-extfile", ext, "-out", cert, cwd=folder)
    return cert, key


SERVER_EXT = ["basicConstraints=CA:FALSE", "keyUsage=critical,digitalSignature,keyEncipherment",
              "extendedKeyUsage=serverAuth", "subjectAltName=IP:127.0.0.1,DNS:localhost"]
CLIENT_EXT = ["basicConstraints=CA:FALSE", "keyUsage=critical,digitalSignature,keyEncipherment",
              "extendedKeyUsage=clientAuth"]


def make_certs(folder):
    """Writes the whole set into folder (created if needed); returns a Certs."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    ca, ca_key = new_ca(folder, "ca")
    other_ca, other_ca_key = new_ca(folder, "other-ca")
    server_cert, server_key = signed_pair(folder, "server", ca, ca_key, "localhost", SERVER_EXT)
    client_cert, client_key = signed_pair(folder, "client", ca, ca_key, "nctest-client",
                                          CLIENT_EXT)
    other_client_cert, other_client_key = signed_pair(folder, "other-client", other_ca,
                                                      other_ca_key, "nctest-other", CLIENT_EXT)
    wrong_key = new_key(folder / "wrong.key")
    return Certs(folder, ca, ca_key, other_ca, other_ca_key, server_cert, server_key, client_cert,
                 client_key, other_client_cert, other_client_key, wrong_key)


def new_server_pair(certs, tag):
    """One more server certificate and key signed by certs.ca (same names as server.pem), as
    server-<tag>.pem / .key: (cert, key)."""
    return signed_pair(certs.folder, f"server-{tag}", certs.ca, certs.ca_key, "localhost",
                       SERVER_EXT)


def fingerprint(pem_path):
    """SHA-256 of a PEM certificate's DER bytes (what SSLSocket.getpeercert(True) hashes to)."""
    der = ssl.PEM_cert_to_DER_cert(Path(pem_path).read_text())
    return hashlib.sha256(der).hexdigest()


def client_context(certs, cert=None, key=None, ca=None, check_hostname=True):
    """An ssl context that trusts ca (default certs.ca) and, with cert and key, presents them."""
    ctx = ssl.create_default_context(cafile=str(ca or certs.ca))
    ctx.check_hostname = check_hostname
    if cert is not None:
        ctx.load_cert_chain(str(cert), str(key))
    return ctx


def redis_ssl_kwargs(certs, client_cert=False):
    """redis-py keyword arguments for TLS to 127.0.0.1 trusting certs.ca (with the client
    certificate when client_cert)."""
    kw = {"ssl": True, "ssl_ca_certs": str(certs.ca), "ssl_cert_reqs": "required",
          "ssl_check_hostname": True}
    if client_cert:
        kw.update(ssl_certfile=str(certs.client_cert), ssl_keyfile=str(certs.client_key))
    return kw


def redis_tls_args(certs, tls_port, auth_clients="no", cert=None, key=None):
    """redis-server flags for a TLS-only listener on tls_port (--port 0: no plain TCP)."""
    return ("--port", "0", "--tls-port", str(tls_port),
            "--tls-cert-file", str(cert or certs.server_cert),
            "--tls-key-file", str(key or certs.server_key),
            "--tls-ca-cert-file", str(certs.ca), "--tls-auth-clients", auth_clients)


def memcached_tls_args(certs, cert=None, key=None):
    """memcached flags for TLS on its -p port (-Z, the chain and the key)."""
    return ("-Z", "-o", f"ssl_chain_cert={cert or certs.server_cert},"
                        f"ssl_key={key or certs.server_key}")


def install(files):
    """files: {live path: source path}. Each live file gets its source's contents through a
    rename (a reader sees the old file or the new one, never half of one)."""
    for live, src in files.items():
        tmp = f"{live}.tmp"
        shutil.copy(src, tmp)
        os.replace(tmp, live)


# --- the proxy's side ---------------------------------------------------------------------------

def listener_keys(certs, auth_clients=None, cert=None, key=None, **more):
    """The pool keys of a TLS listener (certs.server_cert / server_key unless cert and key are
    given); with auth_clients, the CA of client certificates too; then `more`."""
    keys = {"tls": True, "tls_cert_file": str(cert or certs.server_cert),
            "tls_key_file": str(key or certs.server_key)}
    if auth_clients is not None:
        keys.update(tls_ca_cert_file=str(certs.ca), tls_auth_clients=auth_clients)
    keys.update(more)
    return keys


def server_keys(certs, ca=None, **more):
    """The pool keys of TLS toward the servers, verified against ca (default certs.ca)."""
    keys = {"server_tls": True, "server_tls_ca_cert_file": str(ca or certs.ca)}
    keys.update(more)
    return keys


class TlsConn(RawConn):
    """A RawConn over TLS to 127.0.0.1 (verified by ctx, the host name 127.0.0.1); `cert` is the
    DER certificate the peer showed, `fingerprint` its SHA-256. A peer that ends the connection
    without close_notify is Closed too."""

    def __init__(self, port, ctx, timeout=IO_TIMEOUT):
        super().__init__(port, timeout=timeout)
        try:
            self.sock = ctx.wrap_socket(self.sock, server_hostname=HOST)
        except (OSError, ssl.SSLError):
            self.sock.close()
            raise
        self.cert = self.sock.getpeercert(binary_form=True)
        self.fingerprint = hashlib.sha256(self.cert).hexdigest()

    def _fill(self, deadline):
        try:
            super()._fill(deadline)
        except ssl.SSLEOFError as e:
            raise Closed(f"connection ended without close_notify; have "
                         f"{bytes(self.buf[:200])!r}") from e


def peer_fingerprint(port, ctx, timeout=IO_TIMEOUT):
    """The SHA-256 (hex) of the certificate a new TLS connection to port is shown."""
    with TlsConn(port, ctx, timeout) as c:
        return c.fingerprint


def set_get(conn, key, value):
    """SET key value and GET key in one write on conn; both replies checked, byte for byte."""
    conn.exchange(resp("SET", key, value) + resp("GET", key), b"+OK\r\n" + bulk(value))


class TlsLoader(threading.Thread):
    """A client of a load: its own TLS connection to port (opened at creation; `conn`), set_get on
    its `nkeys` keys (spread_keys(prefix)) in turn, every value new, until `stop` is set or
    something fails: then `error` says what, after how many exchanges (`done`); `last` has the
    last value written to each key. The connection is never made again (a drop is an error)."""

    def __init__(self, prefix, port, ctx, stop, nkeys=8):
        super().__init__(name=f"loader-{prefix}", daemon=True)
        self.conn = TlsConn(port, ctx)
        self.keys = spread_keys(prefix, nkeys)
        self.stop = stop
        self.last = {}
        self.done = 0
        self.error = None

    def run(self):
        try:
            while not self.stop.is_set():
                key = self.keys[self.done % len(self.keys)]
                value = f"{key}-{self.done}"
                set_get(self.conn, key, value)
                self.last[key] = value
                self.done += 1
        except Exception as e:  # noqa: BLE001 - the test reads and reports it
            self.error = f"{self.name} after {self.done} exchanges: {e!r}"
        finally:
            self.conn.close()
