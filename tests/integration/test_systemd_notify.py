"""systemd readiness (issue 18): the proxy tells the service manager on $NOTIFY_SOCKET (a unix
datagram socket, systemd's sd_notify protocol) what it does, in this order: READY=1 once every
listener (pools and manage port) is bound; around each reload (SIGHUP or the manage port's
`reload`) RELOADING=1 with MONOTONIC_USEC= then READY=1, with STATUS= naming the generation served
or the reason the reload failed; nothing for SIGUSR1 (a log reopen); STOPPING=1 at stop. The test plays systemd: it binds the socket,
starts the proxy with NOTIFY_SOCKET set and reads each datagram with its sender's credentials
(systemd's NotifyAccess=main accepts only the main pid's).

Skipped when the binary was built without libsystemd (the proxy then logs that it cannot answer).
"""
import signal
import socket
import struct
import time

import pytest

from nctest import manage
from nctest.procs import HOST, free_port, port_accepts
from nctest.wait import scale, wait_log

TIMEOUT = 30.0  # seconds for one notification (scaled): the proxy may be sanitized, the box busy


class Notify:
    """The service manager's end: a unix datagram socket receiving (pid, {field: value})."""

    def __init__(self, addr):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(addr)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.sock.settimeout(TIMEOUT * scale())

    def recv(self):
        """The next message: (sender pid, dict of its NAME=value lines), or a failed test."""
        creds = struct.calcsize("3i")
        try:
            data, anc, _, _ = self.sock.recvmsg(65536, socket.CMSG_SPACE(creds))
        except socket.timeout:
            pytest.fail("no notification on NOTIFY_SOCKET")
        pid = None
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                pid = struct.unpack("3i", payload[:creds])[0]
        fields = dict(line.split("=", 1) for line in data.decode().split("\n") if line)
        return pid, fields

    def expect(self, pid, *names):
        """The next message, from pid, has exactly these state fields (and a STATUS=)."""
        sender, fields = self.recv()
        assert sender == pid, f"notification from pid {sender}, not the proxy's {pid}: {fields}"
        states = sorted(k for k in fields if k != "STATUS")
        assert states == sorted(names), fields
        assert fields.get("STATUS"), fields
        return fields

    def close(self):
        self.sock.close()


def _pool(backend, port):
    return {"listen": f"{HOST}:{port}", "redis": True, "servers": [f"{HOST}:{backend}:1 r0"]}


def test_notifications_in_order_through_start_reloads_and_stop(tmp_path, monkeypatch, redis_server,
                                                               write_conf, nutcrackers):
    backend, _ = redis_server()
    ports = [free_port(), free_port()]
    conf = write_conf({"alpha": _pool(backend, ports[0]), "beta": _pool(backend, ports[1])})
    env = str(tmp_path / "notify.sock")
    if len(env) >= 100:  # sun_path's limit: an abstract name ("@..." in NOTIFY_SOCKET) instead
        env = f"@nctest-notify-{time.monotonic_ns()}"
    notify = Notify("\0" + env[1:] if env.startswith("@") else env)
    try:
        monkeypatch.setenv("NOTIFY_SOCKET", env)
        proxy = nutcrackers(conf, wait="log")
        if "this build has no libsystemd" in proxy.log():
            pytest.skip("built without libsystemd: no notifications")

        # start: READY=1 only once every listener accepts
        ready = notify.expect(proxy.pid, "READY")
        assert "generation 1 (2 pools)" in ready["STATUS"], ready
        for port in ports + [proxy.manage_port]:
            assert port_accepts(port), f"READY=1 sent before port {port} listens"

        # a good reload (SIGHUP): a third pool
        ports.append(free_port())
        write_conf({"alpha": _pool(backend, ports[0]), "beta": _pool(backend, ports[1]),
                    "gamma": _pool(backend, ports[2])})
        before = time.monotonic_ns() // 1000
        proxy.signal(signal.SIGHUP)
        reloading = notify.expect(proxy.pid, "RELOADING", "MONOTONIC_USEC")
        assert before <= int(reloading["MONOTONIC_USEC"]) <= time.monotonic_ns() // 1000, reloading
        ready = notify.expect(proxy.pid, "READY")
        assert "generation 2 (3 pools)" in ready["STATUS"], ready
        assert port_accepts(ports[2]), "READY=1 after the reload, but the new pool does not listen"

        # a failed reload (the manage port's `reload`): RELOADING=1, then READY=1 (the old
        # generation still serves) and a STATUS= with the reason the manage port answers too
        write_conf({"alpha": {**_pool(backend, ports[0]), "hash": "no_such_hash"}})
        answer = manage.command(proxy.manage_port, "reload", timeout=TIMEOUT * scale()).strip()
        assert answer.startswith("ERR: reload failed (still serving generation 2): "), answer
        reason = answer.split("): ", 1)[1]
        assert "no_such_hash" in reason, answer
        notify.expect(proxy.pid, "RELOADING", "MONOTONIC_USEC")
        failed = notify.expect(proxy.pid, "READY")
        assert failed["STATUS"] == f"reload failed (still serving generation 2): {reason}", failed

        # SIGUSR1 only reopens the log (logrotate's signal): no reload, so no notification
        mark = proxy.log_mark()
        proxy.signal(signal.SIGUSR1)
        proxy.wait_log("log file reopened", start=mark)

        # stop: the next message is STOPPING=1
        proxy.signal(signal.SIGTERM)
        notify.expect(proxy.pid, "STOPPING")
        assert proxy.wait_exit() == 0
        wait_log(proxy.log, "stopping", TIMEOUT)
        notify.sock.settimeout(0.2)
        with pytest.raises(socket.timeout):
            notify.sock.recv(65536)  # nothing after STOPPING=1
    finally:
        notify.close()
