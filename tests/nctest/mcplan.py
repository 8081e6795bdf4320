"""The plan every memcached client of test_memcache_clients.py runs (the Python clients of
nctest.mcclients, tests/clients/node/memjs.js, tests/clients/ruby/dalli.rb), what each is expected
to report, and what a memcached holds afterwards, read from the server itself (`mg`).

A plan is JSON, the same for every client, on keys of its own:
  {"host", "port", "timeout" (seconds a request may take),
   "values": [[key, size, kind], ...]   set, get back, multi-get (with "missing")
   "missing": [key, key]                never set
   "delete": key                        set "x", delete, get (a miss), delete again (false)
   "counter": {"key", "start": "10", "ops": [["incr", 5], ["decr", 20], ["incr", 7]]}
   "counter_missing": key               incr of a key nobody set
   "cas": {"key", "values": [a, b, c]}  set a; gets; cas b (stored); cas c with the same token
                                        (refused); get (b)
   "ttl": {"set", "touch", "ttl", "touched"}  both set with ttl, "touch" touched to touched, and a
                                        touch of missing[0] (false)
   "typed": {"int"|"str"|"obj": [key, value]}  the client's own serializer (flags of its own)
   "flags": [key, flags, value]}        flags set and read back, where the client takes them
A cross-protocol plan is {"host", "port", "timeout", "write": [[key, size, kind]...], "read":
[key...]}: raw bytes with flags 0 written, then keys (other clients') read with their flags where
the client shows them.

Values are not in the plan (a 100 KB one would not fit in an argument): every program makes them
by one rule, value_of(key, size, kind); a value is reported as [size, sha1 hex] (None: a miss).

Threads: any; each backend read opens its own connection.
"""
import hashlib

from .keys import mc_item, spread_keys
from .procs import HOST

SIZES = (0, 1, 5, 100, 1000, 5000, 16384, 102400)  # each as text and as binary bytes
KINDS = ("text", "binary")
MANY = 40  # more keys of small sizes
COUNTER = {"start": "10", "ops": [["incr", 5], ["decr", 20], ["incr", 7]]}
COUNTER_SEEN = [15, 0, 7]  # memcached's counters stop at 0
CAS_VALUES = ["a", "b", "c"]
TTL, TOUCHED = 1000, 2000
TYPED = {"int": 12345, "str": "h\u00e9llo \u2713", "obj": {"a": [1, 2], "b": "x"}}
FLAGS = [42, "flagged"]
CROSS = [[102400, "binary"], [300, "binary"], [20, "text"], [0, "text"]]  # one writer's values


def seed_of(key):
    return sum(key.encode()) % 251


def value_of(key, size, kind):
    """The value of key: binary, byte j = (seed + 151 j) mod 256 (every byte value, CR, LF and
    NUL among them); text, lower-case letters from the seed on."""
    seed = seed_of(key)
    if kind == "binary":
        return bytes((seed + 151 * j) % 256 for j in range(size))
    return bytes(97 + (seed + j) % 26 for j in range(size))


def digest(data):
    return None if data is None else [len(data), hashlib.sha1(data).hexdigest()]


def make_plan(port, prefix, timeout):
    keys = iter(spread_keys(prefix, len(SIZES) * len(KINDS) + MANY + 16))
    values = [[next(keys), size, kind] for size in SIZES for kind in KINDS]
    values += [[next(keys), 3 + (i * 37) % 200, KINDS[i % 2]] for i in range(MANY)]
    return {
        "host": HOST, "port": port, "timeout": timeout,
        "values": values,
        "missing": [next(keys), next(keys)],
        "delete": next(keys),
        "counter": {"key": next(keys), **COUNTER},
        "counter_missing": next(keys),
        "cas": {"key": next(keys), "values": CAS_VALUES},
        "ttl": {"set": next(keys), "touch": next(keys), "ttl": TTL, "touched": TOUCHED},
        "typed": {name: [next(keys), value] for name, value in TYPED.items()},
        "flags": [next(keys), *FLAGS],
    }


def keys_of(plan):
    """Every key of a plan."""
    return [*(k for k, _, _ in plan["values"]), *plan["missing"], plan["delete"],
            plan["counter"]["key"], plan["counter_missing"], plan["cas"]["key"],
            plan["ttl"]["set"], plan["ttl"]["touch"], *(k for k, _ in plan["typed"].values()),
            plan["flags"][0]]


def cross_plan(port, timeout, write=(), read=()):
    return {"host": HOST, "port": port, "timeout": timeout, "write": list(write),
            "read": list(read)}


def cross_values(prefix):
    """One writer's cross-protocol values: [[key, size, kind], ...]."""
    return [[key, size, kind] for key, (size, kind) in zip(spread_keys(prefix, len(CROSS)), CROSS)]


def expected(plan, features):
    """What a client reports for plan. features: the steps it has beside the common ones ("cas",
    "typed", "flags": keys present; "touch": False when it has none), and "counter_missing": what
    its incr of a missing key returns (None: a miss; a number: the counter it created)."""
    got = {k: digest(value_of(k, size, kind)) for k, size, kind in plan["values"]}
    got.update({k: None for k in plan["missing"]})
    want = {
        "set": [True] * len(plan["values"]),
        "get": got,
        "multi": got,
        "delete": [True, None, False],
        "counter": COUNTER_SEEN,
        "counter_missing": features.get("counter_missing"),
        "ttl": [True, True, False] if features.get("touch", True) else [True, None, None],
    }
    if "cas" in features:
        want["cas"] = [True, False, CAS_VALUES[1]]
    if "typed" in features:
        want["typed"] = {name: value for name, (_, value) in plan["typed"].items()}
    if "flags" in features:
        want["flags"] = plan["flags"][1]
    return want


def held(port, key):
    """What the memcached on port holds under key: (value, flags, ttl: -1 for none), or None."""
    item = mc_item(port, key)
    return None if item is None else (item.value, item.flags, item.ttl)


def backend_problems(route, servers, plan, features):
    """The plan's keys as the servers hold them after a client ran it: a list of what is wrong
    (empty when all is right). route: {key: the server port the key belongs on}; servers: every
    server port (a key is on its own server and on no other); features: the client's, as for
    expected() ("typed": {name: the flags its serializer gives})."""
    want = {k: (value_of(k, size, kind), 0) for k, size, kind in plan["values"]}
    want.update({k: None for k in [*plan["missing"], plan["delete"]]})
    want[plan["counter"]["key"]] = ("counter", 0)
    created = features.get("counter_missing")  # an incr of a missing key that creates it
    want[plan["counter_missing"]] = None if created is None else (str(created).encode(), 0)
    cas = plan["cas"]
    want[cas["key"]] = (cas["values"][1].encode(), 0) if "cas" in features else None
    ttl = plan["ttl"]
    want[ttl["set"]] = ("ttl", ttl["ttl"])
    want[ttl["touch"]] = ("ttl", ttl["touched"] if features.get("touch", True) else ttl["ttl"])
    for name, (key, _) in plan["typed"].items():
        want[key] = ("flags", features["typed"][name]) if "typed" in features else None
    key, flag_value, text = plan["flags"]
    want[key] = (text.encode(), flag_value) if "flags" in features else None
    problems = []
    for key, w in want.items():
        home = route[key]
        for port in servers:
            got = held(port, key)
            if port != home:
                if got is not None:
                    problems.append(f"{key}: on {port} too, not only on {home}")
                continue
            problem = _compare(key, w, got)
            if problem:
                problems.append(f"{key} on {port}: {problem}")
    return problems


def _compare(key, want, got):
    if want is None:
        return None if got is None else f"held {_short(got)}, expected nothing"
    if got is None:
        return "missing"
    value, flags, ttl = got
    what, extra = want
    if what == "counter":
        return None if (int(value), flags) == (COUNTER_SEEN[-1], 0) else f"counter {_short(got)}"
    if what == "ttl":  # set with (or touched to) extra seconds a moment ago
        return None if extra - 60 < ttl <= extra else f"ttl {ttl}, expected about {extra}"
    if what == "flags":  # a serializer's value: its flags are what the test looks at
        return None if flags == extra and value else f"flags {flags}, expected {extra}"
    if (value, flags) != (what, extra):
        return f"held {_short(got)}, expected {_short((what, extra, -1))}"
    return None


def _short(held_value):
    value, flags, ttl = held_value
    shown = value if len(value) <= 40 else value[:40] + b"..."
    return f"{len(value)} bytes {shown!r} flags {flags} ttl {ttl}"
