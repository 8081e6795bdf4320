/*
 * thread_signals.c - see thread_signals.h.
 *
 * Threads: the starting thread, around pthread_create (evloop_start).
 */
#include "config.h"
#include "thread/thread_signals.h"

#include <pthread.h>

void thread_signals_block_async(sigset_t *old)
{
    static const int synchronous[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS };
    sigset_t mask;
    sigfillset(&mask);
    for (size_t i = 0; i < sizeof(synchronous) / sizeof(synchronous[0]); i++) sigdelset(&mask, synchronous[i]);
    pthread_sigmask(SIG_BLOCK, &mask, old);
}
