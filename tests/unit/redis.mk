# unit tests of redis (src/proto/redis_*): command table and request parser (test_redis), response
# parser, fragments and coalescing (test_redis_rsp), the handshake the proxy answers (HELLO, AUTH,
# CLIENT, ECHO, SELECT, RESET) and HELLO's and INFO's replies from every server's INFO
# (test_redis_hello), what cluster-mode clients are answered (test_redis_cluster: CLUSTER,
# READONLY, READWRITE). proto_drv.c feeds bytes through the core's reader (src/proto/reader.c)
# and checks the parser contract on every call (memcache.mk uses it too); local_client.c is a
# client whose requests local() answers.
check_PROGRAMS += tests/unit/test_redis tests/unit/test_redis_rsp tests/unit/test_redis_hello \
  tests/unit/test_redis_cluster
TESTS += tests/unit/test_redis tests/unit/test_redis_rsp tests/unit/test_redis_hello tests/unit/test_redis_cluster
tests_unit_test_redis_SOURCES = tests/unit/test_redis.c tests/unit/proto_drv.c tests/unit/proto_drv.h
tests_unit_test_redis_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_redis_LDADD = $(NC_UNIT_LIBS)
tests_unit_test_redis_rsp_SOURCES = tests/unit/test_redis_rsp.c tests/unit/proto_drv.c tests/unit/proto_drv.h
tests_unit_test_redis_rsp_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_redis_rsp_LDADD = $(NC_UNIT_LIBS)
tests_unit_test_redis_hello_SOURCES = tests/unit/test_redis_hello.c tests/unit/local_client.c tests/unit/local_client.h \
  tests/unit/proto_drv.c tests/unit/proto_drv.h
tests_unit_test_redis_hello_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_redis_hello_LDADD = $(NC_UNIT_LIBS)
tests_unit_test_redis_cluster_SOURCES = tests/unit/test_redis_cluster.c tests/unit/local_client.c \
  tests/unit/local_client.h tests/unit/proto_drv.c tests/unit/proto_drv.h
tests_unit_test_redis_cluster_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_redis_cluster_LDADD = $(NC_UNIT_LIBS)
# redis_proto under allocation failures (oom_alloc.c wraps malloc/calloc/realloc to fail from the
# k-th call on, for every k): fragment, coalesce and the parsers fail with -ENOMEM / "out of
# memory" and leave nothing allocated, or succeed whole
check_PROGRAMS += tests/unit/test_redis_oom
TESTS += tests/unit/test_redis_oom
tests_unit_test_redis_oom_SOURCES = tests/unit/test_redis_oom.c tests/unit/oom_alloc.c tests/unit/oom_alloc.h \
  tests/unit/proto_drv.c tests/unit/proto_drv.h
tests_unit_test_redis_oom_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_redis_oom_LDFLAGS = $(NC_UNIT_OOM_WRAP)
tests_unit_test_redis_oom_LDADD = $(NC_UNIT_LIBS)

# redis 7's functions and introspection (test_redis_admin): the rows of FUNCTION, FCALL, CONFIG,
# ROLE, OBJECT, MEMORY, LCS, RENAME, ...; local()'s decisions; FUNCTION's and CONFIG's fragments
# (every server, or the first) and merged replies
check_PROGRAMS += tests/unit/test_redis_admin
TESTS += tests/unit/test_redis_admin
tests_unit_test_redis_admin_SOURCES = tests/unit/test_redis_admin.c tests/unit/local_client.c tests/unit/local_client.h \
  tests/unit/proto_drv.c tests/unit/proto_drv.h
tests_unit_test_redis_admin_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_redis_admin_LDADD = $(NC_UNIT_LIBS)

# Redis Cluster's redirections in the reply parser and their targets (test_redis_redirect)
check_PROGRAMS += tests/unit/test_redis_redirect
TESTS += tests/unit/test_redis_redirect
tests_unit_test_redis_redirect_SOURCES = tests/unit/test_redis_redirect.c tests/unit/proto_drv.c tests/unit/proto_drv.h
tests_unit_test_redis_redirect_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_redis_redirect_LDADD = $(NC_UNIT_LIBS)

# a pool's declared commands (`commands:`, test_redis_declared): the built-ins that cannot be
# declared, the entries and the pool's table, the parser routing declared keys at every split
check_PROGRAMS += tests/unit/test_redis_declared
TESTS += tests/unit/test_redis_declared
tests_unit_test_redis_declared_SOURCES = tests/unit/test_redis_declared.c tests/unit/proto_drv.c tests/unit/proto_drv.h
tests_unit_test_redis_declared_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_redis_declared_LDADD = $(NC_UNIT_LIBS)
