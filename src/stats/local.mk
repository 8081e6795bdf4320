# src/stats: sources of this module, added to the convenience library.
src_libnutcrackers_la_SOURCES += \
	src/stats/stats_desc.c src/stats/stats_desc.h
src_libnutcrackers_la_SOURCES += src/stats/stats.h src/stats/stats_block.c
# histogram math, slowlog rings, aggregation, rendering (JSON, Prometheus)
src_libnutcrackers_la_SOURCES += \
	src/stats/stats_hist.c src/stats/stats_hist.h \
	src/stats/stats_slowlog.c src/stats/stats_slowlog.h \
	src/stats/stats_buf.c src/stats/stats_buf.h \
	src/stats/stats_snapshot.c src/stats/stats_snapshot.h \
	src/stats/stats_json.c src/stats/stats_json.h \
	src/stats/stats_prom.c src/stats/stats_prom.h
# the manage port: commands, HTTP, connections
src_libnutcrackers_la_SOURCES += \
	src/stats/manage_cmd.c src/stats/manage_cmd.h \
	src/stats/manage_http.c src/stats/manage_http.h \
	src/stats/manage_conn.c src/stats/manage_conn.h
