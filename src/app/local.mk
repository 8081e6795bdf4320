# src/app: process set-up used by main.c: command line, daemon, pid file, the SIGSEGV handler,
# and the service manager's notifications (the master sends them).
src_libnutcrackers_la_SOURCES += \
	src/app/options.c src/app/options.h \
	src/app/daemon.c src/app/daemon.h \
	src/app/pidfile.c src/app/pidfile.h \
	src/app/fault.c src/app/fault.h \
	src/app/notify.c src/app/notify.h
