/*
 * ratelimit.h - a lock-free limiter for repeated log lines: at most `burst` lines per window of
 * `interval` ms for one subject (a refused command name, a backend), the others counted and
 * reported by the first line of a later window ("N more since").
 *
 * A limiter is one 64-bit atomic word (the window's start in ms and the lines allowed in it) and
 * an atomic count of the suppressed events: any thread may call nc_ratelimit_allow() on a shared
 * limiter at once; nobody waits (a lost compare-and-swap retries against the new state).
 *
 * The default interval (nc_ratelimit_default_ms, `-L`) is set by main before any thread starts and
 * only read afterwards.
 *
 * Threads: any; a limiter is shared by every thread that logs about its subject.
 */
#ifndef NC_RATELIMIT_H
#define NC_RATELIMIT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NC_RATELIMIT_DEFAULT_MS 10000u

struct nc_ratelimit {
    _Atomic uint64_t state;      /* window start (ms) << 20 | lines allowed in that window */
    _Atomic uint64_t suppressed; /* events refused since the last line allowed in a new window */
    uint32_t interval_ms;
    uint32_t burst;              /* lines per window, >= 1 */
};

/* The interval limiters take when nc_ratelimit_init is given 0 (ms). */
extern uint32_t nc_ratelimit_default_ms;

/* A fresh limiter: its first event is allowed. interval_ms 0: the default; burst 0 is taken as 1. */
void nc_ratelimit_init(struct nc_ratelimit *rl, uint32_t interval_ms, uint32_t burst);

/*
 * One event at monotonic time now_usec: true when it may be logged. Then *suppressed is the
 * number of events refused before it (since the last allowed line that opened a window; 0 for the
 * later lines of the same window), for the line to say so. False: the event is counted.
 */
bool nc_ratelimit_allow(struct nc_ratelimit *rl, uint64_t now_usec, uint64_t *suppressed);

/* The end of a line that was allowed after suppressed others: " (N more suppressed)", or "" for
 * none. Writes into buf (size n) and returns it. */
const char *nc_ratelimit_note(char *buf, size_t n, uint64_t suppressed);
/* The same in a buffer of the calling expression, for a log call's argument. */
#define NC_RATELIMIT_NOTE(suppressed) nc_ratelimit_note((char[40]){ 0 }, 40, (suppressed))

#endif
