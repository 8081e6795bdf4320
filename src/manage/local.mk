# src/manage: the manage port and what it renders, added to the convenience library. It reads the
# runtime and the workers' counter blocks (stats/); it runs on the stats thread (thread/stats_thread.c).
# aggregation over the workers, the output buffer, rendering (JSON, Prometheus, the hot keys)
src_libnutcrackers_la_SOURCES += \
	src/manage/stats_snapshot.c src/manage/stats_snapshot.h \
	src/manage/text_escape.c src/manage/text_escape.h \
	src/manage/stats_json.c src/manage/stats_json.h \
	src/manage/stats_prom.c src/manage/stats_prom.h \
	src/manage/hotkeys_json.c src/manage/hotkeys_json.h
# the port: commands, HTTP, connections
src_libnutcrackers_la_SOURCES += \
	src/manage/manage_auth.c src/manage/manage_auth.h \
	src/manage/manage_cmd.c src/manage/manage_cmd.h \
	src/manage/manage_http.c src/manage/manage_http.h \
	src/manage/manage_health.c src/manage/manage_health.h \
	src/manage/manage_input.c src/manage/manage_input.h \
	src/manage/manage_conn.c src/manage/manage_conn.h
