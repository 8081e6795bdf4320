"""Stopping: SIGTERM stops gracefully (no new client; what clients already sent is answered
within the -G grace, then exit 0), SIGINT at once. The backend is a fake that answers only when
the test releases it, so a request stays in flight as long as the test wants."""
import signal
import threading

import pytest

from nctest import codec, procs
from nctest.conn import RawConn
from nctest.fake import FakeBackend, serve_on_release
from nctest.procs import HOST
from nctest.wait import wait_for

pytestmark = pytest.mark.threaded


@pytest.fixture
def held_backend():
    """(fake, release): a redis-speaking fake that answers +OK to each request once release is
    set."""
    release = threading.Event()
    fake = FakeBackend(serve_on_release(release, b"+OK\r\n"))
    yield fake, release
    release.set()
    fake.stop()


def _proxy(nutcrackers, write_conf, fake, *flags):
    port = procs.free_port()
    path = write_conf({"p": {"listen": f"{HOST}:{port}", "redis": True,
                             "servers": [f"{HOST}:{fake.port}:1"]}})
    return nutcrackers(path, *flags), port


def _in_flight(port, fake):
    """A client whose SET the backend has received and not answered; and an idle client."""
    busy, idle = RawConn(port), RawConn(port)
    busy.send(codec.resp("SET", "k", "v"))
    wait_for(lambda: fake.received > 0, 10, "the request to reach the backend")
    return busy, idle


def _stopping(nutcrackers, write_conf, fake):
    """A proxy with a long grace, a request in flight and an idle client, after its SIGTERM was
    taken: (proxy, port, busy, idle)."""
    proxy, port = _proxy(nutcrackers, write_conf, fake, "-G", "60000")
    busy, idle = _in_flight(port, fake)
    proxy.signal_and_wait(signal.SIGTERM, "no new clients")
    return proxy, port, busy, idle


def test_sigterm_answers_requests_in_flight_then_exits_0(nutcrackers, write_conf, held_backend):
    fake, release = held_backend
    proxy, port, busy, idle = _stopping(nutcrackers, write_conf, fake)
    with busy, idle:
        assert idle.is_closed(timeout=10), "an idle client stays open during a graceful stop"
        with pytest.raises(ConnectionRefusedError):
            RawConn(port).close()
        assert proxy.proc.poll() is None, "exited with a request in flight"
        release.set()
        busy.expect(b"+OK\r\n", timeout=10)
        assert busy.is_closed(timeout=10)
    assert proxy.wait_exit() == 0
    assert "every client served and closed" in proxy.log()


def test_sigterm_cuts_what_outlasts_the_grace(nutcrackers, write_conf, held_backend):
    fake, _ = held_backend  # never released
    proxy, port = _proxy(nutcrackers, write_conf, fake, "-G", "200")
    busy, idle = _in_flight(port, fake)
    with busy, idle:
        proxy.signal(signal.SIGTERM)
        assert proxy.wait_exit(timeout=10) == 0
        assert busy.read_until_closed(timeout=10) == b""
    assert "the grace of 200 ms is over" in proxy.log()


@pytest.mark.parametrize("flags, signo", [((), signal.SIGINT), (("-G", "0"), signal.SIGTERM)])
def test_sigint_and_grace_0_stop_at_once(nutcrackers, write_conf, held_backend, flags, signo):
    fake, _ = held_backend  # never released: only an immediate stop can exit
    proxy, port = _proxy(nutcrackers, write_conf, fake, "-G", "600000", *flags)
    busy, _idle = _in_flight(port, fake)
    with busy, _idle:
        proxy.signal(signo)
        assert proxy.wait_exit(timeout=10) == 0
        assert busy.read_until_closed(timeout=10) == b""
    assert "graceful stop" not in proxy.log()


def test_reload_during_a_graceful_stop_is_refused(nutcrackers, write_conf, held_backend):
    fake, release = held_backend
    proxy, port, busy, idle = _stopping(nutcrackers, write_conf, fake)
    with busy, idle:
        proxy.signal_and_wait(signal.SIGHUP, "stopping: the configuration is not reloaded")
        assert not procs.port_accepts(port), "a reload during the stop listens again"
        release.set()
        busy.expect(b"+OK\r\n", timeout=10)
    assert proxy.wait_exit() == 0
