# src/thread: the master (listeners, accept, signals), the workers and their inboxes, the stats thread.
src_libnutcrackers_la_SOURCES += \
	src/thread/master.c src/thread/master.h
