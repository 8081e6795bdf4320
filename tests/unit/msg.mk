# unit tests of src/msg
check_PROGRAMS += tests/unit/test_msg
TESTS += tests/unit/test_msg
tests_unit_test_msg_SOURCES = tests/unit/test_msg.c
tests_unit_test_msg_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_msg_LDADD = $(NC_UNIT_LIBS)
