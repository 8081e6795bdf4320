"""An ask window on a real Redis Cluster (nctest.rcluster's RCluster.ask_window): one slot left
half-way from one master to another by hand, per the cluster spec, so that the source answers
-ASK for the keys already moved (and -TRYAGAIN for a multi-key request over the slot) while the
destination answers -MOVED to a client that did not send ASKING; finish() completes the move.

Threads: as the RCluster it belongs to (one thread).
"""
from .procs import HOST

MIGRATE_TIMEOUT_MS = 5000


class AskWindow:
    """One slot half-way from master src to master dst, as a resharding leaves it (the cluster
    spec's procedure, by hand): open() sets CLUSTER SETSLOT <slot> IMPORTING <src> on dst and
    MIGRATING <dst> on src; migrate() moves keys with MIGRATE, after which src answers -ASK for
    them (and for keys it does not have), dst answers -MOVED unless the client sent ASKING;
    finish() migrates what is left and sets the slot's owner (SETSLOT <slot> NODE <dst>) on dst,
    src and every other master, then waits until every node agrees. A context manager: finished
    at the end of the block (unless it was already)."""

    def __init__(self, cluster, slot, src, dst):
        self.cluster = cluster
        self.slot = slot
        self.src = src
        self.dst = dst
        self.migrated = []
        self.finished = False

    def open(self):
        assert self.src.owns(self.slot), f"slot {self.slot} is not on :{self.src.port}"
        c = self.cluster
        c.command(self.dst, "CLUSTER", "SETSLOT", self.slot, "IMPORTING", self.src.id)
        c.command(self.src, "CLUSTER", "SETSLOT", self.slot, "MIGRATING", self.dst.id)
        return self

    def keys_left(self, count=100):
        """Keys of the slot still on src (at most count)."""
        return [k.decode() for k in
                self.cluster.command(self.src, "CLUSTER", "GETKEYSINSLOT", self.slot, count)]

    def migrate(self, keys=None, count=None):
        """MIGRATEs `keys` (else `count` of the slot's keys still on src, else all of them) to dst;
        returns the keys moved."""
        if keys is None:
            keys = self.keys_left(count or 1000)
        keys = list(keys)
        if keys:
            auth = () if self.cluster.password is None else ("AUTH", self.cluster.password)
            reply = self.cluster.command(self.src, "MIGRATE", HOST, self.dst.port, "", 0,
                                         MIGRATE_TIMEOUT_MS, *auth, "KEYS", *keys)
            assert reply in (True, b"OK", b"NOKEY", "OK", "NOKEY"), reply
            self.migrated += keys
        return keys

    def finish(self):
        """Migrates the rest, gives the slot to dst on every master, waits until all agree."""
        c = self.cluster
        for _ in range(1000):  # bounded: 100 keys a round
            if not self.migrate(self.keys_left(100)):
                break
        others = [m for m in c.masters() if m.id not in (self.src.id, self.dst.id)]
        for node in (self.dst, self.src, *others):
            c.command(node, "CLUSTER", "SETSLOT", self.slot, "NODE", self.dst.id)
        self.finished = True
        c.wait_ok(what=f"slot {self.slot} to be :{self.dst.port}'s everywhere")
        owner = c.slot_owner(self.slot)
        assert owner.id == self.dst.id, f"slot {self.slot} is on {owner}"

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if self.finished:
            return
        try:
            self.finish()
        except Exception:  # noqa: BLE001 - the block's own error is the one to report
            if exc_type is None:
                raise
