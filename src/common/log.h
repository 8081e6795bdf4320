/*
 * log.h - leveled, thread-safe logging (levels 0..11, as twemproxy's -v).
 *
 * Threads: any. The level is an atomic int read with relaxed order, so a disabled level costs one
 * load and a compare: the message is never formatted. Each line is written with one write(2), so
 * lines from different threads never interleave. log_reopen() is called by the master on SIGHUP /
 * SIGUSR1; writers see either the old or the new fd.
 *
 * A line: "[YYYY-MM-DD HH:MM:SS.mmm +hhmm] LEVEL file.c:line text", the local time with its UTC
 * offset, then the severity word (log_level_name: EMERG ALERT CRIT ERROR WARN NOTICE INFO DEBUG
 * VERB VVERB VVVERB PVERB), so `grep '] WARN '` picks one severity.
 */
#ifndef NC_LOG_H
#define NC_LOG_H

#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <time.h>

enum log_level {
    LOG_EMERG = 0, LOG_ALERT = 1, LOG_CRIT = 2, LOG_ERR = 3, LOG_WARN = 4, LOG_NOTICE = 5,
    LOG_INFO = 6, LOG_DEBUG = 7, LOG_VERB = 8, LOG_VVERB = 9, LOG_VVVERB = 10, LOG_PVERB = 11,
};
#define LOG_LEVEL_MIN LOG_EMERG
#define LOG_LEVEL_MAX LOG_PVERB
#define LOG_LEVEL_DEFAULT LOG_NOTICE

/* Opens the log: name NULL or "stderr" means standard error. Returns 0 or -errno. */
int log_init(int level, const char *name);
void log_deinit(void);
/* Reopens the log file (after rotation). Returns 0 or -errno; the old fd is kept on failure. */
int log_reopen(void);
void log_level_set(int level);
void log_level_up(void);
void log_level_down(void);
int log_level_get(void);
bool log_enabled(int level);
/* The severity word of a level (clamped to the range). */
const char *log_level_name(int level);

void log_write(int level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Copies src[0..len) into dst (size n >= 1, NUL-terminated, cut to fit) with every byte outside
 * printable ASCII written as '?': a client's bytes made safe for a log line. */
void log_printable(char *dst, size_t n, const void *src, size_t len);
/* Async-signal-safe (for a fault handler): writes one line as log_write does, whatever the level,
 * with msg as is (no formatting) and the time in UTC ("+0000": localtime_r is not
 * async-signal-safe). */
void log_write_safe(int level, const char *file, int line, const char *msg);
/* Async-signal-safe: writes "[YYYY-MM-DD HH:MM:SS.mmm +0000] " (the UTC time of sec and msec, as
 * log_write_safe's lines start) into buf (size bytes, NUL-terminated, cut to fit); returns its
 * length. */
size_t log_utc_stamp(char *buf, size_t size, time_t sec, long msec);

#define log_at(lvl, ...)                                                  \
    do {                                                                  \
        if (log_enabled(lvl)) log_write((lvl), __FILE__, __LINE__, __VA_ARGS__); \
    } while (0)

#define log_error(...)  log_at(LOG_ERR, __VA_ARGS__)
#define log_warn(...)   log_at(LOG_WARN, __VA_ARGS__)
#define log_notice(...) log_at(LOG_NOTICE, __VA_ARGS__)
#define log_info(...)   log_at(LOG_INFO, __VA_ARGS__)

#ifdef NC_DEBUG_LOG
#define log_debug(lvl, ...) log_at(lvl, __VA_ARGS__)
#else
#define log_debug(lvl, ...) do { } while (0)
#endif

#endif
