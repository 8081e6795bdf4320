# unit tests of src/manage: aggregation + JSON + Prometheus rendering (test_stats_render),
# manage-port commands and HTTP (test_manage). stats_fixture.c builds a runtime and worker blocks
# from YAML; json_check.c is a strict JSON parser.
check_PROGRAMS += tests/unit/test_stats_render tests/unit/test_manage
TESTS += tests/unit/test_stats_render tests/unit/test_manage
NC_STATS_FIXTURE = tests/unit/stats_fixture.c tests/unit/stats_fixture.h \
	tests/unit/json_check.c tests/unit/json_check.h
tests_unit_test_stats_render_SOURCES = tests/unit/test_stats_render.c $(NC_STATS_FIXTURE)
tests_unit_test_stats_render_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_stats_render_LDADD = $(NC_UNIT_LIBS)
tests_unit_test_manage_SOURCES = tests/unit/test_manage.c $(NC_STATS_FIXTURE)
tests_unit_test_manage_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_manage_LDADD = $(NC_UNIT_LIBS)
