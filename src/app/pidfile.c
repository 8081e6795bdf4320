/*
 * pidfile.c - the `-p` pid file (see pidfile.h).
 *
 * Threads: the main thread only.
 */
#include "config.h"
#include "app/pidfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define PIDFILE_TRIES 3

void pidfile_init(struct pidfile *pf)
{
    pf->path = NULL;
    pf->fd = -1;
}

static bool pidfile_same_file(int fd, const char *path)
{
    struct stat a, b;
    if (fstat(fd, &a) < 0 || stat(path, &b) < 0) return false;
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static pid_t pidfile_read_pid(int fd)
{
    char buf[32];
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    if (n <= 0) return 0;
    buf[n] = '\0';
    char *end = NULL;
    long v = strtol(buf, &end, 10);
    return v > 0 && v <= (long)INT32_MAX ? (pid_t)v : 0;
}

/*
 * The path exists. Returns -EEXIST if a live instance holds it, 0 after removing a stale one
 * (the caller then retries the exclusive create), or another -errno.
 */
static int pidfile_clear_stale(const char *path, pid_t *holder)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return errno == ENOENT ? 0 : -errno;
    int rc = 0;
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        if (errno == EWOULDBLOCK) {
            if (holder != NULL) *holder = pidfile_read_pid(fd);
            rc = -EEXIST;
        } else {
            rc = -errno;
        }
    } else if (pidfile_same_file(fd, path) && unlink(path) < 0 && errno != ENOENT) {
        rc = -errno;
    }
    close(fd);
    return rc;
}

static int pidfile_fill(int fd)
{
    char buf[32];
    int len = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) < 0) return -errno;
    ssize_t off = 0;
    while (off < len) {
        ssize_t n = pwrite(fd, buf + off, (size_t)(len - off), off);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -errno;
        }
        off += n;
    }
    return 0;
}

int pidfile_write(struct pidfile *pf, const char *path, pid_t *holder)
{
    if (holder != NULL) *holder = 0;
    for (int i = 0; i < PIDFILE_TRIES; i++) {
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0) {
            if (errno != EEXIST) return -errno;
            int rc = pidfile_clear_stale(path, holder);
            if (rc < 0) return rc;
            continue;
        }
        int rc = flock(fd, LOCK_EX | LOCK_NB) < 0 ? -errno : pidfile_fill(fd);
        if (rc < 0) {
            unlink(path);
            close(fd);
            return rc == -EWOULDBLOCK ? -EEXIST : rc;
        }
        pf->path = strdup(path);
        if (pf->path == NULL) {
            unlink(path);
            close(fd);
            return -ENOMEM;
        }
        pf->fd = fd;
        return 0;
    }
    return -EEXIST;
}

void pidfile_remove(struct pidfile *pf)
{
    if (pf->path == NULL) return;
    if (pidfile_same_file(pf->fd, pf->path)) unlink(pf->path);
    close(pf->fd);
    free(pf->path);
    pidfile_init(pf);
}
