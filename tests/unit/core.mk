# unit tests of core: config generations for reloads (test_generation: runtime health carried
# over, backend identity, stats blocks by name, the manage port's reload hand-off)
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
