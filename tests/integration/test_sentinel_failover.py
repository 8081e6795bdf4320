"""A pool with `sentinels:` while its masters move (issue 27), against real Redis Sentinel
deployments (sentinel_fixtures.py): checked redis-py clients (nctest.kvcheck: each loops SET then
GET over keys of its own on both shards, every reply checked against what that client wrote)
through a proxy with 2 workers (both with clients: both must follow) while shard0's master moves
by SENTINEL FAILOVER and by SIGKILL. No reply is another's (no wrong value); writes succeed again
within a generous bound; every key's last value is on the new master of its shard (nothing is
written to the old one once the proxy knows); shard1's master, its requests and the keys' shards
(find_keys) do not change; the log says how the move was learned; the JSON and Prometheus show
the new address. Then an old master restarted (a master again, empty, until the sentinels make it
a replica) gets no writes, and keys stay on their shard whatever addresses the config gives.

A read may be stale (an older value of the client's) in one case only: Redis replicates
asynchronously, so a write the old master took after its replica was promoted (or just before it
was killed) is lost; the client's next read of that key, on the new master, finds the value
before. The proxy holds a master's writes from the moment the sentinel leading its failover says
it promotes a replica until +switch-master (the log says "writes wait for the switch"), so with
SENTINEL FAILOVER only a write sent before the proxy heard of the promotion can be lost; after a
SIGKILL, one sent before the proxy logged the move. Each client reads a key right after writing
it, so only the write and read that straddle that moment can show it: at most one per client.
(bench/failover.py counts the lost writes.)

The forced failover and the key placement share one deployment (each fails over its own shard);
the SIGKILL and the restart get fresh ones.
"""
import re
import time

import pytest

from nctest import manage, wait
from nctest.keys import spread_keys
from nctest.kvcheck import CheckedClients
from nctest.sentinel import addr_str
from nctest.sentinel_proxy import logged_at

CLIENTS = 4
KEYS_PER_CLIENT = 16
WARM = 20.0         # s: for every client to have read back each of its keys once
WRITES_BACK = 20.0  # s: from the proxy's log of the move to every key written again through it
ROUTED_BEFORE = 0.25  # s: a write routed to the old master before the proxy knew was sent at most
#                       this long after the move's log stamp (the master thread preempted between
#                       its log line and the publication of the move, on a busy machine)


@pytest.fixture(scope="module")
def deployment(module_sentinel_deployment):
    """2 shards of a master and a replica, 3 sentinels: shard0 fails over in one test, shard1 in
    another."""
    return module_sentinel_deployment()


def client_keys(view, prefix, clients=CLIENTS):
    """Keys for each client, of both shards, and {key: shard} as the proxy routes them."""
    keys = [spread_keys(f"{prefix}:{c}", KEYS_PER_CLIENT) for c in range(clients)]
    shards = manage.find_keys(view.manage, view.pool, [k for ks in keys for k in ks])
    for ks in keys:
        assert {shards[k] for k in ks} == {"shard0", "shard1"}, "a client's keys on one shard"
    return keys, shards


def assert_last_values_on(d, load, keys, shards, masters):
    """Every key's value on the master of its shard (`masters`: {shard: addr}) is the client's
    last acknowledged write to it (or a later failed one)."""
    for c, ks in enumerate(keys):
        for shard, addr in masters.items():
            mine = [k for k in ks if shards[k] == shard]
            for key, value in d.values(addr, mine).items():
                assert value in load.expected(c, key), (shard, addr_str(addr), key, value,
                                                        load.expected(c, key))


HOLD_LINE = "promotes a replica: writes wait for the switch"


def checked_move(d, sentinel_proxy, move, name="shard0", held=False):
    """Checked clients through a -T 2 proxy while move(name) (the deployment's failover or
    kill_master) moves the master of `name`; asserts what the module's docstring says (held: the
    failover's promotion holds the writes first)."""
    other = next(n for n in d.names if n != name)
    before = {n: d.master_addr(n) for n in d.names}
    view = sentinel_proxy(d, "-T", "2")
    for n, addr in before.items():
        view.wait_addr(n, addr_str(addr))
    keys, shards = client_keys(view, f"move-{name}")
    with CheckedClients(view.port, keys, shards) as load:
        wait.wait_for(lambda: load.rewritten_since(0) and load.every_client(
            count=KEYS_PER_CLIENT, op="get", outcome="ok"), WARM, "the clients to get going")
        workers = manage.status(view.manage, "workers")["workers"]  # both must follow the move
        assert [w[view.pool]["client_connections"] >= 1 for w in workers] == [True, True], workers
        mark = view.log_mark()
        old, new = move(name)[:2]
        assert old == before[name] and new != old, (old, new)
        moved = view.wait_moved(name, addr_str(old), addr_str(new), mark)
        switched = time.monotonic()  # every request sent from now on is routed to new
        wait.wait_for(lambda: load.rewritten_since(switched), WRITES_BACK,
                      f"every key written again through the proxy after {name} moved")
        again = time.monotonic()  # one more round: no key's last write is the first after it
        wait.wait_for(lambda: load.rewritten_since(again), WRITES_BACK, "one more round")
        load.stop()
    summary = load.summary()
    assert load.count(outcome="wrong") == 0, summary
    # lost writes (see the docstring): at most one a client, each sent before the proxy knew
    lost = load.lost_writes()
    assert len(lost) <= CLIENTS, summary
    cut = logged_at(moved)
    if held:  # the writes wait from the promotion on: none sent after it is lost
        cut = logged_at(wait.wait_for(lambda: re.search(re.escape(HOLD_LINE), view.proxy.log()[mark:]), 5,
                                      "the hold of the writes in the log"))
        assert cut <= logged_at(moved), (cut, logged_at(moved))
    late = [o for o in lost if o.wall > cut + ROUTED_BEFORE]
    assert not late, (cut, late)
    # every error is a reply: no client connection is closed, nothing hangs
    assert {e.split(":")[0] for e in summary["errors"]} <= {"ResponseError"}, summary
    assert load.count(group=other, outcome="error") == 0, summary  # shard1 is not disturbed
    assert load.count(group=other, outcome="stale") == 0, summary
    assert_last_values_on(d, load, keys, shards, {name: new, other: before[other]})
    assert d.master_addr(other) == before[other]
    expected = {name: (addr_str(new), "master"), other: (addr_str(before[other]), "master")}
    assert view.places() == expected
    assert view.prom_places() == expected
    assert manage.find_keys(view.manage, view.pool, shards) == shards
    assert len(view.moves(mark)) == 1, view.moves(mark)  # once, and shard1 not at all


def test_checked_load_across_a_sentinel_failover(deployment, sentinel_proxy):
    checked_move(deployment, sentinel_proxy, deployment.failover, held=True)


def test_checked_load_across_a_killed_master(sentinel_deployment, sentinel_proxy):
    d = sentinel_deployment()
    checked_move(d, sentinel_proxy, d.kill_master)


def test_an_old_master_restarted_gets_no_writes(sentinel_deployment, sentinel_proxy):
    """A killed master restarted is an empty master until the sentinels make it a replica of the
    new one (8 s and more later). Writes through the proxy in that window, on connections made
    before and after the restart, go to the new master: none is on the old one, read in one
    transaction with its ROLE (still master when the keys were found absent)."""
    d = sentinel_deployment(shards=1)
    view = sentinel_proxy(d, "-T", "2")
    earlier = [view.client() for _ in range(2)]  # connected (and written through) before
    for i, c in enumerate(earlier):
        assert c.set(f"restart:before:{i}", "v") is True
    mark = view.log_mark()
    old, new, _ = d.kill_master("shard0")
    view.wait_moved("shard0", addr_str(old), addr_str(new), mark)
    view.wait_addr("shard0", addr_str(new))
    d.restart(old)
    assert d.role(old)[0] == "master"  # the sentinels have not converted it yet
    clients = earlier + [view.client() for _ in range(2)]
    keys = spread_keys("restart:after", 40)
    for i, key in enumerate(keys):
        assert clients[i % len(clients)].set(key, key) is True
    with d.server_client(old) as c:
        txn = c.pipeline(transaction=True)
        txn.execute_command("ROLE")
        txn.mget(keys)
        role, values = txn.execute()
    assert role[0] == b"master", role  # the window held: a master that has none of the keys
    assert values == [None] * len(keys)
    assert d.values(new, keys) == {k: k.encode() for k in keys}
    for c in clients:
        assert c.get(keys[0]) == keys[0].encode()
        c.close()
    assert view.places() == {"shard0": (addr_str(new), "master")}


def test_keys_stay_on_their_shard(deployment, sentinel_proxy):
    """The servers' names place the keys: a proxy configured with the two masters' addresses
    swapped routes every key to the same shard as one configured right (find_keys), the keys are
    on that shard's master, and a failover of shard1 moves none of them."""
    d = deployment
    masters = {n: d.master_addr(n) for n in d.names}
    right = sentinel_proxy(d, name="right")
    swapped = sentinel_proxy(d, name="swapped", servers=[
        f"{addr_str(masters['shard1'])}:1 shard0", f"{addr_str(masters['shard0'])}:1 shard1"])
    for n, addr in masters.items():
        swapped.wait_addr(n, addr_str(addr))  # the sentinels answered: each name at its master
    keys = spread_keys("placement", 200)
    shards = manage.find_keys(right.manage, right.pool, keys)
    assert manage.find_keys(swapped.manage, swapped.pool, keys) == shards
    assert set(shards.values()) == {"shard0", "shard1"}
    with swapped.client() as c:
        for key in keys:
            assert c.set(key, key) is True
    for shard, addr in masters.items():
        mine = [k for k in keys if shards[k] == shard]
        assert d.values(addr, mine) == {k: k.encode() for k in mine}
    with d.server_client(masters["shard1"]) as direct:
        assert direct.execute_command("WAIT", 1, 5000) == 1  # the replica has them all
    old, new = d.failover("shard1")
    for view in (right, swapped):
        view.wait_addr("shard1", addr_str(new))
        assert manage.find_keys(view.manage, view.pool, keys) == shards
    mine = [k for k in keys if shards[k] == "shard1"]
    assert d.values(new, mine) == {k: k.encode() for k in mine}  # replicated before
    with swapped.client() as c:
        assert [c.get(k) for k in keys] == [k.encode() for k in keys]
