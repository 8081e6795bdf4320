# unit tests of memcache (src/proto/memcache_*.c). proto_drv.c (shared with redis.mk) feeds bytes
# to a parser through the core's reader (src/proto/reader.c) and checks the parser contract on
# every call.
check_PROGRAMS += tests/unit/test_memcache
TESTS += tests/unit/test_memcache
tests_unit_test_memcache_SOURCES = tests/unit/test_memcache.c tests/unit/proto_drv.c tests/unit/proto_drv.h
tests_unit_test_memcache_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_memcache_LDADD = $(NC_UNIT_LIBS)
# the same under allocation failures: malloc/calloc/realloc wrapped to fail at the k-th call
check_PROGRAMS += tests/unit/test_memcache_oom
TESTS += tests/unit/test_memcache_oom
tests_unit_test_memcache_oom_SOURCES = tests/unit/test_memcache_oom.c
tests_unit_test_memcache_oom_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_memcache_oom_LDFLAGS = -Wl,--wrap=malloc -Wl,--wrap=calloc -Wl,--wrap=realloc
tests_unit_test_memcache_oom_LDADD = $(NC_UNIT_LIBS)
