/*
 * log.c - leveled logging to stderr or a file (see log.h).
 *
 * Threads: any thread may log. The level and the fd are atomics; a line is formatted into a stack
 * buffer and written with a single write(2). Only the master calls log_init/log_reopen/log_deinit;
 * log_reopen keeps the fd number (log_deinit runs once the other threads are gone).
 */
#include "config.h"
#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define LOG_LINE_MAX 2048

static _Atomic int log_cur_level = LOG_LEVEL_DEFAULT;
static _Atomic int log_fd = STDERR_FILENO;
static char *log_name; /* NULL: stderr. Written by the master only. */

static int log_open_file(const char *name)
{
    int fd = open(name, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    return fd < 0 ? -errno : fd;
}

int log_init(int level, const char *name)
{
    log_level_set(level);
    free(log_name);
    log_name = NULL;
    if (name == NULL || name[0] == '\0' || strcmp(name, "stderr") == 0) {
        atomic_store(&log_fd, STDERR_FILENO);
        return 0;
    }
    int fd = log_open_file(name);
    if (fd < 0) return fd;
    log_name = strdup(name);
    if (log_name == NULL) {
        close(fd);
        return -ENOMEM;
    }
    atomic_store(&log_fd, fd);
    return 0;
}

void log_deinit(void)
{
    int fd = atomic_exchange(&log_fd, STDERR_FILENO);
    if (fd != STDERR_FILENO) close(fd);
    free(log_name);
    log_name = NULL;
}

/* The new file takes the old one's fd number (dup3): a thread writing a line at that moment writes
 * it to one file or the other, never to a closed (or reused) descriptor. */
int log_reopen(void)
{
    if (log_name == NULL) return 0;
    int fd = log_open_file(log_name);
    if (fd < 0) return fd;
    int cur = atomic_load(&log_fd);
    int rc = dup3(fd, cur, O_CLOEXEC) < 0 ? -errno : 0;
    close(fd);
    return rc;
}

void log_level_set(int level)
{
    if (level < LOG_LEVEL_MIN) level = LOG_LEVEL_MIN;
    if (level > LOG_LEVEL_MAX) level = LOG_LEVEL_MAX;
    atomic_store_explicit(&log_cur_level, level, memory_order_relaxed);
}

void log_level_up(void) { log_level_set(log_level_get() + 1); }
void log_level_down(void) { log_level_set(log_level_get() - 1); }

int log_level_get(void)
{
    return atomic_load_explicit(&log_cur_level, memory_order_relaxed);
}

bool log_enabled(int level)
{
    return level <= atomic_load_explicit(&log_cur_level, memory_order_relaxed);
}

static void log_emit(const char *buf, size_t len)
{
    int fd = atomic_load_explicit(&log_fd, memory_order_relaxed);
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            return;
        }
        buf += n;
        len -= (size_t)n;
    }
}

/* The severity word of each level, as lines carry it (twemproxy's level names). */
static const char *const log_level_names[LOG_LEVEL_MAX + 1] = {
    [LOG_EMERG] = "EMERG", [LOG_ALERT] = "ALERT", [LOG_CRIT] = "CRIT", [LOG_ERR] = "ERROR",
    [LOG_WARN] = "WARN", [LOG_NOTICE] = "NOTICE", [LOG_INFO] = "INFO", [LOG_DEBUG] = "DEBUG",
    [LOG_VERB] = "VERB", [LOG_VVERB] = "VVERB", [LOG_VVVERB] = "VVVERB", [LOG_PVERB] = "PVERB",
};

const char *log_level_name(int level)
{
    if (level < LOG_LEVEL_MIN) level = LOG_LEVEL_MIN;
    if (level > LOG_LEVEL_MAX) level = LOG_LEVEL_MAX;
    return log_level_names[level];
}

/* "[2026-11-24 18:34:32.389 +0000] NOTICE file.c:12 text": local time with its UTC offset */
void log_write(int level, const char *file, int line, const char *fmt, ...)
{
    char buf[LOG_LINE_MAX];
    char zone[8];
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    localtime_r(&tv.tv_sec, &tm);
    size_t n = strftime(buf, sizeof(buf), "[%Y-%m-%d %H:%M:%S", &tm);
    if (strftime(zone, sizeof(zone), "%z", &tm) == 0) snprintf(zone, sizeof(zone), "+0000");
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    int w = snprintf(buf + n, sizeof(buf) - n, ".%03ld %s] %s %s:%d ", (long)(tv.tv_usec / 1000), zone,
                     log_level_name(level), base, line);
    if (w > 0) n += (size_t)w < sizeof(buf) - n ? (size_t)w : sizeof(buf) - n - 1;
    va_list ap;
    va_start(ap, fmt);
    w = vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
    va_end(ap);
    if (w > 0) n += (size_t)w < sizeof(buf) - n ? (size_t)w : sizeof(buf) - n - 1;
    if (n >= sizeof(buf) - 1) n = sizeof(buf) - 2;
    buf[n++] = '\n';
    log_emit(buf, n);
}

void log_printable(char *dst, size_t n, const void *src, size_t len)
{
    const unsigned char *s = src;
    size_t i = 0;
    for (; s != NULL && i < len && i + 1 < n; i++) dst[i] = s[i] >= 0x20 && s[i] < 0x7f ? (char)s[i] : '?';
    dst[i] = '\0';
}

void log_write_safe(const char *msg)
{
    log_emit(msg, strlen(msg));
}
