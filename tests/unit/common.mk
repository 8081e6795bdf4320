# unit tests of src/common
check_PROGRAMS += tests/unit/test_mem_trim
TESTS += tests/unit/test_mem_trim
tests_unit_test_mem_trim_SOURCES = tests/unit/test_mem_trim.c
tests_unit_test_mem_trim_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_mem_trim_LDADD = $(NC_UNIT_LIBS)

check_PROGRAMS += tests/unit/test_ratelimit
TESTS += tests/unit/test_ratelimit
tests_unit_test_ratelimit_SOURCES = tests/unit/test_ratelimit.c
tests_unit_test_ratelimit_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_ratelimit_LDADD = $(NC_UNIT_LIBS)

check_PROGRAMS += tests/unit/test_textbuf
TESTS += tests/unit/test_textbuf
tests_unit_test_textbuf_SOURCES = tests/unit/test_textbuf.c
tests_unit_test_textbuf_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_textbuf_LDADD = $(NC_UNIT_LIBS)
# constant-time password comparison (test_secret)
check_PROGRAMS += tests/unit/test_secret
TESTS += tests/unit/test_secret
tests_unit_test_secret_SOURCES = tests/unit/test_secret.c
tests_unit_test_secret_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_secret_LDADD = $(NC_UNIT_LIBS)
