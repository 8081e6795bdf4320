/*
 * master.h - the master thread: owns the listening sockets, accepts clients and hands each one to a
 * worker through the worker's inbox; handles signals; reloads the config file; starts and stops
 * the workers and the stats thread.
 *
 * Threads: master_run() runs on the main thread and returns when the process should exit.
 */
#ifndef NC_MASTER_H
#define NC_MASTER_H

#include "app/options.h"
#include "conf/conf.h"

/*
 * Runs the proxy on conf (takes a reference of its own) until SIGINT or SIGTERM.
 * Signals: SIGTTIN / SIGTTOU raise / lower the log level, SIGHUP and SIGUSR1 reopen the log file,
 * and SIGHUP (like the manage port's `reload`) also reloads the config file (notes/reload.md).
 * SIGTERM stops gracefully: no new client, and the requests clients already sent are answered
 * for at most opts->stop_grace_msec (-G) before the exit; SIGINT (or -G 0) stops at once.
 * Returns 0 after a clean shutdown, 1 when it could not start (the reason is logged).
 */
int master_run(const struct nc_options *opts, struct conf *conf);

#endif
