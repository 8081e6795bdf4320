# src/hash: the 12 key hashes (one family per file), hash_tag, and the ketama / modula / random
# distributions; pure functions and immutable tables, no dependency beyond src/common.
src_libnutcrackers_la_SOURCES += \
	src/hash/hash.c src/hash/hash.h src/hash/hash_impl.h \
	src/hash/md5.c src/hash/md5.h \
	src/hash/crc.c \
	src/hash/fnv.c \
	src/hash/jenkins.c \
	src/hash/hsieh.c \
	src/hash/murmur.c \
	src/hash/dist.c src/hash/dist.h src/hash/dist_impl.h \
	src/hash/ketama.c \
	src/hash/modula.c \
	src/hash/random.c
