"""The test files as a queue that several pytest processes share, loaded by conftest.py
(pytest_plugins): scripts/test.sh runs each integration stage (plain, ASan, TSan) as two such
processes at once, since one mostly waits on sockets and timers and leaves most of the 2 cores
idle.

With $NC_TEST_QUEUE naming a directory (empty, and the same for every process of the run), each
process collects all the tests as usual and then runs them file by file, taking a file only when
it is the first to create `<directory>/<file>` (O_EXCL): every file runs whole in exactly one
process, its module fixtures started once, and whichever process is free takes the next one, so
the shares balance themselves. Each process reports only the tests it ran (its progress
percentages are of all the tests); the run passes when every process does. Without
$NC_TEST_QUEUE, pytest's own loop runs everything.

The next file is taken before the last test of the current one runs, so that pytest knows which
test comes next (what to tear down: the module's fixtures, not the session's).
"""
import os

import pytest


def _take(queue, name):
    """True for the one process that creates queue/name first."""
    try:
        os.close(os.open(os.path.join(queue, name), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except FileExistsError:
        return False
    return True


def _files_taken(session, queue):
    """The items of each file this process takes, files in collection order (a file's items
    together, even were they not)."""
    files = {}
    for item in session.items:
        files.setdefault(item.nodeid.split("::")[0], []).append(item)
    for path, items in files.items():
        if _take(queue, path.replace("/", "%")):
            yield items


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    queue = os.environ.get("NC_TEST_QUEUE")
    if not queue or session.config.option.collectonly:
        return None  # pytest's own loop
    if session.testsfailed and not session.config.option.continue_on_collection_errors:
        raise session.Interrupted(f"{session.testsfailed} errors during collection")
    files = _files_taken(session, queue)
    current = next(files, None)
    while current is not None:
        following = None
        for i, item in enumerate(current):
            if i + 1 < len(current):
                nextitem = current[i + 1]
            else:
                following = next(files, None)
                nextitem = following[0] if following else None
            item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
            if session.shouldfail:
                raise session.Failed(session.shouldfail)
            if session.shouldstop:
                raise session.Interrupted(session.shouldstop)
        current = following
    return True
