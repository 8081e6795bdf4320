/*
 * stats_slowlog.h - the slowlog: requests that took at least -S microseconds (read from the client
 * to reply written), with when they started, how long they took, their pool and server, command
 * and first key. One bounded ring per worker; `slowlog get` merges the rings by time.
 *
 * Threads: a ring is written by its worker only, and only for a slow request; the stats thread
 * copies, counts and resets it. Both sides take the ring's mutex, but the worker only tries it
 * (pthread_mutex_trylock): when the stats thread holds it, the entry is dropped and counted, so a
 * worker never waits for the stats thread. threshold_usec and worker are set before the worker
 * starts and read-only afterwards.
 */
#ifndef NC_STATS_SLOWLOG_H
#define NC_STATS_SLOWLOG_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stats/stats_hist.h"

#define STATS_SLOWLOG_CAP 128      /* entries kept per worker (the oldest go first) */
#define STATS_SLOWLOG_CMD_MAX 32   /* bytes of the command name kept */
#define STATS_SLOWLOG_KEY_MAX 128  /* bytes of the first key kept */

#define STATS_SLOW_NONE "-"   /* server: answered by the proxy, never sent */
#define STATS_SLOW_MANY "*"   /* server: split into fragments over several */

/*
 * What a worker reports about one slow request. cmd and key are only read during the call; pool
 * and server are names that live as long as the process (the stats registry's, see stats.h, or
 * STATS_SLOW_NONE / STATS_SLOW_MANY), so an entry still names its pool after a reload.
 */
struct stats_slow_req {
    uint64_t duration_usec;
    const char *pool;
    const char *server;
    const uint8_t *cmd;
    size_t cmd_len;
    const uint8_t *key;        /* NULL when the command has no key */
    size_t key_len;
};

struct stats_slow_entry {
    uint64_t id;               /* per worker, from 1 */
    uint64_t start_usec;       /* wall clock (usec since epoch) when the request was read */
    uint64_t duration_usec;
    uint32_t worker;
    const char *pool;
    const char *server;
    uint32_t key_len;          /* the key's full length; key holds at most STATS_SLOWLOG_KEY_MAX */
    bool has_key;
    uint8_t cmd_len;
    char cmd[STATS_SLOWLOG_CMD_MAX];
    uint8_t key[STATS_SLOWLOG_KEY_MAX];
};

struct stats_slowlog {
    pthread_mutex_t lock;
    uint64_t threshold_usec;   /* UINT64_MAX: off */
    uint32_t worker;
    uint64_t next_id;          /* under lock */
    uint32_t head;             /* under lock: next slot to write */
    uint32_t len;              /* under lock: entries held, <= STATS_SLOWLOG_CAP */
    stats_ctr dropped;         /* entries lost because the stats thread held the lock */
    struct stats_slow_entry ring[STATS_SLOWLOG_CAP];
};

/* Initialises an empty ring, off (threshold UINT64_MAX). Returns 0 or -errno. */
int stats_slowlog_init(struct stats_slowlog *sl);
void stats_slowlog_deinit(struct stats_slowlog *sl);
/* Before the worker starts: its id and the threshold (-S, usec). */
void stats_slowlog_configure(struct stats_slowlog *sl, uint32_t worker, uint64_t threshold_usec);

static inline bool stats_slowlog_wants(const struct stats_slowlog *sl, uint64_t usec)
{
    return usec >= sl->threshold_usec;
}

/* Worker: records a slow request (drops it if the stats thread holds the ring). now_wall_usec is
 * the wall clock when it finished. */
void stats_slowlog_record(struct stats_slowlog *sl, const struct stats_slow_req *r, uint64_t now_wall_usec);

/* Stats thread: entries held by every ring together; empties every ring. */
size_t stats_slowlog_len(struct stats_slowlog *const *logs, size_t n);
void stats_slowlog_reset(struct stats_slowlog *const *logs, size_t n);
/* Entries lost to contention, all rings. */
uint64_t stats_slowlog_dropped(struct stats_slowlog *const *logs, size_t n);

/*
 * Stats thread: copies the newest `max` entries of all rings into out (which holds max), newest
 * first (by start time, then worker, then id). Returns how many were copied.
 */
size_t stats_slowlog_collect(struct stats_slowlog *const *logs, size_t n, struct stats_slow_entry *out,
                             size_t max);

#endif
