/*
 * clock.h - monotonic and wall clocks in microseconds, and the process' uptime.
 * Threads: any (the start time is written once, before any thread starts, and only read after).
 */
#ifndef NC_CLOCK_H
#define NC_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t nc_usec_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static inline uint64_t nc_usec_wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Records now as the process' start (main, before the threads start). */
void nc_clock_mark_start(void);
/* Monotonic usec since nc_clock_mark_start (0 when it was not called). */
uint64_t nc_uptime_usec(void);

#endif
