# src/net: how bytes move on a connection's socket (transport.h) and its implementations; above
# common/ only.
src_libnutcrackers_la_SOURCES += \
	src/net/transport.h src/net/transport_plain.c
