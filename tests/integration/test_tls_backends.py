"""The TLS test material itself, without the proxy (issue 26): the certificates nctest.tls makes
verify as they should (server and client against the CA, not against the other CA; the server
names 127.0.0.1 and localhost; the wrong key matches no certificate), and the TLS backends of
tls_fixtures.py answer real clients over TLS (redis-py with ssl, pymemcache with a tls_context),
refuse plain text, and (redis, --tls-auth-clients yes) refuse a client without a certificate.

These hold whatever the proxy does: they check the ground test_tls.py stands on.
"""
import hashlib
import socket
import ssl

import pytest

from nctest import tls
from nctest.conn import Closed, RawConn, mc_client, no_retry, redis_client


def verify(ca, cert):
    """openssl verify's verdict: True when cert chains to ca."""
    try:
        tls.openssl("verify", "-CAfile", ca, cert)
    except RuntimeError:
        return False
    return True


def modulus_of(kind, path):
    return tls.openssl(kind, "-noout", "-modulus", "-in", path).strip()


def test_certificates_chain_to_their_ca_only(tls_certs):
    c = tls_certs
    assert verify(c.ca, c.server_cert)
    assert verify(c.ca, c.client_cert)
    assert verify(c.other_ca, c.other_client_cert)
    assert not verify(c.other_ca, c.server_cert)
    assert not verify(c.ca, c.other_client_cert)


def test_server_certificate_names_loopback(tls_certs):
    text = tls.openssl("x509", "-noout", "-ext", "subjectAltName,extendedKeyUsage", "-in",
                       tls_certs.server_cert)
    assert "IP Address:127.0.0.1" in text and "DNS:localhost" in text, text
    assert "TLS Web Server Authentication" in text, text
    client = tls.openssl("x509", "-noout", "-ext", "extendedKeyUsage", "-in",
                         tls_certs.client_cert)
    assert "TLS Web Client Authentication" in client, client


def test_keys_match_their_certificates_and_the_wrong_key_none(tls_certs):
    c = tls_certs
    assert modulus_of("rsa", c.server_key) == modulus_of("x509", c.server_cert)
    assert modulus_of("rsa", c.client_key) == modulus_of("x509", c.client_cert)
    wrong = modulus_of("rsa", c.wrong_key)
    assert wrong not in {modulus_of("x509", p) for p in
                         (c.server_cert, c.client_cert, c.ca, c.other_ca)}


def test_tls_redis_server_serves_redis_py_over_tls(tls_redis_server, tls_certs):
    port, _ = tls_redis_server()
    r = redis_client(port, **tls.redis_ssl_kwargs(tls_certs))
    assert r.set("tls:k", b"v" * 1000) is True
    assert r.get("tls:k") == b"v" * 1000
    assert r.connection_pool.get_connection().__class__.__name__ == "SSLConnection"
    r.close()


def test_tls_redis_server_refuses_plain_text(tls_redis_server):
    port, _ = tls_redis_server()
    with RawConn(port, timeout=5) as c:
        c.send(b"PING\r\n")
        with pytest.raises(Closed):  # redis closes a connection whose handshake fails
            c.line()


def test_tls_redis_server_rejects_a_certificate_from_the_other_ca(tls_redis_server, tls_certs):
    """A client that trusts only the other CA refuses the server's certificate."""
    import redis

    port, _ = tls_redis_server()
    kw = tls.redis_ssl_kwargs(tls_certs)
    kw["ssl_ca_certs"] = str(tls_certs.other_ca)
    r = redis_client(port, retry=no_retry(), **kw)  # the refusal at once, not retried
    with pytest.raises(redis.exceptions.ConnectionError, match="(?i)certificate verify failed"):
        r.ping()


def test_tls_redis_server_with_client_auth(tls_redis_server, tls_certs):
    import redis

    port, _ = tls_redis_server(auth_clients="yes")
    # the refusals at once (redis-py's retries would only repeat them)
    anonymous = redis_client(port, retry=no_retry(), **tls.redis_ssl_kwargs(tls_certs))
    with pytest.raises(redis.exceptions.ConnectionError):
        anonymous.ping()
    kw = tls.redis_ssl_kwargs(tls_certs)
    kw.update(ssl_certfile=str(tls_certs.other_client_cert),
              ssl_keyfile=str(tls_certs.other_client_key))
    with pytest.raises(redis.exceptions.ConnectionError):
        redis_client(port, retry=no_retry(), **kw).ping()
    ok = redis_client(port, **tls.redis_ssl_kwargs(tls_certs, client_cert=True))
    assert ok.ping() is True
    ok.close()


def test_tls_memcached_serves_pymemcache_over_tls(tls_memcached_server, tls_certs):
    port, _ = tls_memcached_server()
    ctx = tls.client_context(tls_certs)
    m = mc_client(port, tls_context=ctx)
    assert m.set("tls:k", b"value") is True
    assert m.get("tls:k") == b"value"
    assert m.get_many(["tls:k", "tls:absent"]) == {"tls:k": b"value"}
    m.close()


def test_tls_memcached_refuses_plain_text(tls_memcached_server):
    port, _ = tls_memcached_server()
    with RawConn(port, timeout=5) as c:
        c.send(b"version\r\n")
        with pytest.raises(Closed):
            c.line()


def test_ssl_socket_sees_the_server_certificate(tls_redis_server, tls_certs):
    """tls.fingerprint matches what a client sees: the way test_tls's reload test tells two
    certificates apart."""
    port, _ = tls_redis_server()
    ctx = tls.client_context(tls_certs)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
            der = s.getpeercert(binary_form=True)
    assert ssl.DER_cert_to_PEM_cert(der)
    assert hashlib.sha256(der).hexdigest() == tls.fingerprint(tls_certs.server_cert)
