# unit tests of src/app (command line, pid file, the SIGSEGV handler and its log line)
check_PROGRAMS += tests/unit/test_options tests/unit/test_pidfile tests/unit/test_fault
TESTS += tests/unit/test_options tests/unit/test_pidfile tests/unit/test_fault
tests_unit_test_options_SOURCES = tests/unit/test_options.c
tests_unit_test_options_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_options_LDADD = $(NC_UNIT_LIBS)
tests_unit_test_pidfile_SOURCES = tests/unit/test_pidfile.c
tests_unit_test_pidfile_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_pidfile_LDADD = $(NC_UNIT_LIBS)
tests_unit_test_fault_SOURCES = tests/unit/test_fault.c
tests_unit_test_fault_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_fault_LDADD = $(NC_UNIT_LIBS)
