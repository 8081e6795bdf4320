# unit tests of src/stats: histogram math (test_stats_hist), slowlog rings (test_stats_slowlog),
# aggregation + JSON + Prometheus rendering (test_stats_render), manage-port commands and HTTP
# (test_manage). stats_fixture.c builds a runtime and worker blocks from YAML; json_check.c is a
# strict JSON parser.
check_PROGRAMS += tests/unit/test_stats_hist tests/unit/test_stats_slowlog tests/unit/test_stats_render \
	tests/unit/test_manage
TESTS += tests/unit/test_stats_hist tests/unit/test_stats_slowlog tests/unit/test_stats_render \
	tests/unit/test_manage
tests_unit_test_stats_hist_SOURCES = tests/unit/test_stats_hist.c
tests_unit_test_stats_hist_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_stats_hist_LDADD = $(NC_UNIT_LIBS)
tests_unit_test_stats_slowlog_SOURCES = tests/unit/test_stats_slowlog.c
tests_unit_test_stats_slowlog_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_stats_slowlog_LDADD = $(NC_UNIT_LIBS)
NC_STATS_FIXTURE = tests/unit/stats_fixture.c tests/unit/stats_fixture.h \
	tests/unit/json_check.c tests/unit/json_check.h
tests_unit_test_stats_render_SOURCES = tests/unit/test_stats_render.c $(NC_STATS_FIXTURE)
tests_unit_test_stats_render_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_stats_render_LDADD = $(NC_UNIT_LIBS)
tests_unit_test_manage_SOURCES = tests/unit/test_manage.c $(NC_STATS_FIXTURE)
tests_unit_test_manage_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_manage_LDADD = $(NC_UNIT_LIBS)
