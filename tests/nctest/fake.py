"""Fake backends: a raw-socket server on 127.0.0.1 whose behaviour a test chooses (close at once,
read then close, answer garbage, read slowly, answer when the test says so), counting the connections it accepts and those its
peer closes; and Unanswered, an address whose connects hang (SYN never answered).

Threads: a FakeBackend runs one accept thread plus one per connection; all stop on stop(), which
joins them with a bound. The counters are read under its lock. An Unanswered runs no thread.
"""
import socket
import threading
import time

from .procs import HOST


class FakeBackend:
    """A raw-socket backend on 127.0.0.1 (port 0: a free one). `serve(sock, fake)` runs in a thread
    per accepted connection; accepted/closed_by_peer/received count what happened."""

    def __init__(self, serve, port=0, rcvbuf=None):
        self.serve = serve
        self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if rcvbuf:
            self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.lsock.bind((HOST, port))
        self.lsock.listen(128)
        self.lsock.settimeout(0.05)
        self.port = self.lsock.getsockname()[1]
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.accepted = 0
        self.closed_by_peer = 0
        self.received = 0
        self.threads = []
        self.acceptor = threading.Thread(target=self._accept_loop, daemon=True)
        self.acceptor.start()

    def counts(self):
        """(accepted, closed_by_peer), read together."""
        with self.lock:
            return self.accepted, self.closed_by_peer

    def _accept_loop(self):
        while not self.stopping.is_set():
            try:
                s, _ = self.lsock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            with self.lock:
                self.accepted += 1
            s.settimeout(0.05)
            t = threading.Thread(target=self._serve_one, args=(s,), daemon=True)
            self.threads.append(t)
            t.start()

    def _serve_one(self, s):
        try:
            self.serve(s, self)
        except OSError:
            pass
        finally:
            s.close()

    def recv(self, s, n=65536):
        """One read: bytes, b"" at the peer's EOF (counted), None when nothing came."""
        try:
            data = s.recv(n)
        except socket.timeout:
            return None
        except ConnectionResetError:
            data = b""
        if not data:
            with self.lock:
                self.closed_by_peer += 1
            return b""
        with self.lock:
            self.received += len(data)
        return data

    def stop(self):
        self.stopping.set()
        self.acceptor.join(2)
        self.lsock.close()
        for t in self.threads:
            t.join(2)
        assert not self.acceptor.is_alive() and not any(t.is_alive() for t in self.threads), \
            "fake backend threads did not stop"


def serve_close_at_once(s, fake):
    """Accepts and closes at once."""


def serve_read_then_close(s, fake):
    """Reads a request, then closes without answering (EOF with a request outstanding)."""
    while not fake.stopping.is_set():
        data = fake.recv(s)
        if data is not None:
            return


def serve_garbage(reply):
    """Answers every read with `reply` (not a reply of the protocol); serves until the peer
    closes."""

    def serve(s, fake):
        while not fake.stopping.is_set():
            data = fake.recv(s)
            if data == b"":
                return
            if data:
                s.sendall(reply)

    return serve


def serve_paced(rate, unit, reply):
    """Reads at most `rate` bytes a second and answers `reply` for every `unit` bytes read (each
    request the test sends is exactly `unit` bytes long)."""

    def serve(s, fake):
        start = time.monotonic()
        got = 0
        answered = 0
        while not fake.stopping.is_set():
            allowed = int((time.monotonic() - start) * rate) - got
            if allowed <= 0:
                fake.stopping.wait(0.005)  # the reading rate: a few ms between reads
                continue
            data = fake.recv(s, min(allowed, 65536))
            if data == b"":
                return
            if not data:
                continue
            got += len(data)
            done = got // unit
            if done > answered:
                s.sendall(reply * (done - answered))
                answered = done

    return serve


def serve_on_release(release, reply):
    """Answers `reply` to each read, but only once the threading.Event `release` is set: a
    backend as slow as the test wants, with no clock in it. Serves until the peer closes."""

    def serve(s, fake):
        while not fake.stopping.is_set():
            data = fake.recv(s)
            if data == b"":
                return
            if not data:
                continue
            while not release.wait(0.05):
                if fake.stopping.is_set():
                    return
            s.sendall(reply)

    return serve


class Unanswered:
    """A loopback address whose connects hang, as to a host that drops packets: a listener with a
    backlog of 0 whose accept queue is filled with connections nobody accepts; the kernel then
    drops every further SYN, so a connect() stays in SYN_SENT (retrying for minutes). No root, no
    other address. Use as a context manager; close() releases the port."""

    FILL_TRIES = 8          # connections offered to fill the accept queue (the kernel takes 1)
    FILL_TIMEOUT = 0.3      # seconds a filling connect may take before it counts as hanging

    def __init__(self):
        self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lsock.bind((HOST, 0))
        self.lsock.listen(0)
        self.port = self.lsock.getsockname()[1]
        self.held = []
        for _ in range(self.FILL_TRIES):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.settimeout(self.FILL_TIMEOUT)
            try:
                s.connect((HOST, self.port))
            except socket.timeout:
                s.close()
                if self.held:
                    return  # the queue is full (a connect of ours sits in it): this one hung
                continue
            self.held.append(s)
        self.close()
        raise RuntimeError(f"{self.FILL_TRIES} connects to a listener of backlog 0 did not fill it")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        for s in self.held:
            s.close()
        self.held = []
        self.lsock.close()
