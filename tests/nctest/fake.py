"""Fake backends: a raw-socket server on 127.0.0.1 whose behaviour a test chooses (close at once,
read then close, answer garbage, read slowly), counting the connections it accepts and those its
peer closes.

Threads: a FakeBackend runs one accept thread plus one per connection; all stop on stop(), which
joins them with a bound. The counters are read under its lock.
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
