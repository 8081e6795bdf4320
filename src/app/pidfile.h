/*
 * pidfile.h - the `-p` pid file: created at start, removed at a clean exit.
 *
 * A running nutcrackers keeps its pid file open with an exclusive flock(2) for its whole life.
 * A file that exists but is not locked is stale (its process died without removing it) and is
 * replaced; a locked one belongs to a live instance and the start fails with -EEXIST. Unlike a
 * bare "pid still alive?" check this is not fooled by a recycled pid.
 *
 * Threads: the main thread only.
 */
#ifndef NC_PIDFILE_H
#define NC_PIDFILE_H

#include <sys/types.h>

struct pidfile {
    char *path; /* NULL when no pid file is held */
    int fd;     /* open and locked while held */
};

/* An empty pidfile (holds nothing). */
void pidfile_init(struct pidfile *pf);

/*
 * Creates path holding this process's pid ("<pid>\n") and keeps it locked. Returns 0, -EEXIST
 * when a live instance holds the file (*holder, if not NULL, gets the pid it contains, or 0), or
 * another -errno.
 */
int pidfile_write(struct pidfile *pf, const char *path, pid_t *holder);

/*
 * Removes the file (only if the path still names the file this process created) and releases it.
 * Safe to call on an empty pidfile.
 */
void pidfile_remove(struct pidfile *pf);

#endif
