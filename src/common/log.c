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

/* A line being built in a signal handler: no stdio, no allocation. One byte is kept for the
 * line end. */
struct log_safe_buf {
    char *p;
    size_t cap, n;
};

static void log_safe_add(struct log_safe_buf *b, const char *s)
{
    while (*s != '\0' && b->n + 1 < b->cap) b->p[b->n++] = *s++;
}

/* Appends v in decimal, at least width digits. */
static void log_safe_num(struct log_safe_buf *b, unsigned long v, int width)
{
    char d[24];
    int i = 0;
    do {
        d[i++] = (char)('0' + v % 10);
        v /= 10;
    } while (v > 0);
    while (i < width && i < (int)sizeof(d)) d[i++] = '0';
    while (i > 0 && b->n + 1 < b->cap) b->p[b->n++] = d[--i];
}

/* The civil date of a day count by arithmetic only: years of 365.2425 days in 400-year eras,
 * months counted from March so that a leap day comes last. */
size_t log_utc_stamp(char *buf, size_t size, time_t sec, long msec)
{
    if (size == 0) return 0;
    struct log_safe_buf b = { .p = buf, .cap = size, .n = 0 }; /* the spare byte takes the NUL */
    unsigned long secs = sec > 0 ? (unsigned long)sec : 0, day = secs / 86400, sod = secs % 86400;
    unsigned long z = day + 719468, era = z / 146097, doe = z % 146097;
    unsigned long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned long doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
    unsigned long mday = doy - (153 * mp + 2) / 5 + 1, mon = mp < 10 ? mp + 3 : mp - 9;
    unsigned long year = yoe + era * 400 + (mon <= 2);
    const unsigned long part[] = { year, mon, mday, sod / 3600, sod / 60 % 60, sod % 60,
                                   msec >= 0 && msec < 1000 ? (unsigned long)msec : 0 };
    static const char *const before[] = { "[", "-", "-", " ", ":", ":", "." };
    for (size_t i = 0; i < sizeof(part) / sizeof(part[0]); i++) {
        log_safe_add(&b, before[i]);
        log_safe_num(&b, part[i], i == 0 ? 4 : i == 6 ? 3 : 2);
    }
    log_safe_add(&b, " +0000] ");
    buf[b.n] = '\0';
    return b.n;
}

void log_write_safe(int level, const char *file, int line, const char *msg)
{
    char buf[LOG_LINE_MAX];
    const char *base = file;
    for (const char *p = file; *p != '\0'; p++) {
        if (*p == '/') base = p + 1;
    }
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) ts.tv_sec = 0, ts.tv_nsec = 0;
    struct log_safe_buf b = { .p = buf, .cap = sizeof(buf), .n = 0 };
    b.n = log_utc_stamp(buf, sizeof(buf), ts.tv_sec, ts.tv_nsec / 1000000);
    log_safe_add(&b, log_level_name(level));
    log_safe_add(&b, " ");
    log_safe_add(&b, base);
    log_safe_add(&b, ":");
    log_safe_num(&b, line > 0 ? (unsigned long)line : 0, 1);
    log_safe_add(&b, " ");
    log_safe_add(&b, msg);
    buf[b.n++] = '\n';
    log_emit(buf, b.n);
}
