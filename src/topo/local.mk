# src/topo: where a pool's servers come from (topology.h): server sets and their sources (the
# static YAML list, Redis Sentinel, Redis Cluster), and the small RESP client the Sentinel source talks with
# (resp_link, resp_value); above conf/ and hash/, below core/.
src_libnutcrackers_la_SOURCES += \
	src/topo/topology.h src/topo/topo_set.c src/topo/topo_static.c \
	src/topo/topo_sentinel.h src/topo/topo_sentinel.c \
	src/topo/topo_sentinel_int.h src/topo/topo_sentinel_replicas.c \
	src/topo/topo_cluster.h src/topo/topo_cluster.c src/topo/topo_cluster_int.h src/topo/topo_cluster_map.c \
	src/topo/resp_value.h src/topo/resp_value.c src/topo/resp_link.h src/topo/resp_link.c
