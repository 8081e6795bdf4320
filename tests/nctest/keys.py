"""Keys and values, and which backend holds a key, asked of the backends themselves (not through
the proxy): keys that spread over the servers, large deterministic values, and owner lookups for
redis and memcached.

Threads: each call opens its own connections; any thread.
"""
import hashlib
import uuid
from dataclasses import dataclass

from .codec import Err
from .conn import KvConn, RawConn


def spread_keys(prefix, n):
    """n distinct keys that spread over the servers. Keys that differ only in a last digit
    ("k1", "k2", ...) have close fnv1a hashes and tend to land on one server; these differ in
    a hashed suffix. Deterministic for a prefix."""
    return [f"{prefix}:{hashlib.md5(f'{prefix}/{i}'.encode()).hexdigest()[:12]}" for i in range(n)]


def big_value(size, seed=b"nutcrackers"):
    """size bytes, deterministic, with no CR/LF runs that matter."""
    block = hashlib.sha512(seed).digest() * 64  # 4 KiB
    reps = size // len(block) + 1
    return (block * reps)[:size]


def digest(data):
    return hashlib.sha1(data).hexdigest()


def by_route(ports, per_server, prefix, route):
    """per_server keys of spread_keys(prefix + a fresh suffix) for each of ports, as route(keys) ->
    [index of the server of each key] places them: a list, by server, of lists of keys."""
    out = [[] for _ in ports]
    candidates = spread_keys(f"{prefix}{uuid.uuid4().hex[:6]}", 60 * per_server * len(ports))
    for k, where in zip(candidates, route(candidates)):
        if len(out[where]) < per_server:
            out[where].append(k)
    assert all(len(ks) == per_server for ks in out), out
    return out


def backend_keys(port, redis, candidates, db=0):
    """Which of candidates the backend on port holds: {key: value}."""
    out = {}
    candidates = list(candidates)
    with KvConn(port, redis) as c:
        if redis:
            if db:
                assert c.call("SELECT", db) == "OK"
            present = {k.decode(errors="replace") for k in c.call("KEYS", "*")}
            wanted = [k for k in candidates if k in present]
            for i in range(0, len(wanted), 100):
                chunk = wanted[i:i + 100]
                out.update(zip(chunk, c.call("MGET", *chunk)))
        else:
            for i in range(0, len(candidates), 50):
                chunk = candidates[i:i + 50]
                values = c.kv_mget(chunk)
                assert not isinstance(values, Err), values
                out.update((k, v) for k, v in zip(chunk, values) if v is not None)
    return out


def owners(ports, redis, keys, db=0):
    """{key: index in ports of the backend that holds it}; asserts each key is on exactly one."""
    where = {}
    for i, port in enumerate(ports):
        for k in backend_keys(port, redis, keys, db):
            assert k not in where, f"{k} is on two backends"
            where[k] = i
    missing = [k for k in keys if k not in where]
    assert not missing, f"keys on no backend: {missing[:5]}"
    return where


def mc_value_size(port, key):
    """The size of key's value on the memcached on port, or None when it has no such key (asked
    with the meta command `mg`, which does not send the value back)."""
    with RawConn(port) as c:
        c.send(b"mg %s s\r\n" % key.encode())
        reply = c.line()
    if reply == b"EN\r\n":
        return None
    assert reply.startswith(b"HD s"), reply
    return int(reply[4:-2])


@dataclass(frozen=True)
class McItem:
    value: bytes
    flags: int
    cas: int
    ttl: int     # seconds left, -1: none


def mc_item(port, key):
    """key's item on the memcached on port, as the meta command `mg <key> v f c t` shows it, or
    None when it has no such key."""
    with RawConn(port) as c:
        c.send(b"mg %s v f c t\r\n" % (key.encode() if isinstance(key, str) else key))
        line = c.line()
        if line == b"EN\r\n":
            return None
        head = line.split()
        assert head[0] == b"VA", line
        value = c.recv_exact(int(head[1]) + 2)[:-2]
    fields = {t[:1]: int(t[1:]) for t in head[2:]}
    return McItem(value, fields[b"f"], fields[b"c"], fields[b"t"])


def holders(ports, redis, key, db=0):
    """The indexes of the backends that hold key."""
    out = []
    for i, port in enumerate(ports):
        if redis:
            with RawConn(port) as c:
                if db:
                    assert c.call("SELECT", db) == "OK"
                found = c.call("EXISTS", key) == 1
        else:
            found = mc_value_size(port, key) is not None
        if found:
            out.append(i)
    return out


def owner(ports, redis, key, db=0):
    """The index of the one backend that holds key."""
    found = holders(ports, redis, key, db)
    assert len(found) == 1, f"{key} is on backends {found}"
    return found[0]
