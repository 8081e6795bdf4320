"""A redis process of a test deployment on a port of 127.0.0.1 (a Sentinel deployment's servers
and sentinels, nctest.sentinel; a Redis Cluster's nodes, nctest.rcluster): its address, whether it
runs, and how it is started (its output appended to out.log in its dir).

Threads: the test's thread.
"""
from . import procs
from .procs import HOST


class Listener:
    """What a server and a sentinel share (a cluster node too, nctest.rcluster): a port on
    127.0.0.1, a dir and a process (or None)."""

    @property
    def addr(self):
        return HOST, self.port

    @property
    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def launch_redis(self, args, title, owner):
        """Starts redis-server on the port with `args`, in the dir (one try), its output appended
        to out.log there (handed to owner.on_log under `title`), the Popen added to
        owner.started and handed to owner.track; True once it listens."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        log_path = self.workdir / "out.log"
        owner.on_log(title, log_path)
        with open(log_path, "ab") as log:  # a restart appends
            proc = procs.start_backend("redis", self.port, args, cwd=self.workdir, log=log)
        if proc is None:
            return False
        owner.started.append(proc)
        self.proc = owner.track(proc) or proc
        return True
