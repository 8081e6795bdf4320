# src/net: how bytes move on a connection's socket (transport.h), its implementations, and the
# context each side of a pool gets from its config; above common/ and conf/.
src_libnutcrackers_la_SOURCES += \
	src/net/transport.h src/net/transport_plain.c src/net/transport_ctx.c
