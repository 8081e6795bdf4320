# src/proto: the protocol contract (proto.h) and the redis and memcached implementations.
src_libnutcrackers_la_SOURCES += src/proto/proto.h src/proto/proto.c
# the read-and-parse loop every connection (and the parser tests and fuzzers) runs
src_libnutcrackers_la_SOURCES += src/proto/reader.h src/proto/reader.c
# memcached (memcache_proto): command table, tokenizer, text parsers, meta commands, fragments,
# fan-outs, the binary protocol (memcache_bin_*)
src_libnutcrackers_la_SOURCES += \
	src/proto/memcache.h \
	src/proto/memcache_cmd.c \
	src/proto/memcache_token.c src/proto/memcache_token.h \
	src/proto/memcache_req.c \
	src/proto/memcache_rsp.c \
	src/proto/memcache_meta.c \
	src/proto/memcache_frag.c \
	src/proto/memcache_fanout.c \
	src/proto/memcache_stats.c \
	src/proto/memcache_bin.h \
	src/proto/memcache_bin_req.c \
	src/proto/memcache_bin_rsp.c \
	src/proto/memcache_bin_local.c \
	src/proto/memcache_bin_fanout.c \
	src/proto/memcache_proto.c
# redis: command table (and a pool's with its declared commands), request and response parsers, fragments, local answers, the ops struct
src_libnutcrackers_la_SOURCES += \
	src/proto/redis.h \
	src/proto/redis_cmd.c src/proto/redis_cmd.h \
	src/proto/redis_declared.c src/proto/redis_declared.h \
	src/proto/redis_req.c \
	src/proto/redis_rsp.c \
	src/proto/redis_frag.c \
	src/proto/redis_local.c \
	src/proto/redis_cluster.c \
	src/proto/redis_redirect.c \
	src/proto/redis_info.c \
	src/proto/redis_fanout.c \
	src/proto/redis_admin.c \
	src/proto/redis_pubsub.c \
	src/proto/redis_proto.c
