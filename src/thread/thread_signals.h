/*
 * thread_signals.h - the signal mask a helper thread (worker, stats) is started with.
 *
 * Threads: called around pthread_create (evloop_start, thread/evloop.h); the mask is inherited by
 * the new thread.
 *
 * Asynchronous signals (SIGTERM, SIGHUP, SIGINT, SIGPIPE, ...) are the master's: other threads
 * block them, so the master's event loop sees each one. Synchronous ones (SIGSEGV, SIGBUS,
 * SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS) stay unblocked: the kernel ends a process whose thread
 * faults with that signal blocked without running any handler, so a sanitizer could not report
 * the fault (a proxy under ASan once died of SIGSEGV with no report).
 */
#ifndef NC_THREAD_SIGNALS_H
#define NC_THREAD_SIGNALS_H

#include <signal.h>

/* Blocks the asynchronous signals in the calling thread; *old receives the previous mask (restore
 * it with pthread_sigmask(SIG_SETMASK, old, NULL) once the new thread is created). */
void thread_signals_block_async(sigset_t *old);

#endif
