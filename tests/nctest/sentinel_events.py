"""The events a Redis sentinel publishes (+switch-master, +sdown, +odown, +convert-to-slave, ...),
read as they come: SwitchWatch subscribes a redis-py client to a sentinel's event channels and
keeps every message, stamped with the time it was read, so a test can tell what happened and
when (a switch a proxy should follow, how long after a kill it came). nctest.sentinel's
Deployment.subscribe_switches() makes them.

Message texts (Redis 7.0): "+switch-master <name> <old ip> <old port> <new ip> <new port>"; the
other events "<type> <instance name> <ip> <port> [@ <master name> <master ip> <master port>]".

Threads: a SwitchWatch reads on a thread of its own; its methods are safe from any thread.
"""
import threading
import time
from dataclasses import dataclass, field

from . import wait

WATCH_LIFETIME = 600.0  # s: a reader stops by itself after this, closed or not
SUBSCRIBE_TIMEOUT = 5.0  # s: for the sentinel to confirm the subscription


@dataclass
class SwitchEvent:
    """One message of a sentinel's event channel: when it was read (time.monotonic()), the
    channel and its text; `name` the master it is about, and for +switch-master `old`/`new`."""
    at: float
    channel: str
    data: str
    fields: list = field(init=False)

    def __post_init__(self):
        self.fields = self.data.split()

    @property
    def name(self):
        if self.channel == "+switch-master":
            return self.fields[0]
        if "@" in self.fields:
            return self.fields[self.fields.index("@") + 1]
        return self.fields[1] if len(self.fields) > 1 else None

    @property
    def old(self):
        return self.fields[1], int(self.fields[2])

    @property
    def new(self):
        return self.fields[3], int(self.fields[4])


class SwitchWatch:
    """The messages of a sentinel's event channels, read on a thread from the subscription (done
    when the constructor returns) until close() or WATCH_LIFETIME. `client`: a redis-py client of
    the sentinel (str replies, its password set), closed with the watch. `error`: what ended the
    reader early (the sentinel stopped), else None."""

    def __init__(self, client, channels=("+switch-master",), timeout=30.0,
                 lifetime=WATCH_LIFETIME):
        self.channels = tuple(channels)
        self.timeout = timeout  # the default of wait()
        self.error = None
        self._client = client
        self._pubsub = client.pubsub()
        self._events = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._pubsub.subscribe(*self.channels)
        self._thread = threading.Thread(target=self._run, args=(lifetime,), daemon=True,
                                        name="sentinel-watch")
        self._thread.start()
        wait.wait_for(self._ready.is_set, SUBSCRIBE_TIMEOUT, f"the subscription to {self.channels}")
        if self.error is not None:
            raise AssertionError(f"subscribing to {self.channels} failed: {self.error!r}")

    def _run(self, lifetime):
        end = time.monotonic() + lifetime
        confirmed = 0
        try:
            while not self._stop.is_set() and time.monotonic() < end:
                msg = self._pubsub.get_message(timeout=0.1)
                if msg is None:
                    continue
                if msg["type"] == "subscribe":
                    confirmed += 1
                    if confirmed == len(self.channels):
                        self._ready.set()
                elif msg["type"] == "message":
                    event = SwitchEvent(time.monotonic(), msg["channel"], msg["data"])
                    with self._lock:
                        self._events.append(event)
        except Exception as e:  # noqa: BLE001 - the sentinel went away: the test sees .error
            self.error = e
        finally:
            self._ready.set()

    def events(self, name=None):
        """The events so far (about master `name` only, if given), oldest first."""
        with self._lock:
            return [e for e in self._events if name is None or e.name == name]

    def wait(self, count=1, name=None, timeout=None):
        """Waits (bounded: `timeout`, else the watch's) until `count` events (about master
        `name`) were seen; returns them all."""
        try:
            return wait.wait_for(lambda: len(self.events(name)) >= count and self.events(name),
                                 timeout or self.timeout,
                                 f"{count} event(s) of {name or 'any master'} on {self.channels}")
        except TimeoutError as e:
            raise AssertionError(f"{e}; seen {[x.data for x in self.events()]}, reader error "
                                 f"{self.error!r}") from None

    def close(self):
        """Stops the reader and closes the subscription (again: nothing)."""
        self._stop.set()
        self._thread.join(timeout=SUBSCRIBE_TIMEOUT)
        self._pubsub.close()
        self._client.close()
