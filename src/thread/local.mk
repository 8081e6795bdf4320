# src/thread: the master (listeners, accept, signals, reload), the workers and their inboxes, the
# stats thread, and what these event-loop threads set up alike (evloop, thread_signals).
src_libnutcrackers_la_SOURCES += \
	src/thread/evloop.c src/thread/evloop.h \
	src/thread/inbox.c src/thread/inbox.h \
	src/thread/master.c src/thread/master.h \
	src/thread/master_listen.c src/thread/master_reload.c src/thread/master_signal.c \
	src/thread/master_int.h \
	src/thread/reload_req.c src/thread/reload_req.h \
	src/thread/stats_thread.c src/thread/stats_thread.h \
	src/thread/thread_signals.c src/thread/thread_signals.h \
	src/thread/worker.c src/thread/worker.h
