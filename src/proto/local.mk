# src/proto: the protocol contract (proto.h) and the redis and memcached implementations.
src_libnutcrackers_la_SOURCES += src/proto/proto.h src/proto/proto.c
# the read-and-parse loop every connection (and the parser tests and fuzzers) runs
src_libnutcrackers_la_SOURCES += src/proto/reader.h src/proto/reader.c
# memcached ASCII protocol (memcache_proto): command table, tokenizer, parsers, meta commands,
# fragments
src_libnutcrackers_la_SOURCES += \
	src/proto/memcache.h \
	src/proto/memcache_cmd.c \
	src/proto/memcache_token.c src/proto/memcache_token.h \
	src/proto/memcache_req.c \
	src/proto/memcache_rsp.c \
	src/proto/memcache_meta.c \
	src/proto/memcache_frag.c \
	src/proto/memcache_fanout.c \
	src/proto/memcache_proto.c
# redis: command table, request and response parsers, fragments, local answers, the ops struct
src_libnutcrackers_la_SOURCES += \
	src/proto/redis.h \
	src/proto/redis_cmd.c src/proto/redis_cmd.h \
	src/proto/redis_req.c \
	src/proto/redis_rsp.c \
	src/proto/redis_frag.c \
	src/proto/redis_local.c \
	src/proto/redis_cluster.c \
	src/proto/redis_redirect.c \
	src/proto/redis_info.c \
	src/proto/redis_fanout.c \
	src/proto/redis_pubsub.c \
	src/proto/redis_proto.c
