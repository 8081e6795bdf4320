"""The memcached clients of test_memcache_clients.py, pinned (tests/integration/requirements.txt,
tests/clients/node/package.json, Debian's ruby-dalli): each runs an nctest.mcplan plan (or a
cross-protocol one) and reports what it saw, in one JSON shape.

- In this process: pymemcache (the text protocol), pylibmc with binary=True (libmemcached's binary
  protocol) and meta-memcache (meta commands, its high-level CacheClient), each through an adapter
  that run_plan() and run_cross() drive.
- Programs of their own: memjs (tests/clients/node/memjs.js, binary) and Dalli
  (tests/clients/ruby/dalli.rb, Dalli 3.0's binary protocol), given the plan as an argument; they
  print the same JSON.

Raw values are bytes stored with flags 0 by every client (meta-memcache through a serializer that
keeps them so; Dalli with raw: true and compress: false): that is what another protocol's client
reads back as the same bytes. The typed step uses each client's own serializer instead.

Threads: a client belongs to the call that made it.
"""
import json
import subprocess
import sys

from . import mcplan, nodeclients
from .procs import REPO

RUBY_PROGRAM = REPO / "tests" / "clients" / "ruby" / "dalli.rb"
PROGRAM_TIMEOUT = 60.0  # seconds for one program's whole plan (unscaled)

# name: (protocol, what the client has beside the common steps: see mcplan.expected)
CLIENTS = {
    "pymemcache": ("text", {"cas": True, "typed": {"int": 2, "str": 16, "obj": 1},
                            "flags": True}),
    # pylibmc: no touch (see Pylibmc.touch)
    "pylibmc": ("binary", {"cas": True, "typed": {"int": 4, "str": 16, "obj": 1},
                           "touch": False}),
    "meta-memcache": ("meta", {"cas": True, "typed": {"int": 2, "str": 0, "obj": 1}}),
    # memjs: no cas, no serializer of its own; its incr sends an initial value (0), so memcached
    # creates a missing counter
    "memjs": ("binary", {"flags": True, "counter_missing": 0}),
    # Dalli: Marshal for every typed value (flag 1)
    "dalli": ("binary", {"cas": True, "typed": {"int": 1, "str": 1, "obj": 1}}),
}
EXTERNAL = ("memjs", "dalli")
META_MIN_PYTHON = (3, 10)  # meta-memcache's Requires-Python


def pinned():
    """{client: the version its pin names}: requirements.txt, package.json, deps.sh."""
    from . import deps

    reqs = (REPO / "tests" / "integration" / "requirements.txt").read_text().splitlines()
    pins = dict(line.split(";")[0].strip().split("==") for line in reqs
                if "==" in line and not line.startswith("#"))
    dalli = deps.call('printf %s "$NC_DALLI_VERSION"', 30).stdout
    return {"pymemcache": pins["pymemcache"], "pylibmc": pins["pylibmc"],
            "meta-memcache": pins["meta-memcache"],
            "memjs": nodeclients.pinned_versions()["memjs"], "dalli": dalli}


class Adapter:
    """A client's calls as run_plan() makes them, on self.c where the client's own call has the
    same shape (a subclass overrides the others; touch = None: the client has none)."""

    def get(self, key):
        return self.c.get(key)

    def delete(self, key):
        return self.c.delete(key)

    def incr(self, key, n):
        return self.c.incr(key, n)

    def decr(self, key, n):
        return self.c.decr(key, n)

    def gets(self, key):
        return self.c.gets(key)

    def cas(self, key, value, token):
        return self.c.cas(key, value, token)

    def touch(self, key, ttl):
        return self.c.touch(key, ttl)


class Pymemcache(Adapter):
    protocol = "text"
    multi = "get_many"

    def __init__(self, host, port, timeout):
        import pymemcache
        from pymemcache import serde
        from pymemcache.client.base import Client

        self.version = pymemcache.__version__
        kw = {"timeout": timeout, "connect_timeout": timeout, "default_noreply": False}
        self.c = Client((host, port), **kw)
        self.typed_c = Client((host, port), serde=serde.pickle_serde, **kw)
        self.flags_c = Client((host, port), serde=FlagsSerde(), **kw)

    def close(self):
        for c in (self.c, self.typed_c, self.flags_c):
            c.close()

    def set(self, key, value, ttl=0):
        return self.c.set(key, value, expire=ttl)

    def get_multi(self, keys):
        return self.c.get_many(keys)

    def typed_set(self, key, value):
        return self.typed_c.set(key, value)

    def typed_get(self, key):
        return self.typed_c.get(key)

    def flags_set(self, key, value, flags):
        return self.c.set(key, value, flags=flags)

    def read(self, key):
        return self.flags_c.get(key)  # (value, flags) or None


class FlagsSerde:
    """pymemcache's serde hook: bytes stored as they are (flags 0), read back with their flags."""

    def serialize(self, key, value):
        return value, 0

    def deserialize(self, key, value, flags):
        return value, flags


class Pylibmc(Adapter):
    protocol = "binary"
    multi = "get_multi"

    def __init__(self, host, port, timeout):
        import pylibmc

        self.version = pylibmc.__version__
        self.NotFound = pylibmc.NotFound
        ms = int(timeout * 1000)
        self.c = pylibmc.Client([f"{host}:{port}"], binary=True,
                                behaviors={"cas": True, "connect_timeout": ms,
                                           "_poll_timeout": ms})

    def close(self):
        self.c.disconnect_all()

    def set(self, key, value, ttl=0):
        return self.c.set(key, value, time=ttl)

    def get_multi(self, keys):
        return self.c.get_multi(keys)

    def incr(self, key, n):
        try:
            return self.c.incr(key, n)
        except self.NotFound:
            return None

    # libmemcached 1.0.16's (pylibmc's) binary touch does not take memcached's reply (which
    # carries the item's flags as extras): it waits for its poll timeout, then says True. The
    # plan leaves touch out for it.
    touch = None

    typed_set = set
    typed_get = Adapter.get

    def read(self, key):
        got = self.c.get(key)
        return None if got is None else (got, None)  # its flags are not shown (0: bytes)


class MetaMemcache(Adapter):
    protocol = "meta"
    multi = "multi_get"

    def __init__(self, host, port, timeout):
        import meta_memcache as mm

        self.version = mm.__version__
        # read_buffer_size: with its default (4 KB), meta-memcache-socket 0.3.1 takes seconds to
        # read a 100 KB value (2.5 s against a local memcached); with 1 MB, a millisecond
        pools = mm.connection_pool_factory_builder(connection_timeout=timeout,
                                                   recv_timeout=timeout,
                                                   read_buffer_size=1 << 20)
        servers = [mm.ServerAddress(host, port)]
        make = mm.CacheClient.cache_client_from_servers
        self.c = make(servers, pools, serializer=_raw_serializer(mm, flags=False))
        self.typed_c = make(servers, pools)  # its default, MixedSerializer
        self.read_c = make(servers, pools, serializer=_raw_serializer(mm, flags=True))

    def close(self):
        pass  # its pools hold the sockets; they go with the client

    def set(self, key, value, ttl=0):
        return self.c.set(key, value, ttl=ttl)

    def get_multi(self, keys):
        return {k.key: v for k, v in self.c.multi_get(keys).items() if v is not None}

    def incr(self, key, n):
        return self.typed_c.delta_and_get(key, n)  # its serializer gives the str it wants

    def decr(self, key, n):
        return self.typed_c.delta_and_get(key, -n)

    def gets(self, key):
        return self.c.get_cas(key)

    def cas(self, key, value, token):
        return self.c.set(key, value, ttl=0, cas_token=token)

    def typed_set(self, key, value):
        return self.typed_c.set(key, value, ttl=0)

    def typed_get(self, key):
        return self.typed_c.get(key)

    def read(self, key):
        got = self.read_c.get(key)
        # an empty value is not given to the serializer: its flags are not shown
        return got if got is None or isinstance(got, tuple) else (got, None)


def _raw_serializer(mm, flags):
    """A meta-memcache serializer that stores bytes as they are with flags 0 (its default,
    MixedSerializer, flags bytes 16 and compresses them past 128 bytes); with flags, a read gives
    (bytes, flags)."""
    from meta_memcache.base.base_serializer import EncodedValue

    class Raw(mm.BaseSerializer):
        def serialize(self, key, value):
            return EncodedValue(data=bytes(value), encoding_id=0)

        def unserialize(self, data, encoding_id):
            return (bytes(data), encoding_id) if flags else bytes(data)

    return Raw()


ADAPTERS = {"pymemcache": Pymemcache, "pylibmc": Pylibmc, "meta-memcache": MetaMemcache}


def meta_available():
    """None, or why meta-memcache cannot run here (it needs Python >= 3.10)."""
    if sys.version_info < META_MIN_PYTHON:
        return (f"meta-memcache needs Python >= {'.'.join(map(str, META_MIN_PYTHON))} "
                f"(this is {sys.version.split()[0]}): requirements.txt leaves it out")
    return None


def _typed(value):
    return value.decode() if isinstance(value, bytes) else value


def run_plan(name, plan):
    """Runs mcplan's plan with the Python client `name`; returns what it saw (the JSON shape
    the programs print). A request that fails raises (the client's own error)."""
    a = ADAPTERS[name](plan["host"], plan["port"], plan["timeout"])
    out = {"client": name, "version": a.version, "protocol": a.protocol, "steps": []}
    try:
        _run(a, plan, out)
    finally:
        a.close()
    return out


def _run(a, plan, out):
    steps = out["steps"]
    vals = {k: mcplan.value_of(k, size, kind) for k, size, kind in plan["values"]}
    out["set"] = [bool(a.set(k, v)) for k, v in vals.items()]
    steps.append("set")
    keys = [*vals, *plan["missing"]]
    out["get"] = {k: mcplan.digest(a.get(k)) for k in keys}
    steps.append("get")
    many = a.get_multi(keys)
    out["multi"] = {k: mcplan.digest(many.get(k)) for k in keys}
    out["multi_call"] = a.multi
    steps.append("multi-get")
    k = plan["delete"]
    a.set(k, b"x")
    out["delete"] = [bool(a.delete(k)), mcplan.digest(a.get(k)), bool(a.delete(k))]
    steps.append("delete")
    counter = plan["counter"]
    a.set(counter["key"], counter["start"].encode())
    out["counter"] = [(a.incr if op == "incr" else a.decr)(counter["key"], n)
                      for op, n in counter["ops"]]
    created = a.incr(plan["counter_missing"], 1)  # None, or False (meta-memcache): a miss
    out["counter_missing"] = None if created is None or created is False else created
    steps.append("incr/decr")
    k, (first, second, third) = plan["cas"]["key"], plan["cas"]["values"]
    a.set(k, first.encode())
    _, token = a.gets(k)
    ok = a.cas(k, second.encode(), token)
    stale = a.cas(k, third.encode(), token)
    out["cas"] = [bool(ok), bool(stale), _typed(a.get(k))]
    steps.append("cas")
    ttl = plan["ttl"]
    set_ok = a.set(ttl["set"], b"t", ttl["ttl"]) and a.set(ttl["touch"], b"t", ttl["ttl"])
    if a.touch is None:
        out["ttl"] = [bool(set_ok), None, None]
    else:
        out["ttl"] = [bool(set_ok), bool(a.touch(ttl["touch"], ttl["touched"])),
                      bool(a.touch(plan["missing"][0], ttl["touched"]))]
    steps.append("ttl")
    for key, value in plan["typed"].values():
        a.typed_set(key, value)
    out["typed"] = {name: a.typed_get(key) for name, (key, _) in plan["typed"].items()}
    steps.append("typed")
    if hasattr(a, "flags_set"):
        key, flags, text = plan["flags"]
        a.flags_set(key, text.encode(), flags)
        got = a.read(key)
        out["flags"] = None if got is None else got[1]
        steps.append("flags")


def run_cross(name, plan):
    """A cross-protocol plan with the Python client `name`: {"client", "version", "protocol",
    "wrote": [bool...], "read": {key: [size, sha1, flags or None] or None}}."""
    a = ADAPTERS[name](plan["host"], plan["port"], plan["timeout"])
    try:
        wrote = [bool(a.set(k, mcplan.value_of(k, size, kind))) for k, size, kind in plan["write"]]
        read = {}
        for key in plan["read"]:
            got = a.read(key)
            read[key] = None if got is None else [*mcplan.digest(got[0]), got[1]]
    finally:
        a.close()
    return {"client": name, "version": a.version, "protocol": a.protocol, "wrote": wrote,
            "read": read}


class ProgramFailed(AssertionError):
    """A client program exited with an error; the message has its output."""


def run_program(name, executable, plan, timeout):
    """Runs memjs.js (executable: node) or dalli.rb (executable: ruby) with plan; returns the JSON
    it printed last. Raises ProgramFailed when it failed, subprocess.TimeoutExpired past
    timeout."""
    arg = json.dumps(plan)
    if name == "memjs":
        result, rc, text = nodeclients.run(executable, ["memjs.js", arg], timeout)
    else:
        out = subprocess.run([executable, str(RUBY_PROGRAM), arg], cwd=RUBY_PROGRAM.parent,
                             capture_output=True, text=True, timeout=timeout,
                             stdin=subprocess.DEVNULL)
        rc, text = out.returncode, out.stdout + out.stderr
        lines = out.stdout.strip().splitlines()
        try:
            result = json.loads(lines[-1]) if lines else None
        except ValueError:
            result = None
    if rc != 0 or result is None or "error" in result:
        raise ProgramFailed(f"{name} failed (exit {rc}):\n{text}")
    return result
