# src/msg: mbuf chunks and msgs (requests/responses as span lists); what the parsers fill.
src_libnutcrackers_la_SOURCES += \
	src/msg/mbuf.c src/msg/mbuf.h \
	src/msg/msg.c src/msg/msg.h
