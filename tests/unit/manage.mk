# unit tests of src/manage: aggregation + JSON + Prometheus rendering (test_stats_render),
# manage-port commands and HTTP (test_manage), the hot keys' command and gauge
# (test_manage_hotkeys). stats_fixture.c builds a runtime and worker blocks from YAML,
# manage_fixture.c a manage context over them; json_check.c is a strict JSON parser.
check_PROGRAMS += tests/unit/test_stats_render tests/unit/test_manage tests/unit/test_manage_hotkeys
TESTS += tests/unit/test_stats_render tests/unit/test_manage tests/unit/test_manage_hotkeys
NC_STATS_FIXTURE = tests/unit/stats_fixture.c tests/unit/stats_fixture.h \
	tests/unit/json_check.c tests/unit/json_check.h
NC_MANAGE_FIXTURE = $(NC_STATS_FIXTURE) tests/unit/manage_fixture.c tests/unit/manage_fixture.h
tests_unit_test_stats_render_SOURCES = tests/unit/test_stats_render.c $(NC_STATS_FIXTURE)
tests_unit_test_stats_render_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_stats_render_LDADD = $(NC_UNIT_LIBS)
tests_unit_test_manage_SOURCES = tests/unit/test_manage.c $(NC_MANAGE_FIXTURE)
tests_unit_test_manage_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_manage_LDADD = $(NC_UNIT_LIBS)
tests_unit_test_manage_hotkeys_SOURCES = tests/unit/test_manage_hotkeys.c $(NC_MANAGE_FIXTURE)
tests_unit_test_manage_hotkeys_CFLAGS = $(NC_UNIT_CFLAGS)
tests_unit_test_manage_hotkeys_LDADD = $(NC_UNIT_LIBS) -lm
