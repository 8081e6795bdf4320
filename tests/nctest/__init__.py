"""nctest: the one helper library of the integration tests, the soak (tests/soak/soak.py) and
the benchmark (bench/bench.py). One module per concern:

  procs    free ports, the binary under test (sanitized or not), backend command lines and
           starting them, stopping and reaping processes, open-file limits
  procfs   /proc: open fds and their TCP sockets, RSS, CPU time, signal masks, socket queues
  wait     wait_for() and the other waits on events, with deadlines that scale in sanitizer
           builds; the only module that sleeps
  codec    RESP and memcached bytes: encode, frame, decode
  conn     raw client connections (byte-exact, bounded), redis-py / pymemcache clients
  conf     config files (YAML) and their listen ports
  keys     keys that spread, large values, which backend holds a key
  manage   the manage port: commands, status, waits on stats counters
  cluster  N backends behind a one-pool proxy
  load     self-checking client loads, scripted clients, threads, dripping, connection storms
  crowd    crowds of clients that never read (or stop in the middle of a value), crowds that
           pipeline large values and read them, RSS peaks
  fake     fake backends that misbehave on purpose
  vectors  the shared key-distribution vectors
  nodeclients  the pinned Node.js packages (tests/clients/node): node, once they are installed
  framing  the same byte streams sent to a redis-server and through the proxy, the replies
           compared; a bystander client that checks every reply is its own
  mcbin    memcached's binary protocol: packets built and parsed, reads up to a noop, what
           a memcached answers directly, a binary bystander
  tls      certificates made with the openssl CLI (CA, server, client, a wrong CA and key),
           ssl contexts and redis-server / memcached TLS flags
  sentinel Redis Sentinel deployments (shards of a master and replicas, 3 sentinels) and what
           a test does to them: failovers, killed masters, restarts, stopped sentinels
  sentinel_events  a sentinel's event channels (+switch-master ...) read as they come
  sentinel_proxy  the proxy's view of a pool with sentinels: where its stats say each server
           is, how many sentinels answer (JSON, Prometheus), the log lines of moves
  kvcheck  redis-py client threads that write and read back keys of their own, every reply
           checked (another's value, a lost acknowledged write), every request recorded
  deps     scripts/lib/deps.sh's functions (client builds and installs), a missing toolchain
           told apart from a failure

Nothing is installed: tests/ goes on sys.path in one place each (tests/integration/conftest.py,
tests/soak/soak.py, bench/bench.py, tests/fuzz/seeds.py), then `from nctest import ...`.
Every wait is bounded; every address is 127.0.0.1 (::1 where a test of IPv6 asks for it).
"""
