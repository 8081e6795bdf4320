"""Crowds of clients that make a proxy (or a redis) hold memory on purpose: each client writes its
bytes as fast as the peer reads them and never reads a byte back (a tiny receive buffer, so the
replies stay with the peer), or stops in the middle of a request. The scripts of the crowds of
the -M tests and of bench/memory_crowd.py are here, and rss_peak(), a sampler of a process's
resident memory while a crowd runs. A ReadingCrowd (bench/fair_crowd.py) reads everything: its
clients pipeline GETs of large values or large SETs, round after round.

A Crowd runs one thread that writes for all its clients (poll, non-blocking sockets). A client
the peer closes or resets is seen when a write fails, or by poll's hang-up (a reset; a close
whose FIN waits behind replies the client never reads is not seen). leave() closes every socket
(with replies unread, the kernel resets the connection).

Threads: a Crowd's fields are written by its thread; sent, gone and finished are read from
others (ints and sets replaced or grown one item at a time: a reader sees a recent value).
"""
import errno
import select
import socket
import struct
import threading

from . import codec, wait
from .procfs import rss_kb
from .procs import HOST

MB = 1 << 20
TINY_RCVBUF = 4096    # a client that does not read: what the kernel may hold for it is small
CONNECT_TIMEOUT = 10.0


def redis_gets(key, n):
    """n GETs of key in one write: tiny requests, each reply as large as the value."""
    return codec.resp("GET", key) * n


def redis_sets(key, value, n, blockers=0, big_key=None):
    """blockers GETs of big_key (replies the client will not read, so the +OKs queue behind
    them), then n SETs of value: the requests themselves are what the peer holds."""
    return codec.resp("GET", big_key) * blockers + codec.resp("SET", key, value) * n


def redis_unfinished_bulk(size, announce=100_000_000, key="k"):
    """A SET whose value announces `announce` bytes and brings only `size` of them: a request
    the peer keeps reading and never completes."""
    return b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n" % (len(key), key.encode(), announce) + \
        b"u" * size


def mc_gets(key, n):
    """n memcached gets of key in one write."""
    return b"get %s\r\n" % key.encode() * n


class Crowd:
    """n clients of port that each write script(i) (or the bytes script) and never read. start()
    connects them all, then writes in the background; leave() closes them."""

    def __init__(self, port, n, script, rcvbuf=TINY_RCVBUF, host=HOST):
        self.port, self.host, self.n, self.rcvbuf = port, host, n, rcvbuf
        self.scripts = [script(i) if callable(script) else script for i in range(n)]
        self.socks = []
        self.sent = [0] * n          # bytes each client wrote
        self.gone = set()            # clients the peer closed or reset (as far as seen)
        self.finished = set()        # clients that wrote their whole script
        self.stopping = threading.Event()
        self.thread = None

    def _connect(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        # before the connect: the window the peer sees is set from it
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.rcvbuf)
        s.settimeout(CONNECT_TIMEOUT)
        try:
            s.connect((self.host, self.port))
        except OSError:
            s.close()
            raise
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setblocking(False)
        return s

    def start(self):
        self.socks = [self._connect() for _ in range(self.n)]
        self.thread = threading.Thread(target=self._run, name=f"crowd:{self.port}", daemon=True)
        self.thread.start()
        return self

    def _run(self):
        poller = select.poll()
        by_fd = {}
        for i, s in enumerate(self.socks):
            by_fd[s.fileno()] = i
            poller.register(s, select.POLLOUT | select.POLLRDHUP)
        views = [memoryview(b) for b in self.scripts]
        while by_fd and not self.stopping.is_set():
            for fd, ev in poller.poll(50):
                i = by_fd.get(fd)
                if i is None:
                    continue
                if ev & (select.POLLERR | select.POLLHUP | select.POLLRDHUP):
                    self._gone(poller, by_fd, fd, i)
                    continue
                try:
                    k = self.socks[i].send(views[i][self.sent[i]:self.sent[i] + MB])
                except BlockingIOError:
                    continue
                except OSError as e:
                    if e.errno not in (errno.EPIPE, errno.ECONNRESET):
                        raise
                    self._gone(poller, by_fd, fd, i)
                    continue
                self.sent[i] += k
                if self.sent[i] == len(views[i]):
                    self.finished.add(i)
                    poller.modify(fd, select.POLLRDHUP)  # watched for a reset only

    def _gone(self, poller, by_fd, fd, i):
        self.gone.add(i)
        poller.unregister(fd)
        del by_fd[fd]

    def local_ports(self):
        """The clients' own ports (as the proxy's log names them), in order."""
        return [s.getsockname()[1] for s in self.socks]

    def total_sent(self):
        return sum(self.sent)

    def wait_sent(self, nbytes, timeout, what="the crowd to write"):
        """Waits (bounded) until the clients wrote nbytes in all (or all wrote everything)."""
        total = sum(len(s) for s in self.scripts)
        wait.wait_for(lambda: self.total_sent() >= min(nbytes, total), timeout,
                      f"{what}: {nbytes} bytes")

    def leave(self, reset=False):
        """Stops writing and closes every client (a reset where replies are unread, or with
        reset: SO_LINGER 0, a reset whatever is unread)."""
        self.stopping.set()
        if self.thread is not None:
            self.thread.join(10)
            assert not self.thread.is_alive(), "the crowd's writer did not stop"
        for s in self.socks:
            if reset:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()
        self.socks = []

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.leave()


class ReadingCrowd:
    """n clients of port that each write script (a pipeline: GETs of a large value, large SETs)
    and read its replies (reply_len bytes, dropped unchecked), round after round, until stop():
    a crowd that reads everything, and asks for a lot. A client the peer closes (redis evicting
    it for maxmemory-clients) connects again and starts its round over. One thread for all its
    clients (poll, non-blocking sockets), as Crowd."""

    def __init__(self, port, n, script, reply_len, host=HOST):
        self.port, self.host, self.n = port, host, n
        self.script, self.reply_len = memoryview(script), reply_len
        self.rounds = 0              # rounds whose every reply was read
        self.closed = 0              # times the peer closed a client
        self.socks = [None] * n
        self.stopping = threading.Event()
        self.thread = None

    def _connect(self):
        s = socket.create_connection((self.host, self.port), timeout=CONNECT_TIMEOUT)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setblocking(False)
        return s

    def start(self):
        self.socks = [self._connect() for _ in range(self.n)]
        self.thread = threading.Thread(target=self._run, name=f"reading-crowd:{self.port}", daemon=True)
        self.thread.start()
        return self

    def _run(self):
        poller = select.poll()
        by_fd, sent, got = {}, [0] * self.n, [0] * self.n
        scratch = bytearray(MB)

        def begin(i):
            sent[i] = got[i] = 0
            by_fd[self.socks[i].fileno()] = i
            poller.register(self.socks[i], select.POLLIN | select.POLLOUT)

        def again(i):  # closed by the peer: a new connection, the round over
            poller.unregister(self.socks[i])
            del by_fd[self.socks[i].fileno()]
            self.socks[i].close()
            self.closed += 1
            self.socks[i] = self._connect()
            begin(i)

        for i in range(self.n):
            begin(i)
        while not self.stopping.is_set():
            for fd, ev in poller.poll(50):
                i = by_fd.get(fd)
                if i is None:
                    continue
                s = self.socks[i]
                try:
                    if ev & select.POLLOUT and sent[i] < len(self.script):
                        sent[i] += s.send(self.script[sent[i]:sent[i] + MB])
                        if sent[i] == len(self.script):
                            poller.modify(s, select.POLLIN)
                    if ev & (select.POLLIN | select.POLLERR | select.POLLHUP):
                        k = s.recv_into(scratch)
                        if k == 0:
                            again(i)
                            continue
                        got[i] += k
                except BlockingIOError:
                    continue
                except OSError as e:
                    if e.errno not in (errno.EPIPE, errno.ECONNRESET):
                        raise
                    again(i)
                    continue
                if got[i] >= self.reply_len:
                    self.rounds += 1
                    sent[i] = got[i] = 0
                    poller.modify(s, select.POLLIN | select.POLLOUT)

    def stop(self):
        """Stops the rounds and closes every client."""
        self.stopping.set()
        if self.thread is not None:
            self.thread.join(10)
            assert not self.thread.is_alive(), "the reading crowd did not stop"
        for s in self.socks:
            if s is not None:
                s.close()
        self.socks = []
        return self


class RssPeak:
    """The highest VmRSS (kB) of pid seen by a thread that samples it every `interval` seconds
    until stop() (a process that exits ends the sampling)."""

    def __init__(self, pid, interval=0.02):
        self.pid, self.interval = pid, interval
        self.peak = 0
        self.samples = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"rss:{pid}", daemon=True)

    def _run(self):
        while not self.stopping.is_set():
            try:
                self.peak = max(self.peak, rss_kb(self.pid))
            except (OSError, KeyError, ValueError):
                return
            self.samples += 1
            wait.gap(self.stopping, self.interval)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.stopping.set()
        self.thread.join(5)
        return self.peak


def rss_peak(pid, interval=0.02):
    """An RssPeak of pid, started."""
    return RssPeak(pid, interval).start()
