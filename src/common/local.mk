# src/common: leaf helpers (log, util); no dependency on any other module.
src_libnutcrackers_la_SOURCES += \
	src/common/log.c src/common/log.h \
	src/common/util.h
