# src/common: leaf helpers (log, util, clock, sockets, log rate limits); no dependency on any other module.
src_libnutcrackers_la_SOURCES += \
	src/common/log.c src/common/log.h \
	src/common/util.h src/common/clock.c src/common/clock.h \
	src/common/sock.c src/common/sock.h \
	src/common/accept_pause.c src/common/accept_pause.h \
	src/common/mem_trim.c src/common/mem_trim.h \
	src/common/ratelimit.c src/common/ratelimit.h \
	src/common/textbuf.c src/common/textbuf.h \
	src/common/secret.c src/common/secret.h
