# src/topo: where a pool's servers come from (topology.h): server sets and their sources (the
# static YAML list today); above conf/ and hash/, below core/.
src_libnutcrackers_la_SOURCES += \
	src/topo/topology.h src/topo/topo_set.c src/topo/topo_static.c
