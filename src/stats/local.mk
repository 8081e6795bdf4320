# src/stats: the counters the core writes (per-worker blocks and their registry, the field tables,
# histogram math, slowlog rings, hot key samplers), added to the convenience library. Nothing here
# includes core/, thread/ or manage/: the blocks are bound to a runtime by core/runtime_stats.c and read by manage/.
src_libnutcrackers_la_SOURCES += \
	src/stats/stats.h src/stats/stats_block.c \
	src/stats/stats_desc.c src/stats/stats_desc.h \
	src/stats/stats_hist.c src/stats/stats_hist.h \
	src/stats/stats_slowlog.c src/stats/stats_slowlog.h \
	src/stats/stats_hotkeys.c src/stats/stats_hotkeys.h
