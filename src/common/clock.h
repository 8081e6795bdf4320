/*
 * clock.h - monotonic and wall clocks in microseconds.
 * Threads: any (no state).
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

#endif
