/*
 * util.h - small leaf helpers shared by every module: asserts, array sizes, min/max, likely.
 * Threads: any (no state).
 */
#ifndef NC_UTIL_H
#define NC_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include "common/log.h"

#define NC_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define NC_MIN(a, b) ((a) < (b) ? (a) : (b))
#define NC_MAX(a, b) ((a) > (b) ? (a) : (b))
#define nc_likely(x) __builtin_expect(!!(x), 1)
#define nc_unlikely(x) __builtin_expect(!!(x), 0)
/* Objects written by different threads are kept this many bytes apart: two cache lines, since
 * x86 CPUs fetch lines in adjacent pairs (the spatial prefetcher) (notes/many-cores.md). */
#define NC_SHARING_SPAN 128
#define NC_ROUND_UP(n, a) (((n) + (a) - 1) / (a) * (a))

/* Asserts are for invariants only, never for network or config input. */
#ifdef NC_ASSERT_ABORT
#define NC_ASSERT(cond)                                                        \
    do {                                                                       \
        if (nc_unlikely(!(cond))) {                                            \
            log_write(LOG_CRIT, __FILE__, __LINE__, "assert '%s' failed", #cond); \
            abort();                                                           \
        }                                                                      \
    } while (0)
#else
#define NC_ASSERT(cond) do { (void)sizeof(cond); } while (0)
#endif

#define NC_NOT_REACHED() NC_ASSERT(0)

#endif
