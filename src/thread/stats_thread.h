/*
 * stats_thread.h - the stats thread: its own event base, the manage port listener and clients,
 * and the -i timer that refreshes the cached snapshot. It reads the workers' counter blocks and
 * slowlog rings and the shared runtime; it never writes anything a worker reads, so a worker never
 * waits for it.
 *
 * Threads: stats_thread_start/reload/reload_password/stop are called by the master (start after the workers
 * started, stop before they stop); everything else runs on the stats thread.
 */
#ifndef NC_STATS_THREAD_H
#define NC_STATS_THREAD_H

#include <stdatomic.h>
#include <stdint.h>

#include "app/options.h"

struct inbox;
struct runtime;
struct stats_worker;
struct stats_thread;

/*
 * Listens on opts' manage address and port and starts the thread, rendering rt (it takes a
 * reference) and the workers' counter blocks. The manage port's `reload` is pushed to
 * master_inbox and waits for the master's answer (giving up when *stopping turns true). Returns
 * NULL after logging why.
 */
struct stats_thread *stats_thread_start(const struct nc_options *opts, struct runtime *rt,
                                        struct stats_worker *const *blocks, uint32_t nworkers,
                                        struct inbox *master_inbox, const atomic_bool *stopping);
/* Master: the stats thread renders rt from now on (it takes its own reference). */
void stats_thread_reload(struct stats_thread *st, struct runtime *rt);
/* Master, at every reload (whether the config reloads or not): reads the -K file again and hands
 * its password to the stats thread, for new `auth` commands; a file now missing, unreadable or
 * invalid keeps the password in force, with a warning naming the file (never the password).
 * Nothing without -K. */
void stats_thread_reload_password(struct stats_thread *st);
/* Stops and joins the thread, closes the port and frees everything (NULL: nothing to do). */
void stats_thread_stop(struct stats_thread *st);

#endif
