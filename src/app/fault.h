/*
 * fault.h - SIGSEGV, as twemproxy handles it: a line naming the signal goes to the log, then the
 * process dies of it (and dumps core where the limit allows). A real fault names its address; a
 * SIGSEGV sent by kill(1) names the sender. After the line, a real fault goes on to the handler
 * that was there before (a sanitizer's, which reports where it was), a sent one to the default
 * action.
 *
 * Threads: installed by the main thread before any other thread starts; the handler runs on the
 * thread that faulted, or on any thread that leaves SIGSEGV unblocked (all of ours:
 * thread/thread_signals.h) for a sent one, and does only async-signal-safe things.
 */
#ifndef NC_FAULT_H
#define NC_FAULT_H

/* Installs the SIGSEGV handler. Returns 0 or -errno. */
int fault_install(void);

#endif
