/*
 * fault.c - the SIGSEGV handler (see fault.h).
 *
 * Threads: fault_prev is written once by the main thread before the other threads start, and
 * only read afterwards (by the handler, on any thread).
 */
#include "config.h"
#include "app/fault.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/log.h"

static struct sigaction fault_prev; /* SIGSEGV's action before ours (a sanitizer's, or the default) */

/* The text of the line, built without stdio or allocation. */
struct fault_text {
    char p[160];
    size_t n;
};

static void fault_add(struct fault_text *t, const char *s)
{
    while (*s != '\0' && t->n + 1 < sizeof(t->p)) t->p[t->n++] = *s++;
    t->p[t->n] = '\0';
}

static void fault_add_num(struct fault_text *t, uintptr_t v, unsigned base)
{
    char d[2 * sizeof(v) * 4];
    size_t i = 0;
    do {
        d[i++] = "0123456789abcdef"[v % base];
        v /= base;
    } while (v > 0 && i < sizeof(d));
    if (base == 16) fault_add(t, "0x");
    while (i > 0 && t->n + 1 < sizeof(t->p)) t->p[t->n++] = d[--i];
    t->p[t->n] = '\0';
}

static bool fault_prev_is_handler(void)
{
    if (fault_prev.sa_flags & SA_SIGINFO) return fault_prev.sa_sigaction != NULL;
    return fault_prev.sa_handler != SIG_DFL && fault_prev.sa_handler != SIG_IGN;
}

static void fault_on_segv(int signo, siginfo_t *si, void *uctx)
{
    /* kill(2), tgkill(2), sigqueue(3) set a code <= 0 (SI_USER, SI_TKILL, SI_QUEUE) */
    bool sent = si == NULL || si->si_code <= 0;
    struct fault_text t = { .n = 0 };
    fault_add(&t, "signal 11 (SIGSEGV): ");
    if (sent && si != NULL) {
        fault_add(&t, "sent by pid ");
        fault_add_num(&t, (uintptr_t)si->si_pid, 10);
    } else if (sent) {
        fault_add(&t, "sent");
    } else {
        fault_add(&t, "invalid memory access at ");
        fault_add_num(&t, (uintptr_t)si->si_addr, 16);
    }
    fault_add(&t, ", dumping core");
    log_write_safe(LOG_CRIT, __FILE__, __LINE__, t.p);
    if (!sent && fault_prev_is_handler()) {
        if (fault_prev.sa_flags & SA_SIGINFO) fault_prev.sa_sigaction(signo, si, uctx);
        else fault_prev.sa_handler(signo);
    }
    struct sigaction dfl = { .sa_handler = SIG_DFL };
    sigemptyset(&dfl.sa_mask);
    sigaction(SIGSEGV, &dfl, NULL);
    /* a fault returns to the faulting instruction, which faults again with the default action; a
     * sent signal is sent again, delivered once this handler returns (it is blocked until then) */
    if (sent) raise(SIGSEGV);
}

int fault_install(void)
{
    struct sigaction sa = { .sa_sigaction = fault_on_segv, .sa_flags = SA_SIGINFO | SA_ONSTACK };
    sigemptyset(&sa.sa_mask);
    return sigaction(SIGSEGV, &sa, &fault_prev) < 0 ? -errno : 0;
}
