/*
 * client_mem.c - the proxy-wide cap on what clients make the proxy hold (see client_mem.h).
 *
 * Threads: every function runs on its loop's thread; client_mem_total reads the other workers'
 * gauges (relaxed atomics).
 */
#include "config.h"
#include "core/client_mem.h"

#include <errno.h>
#include <event2/event.h>
#include <stdlib.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/ratelimit.h"
#include "common/sock.h"
#include "core/client.h"
#include "core/feature.h"
#include "core/pool.h"
#include "stats/stats.h"

#define CLIENT_MEM_TICK_USEC 100000u /* while over the cap, or clients paused: the next look */
#define CLIENT_MEM_SHED_MAX 4096     /* clients one tick may look at to close */

uint64_t client_mem_total(const struct client_mem *m)
{
    int64_t sum = 0;
    for (uint32_t i = 0; i < m->nworkers; i++) sum += (int64_t)stats_ctr_get(&m->blocks[i]->client_memory);
    return sum > 0 ? (uint64_t)sum : 0;
}

/* What c holds, the request it is still sending included. */
static uint64_t client_mem_of(const struct conn *c)
{
    return c->held_bytes + c->held_partial;
}

static void client_mem_arm(struct loop *l)
{
    struct timeval tv = { .tv_sec = 0, .tv_usec = CLIENT_MEM_TICK_USEC };
    if (l->mem_ev != NULL && !evtimer_pending(l->mem_ev, NULL)) evtimer_add(l->mem_ev, &tv);
}

void client_mem_pause_big(struct conn *c)
{
    c->mem_paused = true;
    c->loop->mem_npaused++;
    conn_want_read(c, false);
    conn_watch_hangup(c, true); /* not read, its leaving is seen all the same */
}

/* Past the cap: no more reading from the clients that hold the most. */
static void client_mem_pause(struct loop *l)
{
    struct conn *c;
    TAILQ_FOREACH(c, &l->clients, link)
    {
        if (!c->mem_paused && client_mem_of(c) >= CLIENT_MEM_BIG) client_mem_pause_big(c);
    }
}

static void client_mem_shed(struct loop *l, uint64_t excess);

void client_mem_publish(struct loop *l)
{
    stats_ctr_set(&l->stats->client_memory, (uint64_t)l->mem_held);
    l->mem_published = l->mem_held;
    if (l->mem_held > l->mem_trim_mark) l->mem_trim_mark = l->mem_held;
    if (l->mem == NULL || l->mem->cap == 0) return;
    uint64_t cap = l->mem->cap, total = client_mem_total(l->mem);
    if (!l->mem_over && total > cap) {
        l->mem_over = true;
        l->mem_far = cap + cap / CLIENT_MEM_FAR;
        client_mem_pause(l); /* at once: the tick closes if that was not enough */
        client_mem_arm(l);
    } else if (l->mem_over && total > l->mem_far) {
        /* still growing although the biggest are paused: replies to requests they sent before,
         * which waiting for the tick would let in; one look per CLIENT_MEM_FAR_STEP of growth */
        l->mem_far = total + CLIENT_MEM_FAR_STEP;
        client_mem_shed(l, total - cap);
    }
}

void client_mem_check(struct loop *l)
{
    client_mem_publish(l);
}

void client_mem_gone(struct conn *c)
{
    struct loop *l = c->loop;
    l->mem_held -= (int64_t)(c->held_bytes + c->held_partial);
    c->held_bytes = 0;
    c->held_partial = 0;
    client_mem_moved(l);
}

void client_mem_partial(struct conn *c, uint64_t now)
{
    struct loop *l = c->loop;
    l->mem_held += (int64_t)now - (int64_t)c->held_partial;
    c->held_partial = (uint32_t)now;
    client_mem_moved(l);
}

/* Back under the cap: the paused clients are read again (unless something else pauses them). */
static void client_mem_resume(struct loop *l)
{
    struct conn *c;
    TAILQ_FOREACH(c, &l->clients, link)
    {
        if (!c->mem_paused) continue;
        c->mem_paused = false;
        if (!feature_blocked(c)) conn_watch_hangup(c, false); /* (a blocked client's is the feature's) */
        client_resume_reading(c);
    }
    l->mem_npaused = 0;
}

void client_mem_hangup(struct conn *c)
{
    c->mem_paused = false;
    c->loop->mem_npaused--;
    client_resume_reading(c);
}

static int client_mem_cmp(const void *a, const void *b)
{
    uint64_t x = client_mem_of(*(struct conn *const *)a), y = client_mem_of(*(struct conn *const *)b);
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Closes l's biggest clients first until what they held covers excess (logged, rate-limited).
 * Those being closed already (their close waits in the flush queue) count as given back. */
static void client_mem_shed(struct loop *l, uint64_t excess)
{
    struct conn *big[CLIENT_MEM_SHED_MAX];
    uint32_t n = 0;
    uint64_t freed = 0;
    struct conn *c;
    TAILQ_FOREACH(c, &l->clients, link)
    {
        if (c->kill) freed += client_mem_of(c);
        else if (n < CLIENT_MEM_SHED_MAX && client_mem_of(c) >= CLIENT_MEM_BIG) big[n++] = c;
    }
    qsort(big, n, sizeof(big[0]), client_mem_cmp);
    for (uint32_t i = 0; i < n && freed < excess; i++) {
        c = big[i];
        uint64_t held = client_mem_of(c);
        freed += held;
        uint64_t sup;
        if (nc_ratelimit_allow(&l->mem_log, nc_usec_now(), &sup)) {
            char addr[96];
            sock_addr_text(c->sess.fd, true, addr, sizeof(addr));
            log_warn("client %lu (%s) of pool '%s' holds %lu bytes and the proxy is over -M %lu: "
                     "closing it%s", (unsigned long)c->id, addr, c->pool->cp->name, (unsigned long)held,
                     (unsigned long)l->mem->cap, NC_RATELIMIT_NOTE(sup));
        }
        STATS_POOL_ADD(c->pool->st, client_memory_closes, 1);
        client_kill(c, ENOMEM);
    }
}

/* The tick, while over the cap or with clients paused. */
static void client_mem_on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct loop *l = arg;
    (void)fd;
    (void)what;
    client_mem_publish(l);
    uint64_t cap = l->mem->cap, total = client_mem_total(l->mem);
    if (total <= cap - cap / 10) {
        l->mem_over = false;
        if (l->mem_npaused > 0) client_mem_resume(l);
        return;
    }
    if (total > cap) {
        client_mem_shed(l, total - cap); /* still over since the pause: close the biggest */
        client_mem_pause(l);             /* and stop those that grew big meanwhile */
    }
    l->mem_far = cap + cap / CLIENT_MEM_FAR;
    client_mem_arm(l);
}

int client_mem_loop_init(struct loop *l, const struct client_mem *m)
{
    l->mem = m;
    nc_ratelimit_init(&l->mem_log, 0, 1);
    if (m == NULL || m->cap == 0) return 0;
    l->mem_ev = evtimer_new(l->base, client_mem_on_tick, l);
    return l->mem_ev != NULL ? 0 : -ENOMEM;
}

void client_mem_loop_deinit(struct loop *l)
{
    if (l->mem_ev != NULL) event_free(l->mem_ev);
    l->mem_ev = NULL;
}
