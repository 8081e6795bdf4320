# unit tests of src/conf: the config files they load are under tests/unit/data/conf; they also load
# conf/nutcrackers.yml and tests/vectors/*.yml (found through NC_TOP_SRCDIR without `make check`).
check_PROGRAMS += tests/unit/test_conf
TESTS += tests/unit/test_conf
tests_unit_test_conf_SOURCES = tests/unit/test_conf.c
tests_unit_test_conf_CPPFLAGS = $(AM_CPPFLAGS) -DNC_TOP_SRCDIR='"$(abs_top_srcdir)"'
tests_unit_test_conf_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_conf_LDADD = $(NC_UNIT_LIBS)
EXTRA_DIST += tests/unit/data/conf

# TLS (test_tls): the pool's TLS keys and their checks, the config check of what only OpenSSL
# finds, and the TLS transport over a socketpair; its certificates are under tests/unit/data/tls
check_PROGRAMS += tests/unit/test_tls
TESTS += tests/unit/test_tls
tests_unit_test_tls_SOURCES = tests/unit/test_tls.c
tests_unit_test_tls_CPPFLAGS = $(AM_CPPFLAGS) -DNC_TOP_SRCDIR='"$(abs_top_srcdir)"'
tests_unit_test_tls_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_tls_LDADD = $(NC_UNIT_LIBS)
EXTRA_DIST += tests/unit/data/tls
