/*
 * memcache_stats.c - the reply to a memcached `stats` through the proxy, for text and binary
 * clients alike (memcache_fanout.c, memcache_bin_fanout.c): the servers' counters that add up,
 * summed, behind the proxy's own lines (pid, uptime, time, version: the lowest of the servers',
 * pointer_size, curr_connections: the pool's clients, servers, servers_answered). Each protocol
 * feeds the (name, value) pairs of each server's reply and writes the result its own way.
 *
 * Threads: no state; the worker that owns the request.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "proto/memcache.h"

/* The counters of `stats` whose sum over the servers means something for the pool. */
static const char *const mc_stats_summed[MC_NSUMMED] = {
    "curr_items", "total_items", "bytes", "limit_maxbytes", "evictions", "reclaimed",
    "expired_unfetched", "evicted_unfetched", "evicted_active",
    "cmd_get", "cmd_set", "cmd_flush", "cmd_touch", "get_hits", "get_misses", "get_expired",
    "get_flushed", "delete_misses", "delete_hits", "incr_misses", "incr_hits", "decr_misses",
    "decr_hits", "cas_misses", "cas_hits", "cas_badval", "touch_hits", "touch_misses",
    "bytes_read", "bytes_written",
};

/* -1, 0, 1 as version a is older, the same, newer than b ("1.6.21" < "1.6.3" is false). */
static int mc_version_cmp(const char *a, const char *b)
{
    while (*a != '\0' || *b != '\0') {
        char *ea, *eb;
        unsigned long x = strtoul(a, &ea, 10), y = strtoul(b, &eb, 10);
        if (x != y) return x < y ? -1 : 1;
        if (ea == a || eb == b) return strcmp(a, b) < 0 ? -1 : strcmp(a, b) > 0;
        a = *ea == '.' ? ea + 1 : ea;
        b = *eb == '.' ? eb + 1 : eb;
        if (*ea != '.' || *eb != '.') return strcmp(a, b) < 0 ? -1 : strcmp(a, b) > 0;
    }
    return 0;
}

void mc_stats_pair(struct mc_stats_sum *sum, const char *name, size_t nlen, const char *val, size_t vlen)
{
    if (nlen == 7 && memcmp(name, "version", 7) == 0) {
        char v[sizeof(sum->version)];
        size_t n = vlen < sizeof(v) - 1 ? vlen : sizeof(v) - 1;
        memcpy(v, val, n);
        v[n] = '\0';
        if (sum->version[0] == '\0' || mc_version_cmp(v, sum->version) < 0) memcpy(sum->version, v, n + 1);
        return;
    }
    for (size_t i = 0; i < MC_NSUMMED; i++) {
        uint64_t x;
        if (strlen(mc_stats_summed[i]) == nlen && memcmp(mc_stats_summed[i], name, nlen) == 0 &&
            mc_parse_u64((const uint8_t *)val, vlen, &x)) {
            if (__builtin_add_overflow(sum->v[i], x, &sum->v[i])) sum->v[i] = UINT64_MAX;
            sum->seen[i] = true;
            return;
        }
    }
}

void mc_stats_render(const struct mc_stats_sum *sum, const struct proto_view *v, uint32_t nasked,
                     mc_stats_emit emit, void *ctx)
{
    char val[32];
#define EMIT(name, fmt, x)                        \
    do {                                          \
        snprintf(val, sizeof(val), fmt, x);       \
        emit(ctx, name, val);                     \
    } while (0)
    EMIT("pid", "%ld", (long)getpid());
    EMIT("uptime", "%" PRIu64, nc_uptime_usec() / 1000000u);
    EMIT("time", "%lld", (long long)time(NULL));
    emit(ctx, "version", sum->version);
    EMIT("pointer_size", "%u", (unsigned)(sizeof(void *) * 8));
    EMIT("curr_connections", "%ld", v->pool_clients);
    EMIT("servers", "%" PRIu32, nasked);
    EMIT("servers_answered", "%" PRIu32, sum->nservers);
    for (size_t i = 0; i < MC_NSUMMED; i++)
        if (sum->seen[i]) EMIT(mc_stats_summed[i], "%" PRIu64, sum->v[i]);
#undef EMIT
}
