# unit tests of src/thread: the inbox's bounded drain (test_inbox)
check_PROGRAMS += tests/unit/test_inbox
TESTS += tests/unit/test_inbox
tests_unit_test_inbox_SOURCES = tests/unit/test_inbox.c
tests_unit_test_inbox_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_inbox_LDADD = $(NC_UNIT_LIBS)
