# src/app: process set-up used by main.c: command line, daemon, pid file.
src_libnutcrackers_la_SOURCES += src/app/options.h
