# unit tests of core: config generations for reloads (test_generation: runtime health carried
# over, backend identity, stats blocks by name, the manage port's reload hand-off); transactions
# and blocking commands (test_txn) and Pub/Sub (test_pubsub), black-box at the loop level through
# core_harness (an in-process loop, fake redis servers, socketpair clients)
check_PROGRAMS += tests/unit/test_generation
TESTS += tests/unit/test_generation
tests_unit_test_generation_SOURCES = tests/unit/test_generation.c
tests_unit_test_generation_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_generation_LDADD = $(NC_UNIT_LIBS)
# topology sources and the routing tables built from their server sets (test_topology)
check_PROGRAMS += tests/unit/test_topology
TESTS += tests/unit/test_topology
tests_unit_test_topology_SOURCES = tests/unit/test_topology.c
tests_unit_test_topology_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_topology_LDADD = $(NC_UNIT_LIBS)

NC_CORE_HARNESS = tests/unit/core_harness.c tests/unit/core_harness_wait.c tests/unit/core_harness.h \
	tests/unit/core_harness_int.h
check_PROGRAMS += tests/unit/test_txn tests/unit/test_pubsub
TESTS += tests/unit/test_txn tests/unit/test_pubsub
tests_unit_test_txn_SOURCES = tests/unit/test_txn.c $(NC_CORE_HARNESS)
tests_unit_test_txn_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_txn_LDADD = $(NC_UNIT_LIBS)
tests_unit_test_pubsub_SOURCES = tests/unit/test_pubsub.c $(NC_CORE_HARNESS)
tests_unit_test_pubsub_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_pubsub_LDADD = $(NC_UNIT_LIBS)
# the hold of a pipeline's first replies (test_client_hold), through the same harness
check_PROGRAMS += tests/unit/test_client_hold
TESTS += tests/unit/test_client_hold
tests_unit_test_client_hold_SOURCES = tests/unit/test_client_hold.c $(NC_CORE_HARNESS)
tests_unit_test_client_hold_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_client_hold_LDADD = $(NC_UNIT_LIBS)
# what the batch wait writes before it waits (test_batch_wait), over connections of its own roles
check_PROGRAMS += tests/unit/test_batch_wait
TESTS += tests/unit/test_batch_wait
tests_unit_test_batch_wait_SOURCES = tests/unit/test_batch_wait.c
tests_unit_test_batch_wait_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_batch_wait_LDADD = $(NC_UNIT_LIBS)
# the core's machinery for transports with a handshake, bytes held back and reads or writes that
# wait for the other direction (test_transport), through a transport of the tests' own
check_PROGRAMS += tests/unit/test_transport
TESTS += tests/unit/test_transport
tests_unit_test_transport_SOURCES = tests/unit/test_transport.c tests/unit/transport_fixture.c \
	tests/unit/transport_fixture.h $(NC_CORE_HARNESS)
tests_unit_test_transport_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_transport_LDADD = $(NC_UNIT_LIBS)

# the RESP reply reader of the Sentinel source (test_resp_value)
check_PROGRAMS += tests/unit/test_resp_value
TESTS += tests/unit/test_resp_value
tests_unit_test_resp_value_SOURCES = tests/unit/test_resp_value.c
tests_unit_test_resp_value_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_resp_value_LDADD = $(NC_UNIT_LIBS)

# the Sentinel source's replicas and replica slots (test_sentinel_replicas)
check_PROGRAMS += tests/unit/test_sentinel_replicas
TESTS += tests/unit/test_sentinel_replicas
tests_unit_test_sentinel_replicas_SOURCES = tests/unit/test_sentinel_replicas.c
tests_unit_test_sentinel_replicas_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_sentinel_replicas_LDADD = $(NC_UNIT_LIBS)

# the Redis Cluster source's reading of CLUSTER SHARDS / SLOTS and its node places (test_cluster_map)
check_PROGRAMS += tests/unit/test_cluster_map
TESTS += tests/unit/test_cluster_map
tests_unit_test_cluster_map_SOURCES = tests/unit/test_cluster_map.c
tests_unit_test_cluster_map_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_cluster_map_LDADD = $(NC_UNIT_LIBS)
