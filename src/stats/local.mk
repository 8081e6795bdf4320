# src/stats: sources of this module, added to the convenience library.
src_libnutcrackers_la_SOURCES += \
	src/stats/stats_desc.c src/stats/stats_desc.h
src_libnutcrackers_la_SOURCES += src/stats/stats.h src/stats/stats_block.c
