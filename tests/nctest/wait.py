"""Waiting for events, never for time: wait_for() polls a predicate at a short interval until it
holds or a deadline passes, and fails naming what it waited for. Deadlines scale with the binary
under test: a sanitized proxy (ASan, TSan) next to the other sanitizer stage on a shared 2-core
machine is several times slower, so the same event comes later (what a test asserts does not
move). $NC_TEST_WAIT_SCALE overrides the factor.

This module is the only place of the test code that sleeps: the polling interval of the waits,
and three deliberate spans that are a test's subject rather than a way to let something happen:
hold() (a window to measure over, or a gap a test measures against), pace() (the gap between
two writes of a client that drips its bytes) and gap() (between two samples of a sampler that
runs until it is stopped).

Threads: plain functions, any thread.
"""
import os
import time

from . import procs

POLL = 0.05  # seconds between two looks


def scale():
    """The factor every deadline is multiplied by: 1 for a plain build, 3 under ASan, 4 under
    TSan (or $NC_TEST_WAIT_SCALE)."""
    env = os.environ.get("NC_TEST_WAIT_SCALE")
    if env:
        return float(env)
    if procs.tsan_binary():
        return 4.0
    return 3.0 if procs.sanitized_binary() else 1.0


def deadline(timeout, scaled=True):
    """The monotonic time timeout seconds (scaled) from now."""
    return time.monotonic() + timeout * (scale() if scaled else 1.0)


def wait_for(predicate, timeout, what, interval=POLL, scaled=True):
    """Polls predicate() until it returns a true value, which is returned. After timeout seconds
    (times scale() unless scaled=False) raises TimeoutError naming `what`."""
    limit = timeout * (scale() if scaled else 1.0)
    end = time.monotonic() + limit
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= end:
            raise TimeoutError(f"timed out after {limit:.1f}s waiting for {what}")
        time.sleep(interval)


def wait_value(measure, accept, timeout, what, interval=POLL):
    """Polls measure() until accept(value); returns that value. On timeout raises AssertionError
    with the last value seen."""
    last = {}

    def ok():
        last["v"] = measure()
        return accept(last["v"])

    try:
        wait_for(ok, timeout, what, interval)
    except TimeoutError as e:
        raise AssertionError(f"{e}; last value {last.get('v')!r}") from None
    return last["v"]


def settle(measure, target, timeout, what, interval=0.1):
    """Polls measure() until it is <= target; returns the last value or raises AssertionError."""
    return wait_value(measure, lambda v: v <= target, timeout, f"{what} (target {target})",
                      interval)


def steady(measure, timeout, what, samples=4, interval=0.1):
    """The value of measure() once `samples` polls in a row agree (closes and trims are
    asynchronous); raises AssertionError with the values seen."""
    seen = []

    def stable():
        seen.append(measure())
        return len(seen) >= samples and len(set(seen[-samples:])) == 1

    try:
        wait_for(stable, timeout, what, interval)
    except TimeoutError as e:
        raise AssertionError(f"{e}; last values {seen[-8:]}") from None
    return seen[-1]


def sample(measure, n, interval=0.1):
    """n values of measure(), interval seconds apart (the lowest RSS over a trim period, say)."""
    out = [measure()]
    while len(out) < n:
        time.sleep(interval)
        out.append(measure())
    return out


def wait_log(read, needle, timeout, start=0, count=1):
    """Waits until the text read() returns, from character start on, holds needle (count times);
    returns the position just past the count-th one."""

    def found():
        text = read()
        at = start
        for _ in range(count):
            i = text.find(needle, at)
            if i < 0:
                return None
            at = i + len(needle)
        return at

    what = f"'{needle}'" + (f" {count} times" if count > 1 else "") + " in the log"
    return wait_for(found, timeout, what)


def hold(seconds, why):
    """Lets `seconds` pass, unscaled: a span that is the subject of a test (a window to measure
    CPU or log growth over, a request kept waiting longer than a threshold, a gap between two
    requests that a timeout is measured against). Never use it to let something happen: wait for
    the event instead. `why` documents the span at the call site."""
    assert why
    time.sleep(seconds)


def pace(seconds):
    """The gap between two writes of a client that sends its bytes slowly on purpose."""
    time.sleep(seconds)


def gap(stop, seconds):
    """The gap between two samples of a sampler thread: seconds, or until the threading.Event stop
    is set; returns whether it is."""
    return stop.wait(seconds)
