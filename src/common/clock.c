/*
 * clock.c - the process' start time (see clock.h).
 * Threads: written once by main before any other thread exists; read by any thread after.
 */
#include "config.h"
#include "common/clock.h"

static uint64_t nc_start_usec;

void nc_clock_mark_start(void)
{
    nc_start_usec = nc_usec_now();
}

uint64_t nc_uptime_usec(void)
{
    uint64_t now = nc_usec_now();
    return nc_start_usec != 0 && now > nc_start_usec ? now - nc_start_usec : 0;
}
