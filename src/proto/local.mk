# src/proto: the protocol contract (proto.h) and the redis and memcached implementations.
src_libnutcrackers_la_SOURCES += src/proto/proto.h
