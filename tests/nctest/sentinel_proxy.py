"""The proxy's view of a pool with `sentinels:` (issue 27), as its manage port and its log give it:
where each server is now and its role (the JSON's server_addr and server_role, Prometheus'
nutcrackers_server_info), how many sentinels answer (topology_reachable in both), and the log
lines of a move and of sentinels that stop or start answering.

Addresses are "host:port" strings here, as the proxy writes them (nctest.sentinel.addr_str of a
Deployment's tuples).

Threads: a PoolView's calls open their own connections; any thread.
"""
import datetime
import re

from . import manage, wait
from .conf import write_conf
from .conn import no_retry, redis_client

UNREACHABLE = "no sentinel answers: the servers stay where they were last known"
ANSWERS_AGAIN = "a sentinel answers again"
MOVE_TIMEOUT = 20.0  # s: a move the sentinels agree on, seen in the proxy's stats or log
RELOAD_TIMEOUT = 30.0  # s: a reload answered and in the stats


def moved_pattern(pool, name, old, new):
    """The log line of server `name` moving from old to new, learned from a +switch-master
    message (group "sentinel": the sentinel it came from) or from an answer to SENTINEL MASTER
    (group "asked": the sentinel asked)."""
    return re.compile(
        rf"pool '{re.escape(pool)}': server {re.escape(name)}: master moved from {re.escape(old)} to "
        rf"{re.escape(new)} \((?:\+switch-master from sentinel (?P<sentinel>\S+)|asked sentinel "
        r"(?P<asked>\S+), config epoch \d+)\)")


def refused_line(pool, sentinel):
    """The start of the warning of a sentinel that refuses the pool's sentinel_auth."""
    return f"pool '{pool}': sentinel {sentinel} refuses sentinel_auth: "


def logged_at(match):
    """The wall-clock time (seconds since the epoch, to the millisecond, truncated) the proxy
    stamped on the log line of a match over its log text."""
    text = match.string
    line = text[text.rfind("\n", 0, match.start()) + 1:match.start()]
    stamp = re.match(r"\[(\S+ \S+ [+-]\d{4})\]", line)
    assert stamp, line
    return datetime.datetime.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S.%f %z").timestamp()


class PoolView:
    """One pool of a running proxy: `proxy` the `nutcrackers` fixture's Proxy (or anything with its
    manage_port, conf_path and log()), `port` the pool's listen port, `conf` the pool's keys in
    the config file (its only pool)."""

    def __init__(self, proxy, pool, port, conf):
        self.proxy = proxy
        self.pool = pool
        self.port = port
        self.conf = conf
        self.generation = 1

    @property
    def manage(self):
        return self.proxy.manage_port

    def client(self, **kw):
        """A redis-py client of the pool (RESP2, bounded waits, no retries: a failure shows),
        with the pool's redis_auth if it has one. The caller closes it."""
        kw.setdefault("retry", no_retry())
        kw.setdefault("password", self.conf.get("redis_auth"))
        return redis_client(self.port, **kw)

    # --- the JSON ----------------------------------------------------------------------------

    def doc(self):
        return manage.status(self.manage)[self.pool]

    def places(self):
        """{server: (server_addr, server_role)} of the JSON."""
        return {k: (v["server_addr"], v["server_role"]) for k, v in self.doc().items()
                if isinstance(v, dict) and "server_addr" in v}

    def reachable(self):
        return self.doc()["topology_reachable"]

    def wait_addr(self, name, addr, timeout=MOVE_TIMEOUT):
        """Waits until the JSON has server `name` at addr, a master."""
        wait.wait_value(lambda: self.places().get(name), lambda p: p == (addr, "master"), timeout,
                        f"{self.pool}/{name} at {addr} in the stats")

    def wait_reachable(self, n, timeout=MOVE_TIMEOUT):
        """Waits until both the JSON and Prometheus say n sentinels answer."""
        wait.wait_value(lambda: (self.reachable(), self.prom_reachable()), lambda v: v == (n, n),
                        timeout, f"{self.pool}: topology_reachable {n} (JSON, Prometheus)")

    # --- Prometheus ------------------------------------------------------------------------

    def samples(self, name):
        """[(labels dict, value)] of the /metrics samples called `name`, for this pool."""
        return [(dict(labels), v) for (n, labels), v in manage.metric_samples(self.manage, name).items()
                if n == name and dict(labels).get("pool") == self.pool]

    def prom_reachable(self):
        values = [v for _, v in self.samples("nutcrackers_pool_topology_reachable")]
        assert len(values) == 1, values
        return int(values[0])

    def prom_places(self):
        """{server: (addr, role)} of nutcrackers_server_info (each sample 1)."""
        info = self.samples("nutcrackers_server_info")
        assert all(v == 1 for _, v in info), info
        return {labels["server"]: (labels["addr"], labels["role"]) for labels, _ in info}

    # --- reloads ---------------------------------------------------------------------------

    def reload(self, **changes):
        """Rewrites the config with `changes` to the pool's keys and reloads it through the manage
        port; waits until the stats show the new generation."""
        self.conf = {**self.conf, **changes}
        write_conf(self.proxy.conf_path, {self.pool: self.conf})
        self.generation += 1
        reply = manage.command(self.manage, "reload", timeout=RELOAD_TIMEOUT)
        assert reply == f"OK generation {self.generation}\r\n", reply
        manage.wait_status(self.manage, lambda d: d.get("generation") == self.generation,
                           RELOAD_TIMEOUT, f"generation {self.generation} in the stats")

    # --- the log ---------------------------------------------------------------------------

    def log_mark(self):
        """Where the log ends now: a `start` for the waits below."""
        return len(self.proxy.log())

    def moves(self, start=0):
        """Every "master moved" line of this pool from character start on."""
        return re.findall(rf"pool '{re.escape(self.pool)}': server \S+: master moved from .*",
                          self.proxy.log()[start:])

    def wait_moved(self, name, old, new, start=0, timeout=MOVE_TIMEOUT):
        """Waits for the log line of name moving from old to new (after character start);
        returns its match (group "sentinel" or "asked": the sentinel that told)."""
        pattern = moved_pattern(self.pool, name, old, new)
        try:
            return wait.wait_for(lambda: pattern.search(self.proxy.log(), start), timeout,
                                 f"'{name}: master moved from {old} to {new}' in the log")
        except TimeoutError as e:
            raise AssertionError(f"{e}; moves logged: {self.moves(start)}") from None

    def wait_log(self, needle, start=0, timeout=MOVE_TIMEOUT):
        return wait.wait_log(self.proxy.log, needle, timeout, start)
