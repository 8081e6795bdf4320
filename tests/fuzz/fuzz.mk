# libFuzzer targets (tests/fuzz/, notes/fuzzing.md). `make fuzz` builds them with clang into
# tests/fuzz/bin/ of the build tree, with -fsanitize=address,undefined: the sources under test
# with libFuzzer's coverage instrumentation, the harness (fuzz_feed.c, fuzz_proto.c, fuzz_bin.c, the manage
# targets' fuzz_manage.c, fuzz_check_text.c and the unit tests' JSON checker) without it,
# so its own branches are not fuzzing goals. Nothing is shared with the gcc build (the normal
# `make` neither builds nor needs them). FUZZ_CC picks the compiler (`make fuzz FUZZ_CC=clang-14`).
# scripts/fuzz.sh builds and runs them.
FUZZ_CC = clang
FUZZ_CFLAGS = -std=gnu11 -g -O1 -fno-omit-frame-pointer \
	-fsanitize=address,undefined -fno-sanitize-recover=all \
	-DNC_ASSERT_ABORT=1 -Wall -Wextra -Wno-unused-parameter -Wvla -Werror
FUZZ_CPPFLAGS = -I$(abs_top_srcdir)/src -I$(abs_top_builddir) -I$(abs_top_srcdir)/tests/fuzz

FUZZ_BIN = tests/fuzz/bin
FUZZ_OBJ = $(FUZZ_BIN)/obj
FUZZ_BINS = $(FUZZ_BIN)/fuzz_redis_req $(FUZZ_BIN)/fuzz_redis_rsp \
	$(FUZZ_BIN)/fuzz_mc_req $(FUZZ_BIN)/fuzz_mc_rsp $(FUZZ_BIN)/fuzz_mc_bin_req $(FUZZ_BIN)/fuzz_mc_bin_rsp \
	$(FUZZ_BIN)/fuzz_conf \
	$(FUZZ_BIN)/fuzz_manage_line $(FUZZ_BIN)/fuzz_manage_http

# the sources under test (file names are unique: the objects share one directory)
FUZZ_PROTO_SRCS = src/common/log.c src/common/clock.c src/common/sock.c src/common/textbuf.c src/common/secret.c \
	src/msg/mbuf.c src/msg/msg.c \
	src/proto/memcache_cmd.c src/proto/memcache_token.c src/proto/memcache_req.c \
	src/proto/memcache_rsp.c src/proto/memcache_meta.c src/proto/memcache_frag.c src/proto/memcache_fanout.c \
	src/proto/memcache_stats.c src/proto/memcache_bin_req.c src/proto/memcache_bin_rsp.c \
	src/proto/memcache_bin_local.c src/proto/memcache_bin_fanout.c \
	src/proto/memcache_proto.c src/proto/redis_cmd.c src/proto/redis_declared.c src/proto/redis_req.c src/proto/redis_rsp.c \
	src/proto/redis_frag.c src/proto/redis_local.c src/proto/redis_cluster.c src/proto/redis_info.c src/proto/redis_fanout.c src/proto/redis_admin.c src/proto/redis_pubsub.c \
	src/proto/redis_proto.c src/proto/redis_redirect.c \
	src/proto/proto.c src/proto/reader.c
FUZZ_CONF_SRCS = src/conf/conf.c src/conf/conf_yaml.c src/conf/conf_keys.c src/conf/conf_tls.c src/conf/conf_sentinel.c \
	src/conf/conf_cluster.c src/conf/conf_cluster_clients.c src/conf/conf_commands.c src/conf/conf_addr.c \
	src/hash/hash.c src/hash/md5.c src/hash/crc.c src/hash/fnv.c src/hash/jenkins.c \
	src/hash/hsieh.c src/hash/murmur.c src/hash/dist.c src/hash/ketama.c \
	src/hash/modula.c src/hash/random.c
# the manage port and what it needs to run: the runtime, the counters, the slowlogs
FUZZ_MANAGE_SRCS = src/manage/manage_input.c src/manage/manage_cmd.c src/manage/manage_http.c \
	src/manage/manage_auth.c src/manage/manage_health.c src/manage/stats_json.c \
	src/manage/stats_prom.c src/manage/stats_snapshot.c src/manage/text_escape.c src/manage/hotkeys_json.c \
	src/core/runtime.c src/core/route.c src/core/runtime_stats.c \
	src/stats/stats_block.c src/stats/stats_desc.c src/stats/stats_hist.c src/stats/stats_slowlog.c \
	src/stats/stats_hotkeys.c \
	src/topo/topo_set.c src/topo/topo_static.c src/net/transport_ctx.c src/net/transport_plain.c src/net/transport_tls.c src/net/tls_ctx.c src/net/tls_sessions.c \
	src/topo/topo_sentinel.c src/topo/topo_sentinel_replicas.c src/topo/resp_link.c src/topo/resp_value.c \
	src/topo/topo_cluster.c src/topo/topo_cluster_map.c \
	src/common/ratelimit.c
FUZZ_HARNESS_SRCS = tests/fuzz/fuzz_feed.c tests/fuzz/fuzz_proto.c tests/fuzz/fuzz_bin.c \
	tests/fuzz/fuzz_manage.c tests/fuzz/fuzz_check_text.c tests/unit/json_check.c
FUZZ_HDRS = tests/fuzz/fuzz_check.h tests/fuzz/fuzz_feed.h tests/common/reader_scrub.h \
	src/common/log.h src/common/util.h src/common/clock.h src/common/sock.h src/common/textbuf.h src/common/secret.h \
	src/msg/mbuf.h src/msg/msg.h \
	src/proto/proto.h src/proto/reader.h src/proto/memcache.h src/proto/memcache_bin.h src/proto/redis.h src/proto/redis_cmd.h src/proto/redis_declared.h \
	src/conf/conf.h src/conf/conf_int.h src/hash/hash.h src/hash/hash_impl.h \
	src/hash/md5.h src/hash/dist.h src/hash/dist_impl.h \
	tests/fuzz/fuzz_manage.h tests/fuzz/fuzz_check_text.h tests/unit/json_check.h \
	src/manage/manage_input.h src/manage/manage_cmd.h src/manage/manage_http.h \
	src/manage/manage_auth.h src/manage/manage_health.h src/manage/manage_conn.h \
	src/manage/stats_json.h src/manage/stats_prom.h src/manage/stats_snapshot.h \
	src/manage/text_escape.h src/manage/hotkeys_json.h src/core/runtime.h src/core/route.h src/core/runtime_stats.h \
	src/stats/stats.h src/stats/stats_desc.h src/stats/stats_hist.h src/stats/stats_slowlog.h \
	src/stats/stats_hotkeys.h \
	src/topo/topology.h src/net/transport.h src/net/transport_tls.h src/net/tls_ctx.h src/net/tls_sessions.h src/common/ratelimit.h \
	src/topo/topo_sentinel.h src/topo/topo_sentinel_int.h src/topo/resp_link.h src/topo/resp_value.h \
	src/topo/topo_cluster.h src/topo/topo_cluster_int.h

# their objects (kept in step with the lists above)
FUZZ_PROTO_LIB_OBJS = $(FUZZ_OBJ)/log.o $(FUZZ_OBJ)/clock.o $(FUZZ_OBJ)/sock.o $(FUZZ_OBJ)/textbuf.o \
	$(FUZZ_OBJ)/secret.o $(FUZZ_OBJ)/mbuf.o $(FUZZ_OBJ)/msg.o \
	$(FUZZ_OBJ)/memcache_cmd.o $(FUZZ_OBJ)/memcache_token.o $(FUZZ_OBJ)/memcache_req.o \
	$(FUZZ_OBJ)/memcache_rsp.o $(FUZZ_OBJ)/memcache_meta.o $(FUZZ_OBJ)/memcache_frag.o $(FUZZ_OBJ)/memcache_fanout.o $(FUZZ_OBJ)/memcache_proto.o \
	$(FUZZ_OBJ)/memcache_stats.o $(FUZZ_OBJ)/memcache_bin_req.o $(FUZZ_OBJ)/memcache_bin_rsp.o \
	$(FUZZ_OBJ)/memcache_bin_local.o $(FUZZ_OBJ)/memcache_bin_fanout.o \
	$(FUZZ_OBJ)/redis_cmd.o $(FUZZ_OBJ)/redis_declared.o $(FUZZ_OBJ)/redis_req.o $(FUZZ_OBJ)/redis_rsp.o \
	$(FUZZ_OBJ)/redis_frag.o $(FUZZ_OBJ)/redis_local.o $(FUZZ_OBJ)/redis_cluster.o $(FUZZ_OBJ)/redis_info.o $(FUZZ_OBJ)/redis_fanout.o \
	$(FUZZ_OBJ)/redis_admin.o $(FUZZ_OBJ)/redis_pubsub.o \
	$(FUZZ_OBJ)/redis_proto.o $(FUZZ_OBJ)/redis_redirect.o $(FUZZ_OBJ)/proto.o $(FUZZ_OBJ)/reader.o $(FUZZ_HASH_OBJS)
# the key hashes (redis_cluster.c: CLUSTER KEYSLOT, node ids; the config: hash names)
FUZZ_HASH_OBJS = $(FUZZ_OBJ)/hash.o $(FUZZ_OBJ)/md5.o $(FUZZ_OBJ)/crc.o $(FUZZ_OBJ)/fnv.o \
	$(FUZZ_OBJ)/jenkins.o $(FUZZ_OBJ)/hsieh.o $(FUZZ_OBJ)/murmur.o
# (the config's objects too: a redis pool's declared commands are checked against it, proto_ops.conf_check)
FUZZ_PROTO_OBJS = $(FUZZ_PROTO_LIB_OBJS) $(FUZZ_CONF_HASH_OBJS) $(FUZZ_OBJ)/fuzz_feed.o $(FUZZ_OBJ)/fuzz_proto.o \
	$(FUZZ_OBJ)/fuzz_bin.o
FUZZ_CONF_OBJS = $(FUZZ_OBJ)/log.o $(FUZZ_HASH_OBJS) $(FUZZ_CONF_HASH_OBJS)
# the config and the distributions (the hashes come with the protocols' objects)
FUZZ_CONF_HASH_OBJS = \
	$(FUZZ_OBJ)/conf.o $(FUZZ_OBJ)/conf_yaml.o $(FUZZ_OBJ)/conf_keys.o $(FUZZ_OBJ)/conf_tls.o $(FUZZ_OBJ)/conf_sentinel.o \
	$(FUZZ_OBJ)/conf_cluster.o $(FUZZ_OBJ)/conf_cluster_clients.o $(FUZZ_OBJ)/conf_commands.o $(FUZZ_OBJ)/conf_addr.o \
	$(FUZZ_OBJ)/dist.o \
	$(FUZZ_OBJ)/ketama.o $(FUZZ_OBJ)/modula.o $(FUZZ_OBJ)/random.o
FUZZ_MANAGE_OBJS = $(FUZZ_PROTO_LIB_OBJS) $(FUZZ_CONF_HASH_OBJS) \
	$(FUZZ_OBJ)/manage_input.o $(FUZZ_OBJ)/manage_cmd.o $(FUZZ_OBJ)/manage_http.o \
	$(FUZZ_OBJ)/manage_auth.o $(FUZZ_OBJ)/manage_health.o $(FUZZ_OBJ)/stats_json.o \
	$(FUZZ_OBJ)/stats_prom.o $(FUZZ_OBJ)/stats_snapshot.o $(FUZZ_OBJ)/text_escape.o $(FUZZ_OBJ)/hotkeys_json.o \
	$(FUZZ_OBJ)/runtime.o $(FUZZ_OBJ)/route.o $(FUZZ_OBJ)/runtime_stats.o \
	$(FUZZ_OBJ)/stats_block.o $(FUZZ_OBJ)/stats_desc.o $(FUZZ_OBJ)/stats_hist.o \
	$(FUZZ_OBJ)/stats_slowlog.o $(FUZZ_OBJ)/stats_hotkeys.o $(FUZZ_OBJ)/topo_set.o $(FUZZ_OBJ)/topo_static.o \
	$(FUZZ_OBJ)/transport_ctx.o $(FUZZ_OBJ)/transport_plain.o \
	$(FUZZ_OBJ)/transport_tls.o $(FUZZ_OBJ)/tls_ctx.o $(FUZZ_OBJ)/tls_sessions.o $(FUZZ_OBJ)/ratelimit.o \
	$(FUZZ_OBJ)/topo_sentinel.o $(FUZZ_OBJ)/topo_sentinel_replicas.o $(FUZZ_OBJ)/resp_link.o $(FUZZ_OBJ)/resp_value.o \
	$(FUZZ_OBJ)/topo_cluster.o $(FUZZ_OBJ)/topo_cluster_map.o \
	$(FUZZ_OBJ)/fuzz_manage.o $(FUZZ_OBJ)/fuzz_check_text.o $(FUZZ_OBJ)/json_check.o

# one stamp per group of objects, compiled in one clang command each (again when the lists change)
$(FUZZ_OBJ)/lib.stamp: $(FUZZ_PROTO_SRCS) $(FUZZ_CONF_SRCS) $(FUZZ_MANAGE_SRCS) $(FUZZ_HDRS) config.h tests/fuzz/fuzz.mk
	$(AM_V_CC)$(MKDIR_P) $(FUZZ_OBJ) && cd $(FUZZ_OBJ) && \
	  $(FUZZ_CC) -c $(FUZZ_CPPFLAGS) $(YAML_CFLAGS) $(SSL_CFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link \
	  $(addprefix $(abs_top_srcdir)/,$(FUZZ_PROTO_SRCS) $(FUZZ_CONF_SRCS) $(FUZZ_MANAGE_SRCS)) && touch lib.stamp
$(FUZZ_OBJ)/harness.stamp: $(FUZZ_HARNESS_SRCS) $(FUZZ_HDRS) config.h
	$(AM_V_CC)$(MKDIR_P) $(FUZZ_OBJ) && cd $(FUZZ_OBJ) && \
	  $(FUZZ_CC) -c $(FUZZ_CPPFLAGS) -I$(abs_top_srcdir)/tests/unit $(FUZZ_CFLAGS) \
	  $(addprefix $(abs_top_srcdir)/,$(FUZZ_HARNESS_SRCS)) && touch harness.stamp

FUZZ_LINK = $(FUZZ_CC) $(FUZZ_CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@
FUZZ_PROTO_DEPS = $(FUZZ_OBJ)/lib.stamp $(FUZZ_OBJ)/harness.stamp

$(FUZZ_BIN)/fuzz_redis_req: tests/fuzz/fuzz_redis_req.c $(FUZZ_PROTO_DEPS)
	$(AM_V_CCLD)$(FUZZ_LINK) $(srcdir)/tests/fuzz/fuzz_redis_req.c $(FUZZ_PROTO_OBJS) $(YAML_LIBS) -lm
$(FUZZ_BIN)/fuzz_redis_rsp: tests/fuzz/fuzz_redis_rsp.c $(FUZZ_PROTO_DEPS)
	$(AM_V_CCLD)$(FUZZ_LINK) $(srcdir)/tests/fuzz/fuzz_redis_rsp.c $(FUZZ_PROTO_OBJS) $(YAML_LIBS) -lm
$(FUZZ_BIN)/fuzz_mc_req: tests/fuzz/fuzz_mc_req.c $(FUZZ_PROTO_DEPS)
	$(AM_V_CCLD)$(FUZZ_LINK) $(srcdir)/tests/fuzz/fuzz_mc_req.c $(FUZZ_PROTO_OBJS) $(YAML_LIBS) -lm
$(FUZZ_BIN)/fuzz_mc_rsp: tests/fuzz/fuzz_mc_rsp.c $(FUZZ_PROTO_DEPS)
	$(AM_V_CCLD)$(FUZZ_LINK) $(srcdir)/tests/fuzz/fuzz_mc_rsp.c $(FUZZ_PROTO_OBJS) $(YAML_LIBS) -lm
$(FUZZ_BIN)/fuzz_mc_bin_req: tests/fuzz/fuzz_mc_bin_req.c $(FUZZ_PROTO_DEPS)
	$(AM_V_CCLD)$(FUZZ_LINK) $(srcdir)/tests/fuzz/fuzz_mc_bin_req.c $(FUZZ_PROTO_OBJS) $(YAML_LIBS) -lm
$(FUZZ_BIN)/fuzz_mc_bin_rsp: tests/fuzz/fuzz_mc_bin_rsp.c $(FUZZ_PROTO_DEPS)
	$(AM_V_CCLD)$(FUZZ_LINK) $(srcdir)/tests/fuzz/fuzz_mc_bin_rsp.c $(FUZZ_PROTO_OBJS) $(YAML_LIBS) -lm
$(FUZZ_BIN)/fuzz_conf: tests/fuzz/fuzz_conf.c $(FUZZ_OBJ)/lib.stamp
	$(AM_V_CCLD)$(FUZZ_LINK) $(YAML_CFLAGS) $(srcdir)/tests/fuzz/fuzz_conf.c \
	  $(FUZZ_CONF_OBJS) $(YAML_LIBS) -lm
$(FUZZ_BIN)/fuzz_manage_line: tests/fuzz/fuzz_manage_line.c $(FUZZ_PROTO_DEPS)
	$(AM_V_CCLD)$(FUZZ_LINK) $(srcdir)/tests/fuzz/fuzz_manage_line.c \
	  $(FUZZ_MANAGE_OBJS) $(YAML_LIBS) $(SSL_LIBS) $(LIBEVENT_LIBS) -lm -lpthread
$(FUZZ_BIN)/fuzz_manage_http: tests/fuzz/fuzz_manage_http.c $(FUZZ_PROTO_DEPS)
	$(AM_V_CCLD)$(FUZZ_LINK) $(srcdir)/tests/fuzz/fuzz_manage_http.c \
	  $(FUZZ_MANAGE_OBJS) $(YAML_LIBS) $(SSL_LIBS) $(LIBEVENT_LIBS) -lm -lpthread

fuzz: $(FUZZ_BINS)

clean-fuzz:
	-rm -rf $(FUZZ_BIN)

clean-local: clean-fuzz

.PHONY: fuzz clean-fuzz

EXTRA_DIST += tests/common/reader_scrub.h \
	tests/fuzz/fuzz.mk tests/fuzz/fuzz_check.h tests/fuzz/fuzz_feed.h \
	tests/fuzz/fuzz_feed.c tests/fuzz/fuzz_proto.c tests/fuzz/fuzz_redis_req.c \
	tests/fuzz/fuzz_redis_rsp.c tests/fuzz/fuzz_mc_req.c tests/fuzz/fuzz_mc_rsp.c \
	tests/fuzz/fuzz_bin.c tests/fuzz/fuzz_mc_bin_req.c tests/fuzz/fuzz_mc_bin_rsp.c \
	tests/fuzz/fuzz_conf.c tests/fuzz/seeds.py tests/fuzz/corpus tests/fuzz/dict \
	tests/fuzz/fuzz_manage.h tests/fuzz/fuzz_manage.c tests/fuzz/fuzz_check_text.h \
	tests/fuzz/fuzz_check_text.c tests/fuzz/fuzz_manage_line.c tests/fuzz/fuzz_manage_http.c
