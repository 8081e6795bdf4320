# src/net: how bytes move on a connection's socket (transport.h), its implementations (plain,
# TLS), the TLS contexts (tls_ctx.c), the sessions kept toward servers (tls_sessions.c) and the
# context each side of a pool gets from its config; above common/ and conf/.
src_libnutcrackers_la_SOURCES += \
	src/net/transport.h src/net/transport_plain.c src/net/transport_ctx.c \
	src/net/transport_tls.h src/net/transport_tls.c \
	src/net/tls_ctx.h src/net/tls_ctx.c src/net/tls_sessions.h src/net/tls_sessions.c
