"""Real Redis Cluster deployments for the tests of the proxy's Redis Cluster support (issue 28), and
for the bench: N redis-server nodes with --cluster-enabled on free loopback ports (each in a dir of
its own, with its own nodes.conf and a cluster bus port also picked free, not port + 10000), made a
cluster by `redis-cli --cluster create` with R replicas per master (6 nodes, 1 replica: 3 masters by
default).

An RCluster also does what a test does to one:
- reads it: nodes() (CLUSTER NODES parsed into NodeInfo: id, address, role, master id, slot ranges,
  flags, open slots), masters(), replicas_of(), slot_owner(), node_for_key(), raw CLUSTER SHARDS /
  CLUSTER SLOTS, INFO commandstats of a node;
- keys: keyslot() (CRC16 of the key or of its hash tag, as the cluster computes it), keys whose slot
  a node owns (keys_on_node) or among given slots (keys_in_slots), keys of one slot (keys_in_slot):
  nctest.rcluster_keys, re-exported here;
- moves slots: reshard() (`redis-cli --cluster reshard`, live), ask_window() (one slot half
  migrated by hand, per the cluster spec: IMPORTING on the destination, MIGRATING on the source,
  MIGRATE of some keys, so that the source answers -ASK for them; finish() sets the slot's new
  owner on every master: nctest.rcluster_ask);
- fails: kill_master() (SIGKILL), wait_promoted() (a replica took over its slots), restart() (the
  killed node back on its port with its nodes.conf: it rejoins, as a replica).

Every wait is bounded (nctest.wait, scaled for sanitizer runs) and names what it waited for; a
wait for the cluster says which node saw what (problems()). The cluster's node timeout is scaled
too: on a machine slowed by a sanitizer stage next door, a short one would fail nodes over that
are only slow. Processes are handed to `track` as they start (the pytest fixtures' reaper) and
their logs to `on_log` (attached to a failing test's report); stop() stops them all by pid. No
pytest here: the bench uses it as a context manager (`with RCluster() as c:`), and an RCluster
made without a workdir removes its own temporary dir at stop().

Addresses are always 127.0.0.1. Threads: an RCluster belongs to one thread; its calls open their
own connections.

With a password (RCluster(password=...)), every node has `requirepass` and `masterauth` (its
replicas sync), and redis-cli, the clients of client()/command() and the MIGRATEs of an ask
window authenticate with it; a proxy pool in front of it needs `redis_auth`.
"""
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import conn, procs, wait
from .conn import no_retry
from .procs import HOST
from .rcluster_ask import AskWindow
from .rcluster_keys import (SLOTS, crc16, hashed_part, keys_in_slot,  # noqa: F401 - re-exported
                            keys_in_slots, keyslot, tag_for_slot)
from .listener import Listener

NODE_TIMEOUT_MS = 1000   # cluster-node-timeout (times wait.scale()): a silent master fails then
UP_TIMEOUT = 30.0        # s: created, every node ok and agreeing, the replicas synced
RESHARD_TIMEOUT = 90.0   # s: one `redis-cli --cluster reshard` (keys move with the slots)
FAILOVER_TIMEOUT = 30.0  # s: a killed master's replica promoted and seen by every node
REJOIN_TIMEOUT = 30.0    # s: a restarted node a synced replica, seen by every node
CLIENT_TIMEOUT = 5.0     # s: one command to a node
START_TRIES = 3          # fresh ports for a node's first start (a port may be taken meanwhile)


# --- CLUSTER NODES ----------------------------------------------------------------------------

@dataclass(frozen=True)
class NodeInfo:
    """One line of CLUSTER NODES as one node sees it. slots: inclusive (first, last) ranges;
    migrating / importing: {slot: node id}, shown by a node for itself only."""
    id: str
    host: str
    port: int
    bus_port: int
    flags: frozenset
    master_id: str  # None for a master
    config_epoch: int
    link: str  # "connected" or "disconnected"
    slots: tuple = ()
    migrating: dict = field(default_factory=dict, compare=False, hash=False)
    importing: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def addr(self):
        return self.host, self.port

    @property
    def role(self):
        """ "master" or "replica" (CLUSTER NODES says "slave")."""
        return "master" if "master" in self.flags else "replica"

    @property
    def is_master(self):
        return "master" in self.flags

    @property
    def failed(self):
        """Flagged FAIL (agreed down), not only PFAIL (this node's own suspicion)."""
        return "fail" in self.flags

    @property
    def myself(self):
        return "myself" in self.flags

    def slot_set(self):
        return {s for lo, hi in self.slots for s in range(lo, hi + 1)}

    @property
    def slot_count(self):
        return sum(hi - lo + 1 for lo, hi in self.slots)

    def owns(self, slot):
        return any(lo <= slot <= hi for lo, hi in self.slots)


def parse_nodes(text):
    """CLUSTER NODES text -> [NodeInfo], in its order."""
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 8:
            continue
        node_id, addr, flags, master, _, _, epoch, link, *slots = parts
        hostport, _, bus = addr.split(",")[0].partition("@")
        host, _, port = hostport.rpartition(":")
        ranges, migrating, importing = [], {}, {}
        for item in slots:
            if item.startswith("["):  # [slot->-id] migrating, [slot-<-id] importing
                slot, arrow, peer = item.strip("[]").partition("->-")
                if arrow:
                    migrating[int(slot)] = peer
                else:
                    slot, _, peer = item.strip("[]").partition("-<-")
                    importing[int(slot)] = peer
                continue
            lo, _, hi = item.partition("-")
            ranges.append((int(lo), int(hi or lo)))
        out.append(NodeInfo(node_id, host, int(port), int(bus or 0), frozenset(flags.split(",")),
                            None if master == "-" else master, int(epoch), link,
                            tuple(sorted(ranges)), migrating, importing))
    return out


def _fields(text):
    """{key: value} of an INFO-style "key:value" text (CLUSTER INFO)."""
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


@dataclass
class Node(Listener):
    """A redis-server process of the cluster: its port, cluster bus port and dir (nodes.conf,
    out.log) never change, its process does (restart). (addr, alive, launch_redis:
    listener.Listener's.)"""
    port: int
    bus_port: int
    workdir: Path
    proc: subprocess.Popen = None

    @property
    def conf_path(self):
        return self.workdir / f"nodes-{self.port}.conf"


def port_of(node):
    """The port of a NodeInfo, a Node, a (host, port) address or a port."""
    if isinstance(node, (NodeInfo, Node)):
        return node.port
    if isinstance(node, tuple):
        return node[1]
    return int(node)


class RCluster:
    """`nodes` redis-server nodes, `replicas` replicas per master (see the module's docstring).
    start() brings it up; stop() stops every node. `args`: more redis-server flags for every node;
    `password`: the nodes' requirepass and masterauth (None: none). workdir=None: a temporary dir
    of its own, removed at stop()."""

    def __init__(self, workdir=None, track=lambda proc: proc, on_log=lambda title, path: None,
                 nodes=6, replicas=1, node_timeout_ms=None, args=(), password=None):
        assert nodes % (replicas + 1) == 0 and nodes // (replicas + 1) >= 3, \
            "redis-cli --cluster create wants at least 3 masters, each with `replicas` replicas"
        self.own_dir = workdir is None
        self.workdir = Path(tempfile.mkdtemp(prefix="rcluster-") if workdir is None else workdir)
        self.track = track
        self.on_log = on_log
        self.count = nodes
        self.replica_count = replicas
        self.node_timeout_ms = node_timeout_ms or int(NODE_TIMEOUT_MS * wait.scale())
        self.args = tuple(args)
        self.password = password
        self.nodes_by_port = {}  # port -> Node
        self.started = []        # every Popen, restarts too: stop() stops them all by pid
        self.killed = {}         # node id -> (its slot ranges, its replicas' ids, monotonic time)
        self.timings = {}        # what took how long (seconds): "start", last "reshard", ...

    # --- starting and stopping -----------------------------------------------------------

    def start(self):
        """Starts the nodes, creates the cluster and waits (bounded) until every node says
        cluster_state:ok, all agree on the slot map and roles, and the replicas are synced."""
        t0 = time.monotonic()
        self.workdir.mkdir(parents=True, exist_ok=True)
        for _ in range(self.count):
            self._new_node()
        addrs = [f"{HOST}:{port}" for port in self.nodes_by_port]
        self.cli("create", *addrs, "--cluster-replicas", str(self.replica_count), "--cluster-yes",
                 timeout=UP_TIMEOUT)
        self.wait_ok()
        self.timings["start"] = time.monotonic() - t0
        return self

    def _node_args(self, node):
        """A node's flags: cluster mode with its own nodes.conf and bus port, the scaled node
        timeout; no replica migration (a master emptied of its slots stays a master, a replica
        stays with its master); a full sync at once (not after 7.0's 5 s wait for more replicas)
        and loaded without a disk file (a restarted node finds no stale dump.rdb); a master
        pings its replicas every second, not every 10: a replica synced from a master that took
        no write yet has replication offset 0, which 7.0 reports as "loading" in CLUSTER SHARDS
        and leaves out of CLUSTER SLOTS until the master's ping moves the offset. With a
        password: requirepass, and masterauth for the replicas' sync."""
        auth = () if self.password is None else ("--requirepass", self.password,
                                                 "--masterauth", self.password)
        return ("--cluster-enabled", "yes", "--cluster-config-file", str(node.conf_path),
                "--cluster-port", str(node.bus_port),
                "--cluster-node-timeout", str(self.node_timeout_ms),
                "--cluster-allow-replica-migration", "no",
                "--repl-diskless-sync-delay", "0", "--repl-diskless-load", "swapdb",
                "--repl-ping-replica-period", "1",
                *auth, *self.args)

    def _launch(self, node):
        """Starts node's redis-server (one try); True once it listens."""
        return node.launch_redis(self._node_args(node),
                                 f"redis-server :{node.port} (cluster node) output", self)

    def _new_node(self):
        for _ in range(START_TRIES):
            port, bus = procs.free_ports(2)
            node = Node(port, bus, self.workdir / f"node-{port}")
            if self._launch(node):
                self.nodes_by_port[port] = node
                return node
        raise AssertionError(f"no cluster node started in {START_TRIES} tries; see "
                             f"{self.workdir}/node-*/out.log")

    def stop(self):
        """Stops every node by pid (SIGTERM, then SIGKILL); removes the dir if it made it."""
        procs.stop_popens(self.started)
        if self.own_dir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def cli(self, *args, timeout):
        """`redis-cli --cluster <args>` (bounded: killed after timeout s, scaled); its output goes
        to <workdir>/redis-cli.log. Returns the output; raises AssertionError if it fails."""
        log_path = self.workdir / "redis-cli.log"
        self.on_log("redis-cli --cluster output", log_path)
        auth = () if self.password is None else ("-a", self.password, "--no-auth-warning")
        argv = ["redis-cli", *auth, "--cluster", *args]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                                  timeout=timeout * wait.scale(), preexec_fn=procs.die_with_parent)
            out, rc = done.stdout + done.stderr, done.returncode
        except subprocess.TimeoutExpired as e:  # run() killed and reaped it
            out, rc = f"{e.stdout or ''}{e.stderr or ''}\n(timed out)", None
        with open(log_path, "a") as log:
            log.write(f"$ {' '.join(argv)}\n{out}\n(exit {rc})\n")
        if rc != 0:
            raise AssertionError(f"redis-cli --cluster {args[0]} exited {rc}: ...{out[-1500:]}")
        return out

    # --- nodes and clients -----------------------------------------------------------------

    def running(self):
        """The Nodes whose process runs, in port order."""
        return [n for _, n in sorted(self.nodes_by_port.items()) if n.alive]

    def node(self, node):
        """The Node (process) of a NodeInfo, an address or a port."""
        return self.nodes_by_port[port_of(node)]

    def client(self, node, **kw):
        """A redis-py client of one node (RESP2, bounded waits, no retries: a MOVED or ASK shows
        as an error; the cluster's password, if any). The caller closes it."""
        kw.setdefault("password", self.password)
        kw.setdefault("socket_timeout", CLIENT_TIMEOUT)
        kw.setdefault("retry", no_retry())
        return conn.redis_client(port_of(node), **kw)

    def command(self, node, *args, **kw):
        """One command to one node; its reply (redis-py's parsing, raw with execute_command)."""
        with self.client(node, **kw) as c:
            return c.execute_command(*args)

    def _text(self, node, *args):
        reply = self.command(node, *args)
        return reply.decode() if isinstance(reply, bytes) else reply

    def seeds(self, n=1):
        """"127.0.0.1:port:1" of the first n masters: the servers of a proxy pool."""
        return [f"{HOST}:{m.port}:1" for m in self.masters()[:n]]

    def pool_conf(self, listen, seeds=1, **extra):
        """A redis_cluster pool of the proxy with `seeds` masters as its servers; `extra` keys
        are added (read_from, timeout, ...)."""
        pool = {"listen": listen, "redis": True, "redis_cluster": True,
                "servers": self.seeds(seeds)}
        pool.update(extra)
        return pool

    # --- what the cluster says -------------------------------------------------------------

    def _asked(self, node=None):
        """The node to ask: the one given, else the first running master (else any running)."""
        if node is not None:
            return port_of(node)
        running = self.running()
        assert running, "no cluster node is running"
        for n in running:
            try:
                if self._text(n, "ROLE")[0] in ("master", b"master"):
                    return n.port
            except Exception:  # noqa: BLE001 - try the next one
                continue
        return running[0].port

    def nodes(self, node=None):
        """CLUSTER NODES of one node (the first running master unless told): [NodeInfo]."""
        return parse_nodes(self._text(self._asked(node), "CLUSTER", "NODES"))

    def myself(self, node):
        """The NodeInfo a node gives of itself."""
        return next(n for n in self.nodes(node) if n.myself)

    def info_of(self, node):
        """The NodeInfo of a node (a NodeInfo, a Node, an address or a port) as the cluster gives
        it now (a NodeInfo kept from before a reshard or a failover says what was)."""
        port = port_of(node)
        found = [n for n in self.nodes() if n.port == port]
        assert found, f"no node on port {port} in CLUSTER NODES"
        return found[0]

    def masters(self, node=None):
        """The masters that are not failed, in port order."""
        return sorted((n for n in self.nodes(node) if n.is_master and not n.failed),
                      key=lambda n: n.port)

    def replicas_of(self, master, node=None):
        """The replicas (not failed) of a master (any form), in port order."""
        master_id = self.info_of(master).id
        return sorted((n for n in self.nodes(node) if n.master_id == master_id and not n.failed),
                      key=lambda n: n.port)

    def slot_owner(self, slot, node=None):
        """The master that serves `slot`."""
        owners = [n for n in self.nodes(node) if n.is_master and n.owns(slot)]
        assert len(owners) == 1, f"slot {slot}: owners {owners}"
        return owners[0]

    def node_for_key(self, key, node=None):
        """The master that serves `key`, its slot asked of the cluster (CLUSTER KEYSLOT)."""
        slot = int(self.command(self._asked(node), "CLUSTER", "KEYSLOT", key))
        return self.slot_owner(slot, node)

    def keys_on_node(self, node, n, prefix="rc"):
        """n keys ("<prefix>:<i>") whose slots `node` (a master) owns now."""
        return keys_in_slots(self.info_of(node).slot_set(), n, prefix)

    def slot_map(self, node=None):
        """{slot range: owner's port} of one node's view."""
        return {r: n.port for n in self.nodes(node) if n.is_master for r in n.slots}

    def shards(self, node=None):
        """CLUSTER SHARDS of a node as redis-py returns it raw (RESP2)."""
        return self.command(self._asked(node), "CLUSTER", "SHARDS")

    def slots_reply(self, node=None):
        """CLUSTER SLOTS of a node as redis-py returns it raw (RESP2)."""
        return self.command(self._asked(node), "CLUSTER", "SLOTS")

    def cluster_info(self, node):
        """CLUSTER INFO of a node: {field: text}."""
        return _fields(self._text(node, "CLUSTER", "INFO"))

    def commandstats(self, node):
        """INFO commandstats of a node: {command: calls} (lower case). A replica counts the writes
        its master streams to it as well: its reads say where clients read."""
        with self.client(node, decode_responses=True) as c:
            stats = c.info("commandstats")
        return {k[len("cmdstat_"):]: int(v["calls"]) for k, v in stats.items()
                if k.startswith("cmdstat_")}

    # --- waits -----------------------------------------------------------------------------

    @staticmethod
    def _view(nodes):
        """What every node must agree on: ids, roles, masters and slots of the nodes not failed."""
        return frozenset((n.id, n.port, n.role, n.master_id, n.slots)
                         for n in nodes if not n.failed)

    def _replica_synced(self, node):
        info = self.command(node, "INFO", "replication", decode_responses=True)
        return info.get("master_link_status") == "up" and info.get("master_sync_in_progress") == 0

    def _not_online(self, node):
        """The running nodes that a node's CLUSTER SHARDS does not call "online": 7.0 says
        "loading" of a replica whose replication offset it has not heard of yet (gossip brings
        it a moment after the sync), and leaves such a replica out of CLUSTER SLOTS."""
        alive = {n.port for n in self.running()}
        found = []
        for shard in self.shards(node):
            for item in dict(zip(shard[::2], shard[1::2]))[b"nodes"]:
                fields = dict(zip(item[::2], item[1::2]))
                if fields[b"port"] in alive and fields[b"health"] != b"online":
                    found.append(f":{fields[b'port']} {fields[b'health'].decode()}")
        return found

    def problems(self, synced=True):
        """Why the cluster is not (yet) settled, as a list of strings (empty: settled): a running
        node not ok or not answering, nodes that disagree on the map, slots not covered by a
        running master; with synced, a replica not synced with its master, or not yet "online"
        in a node's CLUSTER SHARDS (nor in its CLUSTER SLOTS)."""
        views, found = {}, []
        for node in self.running():
            try:
                state = self.cluster_info(node)["cluster_state"]
                if state != "ok":
                    found.append(f":{node.port} cluster_state {state}")
                seen = self.nodes(node)
                views[node.port] = self._view(seen)
                me = next(n for n in seen if n.myself)
                if synced and not me.is_master and not self._replica_synced(node):
                    found.append(f":{node.port} replica not synced")
                if synced:
                    found += [f":{node.port} sees {x}" for x in self._not_online(node)]
            except Exception as e:  # noqa: BLE001 - not up yet: polled again
                found.append(f":{node.port} {e!r}")
        if len(set(views.values())) > 1:
            first = next(iter(views.values()))
            differ = [port for port, view in views.items() if view != first]
            found.append(f"views differ: {differ} from {next(iter(views))}")
        if views:
            view = next(iter(views.values()))
            alive = {n.port for n in self.running()}
            covered = sum(hi - lo + 1 for _, port, role, _, slots in view if port in alive
                          for lo, hi in slots)
            if covered != SLOTS:
                found.append(f"running masters cover {covered} of {SLOTS} slots")
        return found

    def wait_ok(self, timeout=UP_TIMEOUT, synced=True, what="the cluster to settle"):
        """Waits (bounded) until problems() is empty: every running node ok and agreeing on the
        nodes, roles and slots, the slots covered, (with synced) the replicas synced. Raises
        AssertionError with what was still wrong."""
        wait.wait_value(lambda: self.problems(synced), lambda p: not p, timeout, what)

    # --- resharding ------------------------------------------------------------------------

    def reshard(self, src, dst, nslots, timeout=RESHARD_TIMEOUT):
        """Moves nslots slots (with their keys) from master src to master dst, live, with
        `redis-cli --cluster reshard`; returns the sorted slots moved once every node agrees and
        the cluster is ok again. Times it in timings["reshard"]."""
        self.wait_ok(what="the cluster to settle before a reshard")
        src, dst = self.info_of(src), self.info_of(dst)
        before = src.slot_set()
        t0 = time.monotonic()
        self.cli("reshard", f"{HOST}:{src.port}", "--cluster-from", src.id, "--cluster-to", dst.id,
                 "--cluster-slots", str(nslots), "--cluster-yes", timeout=timeout)
        self.wait_ok(what=f"the cluster to settle after moving {nslots} slots")
        self.timings["reshard"] = time.monotonic() - t0
        moved = sorted(before - self.info_of(src.port).slot_set())
        owned = self.info_of(dst.port).slot_set()
        assert len(moved) == nslots and set(moved) <= owned, (len(moved), nslots)
        return moved

    def ask_window(self, slot, src, dst):
        """An open AskWindow: `slot` MIGRATING from master src to master dst (see AskWindow)."""
        return AskWindow(self, slot, self.info_of(src), self.info_of(dst)).open()

    # --- failures --------------------------------------------------------------------------

    def kill(self, node):
        """SIGKILLs a node's process (by its pid) and reaps it."""
        proc = self.node(node)
        assert proc.alive, f"node :{proc.port} is not running"
        procs.kill_popen(proc.proc)

    def kill_master(self, master):
        """SIGKILLs a master (remembering its slots and replicas for wait_promoted). Returns its
        NodeInfo as it was."""
        info = self.info_of(master)
        assert info.is_master, f"{info.port} is not a master"
        replicas = {r.id for r in self.replicas_of(info)}
        self.kill(info)
        self.killed[info.id] = (info.slots, replicas, time.monotonic())
        return info

    def wait_promoted(self, old_master, timeout=FAILOVER_TIMEOUT):
        """Waits (bounded) until a replica of the killed old_master is a master owning all its
        slots in every running node's view, and the cluster is ok. Returns (the new master's
        NodeInfo, seconds since the kill)."""
        slots, replicas, killed_at = self.killed[self.info_of(old_master).id]

        def promoted():
            found = self.problems(synced=False)
            for node in self.running():
                try:
                    heirs = [n for n in self.nodes(node) if n.id in replicas and n.is_master]
                except Exception as e:  # noqa: BLE001 - polled again
                    found.append(f":{node.port} {e!r}")
                    continue
                if not heirs or heirs[0].slots != slots:
                    found.append(f":{node.port} sees no replica of the old master with its slots")
            return found

        wait.wait_value(promoted, lambda p: not p, timeout,
                        f"a replica of :{port_of(old_master)} to take over its slots")
        took = time.monotonic() - killed_at
        self.timings["failover"] = took
        new = next(n for n in self.nodes() if n.id in replicas and n.is_master)
        return new, took

    def restart(self, node, timeout=REJOIN_TIMEOUT):
        """Starts a killed node again on its port with its nodes.conf; waits (bounded) until it
        is a synced replica and every node agrees (a killed master comes back a replica of the
        one that took its slots). Returns its NodeInfo."""
        proc = self.node(node)
        assert not proc.alive, f"node :{proc.port} is still running"
        t0 = time.monotonic()
        assert self._launch(proc), f"node :{proc.port} did not start again"
        self.wait_ok(timeout, what=f"restarted :{proc.port} to rejoin")
        me = self.myself(proc)
        assert not me.is_master, f":{proc.port} came back a master: {me}"
        self.timings["rejoin"] = time.monotonic() - t0
        return me
