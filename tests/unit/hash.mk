# unit tests of src/hash: the hash functions and hash_tag (test_hash), the distributions checked
# against every line of tests/vectors (test_dist; needs NC_VECTORS_DIR, set by make check)
check_PROGRAMS += tests/unit/test_hash tests/unit/test_dist
TESTS += tests/unit/test_hash tests/unit/test_dist
tests_unit_test_hash_SOURCES = tests/unit/test_hash.c
tests_unit_test_hash_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_hash_LDADD = $(NC_UNIT_LIBS)
tests_unit_test_dist_SOURCES = tests/unit/test_dist.c
tests_unit_test_dist_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_dist_LDADD = $(NC_UNIT_LIBS)
