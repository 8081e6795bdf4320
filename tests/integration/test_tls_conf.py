"""TLS configuration (issue 26): the config check (-t) of the TLS pool keys, and a reload (SIGHUP)
that picks up new certificate files.

-t accepts a pool with TLS on both sides, and rejects (exit 1, the verdict line last, an error
line naming the file, the key's line and the key) a missing certificate, key or CA file, an
unreadable key, a key that does not match its certificate (client side and server side), and TLS
on a unix-socket listener. After the certificate files are replaced with a new pair and the
proxy gets SIGHUP, a new TLS connection sees the new certificate, and a connection made before
keeps being served (renewals under load and bad new files: test_tls_reload.py).
"""
import os
import shutil
import signal
import ssl

import pytest

from nctest import manage, tls
from nctest.codec import resp
from nctest.conf import render_conf
from nctest.conn import redis_client
from nctest.procs import HOST, free_port, run
from nctest.wait import wait_for

RELOAD_TIMEOUT = 30.0


def pool_keys(certs, tmp_path, **over):
    """One redis pool with TLS on both sides (every key given), then `over` (None removes a
    key); the listen port is a free one, the servers need not run for -t."""
    keys = {"listen": f"{HOST}:{free_port()}", "redis": True,
            "tls": True, "tls_cert_file": str(certs.server_cert),
            "tls_key_file": str(certs.server_key), "tls_ca_cert_file": str(certs.ca),
            "tls_auth_clients": "optional", "tls_protocols": "TLSv1.2 TLSv1.3",
            "server_tls": True, "server_tls_ca_cert_file": str(certs.ca),
            "server_tls_cert_file": str(certs.client_cert),
            "server_tls_key_file": str(certs.client_key),
            "server_tls_server_name": "localhost", "server_tls_verify": True,
            "servers": [f"{HOST}:{free_port()}:1"]}
    for key, value in over.items():
        if value is None:
            keys.pop(key, None)
        else:
            keys[key] = value
    return {"tlspool": keys}


def line_of(text, key):
    """The 1-based line of `  key:` in a rendered config."""
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip().startswith(f"{key}:"):
            return n
    raise AssertionError(f"{key} not in the config")


def check_conf(write_conf, pools):
    path = write_conf(pools)
    r = run(["-t", "-c", str(path)])
    return path, r


def test_a_good_tls_config_passes(write_conf, tls_certs, tmp_path):
    path, r = check_conf(write_conf, pool_keys(tls_certs, tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines()[-1] == f"nutcrackers: configuration file '{path}' syntax is ok"


def unreadable(tmp_path, certs):
    """A key path that cannot be read: a file without permissions, or (as root, who reads those
    anyway) a directory."""
    if os.geteuid() == 0:
        d = tmp_path / "key-is-a-dir.key"
        d.mkdir()
        return d
    p = tmp_path / "unreadable.key"
    shutil.copy(certs.server_key, p)
    os.chmod(p, 0)
    return p


BAD = {
    # case: (function (certs, tmp_path) -> the keys to change, the keys the error may name)
    "missing-cert": (lambda c, t: {"tls_cert_file": str(t / "absent.pem")}, ["tls_cert_file"]),
    "missing-key": (lambda c, t: {"tls_key_file": str(t / "absent.key")}, ["tls_key_file"]),
    "missing-ca": (lambda c, t: {"tls_ca_cert_file": str(t / "absent-ca.pem")},
                   ["tls_ca_cert_file"]),
    "unreadable-key": (lambda c, t: {"tls_key_file": str(unreadable(t, c))}, ["tls_key_file"]),
    "mismatched-key": (lambda c, t: {"tls_key_file": str(c.wrong_key)},
                       ["tls_key_file", "tls_cert_file"]),
    "missing-server-ca": (lambda c, t: {"server_tls_ca_cert_file": str(t / "absent-ca.pem")},
                          ["server_tls_ca_cert_file"]),
    "missing-server-cert": (lambda c, t: {"server_tls_cert_file": str(t / "absent.pem")},
                            ["server_tls_cert_file"]),
    "mismatched-server-key": (lambda c, t: {"server_tls_key_file": str(c.wrong_key)},
                              ["server_tls_key_file", "server_tls_cert_file"]),
    "unix-listener": (lambda c, t: {"listen": str(t / "tls.sock")}, ["tls", "listen"]),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_test_conf_rejects_bad_tls_files(write_conf, tls_certs, tmp_path, case):
    change, named = BAD[case]
    pools = pool_keys(tls_certs, tmp_path, **change(tls_certs, tmp_path))
    text = render_conf(pools)
    path, r = check_conf(write_conf, text)
    assert r.returncode == 1, f"exit {r.returncode}:\n{r.stderr}"
    lines = r.stderr.splitlines()
    assert lines and lines[-1] == f"nutcrackers: configuration file '{path}' syntax is invalid", \
        r.stderr
    errors = lines[:-1]
    hits = [l for l in errors for key in named
            if f"{path}:{line_of(text, key)}:" in l and f"'{key}'" in l]
    assert hits, f"no error line names {path}:<line of one of {named}>: and the key:\n{r.stderr}"
    # the rest of the config is good: no other key is blamed (an unknown key is not this error)
    lines_ok = {line_of(text, key) for key in named}
    others = [l for l in errors if l.startswith(f"nutcrackers: {path}:")
              and int(l[len(f"nutcrackers: {path}:"):].split(":")[0]) not in lines_ok]
    assert not others and not any("unknown key" in l for l in errors), r.stderr


# --- reload of the certificates -----------------------------------------------------------------

def test_reload_picks_up_new_certificate_files(nutcrackers, write_conf, redis_server, tls_certs,
                                               tmp_path):
    port, _ = redis_server()
    live_cert, live_key = tmp_path / "live.pem", tmp_path / "live.key"
    shutil.copy(tls_certs.server_cert, live_cert)
    shutil.copy(tls_certs.server_key, live_key)
    listen = free_port()
    conf = write_conf({"tlspool": {
        "listen": f"{HOST}:{listen}", "redis": True, "tls": True,
        "tls_cert_file": str(live_cert), "tls_key_file": str(live_key),
        "servers": [f"{HOST}:{port}:1"]}})
    proxy = nutcrackers(conf, wait_manage=True)
    ctx = tls.client_context(tls_certs)
    old_fp = tls.fingerprint(tls_certs.server_cert)
    assert tls.peer_fingerprint(listen, ctx) == old_fp
    held = tls.TlsConn(listen, ctx)
    held.exchange(resp("SET", "rl:k", "before"), b"+OK\r\n")
    pooled = redis_client(listen, **tls.redis_ssl_kwargs(tls_certs))
    assert pooled.set("rl:p", "1") is True

    new_cert, new_key = tls.new_server_pair(tls_certs, "reloaded")
    new_fp = tls.fingerprint(new_cert)
    assert new_fp != old_fp
    tls.install({live_cert: new_cert, live_key: new_key})
    gen = manage.status(proxy.manage_port)["generation"]
    proxy.signal(signal.SIGHUP)
    manage.wait_status(proxy.manage_port, lambda d: d.get("generation") == gen + 1,
                       timeout=RELOAD_TIMEOUT, what=f"generation {gen + 1}")
    seen = {}

    def sees_new():
        seen["fp"] = tls.peer_fingerprint(listen, ctx)
        return seen["fp"] == new_fp

    wait_for(sees_new, RELOAD_TIMEOUT, "a new connection to see the new certificate")
    held.exchange(resp("GET", "rl:k"), b"$6\r\nbefore\r\n")
    held.exchange(resp("SET", "rl:k", "after"), b"+OK\r\n")
    assert pooled.get("rl:p") == b"1"
    assert redis_client(port).get("rl:k") == b"after"
    held.close()
    pooled.close()
    with pytest.raises(ssl.SSLError):  # the new certificate is still checked: the other CA fails
        tls.peer_fingerprint(listen, tls.client_context(tls_certs, ca=tls_certs.other_ca))


def test_the_shipped_tls_example_passes_with_its_files(tls_certs, tmp_path):
    """conf/tls.yml, its /etc/nutcrackers/ files replaced by the tests' certificates, passes -t;
    and without them it names the first file it cannot read."""
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    text = open(os.path.join(repo, "conf", "tls.yml")).read()
    files = {"proxy.crt": tls_certs.server_cert, "proxy.key": tls_certs.server_key,
             "service-ca.crt": tls_certs.ca, "proxy-client.crt": tls_certs.client_cert,
             "proxy-client.key": tls_certs.client_key}
    for name, src in files.items():
        shutil.copy(src, tmp_path / name)
    good = tmp_path / "tls.yml"
    good.write_text(text.replace("/etc/nutcrackers/", f"{tmp_path}/"))
    r = run(["-t", "-c", str(good)])
    assert r.returncode == 0, r.stderr
    bare = tmp_path / "bare.yml"
    bare.write_text(text.replace("/etc/nutcrackers/", f"{tmp_path}/missing/"))
    r = run(["-t", "-c", str(bare)])
    assert r.returncode == 1 and "key 'tls_cert_file'" in r.stderr, r.stderr
