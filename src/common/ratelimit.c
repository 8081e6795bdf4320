/*
 * ratelimit.c - the log line limiter (see ratelimit.h): a fixed window per subject, its start and
 * its count packed in one word changed by compare-and-swap.
 *
 * Threads: any, on a shared limiter at once.
 */
#include "config.h"
#include "common/ratelimit.h"

#include <stdio.h>

#define RL_COUNT_BITS 20
#define RL_COUNT_MASK ((UINT64_C(1) << RL_COUNT_BITS) - 1)

uint32_t nc_ratelimit_default_ms = NC_RATELIMIT_DEFAULT_MS;

void nc_ratelimit_init(struct nc_ratelimit *rl, uint32_t interval_ms, uint32_t burst)
{
    atomic_init(&rl->state, 0);
    atomic_init(&rl->suppressed, 0);
    rl->interval_ms = interval_ms != 0 ? interval_ms : nc_ratelimit_default_ms;
    if (burst == 0) burst = 1;
    rl->burst = burst < RL_COUNT_MASK ? burst : (uint32_t)RL_COUNT_MASK;
}

bool nc_ratelimit_allow(struct nc_ratelimit *rl, uint64_t now_usec, uint64_t *suppressed)
{
    /* +1: a window that starts at ms 0 is not taken for the fresh state */
    uint64_t now_ms = now_usec / 1000u + 1u;
    uint64_t old = atomic_load_explicit(&rl->state, memory_order_relaxed);
    for (;;) {
        uint64_t start = old >> RL_COUNT_BITS, n = old & RL_COUNT_MASK, next;
        /* a caller whose clock reading is older than the window (read before another thread opened
         * it) is inside it */
        bool fresh = old == 0 || (now_ms >= start && now_ms - start >= rl->interval_ms);
        if (fresh) {
            next = now_ms << RL_COUNT_BITS | 1u;
        } else if (n < rl->burst) {
            next = old + 1u;
        } else {
            atomic_fetch_add_explicit(&rl->suppressed, 1, memory_order_relaxed);
            return false;
        }
        if (atomic_compare_exchange_weak_explicit(&rl->state, &old, next, memory_order_relaxed,
                                                  memory_order_relaxed)) {
            *suppressed = fresh ? atomic_exchange_explicit(&rl->suppressed, 0, memory_order_relaxed) : 0;
            return true;
        }
    }
}

const char *nc_ratelimit_note(char *buf, size_t n, uint64_t suppressed)
{
    if (suppressed == 0) snprintf(buf, n, "%s", "");
    else snprintf(buf, n, " (%llu more suppressed)", (unsigned long long)suppressed);
    return buf;
}
