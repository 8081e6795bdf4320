/*
 * stats_thread.h - the stats thread: its own event base, the manage port listener and clients,
 * and the -i timer that refreshes the cached snapshot. It reads the workers' counter blocks and
 * slowlog rings and the shared runtime; it never writes anything a worker reads, so a worker never
 * waits for it.
 *
 * Threads: stats_thread_start/stop are called by the master (start after the workers started,
 * stop before they stop); everything else runs on the stats thread.
 */
#ifndef NC_STATS_THREAD_H
#define NC_STATS_THREAD_H

#include <stdint.h>

#include "app/options.h"

struct runtime;
struct worker;
struct stats_thread;

/* Listens on opts' manage address and port and starts the thread. Returns NULL after logging why. */
struct stats_thread *stats_thread_start(const struct nc_options *opts, const struct runtime *rt,
                                        struct worker *workers, uint32_t nworkers);
/* Stops and joins the thread, closes the port and frees everything (NULL: nothing to do). */
void stats_thread_stop(struct stats_thread *st);

#endif
