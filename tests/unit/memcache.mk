# unit tests of memcache (src/proto/memcache_*.c). proto_drv.c (shared with redis.mk) feeds bytes
# to a parser through the core's reader (src/proto/reader.c) and checks the parser contract on
# every call.
check_PROGRAMS += tests/unit/test_memcache
TESTS += tests/unit/test_memcache
tests_unit_test_memcache_SOURCES = tests/unit/test_memcache.c tests/unit/proto_drv.c tests/unit/proto_drv.h
tests_unit_test_memcache_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_memcache_LDADD = $(NC_UNIT_LIBS)
# the meta commands (memcache_meta.c): requests, framing, base64 keys, replies and terminators
check_PROGRAMS += tests/unit/test_memcache_meta
TESTS += tests/unit/test_memcache_meta
tests_unit_test_memcache_meta_SOURCES = tests/unit/test_memcache_meta.c tests/unit/proto_drv.c tests/unit/proto_drv.h
tests_unit_test_memcache_meta_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_memcache_meta_LDADD = $(NC_UNIT_LIBS)
# the same under allocation failures: malloc/calloc/realloc wrapped to fail at the k-th call
# (oom_alloc.c, shared with redis.mk's test_redis_oom)
check_PROGRAMS += tests/unit/test_memcache_oom
TESTS += tests/unit/test_memcache_oom
tests_unit_test_memcache_oom_SOURCES = tests/unit/test_memcache_oom.c tests/unit/oom_alloc.c tests/unit/oom_alloc.h \
	tests/unit/bin_pkt.c tests/unit/bin_pkt.h
tests_unit_test_memcache_oom_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_memcache_oom_LDFLAGS = $(NC_UNIT_OOM_WRAP)
tests_unit_test_memcache_oom_LDADD = $(NC_UNIT_LIBS)
# the binary protocol, the client's side (memcache_bin_req.c, memcache_bin_local.c): opcodes'
# shapes, refusals, limits, quiet tails, local answers
check_PROGRAMS += tests/unit/test_memcache_bin
TESTS += tests/unit/test_memcache_bin
tests_unit_test_memcache_bin_SOURCES = tests/unit/test_memcache_bin.c tests/unit/bin_pkt.c tests/unit/bin_pkt.h \
	tests/unit/proto_drv.c tests/unit/proto_drv.h
tests_unit_test_memcache_bin_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_memcache_bin_LDADD = $(NC_UNIT_LIBS)
# the binary protocol, the server's side (memcache_bin_rsp.c, memcache_bin_fanout.c): replies,
# terminated replies, stat and flush over every server
check_PROGRAMS += tests/unit/test_memcache_bin_rsp
TESTS += tests/unit/test_memcache_bin_rsp
tests_unit_test_memcache_bin_rsp_SOURCES = tests/unit/test_memcache_bin_rsp.c tests/unit/bin_pkt.c tests/unit/bin_pkt.h \
	tests/unit/proto_drv.c tests/unit/proto_drv.h
tests_unit_test_memcache_bin_rsp_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_memcache_bin_rsp_LDADD = $(NC_UNIT_LIBS)
