/*
 * daemon.h - detaching from the terminal for `-d`.
 *
 * Threads: the main thread, before any other thread is started (fork keeps only the caller).
 */
#ifndef NC_DAEMON_H
#define NC_DAEMON_H

#include <stdbool.h>

/*
 * Turns the process into a daemon: fork, setsid, fork again (so it can never reacquire a
 * terminal), chdir "/", umask 0, an empty signal mask, stdin and stdout on /dev/null, and stderr
 * too unless keep_stderr (the log goes to stderr). Returns 0 in the daemon. The original process
 * stays in the foreground until the daemon calls daemon_started() (it then exits 0), or dies
 * without it, or 30 s pass (it then exits 1), so a launcher sees a failed start in the exit
 * status. Returns -errno, in the original process, if nothing could be done.
 */
int daemon_detach(bool keep_stderr);

/* Tells the launcher waiting since daemon_detach() that the daemon is up (every listener and the
 * manage port): it exits 0. Nothing when not daemonized, or after the first call. */
void daemon_started(void);

/*
 * Returns a malloc'ed absolute form of path (relative to the current directory): the daemon runs
 * in "/", so files it reopens or removes later (log, pid file, config) need absolute names.
 * NULL on allocation failure or if the current directory is unknown.
 */
char *daemon_abspath(const char *path);

#endif
