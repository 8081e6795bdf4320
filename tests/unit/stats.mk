# unit tests of src/stats: histogram math (test_stats_hist), slowlog rings (test_stats_slowlog), the
# hot key sampler (test_stats_hotkeys).
check_PROGRAMS += tests/unit/test_stats_hist tests/unit/test_stats_slowlog tests/unit/test_stats_hotkeys
TESTS += tests/unit/test_stats_hist tests/unit/test_stats_slowlog tests/unit/test_stats_hotkeys
tests_unit_test_stats_hist_SOURCES = tests/unit/test_stats_hist.c
tests_unit_test_stats_hist_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_stats_hist_LDADD = $(NC_UNIT_LIBS)
tests_unit_test_stats_slowlog_SOURCES = tests/unit/test_stats_slowlog.c
tests_unit_test_stats_slowlog_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_stats_slowlog_LDADD = $(NC_UNIT_LIBS)
tests_unit_test_stats_hotkeys_SOURCES = tests/unit/test_stats_hotkeys.c
tests_unit_test_stats_hotkeys_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_stats_hotkeys_LDADD = $(NC_UNIT_LIBS) -lm
