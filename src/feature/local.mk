# src/feature: what a client may be in or ask for beyond "answer it or route it by key", attached
# to core/ through its feature table (core/feature.h): transactions and blocking commands, Pub/Sub,
# CLIENT LIST; above core/, below thread/.
src_libnutcrackers_la_SOURCES += \
	src/feature/features.c src/feature/features.h src/feature/slots.h \
	src/feature/txn.c src/feature/txn.h \
	src/feature/clientlist.c src/feature/clientlist.h \
	src/feature/pubsub.c src/feature/pubsub.h \
	src/feature/pubsub_set.c src/feature/pubsub_link.c src/feature/pubsub_int.h
