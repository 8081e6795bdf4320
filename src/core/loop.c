/*
 * loop.c - a worker's core context (see loop.h): its pools and their periodic trim (which also
 * looks at -M, client_mem.h), the sweep for idle clients (client_idle_timeout), the loop's passes
 * (libevent once, the batch wait when a write goes to a busy peer (batch_wait.h), then the flush
 * queue: loop_pass, loop_run), reloads and the reaping of old generations, and the hand-over of
 * new clients.
 *
 * Threads: loop_init/loop_deinit run on the master (before the loop's thread starts, after it
 * stopped), loop_drained on any thread; everything else on the loop's own thread.
 */
#include "config.h"
#include "core/loop.h"

#include <errno.h>
#include <event2/event.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/mem_trim.h"
#include "core/client.h"
#include "core/batch_wait.h"
#include "core/client_mem.h"
#include "core/flush_hold.h"
#include "core/park.h"
#include "core/redirect.h"
#include "core/runtime.h"
#include "net/transport.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LOOP_UNDER_ASAN 1 /* clang */
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(LOOP_UNDER_ASAN)
/* Under ASan nothing is pooled: a msg or chunk used after going back to its pool is invisible to
 * ASan while it sits there; with every put a real free(), such a use is reported. */
#define LOOP_MBUF_FREE_MAX 0
#define LOOP_MSG_FREE_MAX 0
#else
#define LOOP_MBUF_FREE_MAX 256  /* free chunks kept per loop; more go back to the allocator */
/* Free msgs kept per loop. A pipelined multi-key load has 10 msgs per MGET in flight (the request,
 * 4 fragments, their replies, the client's reply: 8,000 at 50 clients x 16 MGETs), and a pass that
 * flushes the clients' held pipelines gives back thousands at once; past this the rest went to
 * free() and came back by calloc() and realloc() within the millisecond (notes/msg-reuse.md). A
 * pooled msg is ~0.3-1 KB with its arrays and own chunk; those unused for a second are trimmed. */
#define LOOP_MSG_FREE_MAX 16384
#endif
#define LOOP_TRIM_SEC 1  /* how often free chunks unused since the last time are released */
#define LOOP_IDLE_MIN_USEC 50000u   /* idle clients are looked for at most this often */
#define LOOP_IDLE_MAX_USEC 1000000u /* and at least this often, while some pool has a timeout */
#define LOOP_KEEP_MIN 16
#define LOOP_KEEP_MIN_MSGS 256
/* What the loop's clients hold fell by this much from its highest level since the last such
 * fall: given back to the system too (see loop_on_trim). */
#define LOOP_TRIM_FELL (8 << 20)

/* After a burst, memory goes back to its baseline: every second, the free chunks and msgs that
 * stayed unused for the whole second (beyond a few) are returned, and malloc gives the pages
 * back. Under a steady load the pools keep what its peaks take: freeing what is free at the
 * moment of the tick would allocate it again within the second (and malloc_trim takes every
 * arena's lock). The pools keep at most LOOP_MBUF_FREE_MAX free chunks, so memory that clients
 * gave back beyond that (closed for -M, or gone while others still hold much) went to the
 * allocator, which keeps the pages; a fall of LOOP_TRIM_FELL in what the clients hold trims too. */
static void loop_on_trim(int fd, short what, void *arg)
{
    struct loop *l = arg;
    (void)fd;
    (void)what;
    loop_reap_later(l); /* an old generation waiting for its server connections to drain */
    client_mem_check(l); /* the proxy over -M seen by a worker whose own sum did not move; and
                          * mem_trim_mark brought up to date */
    bool fell = l->mem_trim_mark - l->mem_held >= LOOP_TRIM_FELL;
    if (fell) l->mem_trim_mark = l->mem_held;
    uint32_t freed = mbuf_pool_trim_idle(&l->mbufs, LOOP_KEEP_MIN);
    freed += msg_pool_trim_idle(&l->msgs, LOOP_KEEP_MIN_MSGS);
    if (freed != 0 || fell) mem_trim(); /* mem_trim_init ran before the loops' threads started */
}

/* Closes the clients idle past their pool's client_idle_timeout (client_idle_check). */
static void loop_on_idle(int fd, short what, void *arg)
{
    struct loop *l = arg;
    (void)fd;
    (void)what;
    uint64_t now = nc_usec_now();
    struct conn *c = TAILQ_FIRST(&l->clients);
    while (c != NULL) {
        struct conn *next = TAILQ_NEXT(c, link);
        client_idle_check(c, now);
        c = next;
    }
}

/* Looks for idle clients a quarter of the shortest client_idle_timeout of the current generation
 * apart (within LOOP_IDLE_MIN_USEC..LOOP_IDLE_MAX_USEC), or not at all without one; a pool whose
 * clients have a handshake counts with CLIENT_HANDSHAKE_LIMIT_MS. */
static void loop_idle_arm(struct loop *l)
{
    int64_t shortest = 0;
    for (size_t i = 0; i < l->gen->npools; i++) {
        const struct pool_rt *p = &l->gen->pools[i];
        int64_t t = p->cp->client_idle_timeout;
        if (transport_ctx_has_handshake(p->shared->client_tp) && (t <= 0 || t > CLIENT_HANDSHAKE_LIMIT_MS))
            t = CLIENT_HANDSHAKE_LIMIT_MS;
        if (t > 0 && (shortest == 0 || t < shortest)) shortest = t;
    }
    uint64_t every = (uint64_t)shortest * 1000u / 4;
    if (every < LOOP_IDLE_MIN_USEC) every = LOOP_IDLE_MIN_USEC;
    if (every > LOOP_IDLE_MAX_USEC) every = LOOP_IDLE_MAX_USEC;
    if (shortest == 0) every = 0;
    if (every == l->idle_every_usec) return;
    l->idle_every_usec = every;
    if (l->idle_ev == NULL && every != 0)
        l->idle_ev = event_new(l->base, -1, EV_PERSIST, loop_on_idle, l);
    if (l->idle_ev == NULL && every != 0) {
        log_error("worker %u: out of memory: client_idle_timeout is not applied", l->id);
        l->idle_every_usec = 0;
        return;
    }
    if (l->idle_ev == NULL) return;
    event_del(l->idle_ev);
    struct timeval tv = { .tv_sec = (time_t)(every / 1000000u), .tv_usec = (suseconds_t)(every % 1000000u) };
    if (every != 0) event_add(l->idle_ev, &tv);
}

/* Frees the old generations nothing uses any more (outside any connection's callback: freeing a
 * generation may close server connections). */
static void loop_on_reap(int fd, short what, void *arg)
{
    struct loop *l = arg;
    (void)fd;
    (void)what;
    struct gen *g = TAILQ_FIRST(&l->gens);
    while (g != NULL) {
        struct gen *next = TAILQ_NEXT(g, link);
        if (gen_idle(g)) {
            log_debug(LOG_INFO, "worker %u: config generation %lu no longer used: freed", l->id,
                      (unsigned long)g->rt->generation);
            gen_destroy(g);
        }
        g = next;
    }
}

void loop_reap_later(struct loop *l)
{
    if (l->reap_ev != NULL && TAILQ_FIRST(&l->gens) != l->gen) event_active(l->reap_ev, EV_TIMEOUT, 1);
}

void loop_reload(struct loop *l, struct runtime *rt)
{
    uint64_t generation = rt->generation;
    struct gen *g = gen_create(l, rt);
    if (g == NULL) {
        log_error("worker %u: out of memory for config generation %lu: still serving generation %lu",
                  l->id, (unsigned long)generation, (unsigned long)l->gen->rt->generation);
        return;
    }
    l->gen = g;
    struct conn *c = TAILQ_FIRST(&l->clients);
    while (c != NULL) {
        struct conn *next = TAILQ_NEXT(c, link);
        client_on_reload(c);
        c = next;
    }
    gen_preconnect(g);
    loop_idle_arm(l);
    loop_reap_later(l);
}

void loop_drain(struct loop *l)
{
    l->draining = true;
    struct conn *c = TAILQ_FIRST(&l->clients);
    while (c != NULL) {
        struct conn *next = TAILQ_NEXT(c, link);
        client_drain(c);
        c = next;
    }
    if (l->nclients == 0) atomic_store_explicit(&l->drained, true, memory_order_release);
}

bool loop_drained(struct loop *l)
{
    return atomic_load_explicit(&l->drained, memory_order_acquire);
}

int loop_take_client(struct loop *l, uint64_t generation, uint32_t pool, int fd)
{
    struct gen *g = l->gen;
    if (g->rt->generation != generation) {
        /* only when this loop could not build that generation (out of memory) */
        TAILQ_FOREACH(g, &l->gens, link)
        {
            if (g->rt->generation == generation) break;
        }
    }
    if (g == NULL || pool >= g->npools) {
        log_warn("worker %u: a client of config generation %lu it does not have: closed", l->id,
                 (unsigned long)generation);
        close(fd);
        return -ENOENT;
    }
    int rc = client_accept(l, &g->pools[pool], fd);
    if (rc < 0) log_warn("worker %u: cannot take a client: out of memory", l->id);
    return rc;
}

int loop_init(struct loop *l, uint32_t id, struct event_base *base, struct runtime *rt,
              struct stats_worker *stats, size_t mbuf_size)
{
    memset(l, 0, sizeof(*l));
    atomic_init(&l->drained, false);
    l->id = id;
    l->base = base;
    l->stats = stats;
    feature_install(l, &feature_table_none); /* the thread layer installs the real table */
    client_mem_loop_init(l, NULL);            /* and -M (client_mem_loop_init again) */
    TAILQ_INIT(&l->clients);
    TAILQ_INIT(&l->flushq);
    TAILQ_INIT(&l->parked);
    TAILQ_INIT(&l->redirecting);
    TAILQ_INIT(&l->gens);
    TAILQ_INIT(&l->backends);
    mbuf_pool_init(&l->mbufs, mbuf_size, LOOP_MBUF_FREE_MAX);
    msg_pool_init(&l->msgs, LOOP_MSG_FREE_MAX);
    if (flush_hold_init(l) < 0) return -ENOMEM;
    l->gen = gen_create(l, rt);
    if (l->gen == NULL) return -ENOMEM;
    l->reap_ev = event_new(base, -1, 0, loop_on_reap, l);
    if (l->reap_ev == NULL) return -ENOMEM;
    struct timeval every = { .tv_sec = LOOP_TRIM_SEC };
    l->trim_ev = event_new(base, -1, EV_PERSIST, loop_on_trim, l);
    if (l->trim_ev == NULL || event_add(l->trim_ev, &every) < 0) return -ENOMEM;
    loop_idle_arm(l);
    return 0;
}

void loop_start(struct loop *l)
{
    batch_wait_thread_init(l);
    gen_preconnect(l->gen);
}

void loop_routes_changed(struct loop *l)
{
    l->moved_pending = false;
    struct gen *g;
    TAILQ_FOREACH(g, &l->gens, link)
    {
        for (size_t i = 0; i < g->npools; i++) pool_rt_refresh_moved(&g->pools[i]);
    }
}

int loop_pass(struct loop *l, bool nonblock)
{
    int flags = EVLOOP_ONCE | (nonblock || !TAILQ_EMPTY(&l->flushq) ? EVLOOP_NONBLOCK : 0);
    int rc = event_base_loop(l->base, flags);
    if (!nonblock) batch_wait_run(l);
    /* before the writes: what this pass queued for a server that moved is not written there */
    if (l->moved_pending) loop_routes_changed(l);
    conn_flush_queue(l);
    return rc;
}

void loop_run(struct loop *l)
{
    while (loop_pass(l, false) == 0 && !l->stopping) {
    }
}

void loop_stop(struct loop *l)
{
    l->stopping = true;
    event_base_loopbreak(l->base);
}

void loop_deinit(struct loop *l)
{
    struct conn *c;
    park_release_all(l); /* before the clients: parked requests are theirs */
    redirect_release_all(l);
    while ((c = TAILQ_FIRST(&l->clients)) != NULL) client_close(c);
    feature_loop_deinit(l); /* after the clients: what they waited for is orphaned */
    flush_hold_deinit(l);
    struct gen *g;
    l->gen = NULL;
    while ((g = TAILQ_FIRST(&l->gens)) != NULL) gen_destroy(g);
    if (l->trim_ev) event_free(l->trim_ev);
    l->trim_ev = NULL;
    if (l->idle_ev) event_free(l->idle_ev);
    l->idle_ev = NULL;
    client_mem_loop_deinit(l);
    if (l->reap_ev) event_free(l->reap_ev);
    l->reap_ev = NULL;
    l->stats = NULL; /* the master's */
    msg_pool_deinit(&l->msgs);
    mbuf_pool_deinit(&l->mbufs);
}

void loop_arm_earliest(struct event *ev, const struct msg_tqh *list)
{
    const struct msg *req;
    uint64_t due = UINT64_MAX;
    TAILQ_FOREACH(req, list, server_link)
    {
        if (req->t_sent < due) due = req->t_sent;
    }
    if (due == UINT64_MAX || ev == NULL) return;
    uint64_t now = nc_usec_now();
    uint64_t wait = due > now ? due - now : 0;
    struct timeval tv = { .tv_sec = (time_t)(wait / 1000000u), .tv_usec = (suseconds_t)(wait % 1000000u) };
    evtimer_add(ev, &tv);
}
