/*
 * topo_cluster.c - the Redis Cluster topology source (notes/cluster.md): a pool with
 * `redis_cluster: true` follows its cluster's slot map. The source asks one node at a time
 * CLUSTER SHARDS (CLUSTER SLOTS where SHARDS is missing, redis < 7): at start, every second, and
 * at once when a worker asks (a -MOVED reply, a connection to a node that failed: the sink's
 * recheck eventfd), at most once per CLUSTER_RECHECK_MIN_MS however many ask. It asks the node
 * that answered last while that node is in the pool; else the pool's nodes and then its seeds in
 * turn, the next one at once when one fails. Each answer places the nodes (topo_cluster_map.c:
 * a node keeps its place) and, when a place or the slot map changed, publishes a new set with
 * the map: the workers then route each slot to its master's place, close the connections of a
 * place that now holds another node, and connect to the new one.
 *
 * While no node answers, the pool keeps the last map (logged once, and again when one answers).
 *
 * Threads: the master's event loop only (start, the link's callbacks, the timers, stop).
 */
#include "config.h"
#include "topo/topo_cluster.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "topo/resp_link.h"
#include "topo/topo_cluster_int.h"

#define CLUSTER_TICK_MS 1000u
#define CLUSTER_TIMEOUT_MS 1000u
#define CLUSTER_RECHECK_MIN_MS 100u

struct topo_source {
    const struct conf_pool *cp;
    struct event_base *base;
    struct topo_sink sink;
    struct topo_set *cur;         /* the set the pool routes by (a reference) */
    uint32_t nmasters;            /* master places: servers[0..nmasters) */
    uint32_t replica_slots;       /* replica places per master (0: the pool reads from masters) */
    struct resp_link *link;       /* to the node asked (kept while it answers) */
    char link_host[CLUSTER_HOST_MAX];
    uint16_t link_port;
    bool asking;                  /* a question is out */
    bool use_slots;               /* the nodes do not know CLUSTER SHARDS */
    uint32_t next;                /* the next candidate to ask when the link is gone */
    uint32_t tried;               /* candidates that failed in this round */
    uint64_t asked_at;            /* usec: the last question */
    bool unreachable;             /* no node answered (logged) */
    uint32_t lost_logged;         /* masters without a place, as last logged */
    struct event *tick, *recheck, *soon;
};

static void cluster_ask(struct topo_source *s);

/* ---- the answer ---- */

/* Whether servers/slots differ from the current set. */
static bool cluster_changed(const struct topo_source *s, const struct topo_server *servers, const uint16_t *slots)
{
    const struct topo_set *cur = s->cur;
    if (cur->slots == NULL || memcmp(cur->slots, slots, DIST_NSLOTS * sizeof(*slots)) != 0) return true;
    for (uint32_t i = 0; i < cur->nservers; i++) {
        const struct topo_server *a = &cur->servers[i], *b = &servers[i];
        if (a->role != b->role || a->addr.port != b->addr.port || strcmp(a->addr.host, b->addr.host) != 0) return true;
    }
    return false;
}

/* Logs what changed between the current set and the new one. */
static void cluster_log_change(const struct topo_source *s, const struct topo_set *next)
{
    uint32_t moved = 0;
    for (uint32_t k = 0; s->cur->slots != NULL && k < DIST_NSLOTS; k++) moved += s->cur->slots[k] != next->slots[k];
    for (uint32_t i = 0; i < next->nservers; i++) {
        const struct topo_server *a = &s->cur->servers[i], *b = &next->servers[i];
        if (a->addr.port == b->addr.port && a->role == b->role && strcmp(a->addr.host, b->addr.host) == 0) continue;
        log_notice("pool '%s': %s: %s %s (was %s)", s->cp->name, b->name, b->role == TOPO_ROLE_MASTER ? "master" : "replica",
                   b->addr.port != 0 ? b->addr.text : "(none)", a->addr.port != 0 ? a->addr.text : "(none)");
    }
    if (s->cur->slots == NULL) log_notice("pool '%s': cluster slot map learned from %s:%u", s->cp->name, s->link_host,
                                          (unsigned)s->link_port);
    else if (moved > 0) log_notice("pool '%s': %u slots changed hands (asked %s:%u)", s->cp->name, moved, s->link_host,
                                   (unsigned)s->link_port);
}

/* Places the nodes of m and publishes the new set when anything changed. */
static void cluster_apply(struct topo_source *s, const struct cluster_map *m)
{
    uint32_t n = s->cur->nservers;
    struct topo_server *servers = calloc(n ? n : 1, sizeof(*servers));
    char(*texts)[CLUSTER_HOST_MAX + 8] = calloc(n ? n : 1, sizeof(*texts));
    uint16_t *slots = malloc(DIST_NSLOTS * sizeof(*slots));
    struct topo_set *set = NULL;
    if (servers == NULL || texts == NULL || slots == NULL) goto oom;
    uint32_t lost = cluster_places(s->cur, s->nmasters, s->replica_slots, m, servers, texts, slots);
    if (lost != s->lost_logged && lost > 0)
        log_error("pool '%s': the cluster has %u masters more than the pool's %u places: their slots are not served",
                  s->cp->name, lost, s->nmasters);
    s->lost_logged = lost;
    if (cluster_changed(s, servers, slots)) {
        set = topo_set_create(servers, n);
        if (set == NULL) goto oom;
        set->slots = slots;
        slots = NULL;
        cluster_log_change(s, set);
        topo_set_put(s->cur);
        s->cur = topo_set_ref(set);
        s->sink.publish(s->sink.arg, set);
    }
    free(servers);
    free(texts);
    free(slots);
    return;
oom:
    log_error("pool '%s': out of memory: its cluster map stays as it was", s->cp->name);
    free(servers);
    free(texts);
    free(slots);
}

/* The round ended with an answer (true) or with none from any node. */
static void cluster_round_done(struct topo_source *s, bool answered, uint32_t nodes)
{
    s->asking = false;
    s->tried = 0;
    if (s->sink.up != NULL) atomic_store(s->sink.up, answered ? nodes : 0);
    if (!answered && !s->unreachable)
        log_warn("pool '%s': no cluster node answers: the slot map stays as last known", s->cp->name);
    else if (answered && s->unreachable)
        log_notice("pool '%s': a cluster node answers again (%s:%u)", s->cp->name, s->link_host, (unsigned)s->link_port);
    s->unreachable = !answered;
}

/* The link failed or its node gave no map: the next candidate now, or the round ends. */
static void cluster_next(struct topo_source *s, const char *why)
{
    log_info("pool '%s': cluster node %s:%u: %s", s->cp->name, s->link_host, (unsigned)s->link_port, why);
    if (s->link != NULL) resp_link_free_later(s->link);
    s->link = NULL;
    s->asking = false;
    s->tried++;
    s->next++;
    if (s->tried >= s->cur->nservers + s->cp->nseeds) {
        cluster_round_done(s, false, 0);
        return;
    }
    cluster_ask(s);
}

static void cluster_on_reply(void *arg, struct resp_link *k, const struct resp_value *v);

static void cluster_send(struct topo_source *s)
{
    static const char *const shards[] = { "CLUSTER", "SHARDS" }, *const slots[] = { "CLUSTER", "SLOTS" };
    if (resp_link_send(s->link, 2, s->use_slots ? slots : shards, cluster_on_reply, s) < 0)
        cluster_next(s, "out of memory");
}

static void cluster_on_reply(void *arg, struct resp_link *k, const struct resp_value *v)
{
    struct topo_source *s = arg;
    if (k != s->link) return; /* a link given up */
    if (v == NULL) {
        cluster_next(s, "no answer");
        return;
    }
    if (v->type == RESP_ERROR) {
        if (!s->use_slots && strstr(v->str, "nknown subcommand") != NULL) { /* redis < 7 */
            s->use_slots = true;
            cluster_send(s);
            return;
        }
        log_warn("pool '%s': cluster node %s:%u: %s", s->cp->name, s->link_host, (unsigned)s->link_port, v->str);
        cluster_next(s, "an error");
        return;
    }
    struct cluster_map m;
    int rc = s->use_slots ? cluster_map_from_slots(v, &m) : cluster_map_from_shards(v, &m);
    if (rc < 0) {
        cluster_next(s, "an answer that is not a cluster map");
        return;
    }
    cluster_apply(s, &m);
    cluster_round_done(s, true, m.n);
    cluster_map_free(&m);
}

static void cluster_on_auth(void *arg, struct resp_link *k, const struct resp_value *v)
{
    struct topo_source *s = arg;
    if (k != s->link || v == NULL || v->type != RESP_ERROR) return; /* a failure comes with the next reply */
    log_warn("pool '%s': cluster node %s:%u: AUTH: %s", s->cp->name, s->link_host, (unsigned)s->link_port, v->str);
}

static void cluster_link_closed(void *arg, struct resp_link *k, const char *why)
{
    struct topo_source *s = arg;
    (void)why;
    if (k != s->link) return;
    resp_link_free_later(k);
    s->link = NULL;
}

static const struct resp_link_cbs cluster_link_cbs = {
    .on_ready = NULL, .on_push = NULL, .on_close = cluster_link_closed,
};

/* Candidate i (mod their number): the pool's nodes (masters first), then its seeds. */
static const struct conf_addr *cluster_candidate(const struct topo_source *s, uint32_t i)
{
    uint32_t n = 0;
    for (uint32_t k = 0; k < s->cur->nservers; k++) n += !topo_slot_empty(s->cur, k);
    i %= n + (uint32_t)s->cp->nseeds;
    for (uint32_t k = 0; k < s->cur->nservers; k++) {
        if (topo_slot_empty(s->cur, k)) continue;
        if (i-- == 0) return &s->cur->servers[k].addr;
    }
    return &s->cp->seeds[i].addr;
}

/* Whether host:port holds a place of the current set. */
static bool cluster_in_pool(const struct topo_source *s, const char *host, uint16_t port)
{
    for (uint32_t k = 0; k < s->cur->nservers; k++) {
        const struct conf_addr *a = &s->cur->servers[k].addr;
        if (a->port == port && strcmp(a->host, host) == 0) return true;
    }
    return false;
}

/* Asks a node for the map: the one asked last while it holds a place, else the next candidate. */
static void cluster_ask(struct topo_source *s)
{
    if (s->asking) return;
    s->asked_at = nc_usec_now();
    if (s->link != NULL && !cluster_in_pool(s, s->link_host, s->link_port)) {
        resp_link_free(s->link);
        s->link = NULL;
    }
    s->asking = true;
    if (s->link == NULL) {
        const struct conf_addr *a = cluster_candidate(s, s->next);
        char why[128];
        snprintf(s->link_host, sizeof(s->link_host), "%s", a->host);
        s->link_port = a->port;
        s->link = resp_link_open(s->base, a->host, a->port, CLUSTER_TIMEOUT_MS, &cluster_link_cbs, s, why, sizeof(why));
        if (s->link == NULL) {
            cluster_next(s, why);
            return;
        }
        if (s->cp->redis_auth != NULL) {
            const char *argv[] = { "AUTH", s->cp->redis_auth };
            if (resp_link_send(s->link, 2, argv, cluster_on_auth, s) < 0) {
                cluster_next(s, "out of memory");
                return;
            }
        }
    }
    cluster_send(s);
}

/* ---- timers ---- */

static void cluster_on_tick(int fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    cluster_ask(arg);
}

/* A worker asks for a look now: at once, or CLUSTER_RECHECK_MIN_MS after the last question (a
 * storm of -MOVED replies makes one question). */
static void cluster_on_recheck(int fd, short what, void *arg)
{
    struct topo_source *s = arg;
    (void)what;
    topo_recheck_taken(fd);
    uint64_t since = nc_usec_now() - s->asked_at, min = (uint64_t)CLUSTER_RECHECK_MIN_MS * 1000u;
    if (since >= min && !s->asking) {
        cluster_ask(s);
        return;
    }
    if (evtimer_pending(s->soon, NULL)) return;
    uint64_t wait = since < min ? min - since : min;
    struct timeval tv = { .tv_sec = 0, .tv_usec = (suseconds_t)wait };
    evtimer_add(s->soon, &tv);
}

/* ---- the source ---- */

static void cluster_free(struct topo_source *s)
{
    resp_link_free(s->link);
    if (s->tick != NULL) event_free(s->tick);
    if (s->recheck != NULL) event_free(s->recheck);
    if (s->soon != NULL) event_free(s->soon);
    topo_set_put(s->cur);
    free(s);
}

static struct topo_source *cluster_start(const struct conf_pool *cp, struct topo_set *first, struct event_base *base,
                                         const struct topo_sink *sink)
{
    struct topo_source *s = calloc(1, sizeof(*s));
    if (s == NULL) return NULL;
    s->cp = cp;
    s->base = base;
    s->sink = *sink;
    s->cur = topo_set_ref(first);
    s->nmasters = (uint32_t)(cp->nshards != 0 ? cp->nshards : cp->nservers);
    s->replica_slots = first->nservers > s->nmasters ? CONF_REPLICA_SLOTS : 0;
    s->tick = event_new(base, -1, EV_PERSIST, cluster_on_tick, s);
    s->soon = evtimer_new(base, cluster_on_tick, s);
    s->recheck = sink->recheck_fd >= 0 ? event_new(base, sink->recheck_fd, EV_READ | EV_PERSIST, cluster_on_recheck, s)
                                       : NULL;
    if (s->tick == NULL || s->soon == NULL || (sink->recheck_fd >= 0 && s->recheck == NULL)) {
        cluster_free(s);
        return NULL;
    }
    struct timeval every = { .tv_sec = CLUSTER_TICK_MS / 1000u, .tv_usec = (CLUSTER_TICK_MS % 1000u) * 1000u };
    event_add(s->tick, &every);
    if (s->recheck != NULL) event_add(s->recheck, NULL);
    event_active(s->tick, EV_TIMEOUT, 1); /* the first question now */
    return s;
}

static void cluster_stop(struct topo_source *s)
{
    if (s != NULL) cluster_free(s);
}

/* The pool's first set: its seeds in the first master places (they answer with -MOVED until the
 * map is known), every other place empty; no map yet. */
static struct topo_set *cluster_first(const struct conf_pool *cp)
{
    struct topo_set *set = topo_static_servers(cp);
    if (set == NULL) return NULL;
    for (uint32_t i = 0; i < set->nservers; i++) {
        struct topo_server *ts = &set->servers[i];
        bool seed = i < cp->nseeds && i < cp->nshards;
        if (!seed) ts->addr = (struct conf_addr){ .text = (char *)"", .host = (char *)"", .port = 0, .perm = -1 };
    }
    return set;
}

/* Each slot to the place of its master; before the first map, every slot to the first seed. */
static struct dist *cluster_build_dist(const struct conf_pool *cp, const struct topo_set *set, const bool *live)
{
    (void)cp;
    (void)live; /* a slot has one master: no other server can take its keys */
    uint32_t *owner = malloc(DIST_NSLOTS * sizeof(*owner));
    if (owner == NULL) return NULL;
    for (uint32_t k = 0; k < DIST_NSLOTS; k++) {
        uint16_t p = set->slots != NULL ? set->slots[k] : 0;
        owner[k] = p == TOPO_SLOT_NONE || p >= set->nservers || topo_slot_empty(set, p) ? DIST_NONE : p;
    }
    struct dist *d = dist_build_slots(owner);
    free(owner);
    return d;
}

const struct topo_source_ops topo_cluster_ops = {
    .name = "cluster",
    .first = cluster_first,
    .start = cluster_start,
    .stop = cluster_stop,
    .build_dist = cluster_build_dist,
    .redirects = true,
};
