"""Helpers for talking to the proxy's manage port and to redis/memcached through the proxy with
plain sockets (so the tests know every byte sent and received).

Every call is bounded by a timeout; every address is 127.0.0.1.
"""
import http.client
import json
import socket
import time

from ncutil import HOST

IO_TIMEOUT = 10.0


def recv_all(sock, timeout=IO_TIMEOUT):
    """Reads until the peer closes (bounded); returns the bytes."""
    sock.settimeout(timeout)
    chunks = []
    deadline = time.monotonic() + timeout
    while True:
        try:
            data = sock.recv(65536)
        except ConnectionResetError:
            break
        if not data:
            break
        chunks.append(data)
        if time.monotonic() > deadline:
            raise TimeoutError("the manage port did not close the connection")
    return b"".join(chunks)


def command(port, *lines, timeout=IO_TIMEOUT):
    """Sends the lines (CRLF), then quit; returns everything the port answered, as text."""
    with socket.create_connection((HOST, port), timeout=timeout) as s:
        s.sendall(b"".join(l.encode() + b"\r\n" for l in lines) + b"quit\r\n")
        return recv_all(s, timeout).decode()


def status(port, *words):
    """`status` (or `status workers`, `status latency`) parsed into dicts."""
    text = command(port, " ".join(("status",) + words))
    return json.loads(text)


def ordered(port):
    """`status` as nested lists of (key, value) pairs, in the document's order."""
    return json.loads(command(port, "status"), object_pairs_hook=list)


def silent(port, timeout=IO_TIMEOUT, half_close=False):
    """Connects and sends nothing (or only closes its side); returns what the port sends."""
    with socket.create_connection((HOST, port), timeout=timeout) as s:
        if half_close:
            s.shutdown(socket.SHUT_WR)
        return recv_all(s, timeout).decode()


def http_get(port, path, method="GET", timeout=IO_TIMEOUT):
    """(status, headers dict with lower-case names, body bytes)."""
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        conn.request(method, path)
        rsp = conn.getresponse()
        body = rsp.read()
        return rsp.status, {k.lower(): v for k, v in rsp.getheaders()}, body
    finally:
        conn.close()


def wait_status(port, pred, timeout=5.0, what="stats", words=()):
    """Polls `status` (or `status <words>`) until pred(doc) is true; returns the doc (raises on
    timeout with the last)."""
    deadline = time.monotonic() + timeout
    while True:
        doc = status(port, *words)
        if pred(doc):
            return doc
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; last status: {json.dumps(doc)}")
        time.sleep(0.05)


# --- redis and memcached over raw sockets ---------------------------------------------------

def resp(*args):
    """A redis request as RESP bytes."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Conn:
    """A client socket with a read buffer; counts bytes sent and received."""

    def __init__(self, port, timeout=IO_TIMEOUT):
        self.sock = socket.create_connection((HOST, port), timeout=timeout)
        self.buf = b""
        self.sent = 0
        self.received = 0

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(self, data):
        self.sock.sendall(data)
        self.sent += len(data)

    def _fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionError("closed by the proxy")
        self.buf += data

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        self.received += len(line) + 2
        return line

    def _exact(self, n):
        while len(self.buf) < n:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n:]
        self.received += n
        return data

    def reply(self):
        """One RESP reply: bytes for simple/bulk, int, None, list, or ('err', text)."""
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest
        if kind == b"-":
            return ("err", rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self._exact(n + 2)
            return data[:-2]
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.reply() for _ in range(n)]
        raise ValueError(f"not RESP: {line!r}")

    def call(self, *args):
        """Sends one redis command and reads its reply."""
        self.send(resp(*args))
        return self.reply()

    def mc(self, request, end_lines=(b"END", b"STORED", b"NOT_STORED", b"DELETED", b"NOT_FOUND")):
        """Sends a memcached request; reads reply lines until one of end_lines; returns them."""
        self.send(request)
        lines = []
        while True:
            line = self._line()
            lines.append(line)
            if line.startswith(b"VALUE "):
                n = int(line.split()[3])
                lines.append(self._exact(n + 2)[:-2])
                continue
            if line in end_lines or line.startswith(b"SERVER_ERROR") or line.startswith(b"CLIENT_ERROR"):
                return lines
