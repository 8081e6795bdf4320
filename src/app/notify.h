/*
 * notify.h - tells the service manager (systemd's NOTIFY_SOCKET, through libsystemd's sd_notify)
 * what the process is doing: ready, reloading, the generation it serves or why a reload failed,
 * stopping. Built without libsystemd, every call does nothing (notify_start says so in the log
 * when a service manager is listening). notes/packaging.md.
 *
 * Threads: the master thread only.
 */
#ifndef NC_NOTIFY_H
#define NC_NOTIFY_H

#include <stdbool.h>
#include <stddef.h>

/* Whether this build can tell a service manager anything (it was built with libsystemd). */
bool notify_supported(void);

/* Once, before the first other call: logs a warning when NOTIFY_SOCKET is set but this build
 * cannot answer it (a Type=notify unit would wait in vain). */
void notify_start(void);

/* Every listener is bound (at start, or after a reload): READY=1 and STATUS= naming generation. */
void notify_ready(unsigned long generation, size_t npools);

/* A reload begins: RELOADING=1 with MONOTONIC_USEC= (now, CLOCK_MONOTONIC). */
void notify_reloading(void);

/* A reload failed, the old generation still serves: READY=1 and STATUS= with the reason (one
 * line; line breaks become spaces). */
void notify_reload_failed(unsigned long generation, const char *reason);

/* The process is stopping: STOPPING=1. */
void notify_stopping(void);

#endif
