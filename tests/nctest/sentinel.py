"""Redis Sentinel deployments for the tests of the proxy's Sentinel support (issue 27): S shards,
each a master and R replicas (redis-server on free loopback ports, the replicas synced before
anything else starts), watched by 3 sentinels (redis-server --sentinel, each with a dir and a
config file of its own: sentinels rewrite their config), optionally with passwords on the
sentinels (requirepass: the proxy's sentinel_auth) and on the servers (requirepass and masterauth,
the sentinels' auth-pass). Master names are shard0, shard1, ...

A Deployment also does what a test does to one: where a master is (SENTINEL
get-master-addr-by-name), its replicas as the sentinels see them, a forced failover, a master
killed with SIGKILL and the switch that follows (timed), a killed server restarted on its port (an
old master coming back, which the sentinels make a replica), sentinels stopped and started or
paused (SIGSTOP: a sentinel that hangs) and resumed, the +switch-master events of a sentinel
(nctest.sentinel_events), a redis-py client of a server and its INFO commandstats (where reads
and writes went).

Processes are handed to `track` as they start (the fixtures' reaper, which stops them by pid at the
end of the test, pass or fail) and their logs to `on_log` (attached to a failing test's report).
Addresses are (host, port) tuples, always 127.0.0.1: the sentinels are given IPs and announce IPs.
Every wait is bounded (nctest.wait, scaled for sanitizer runs) and names what it waited for.

Threads: a Deployment belongs to the test's thread (its SwitchWatches read on threads of their own).
"""
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from . import conn, procfs, procs, wait
from .conn import no_retry
from .procs import HOST
from .listener import Listener
from .sentinel_events import SwitchWatch

SENTINELS = 3
QUORUM = 2
DOWN_AFTER_MS = 1000       # a master silent this long is subjectively down
FAILOVER_TIMEOUT_MS = 5000  # also: a sentinel that voted waits twice this before its own failover
PARALLEL_SYNCS = 1

UP_TIMEOUT = 20.0      # s: the servers synced, the sentinels aware of each other (2 s hellos)
SWITCH_TIMEOUT = 30.0  # s: a failover, forced or after a kill, seen by every sentinel
REJOIN_TIMEOUT = 40.0  # s: a restarted old master made a replica (sentinels wait 8 s first)
CLIENT_TIMEOUT = 5.0   # s: one command to a server or a sentinel
START_TRIES = 3        # fresh ports tried for a first start (the port may be taken meanwhile)


def addr_str(addr):
    """'host:port' of a (host, port) address."""
    return f"{addr[0]}:{addr[1]}"


def parse_addr(text):
    host, _, port = text.rpartition(":")
    return host, int(port)


def _pairs(flat):
    """A dict of a flat [key, value, key, value, ...] reply (SENTINEL MASTER, REPLICAS)."""
    return dict(zip(flat[::2], flat[1::2]))


def _state(flat):
    """A sentinel's view of an instance: its fields as strings, "flags" as a set and "addr"."""
    item = _pairs(flat)
    item["flags"] = set(item.get("flags", "").split(","))
    item["addr"] = (item.get("ip"), int(item.get("port", 0)))
    return item


@dataclass
class Server(Listener):
    """A redis-server of the deployment. `args`: its flags beyond the common ones (a replica's
    --replicaof at its first start)."""
    shard: str
    port: int
    workdir: Path
    args: tuple = ()
    proc: subprocess.Popen = None


@dataclass
class SentinelNode(Listener):
    """A sentinel: its config file is written once, then the sentinel's own (it rewrites it)."""
    index: int
    port: int
    workdir: Path
    proc: subprocess.Popen = None
    paused: bool = False  # SIGSTOPped (pause_sentinel): its port accepts, it answers nothing

    @property
    def conf_path(self):
        return self.workdir / "sentinel.conf"


class Deployment:
    """S shards of a master and R replicas, and 3 sentinels monitoring them (see the module's
    docstring). start() brings it up; stop() stops all of it (the fixtures' reaper does too)."""

    def __init__(self, workdir, track=lambda proc: proc, on_log=lambda title, path: None,
                 shards=2, replicas=1, sentinel_pass=None, master_pass=None,
                 down_after_ms=DOWN_AFTER_MS, failover_timeout_ms=FAILOVER_TIMEOUT_MS,
                 hostnames=False):
        self.workdir = Path(workdir)
        self.track = track
        self.on_log = on_log
        self.names = [f"shard{i}" for i in range(shards)]
        self.replica_count = replicas
        self.sentinel_pass = sentinel_pass
        self.master_pass = master_pass
        self.down_after_ms = down_after_ms
        self.failover_timeout_ms = failover_timeout_ms
        self.hostnames = hostnames
        self.servers = {}       # port -> Server
        self.first_masters = {}  # name -> the address it started with
        self.sentinels = []
        self.watches = []
        self.started = []  # every Popen, restarts too: stop() stops them all by pid

    # --- starting --------------------------------------------------------------------------

    def start(self):
        """Starts the shards (replicas synced), then the sentinels; waits until every sentinel
        knows every master, its replicas and the other sentinels. Returns self."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        for name in self.names:
            master = self._new_server(name)
            self.first_masters[name] = (self.host, master.port)
            replicas = [self._new_server(name, ("--replicaof", HOST, str(master.port)))
                        for _ in range(self.replica_count)]
            for replica in replicas:
                self.wait_replica_of(replica.addr, master.addr, UP_TIMEOUT)
        for i in range(SENTINELS):
            self._new_sentinel(i)
        self.wait_known()
        return self

    @property
    def host(self):
        """How the sentinels name the servers: 127.0.0.1, or localhost with hostnames=True (the
        sentinels resolve and announce hostnames, the replicas announce themselves as localhost:
        every address the sentinels give is then ("localhost", port))."""
        return "localhost" if self.hostnames else HOST

    def _common_args(self):
        """Every server's flags: a full sync at once (not after the 5 s that 7.0's diskless sync
        waits for more replicas by default), the name replicas announce, the password if any."""
        args = ("--repl-diskless-sync-delay", "0")
        if self.hostnames:
            args += ("--replica-announce-ip", self.host)
        if self.master_pass is None:
            return args
        return (*args, "--requirepass", self.master_pass, "--masterauth", self.master_pass)

    def _launch(self, server, args):
        """Starts server's redis-server on its port (one try); True once it listens."""
        return server.launch_redis((*self._common_args(), *args),
                                   f"redis-server :{server.port} ({server.shard}) output", self)

    def _new_server(self, shard, args=()):
        for _ in range(START_TRIES):
            port = procs.free_port()
            server = Server(shard, port, self.workdir / f"redis-{port}", tuple(args))
            if self._launch(server, server.args):
                self.servers[port] = server
                return server
        raise AssertionError(f"no redis-server of {shard} started in {START_TRIES} tries; see "
                             f"{self.workdir}/redis-*/out.log")

    def _sentinel_conf(self, node):
        lines = [f"port {node.port}", f"bind {HOST}", "daemonize no", "protected-mode no",
                 f"dir {node.workdir}", 'logfile ""']
        if self.sentinel_pass is not None:
            lines.append(f"requirepass {self.sentinel_pass}")
        if self.hostnames:  # 7.0 refuses a hostname without resolve-hostnames
            lines += ["sentinel resolve-hostnames yes", "sentinel announce-hostnames yes"]
        for name in self.names:
            host, port = self.first_masters[name]
            lines += [f"sentinel monitor {name} {host} {port} {QUORUM}",
                      f"sentinel down-after-milliseconds {name} {self.down_after_ms}",
                      f"sentinel failover-timeout {name} {self.failover_timeout_ms}",
                      f"sentinel parallel-syncs {name} {PARALLEL_SYNCS}"]
            if self.master_pass is not None:
                lines.append(f"sentinel auth-pass {name} {self.master_pass}")
        return "\n".join(lines) + "\n"

    def _launch_sentinel(self, node):
        """Starts the sentinel on its port with its config (one try); True once it listens."""
        log_path = node.workdir / "out.log"
        self.on_log(f"sentinel {node.index} :{node.port} output", log_path)
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(["redis-server", str(node.conf_path), "--sentinel"],
                                    cwd=node.workdir, stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True,
                                    preexec_fn=procs.die_with_parent)
        self.started.append(proc)
        node.proc = self.track(proc) or proc
        try:
            procs.wait_listening(node.port, proc, what=f"sentinel {node.index} on {node.port}")
        except (TimeoutError, RuntimeError):
            procs.stop_popen(proc)
            return False
        return True

    def _new_sentinel(self, index):
        for _ in range(START_TRIES):
            port = procs.free_port()
            node = SentinelNode(index, port, self.workdir / f"sentinel-{index}")
            node.workdir.mkdir(parents=True, exist_ok=True)
            node.conf_path.write_text(self._sentinel_conf(node))
            if self._launch_sentinel(node):
                self.sentinels.append(node)
                return node
        raise AssertionError(f"sentinel {index} did not start in {START_TRIES} tries; see "
                             f"{self.workdir}/sentinel-{index}/out.log")

    # --- clients ---------------------------------------------------------------------------

    def server_client(self, addr, **kw):
        """A redis-py client (RESP2, bounded waits, no retries) of a server of the deployment,
        with its password if the servers have one. The caller closes it."""
        kw.setdefault("password", self.master_pass)
        return conn.redis_client(addr[1], **_once(kw))

    def sentinel_client(self, index=0, **kw):
        """A redis-py client (RESP2, str replies, no retries) of sentinel `index`. The caller
        closes it."""
        kw.setdefault("password", self.sentinel_pass)
        kw.setdefault("decode_responses", True)
        return conn.redis_client(self.sentinels[index].port, **_once(kw))

    def _ask(self, index, *command):
        with self.sentinel_client(index) as c:
            return c.execute_command(*command)

    def _serve(self, addr, *command):
        with self.server_client(addr, decode_responses=True) as c:
            return c.execute_command(*command)

    @property
    def sentinel_addrs(self):
        """The sentinels' (host, port), all of them, running or not (their ports do not move)."""
        return [s.addr for s in self.sentinels]

    def running_sentinels(self):
        """The sentinels that run and answer (neither stopped nor paused)."""
        return [s.index for s in self.sentinels if s.alive and not s.paused]

    def _first_running(self):
        running = self.running_sentinels()
        assert running, "no sentinel is running"
        return running[0]

    def _steady_sentinel(self):
        """The first running sentinel out of TILT mode (waited for, bounded): one resumed after a
        pause stays in TILT for 30 s, and accepts SENTINEL FAILOVER but starts it only then."""

        def steady():
            for i in self.running_sentinels():
                if _quiet(lambda i=i: self._ask(i, "INFO", "sentinel")["sentinel_tilt"]) == 0:
                    return i
            return None

        return wait.wait_value(steady, lambda i: i is not None, SWITCH_TIMEOUT,
                               "a sentinel out of TILT mode")

    # --- what the sentinels say ------------------------------------------------------------

    def master_addr(self, name, index=None):
        """(host, port) of master `name` as a sentinel (the first running one unless told) gives
        it (SENTINEL get-master-addr-by-name)."""
        index = self._first_running() if index is None else index
        reply = self._ask(index, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", name)
        assert reply, f"sentinel {index} does not know a master named {name}"
        return reply[0], int(reply[1])

    def master_state(self, name, index=None):
        """SENTINEL MASTER <name> of a sentinel: its fields as strings, flags as a set."""
        index = self._first_running() if index is None else index
        return _state(self._ask(index, "SENTINEL", "MASTER", name))

    def replicas(self, name, index=None):
        """SENTINEL REPLICAS <name> of a sentinel (the first running one unless told): a dict per
        replica, its fields as strings, "flags" a set ({"slave"} when it is up), "addr"."""
        index = self._first_running() if index is None else index
        return [_state(r) for r in self._ask(index, "SENTINEL", "REPLICAS", name)]

    def up_replicas(self, name, index=None):
        """The addresses of the replicas of `name` that a sentinel reports up (flags "slave"
        alone, its link to the master "ok")."""
        return [r["addr"] for r in self.replicas(name, index)
                if r["flags"] == {"slave"} and r.get("master-link-status") == "ok"]

    def wait_replica_up(self, name, addr, every=False, timeout=REJOIN_TIMEOUT):
        """Waits (bounded) until a running sentinel (every one, with every) reports addr an up
        replica of `name`. A sentinel learns a replica's new role from its INFO, every 10 s: the
        one that reconfigured it knows at once, the others up to 10 s later."""

        def seen():
            up = {}
            for i in self.running_sentinels():
                up[i] = addr in (_quiet(lambda i=i: self.up_replicas(name, i)) or ())
            return up

        wait.wait_value(seen, lambda up: all(up.values()) if every else any(up.values()),
                        timeout, f"{'every' if every else 'a'} sentinel to report "
                        f"{addr_str(addr)} an up replica of {name}")

    def masters_seen(self, name):
        """{sentinel index: the address it gives for `name`, or the error it raised}, of every
        running sentinel."""
        seen = {}
        for i in self.running_sentinels():
            try:
                seen[i] = self.master_addr(name, i)
            except Exception as e:  # noqa: BLE001 - reported by the waits
                seen[i] = repr(e)
        return seen

    def _problems(self, name, index):
        """Why sentinel `index` does not (yet) know `name` as healthy: a list of strings."""
        state = self.master_state(name, index)
        wrong = []
        if state["flags"] != {"master"}:
            wrong.append(f"master flags {sorted(state['flags'])}")
        if int(state.get("num-other-sentinels", -1)) != SENTINELS - 1:
            wrong.append(f"num-other-sentinels {state.get('num-other-sentinels')}")
        if int(state.get("num-slaves", -1)) != self.replica_count:
            wrong.append(f"num-slaves {state.get('num-slaves')}")
        if len(self.up_replicas(name, index)) != self.replica_count:
            seen = [(r["addr"], sorted(r["flags"]), r.get("master-link-status"))
                    for r in self.replicas(name, index)]
            wrong.append(f"replicas up: {seen}")
        return [f"sentinel {index} {name}: {w}" for w in wrong]

    def wait_known(self, timeout=UP_TIMEOUT):
        """Waits (bounded) until every running sentinel knows every master up, R replicas of it up
        and the other sentinels (num-other-sentinels == 2, num-slaves == R) and all agree on the
        masters. Raises AssertionError listing what was still missing."""

        def missing():
            problems = []
            for name in self.names:
                try:
                    for i in self.running_sentinels():
                        problems += self._problems(name, i)
                    if len(set(self.masters_seen(name).values())) != 1:
                        problems.append(f"{name}: sentinels disagree: {self.masters_seen(name)}")
                except Exception as e:  # noqa: BLE001 - a sentinel not answering yet
                    problems.append(f"{name}: {e!r}")
            return problems

        wait.wait_value(missing, lambda p: not p, timeout,
                        "every sentinel to know every master, its replicas and the other sentinels")

    def agreed_master(self, name, timeout=SWITCH_TIMEOUT):
        """The address every running sentinel gives for `name`, once they agree (bounded)."""
        seen = wait.wait_value(lambda: self.masters_seen(name),
                               lambda s: len(set(s.values())) == 1 and
                               isinstance(next(iter(s.values())), tuple),
                               timeout, f"the sentinels to agree on {name}'s master")
        return next(iter(seen.values()))

    def _wait_switch(self, name, old, timeout, why):
        """Waits (bounded) until every running sentinel gives the same new address for `name`
        and the server there says ROLE master; returns it."""
        found = {}

        def switched():
            seen = found["seen"] = self.masters_seen(name)
            addrs = set(seen.values())
            if len(addrs) != 1:
                return None
            new = addrs.pop()
            if not isinstance(new, tuple) or new == old:
                return None
            return new if self.role(new)[0] == "master" else None

        try:
            return wait.wait_for(lambda: _quiet(switched), timeout,
                                 f"{name} to move off {addr_str(old)} {why}")
        except TimeoutError as e:
            raise AssertionError(f"{e}; the sentinels say {found.get('seen')}") from None

    # --- failovers -------------------------------------------------------------------------

    def failover(self, name, index=None, timeout=SWITCH_TIMEOUT):
        """SENTINEL FAILOVER <name> on sentinel `index` (the first running one out of TILT mode
        unless told; retried while it answers INPROG or NOGOODSLAVE, bounded), then waits until
        every running sentinel gives the new master and it says ROLE master. Returns (old, new)
        addresses. The old master stays a master, and takes writes, until the sentinels convert
        it (8 to 10 s later): see wait_replica_of."""
        import redis

        old = self.agreed_master(name)
        index = self._steady_sentinel() if index is None else index
        last = {}

        def forced():
            try:
                return self._ask(index, "SENTINEL", "FAILOVER", name)
            except redis.ResponseError as e:
                last["error"] = str(e)
                if "INPROG" in str(e) or "NOGOODSLAVE" in str(e):
                    return None
                raise

        try:
            wait.wait_for(forced, timeout, f"sentinel {index} to accept SENTINEL FAILOVER {name}")
        except TimeoutError as e:
            raise AssertionError(f"{e}; last answer {last.get('error')}") from None
        return old, self._wait_switch(name, old, timeout, "after SENTINEL FAILOVER")

    def kill_master(self, name, timeout=SWITCH_TIMEOUT):
        """SIGKILLs the process of `name`'s master (by pid) and waits (bounded) until every
        running sentinel gives a new master that says ROLE master. Returns (old, new, seconds
        from the kill to the switch seen)."""
        old = self.agreed_master(name)
        server = self.servers.get(old[1])
        assert server is not None and server.alive, f"{addr_str(old)} is no running server of ours"
        procs.kill_popen(server.proc)
        killed = time.monotonic()
        new = self._wait_switch(name, old, timeout, "after its master was killed")
        return old, new, time.monotonic() - killed

    def kill(self, addr):
        """SIGKILLs the server at addr (a replica, say) and reaps it."""
        server = self.servers[addr[1]]
        assert server.alive, f"{addr_str(addr)} is not running"
        procs.kill_popen(server.proc)

    def restart(self, addr, args=()):
        """Starts the killed server of addr again on its port and dir, with the common flags (a
        password) and `args` only: empty and a master, as an old master that comes back is; the
        sentinels make it a replica (wait_replica_of). Returns its Server."""
        server = self.servers.get(addr[1])
        assert server is not None, f"{addr_str(addr)} is no server of this deployment"
        assert not server.alive, f"{addr_str(addr)} is still running"
        server.args = tuple(args)
        assert self._launch(server, server.args), f"{addr_str(addr)} did not start again"
        return server

    # --- servers ---------------------------------------------------------------------------

    def role(self, addr):
        """ROLE of a server: ["master", offset, replicas] or ["slave", host, port, state, ...]."""
        return self._serve(addr, "ROLE")

    def wait_replica_of(self, addr, master, timeout=REJOIN_TIMEOUT):
        """Waits (bounded) until the server at addr is a replica of master with its link up and
        its first sync done (INFO replication)."""

        keys = ("role", "master_host", "master_port", "master_link_status",
                "master_sync_in_progress")

        def replication():
            try:
                info = self._serve(addr, "INFO", "replication")
            except Exception as e:  # noqa: BLE001 - not up yet: polled again
                return repr(e)
            return {k: info.get(k) for k in keys}

        def synced(s):
            return (isinstance(s, dict) and s["role"] == "slave" and s["master_host"] == master[0]
                    and s["master_port"] == master[1] and s["master_link_status"] == "up"
                    and s["master_sync_in_progress"] == 0)

        wait.wait_value(replication, synced, timeout,
                        f"{addr_str(addr)} to be a synced replica of {addr_str(master)}")

    def values(self, addr, keys):
        """{key: value} of keys read from the server at addr itself (bytes; b"" for none)."""
        keys = list(keys)
        with self.server_client(addr) as c:
            return {k: v or b"" for k, v in zip(keys, c.mget(keys))}

    def commandstats(self, addr):
        """INFO commandstats of a server as {command: calls} (lower case, "config|resetstat"
        for subcommands). A replica counts the writes it gets from its master as well: reads
        tell where the clients went, writes tell only where they were applied."""
        with self.server_client(addr, decode_responses=True) as c:
            stats = c.info("commandstats")
        return {k[len("cmdstat_"):]: int(v["calls"]) for k, v in stats.items()
                if k.startswith("cmdstat_")}

    def reset_stats(self, addr):
        """CONFIG RESETSTAT on a server (its commandstats start again from nothing)."""
        self._serve(addr, "CONFIG", "RESETSTAT")

    # --- sentinels -------------------------------------------------------------------------

    def stop_sentinel(self, index):
        """Stops sentinel `index` (SIGTERM, then SIGKILL; by its pid) and reaps it."""
        self.resume_sentinel(index)  # a stopped process would not even die of SIGTERM
        procs.stop_popen(self.sentinels[index].proc)

    def pause_sentinel(self, index):
        """SIGSTOPs sentinel `index` (by its pid) and waits until it is stopped: it keeps its port
        and its state, the kernel still completes connects to it, and nothing it was asked is
        answered (a sentinel cut off: its clients' waits time out). The other waits here pass
        it over (running_sentinels) until resume_sentinel."""
        node = self.sentinels[index]
        assert node.alive and not node.paused, f"sentinel {index} is not running"
        os.kill(node.proc.pid, signal.SIGSTOP)
        node.paused = True
        wait.wait_for(lambda: procfs.stopped(node.proc.pid), CLIENT_TIMEOUT,
                      f"sentinel {index} to stop", interval=0.001)

    def resume_sentinel(self, index):
        """SIGCONTs a paused sentinel (again, or one not paused: nothing). Paused over 2 s, it
        finds its clock jumped and stays in TILT mode for 30 s: it answers, and takes the newer
        configurations the others announce, but starts no failover (failover() passes it over)."""
        node = self.sentinels[index]
        if node.paused:
            node.paused = False
            if node.alive:
                os.kill(node.proc.pid, signal.SIGCONT)

    def start_sentinel(self, index, wait_known=True):
        """Starts the stopped sentinel `index` again on its port with its (rewritten) config;
        with wait_known, waits until it (and every other running one) knows the deployment."""
        node = self.sentinels[index]
        assert not node.alive, f"sentinel {index} is running"
        assert self._launch_sentinel(node), f"sentinel {index} did not start again on {node.port}"
        if wait_known:
            self.wait_known()

    def stop_sentinels(self):
        for node in self.sentinels:
            self.resume_sentinel(node.index)
        procs.stop_popens([s.proc for s in self.sentinels if s.alive])

    def start_sentinels(self, wait_known=True):
        for node in self.sentinels:
            if not node.alive:
                self.start_sentinel(node.index, wait_known=False)
        if wait_known:
            self.wait_known()

    def subscribe_switches(self, index=0, channels=("+switch-master",)):
        """A SwitchWatch on sentinel `index` (subscribed when it returns; closed at stop())."""
        watch = SwitchWatch(self.sentinel_client(index), channels, timeout=SWITCH_TIMEOUT)
        self.watches.append(watch)
        return watch

    # --- the proxy's view ------------------------------------------------------------------

    def pool_conf(self, listen, weight=1, **extra):
        """A pool of the proxy for this deployment: redis, the sentinels, a server per master
        name ("host:port:weight name", the address the sentinels give now), sentinel_auth and
        redis_auth when set; `extra` keys are added (read_from, hash_tag, ...)."""
        pool = {"listen": listen, "redis": True,
                "sentinels": [addr_str(a) for a in self.sentinel_addrs],
                "servers": [f"{addr_str(self.master_addr(n))}:{weight} {n}" for n in self.names]}
        if self.sentinel_pass is not None:
            pool["sentinel_auth"] = self.sentinel_pass
        if self.master_pass is not None:
            pool["redis_auth"] = self.master_pass
        pool.update(extra)
        return pool

    def stop(self):
        """Closes the watches and stops every process (sentinels first), by pid."""
        while self.watches:
            self.watches.pop().close()
        for node in self.sentinels:
            self.resume_sentinel(node.index)
        procs.stop_popens([s.proc for s in self.sentinels if s.proc is not None])
        procs.stop_popens(self.started)  # the servers; those that exited are only forgotten


def _once(kw):
    kw.setdefault("socket_timeout", CLIENT_TIMEOUT)
    kw.setdefault("retry", no_retry())
    return kw


def _quiet(fn):
    """fn(), or None when it raises (a server or sentinel that does not answer yet)."""
    try:
        return fn()
    except Exception:  # noqa: BLE001 - polled again until the wait's deadline
        return None
