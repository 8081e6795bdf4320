# src/conf: sources of this module, added to the convenience library.
# conf.c: load + lifecycle; conf_yaml.c: libyaml events -> node tree; conf_keys.c: key table and
# pool walk; conf_tls.c: the TLS keys' values and checks;
# conf_sentinel.c: the Sentinel keys; conf_cluster.c: redis_cluster; conf_cluster_clients.c: the
# cluster-mode clients' keys; conf_commands.c: the declared redis commands; conf_addr.c: listen /
# servers strings.
src_libnutcrackers_la_SOURCES += \
	src/conf/conf.c src/conf/conf.h src/conf/conf_int.h \
	src/conf/conf_yaml.c \
	src/conf/conf_keys.c \
	src/conf/conf_tls.c \
	src/conf/conf_sentinel.c \
	src/conf/conf_cluster.c src/conf/conf_cluster_clients.c \
	src/conf/conf_commands.c \
	src/conf/conf_addr.c
