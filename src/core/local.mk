# src/core: connections, clients, servers, request dispatch; the per-generation shared runtime.
src_libnutcrackers_la_SOURCES += \
	src/core/runtime.c src/core/runtime.h \
	src/core/runtime_stats.c src/core/runtime_stats.h \
	src/core/route.c src/core/route.h \
	src/core/loop.c src/core/loop.h \
	src/core/batch_wait.c src/core/batch_wait.h \
	src/core/flush_hold.c src/core/flush_hold.h \
	src/core/pool.c src/core/pool.h \
	src/core/park.c src/core/park.h \
	src/core/redirect.c src/core/redirect.h \
	src/core/replica.c src/core/replica.h \
	src/core/conn.c src/core/conn.h \
	src/core/client.c src/core/client.h \
	src/core/client_mem.c src/core/client_mem.h \
	src/core/client_hold.c src/core/client_hold.h \
	src/core/server.c src/core/server.h \
	src/core/dedicated.c src/core/dedicated.h \
	src/core/backend.c src/core/backend.h \
	src/core/gen.c src/core/gen.h \
	src/core/request.c src/core/request.h \
	src/core/fair.c src/core/fair.h \
	src/core/feature.c src/core/feature.h \
	src/core/refused.c src/core/refused.h \
	src/core/probe.c src/core/probe.h
