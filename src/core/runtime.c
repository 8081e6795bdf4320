/*
 * runtime.c - per-generation shared state (see runtime.h): building a generation from a conf
 * (carrying over the client counts and server health of the one it replaces), its references,
 * and backend identity across generations.
 *
 * Threads: built by the master, freed by whichever thread drops the last reference.
 */
#include "config.h"
#include "core/runtime.h"

#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/util.h"
#include "core/route.h"
#include "net/transport.h"
#include "topo/topology.h"

static bool runtime_str_eq(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

bool runtime_same_backend(const struct conf_pool *pa, const struct conf_server *a,
                          const struct conf_pool *pb, const struct conf_server *b)
{
    return strcmp(pa->name, pb->name) == 0 && strcmp(a->stats_name, b->stats_name) == 0 &&
           strcmp(a->addr.text, b->addr.text) == 0 && pa->redis == pb->redis &&
           runtime_str_eq(pa->redis_auth, pb->redis_auth) && pa->redis_db == pb->redis_db &&
           pa->server_connections == pb->server_connections;
}

struct pool_shared *runtime_pool_find(const struct runtime *rt, const char *name)
{
    for (size_t i = 0; i < rt->npools; i++) {
        if (strcmp(rt->pools[i].cp->name, name) == 0) return &rt->pools[i];
    }
    return NULL;
}

/* A server that stays across a reload keeps its failure count and ejection. */
static void runtime_inherit_health(struct pool_shared *p, const struct runtime *prev)
{
    const struct pool_shared *old = runtime_pool_find(prev, p->cp->name);
    if (old == NULL) return;
    for (size_t i = 0; i < p->cp->nservers; i++) {
        const struct conf_server *cs = &p->cp->servers[i];
        for (size_t j = 0; j < old->cp->nservers; j++) {
            const struct conf_server *os = &old->cp->servers[j];
            if (strcmp(cs->stats_name, os->stats_name) != 0 || strcmp(cs->addr.text, os->addr.text) != 0)
                continue;
            const struct server_health *oh = &old->health[j];
            atomic_store(&p->health[i].failures, atomic_load(&oh->failures));
            atomic_store(&p->health[i].failing_since, atomic_load(&oh->failing_since));
            atomic_store(&p->health[i].ejected_until, atomic_load(&oh->ejected_until));
            atomic_store(&p->health[i].ejected_at, atomic_load(&oh->ejected_at));
            /* its log windows too: a reload does not let a dead backend's lines through again */
            atomic_store(&p->health[i].fail_log.state, atomic_load(&oh->fail_log.state));
            atomic_store(&p->health[i].state_log.state, atomic_load(&oh->state_log.state));
            break;
        }
    }
}

/* Sets up pool i of rt (zeroed) from conf, taking over what prev's pool of the same name shares
 * (its clients' count, its servers' health). Returns 0, or -1 (rt's clean-up frees what was made). */
static int runtime_pool_init(struct runtime *rt, struct conf *conf, size_t i, const struct runtime *prev)
{
    size_t nworkers = rt->nworkers ? rt->nworkers : 1;
    struct pool_shared *p = &rt->pools[i];
    p->idx = (uint32_t)i;
    p->cp = &conf->pools[i];
    p->recheck_fd = -1;
    p->proto = proto_for_pool(p->cp);
    if (p->proto->parse_table_new != NULL && p->proto->parse_table_new(p->cp, &p->parse_table) < 0) return -1;
    unsigned threads = (unsigned)nworkers + 1; /* and the master's prober */
    p->client_tp = transport_ctx_for_pool(p->cp, TRANSPORT_CLIENTS, threads);
    p->server_tp = transport_ctx_for_pool(p->cp, TRANSPORT_SERVERS, threads);
    if (p->client_tp == NULL || p->server_tp == NULL) return -1;
    atomic_init(&p->version, 1);
    pthread_mutex_init(&p->lock, NULL);
    size_t ns = p->cp->nservers ? p->cp->nservers : 1;
    p->health = calloc(ns, sizeof(*p->health));
    p->wstats = calloc(nworkers, sizeof(*p->wstats));
    p->wservers = calloc(nworkers * ns, sizeof(*p->wservers));
    p->refused_log = calloc(p->proto->nrefused + 1, sizeof(*p->refused_log));
    if (p->health == NULL || p->wstats == NULL || p->wservers == NULL || p->refused_log == NULL) return -1;
    for (size_t b = 0; b <= p->proto->nrefused; b++) nc_ratelimit_init(&p->refused_log[b], 0, 1);
    nc_ratelimit_init(&p->handshake_log, 0, 1);
    for (size_t s = 0; s < ns; s++) {
        nc_ratelimit_init(&p->health[s].fail_log, 0, 1);
        nc_ratelimit_init(&p->health[s].state_log, 0, SERVER_STATE_LOG_BURST);
    }
    const struct pool_shared *same = prev != NULL ? runtime_pool_find(prev, p->cp->name) : NULL;
    if (same != NULL) {
        p->clients = same->clients;
        atomic_fetch_add(&p->clients->refs, 1);
    } else {
        /* written per client by the master and the workers: on lines of its own */
        p->clients = aligned_alloc(NC_SHARING_SPAN, NC_ROUND_UP(sizeof(*p->clients), NC_SHARING_SPAN));
        if (p->clients == NULL) return -1;
        atomic_init(&p->clients->refs, 1);
        atomic_init(&p->clients->n, 0);
    }
    if (prev != NULL) runtime_inherit_health(p, prev);
    p->source_ops = topo_source_for_pool(p->cp);
    if (p->source_ops->start != NULL && (p->recheck_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) return -1;
    p->set = p->source_ops->first(p->cp);
    if (p->set == NULL) return -1;
    const struct pool_shared *old = prev != NULL ? runtime_pool_find(prev, p->cp->name) : NULL;
    if (old != NULL && old->source_ops == p->source_ops && p->source_ops->start != NULL) {
        /* where the source of the generation before had followed the servers (the master is
         * the only thread that publishes sets: no lock needed to read it here) */
        struct topo_set *set = topo_set_inherit(p->set, old->set);
        topo_set_put(p->set);
        p->set = set;
        if (p->set == NULL) return -1;
    }
    p->route = route_build_first(p);
    if (p->route == NULL) {
        log_error("pool '%s': cannot build its distribution", p->cp->name);
        return -1;
    }
    return 0;
}

struct runtime *runtime_create(struct conf *conf, const struct runtime *prev, size_t nworkers)
{
    struct runtime *rt = calloc(1, sizeof(*rt));
    if (rt == NULL) return NULL;
    atomic_init(&rt->refs, 1);
    rt->conf = conf_ref(conf);
    rt->generation = prev != NULL ? prev->generation + 1 : 1;
    rt->loaded_at_usec = nc_usec_wall();
    rt->nworkers = nworkers;
    rt->npools = conf->npools;
    /* on cache lines of their own (pool_shared.lock's alignment) */
    size_t pools_size = (conf->npools ? conf->npools : 1) * sizeof(*rt->pools);
    rt->pools = aligned_alloc(alignof(struct pool_shared), pools_size);
    if (rt->pools == NULL) goto fail;
    memset(rt->pools, 0, pools_size);
    for (size_t i = 0; i < conf->npools; i++) {
        if (runtime_pool_init(rt, conf, i, prev) < 0) goto fail;
    }
    return rt;
fail:
    runtime_put(rt);
    return NULL;
}

struct runtime *runtime_get(struct runtime *rt)
{
    atomic_fetch_add(&rt->refs, 1);
    return rt;
}

void runtime_put(struct runtime *rt)
{
    if (rt == NULL || atomic_fetch_sub(&rt->refs, 1) != 1) return;
    for (size_t i = 0; rt->pools != NULL && i < rt->npools; i++) {
        struct pool_shared *p = &rt->pools[i];
        if (p->cp == NULL) continue;
        if (p->parse_table != NULL) p->proto->parse_table_free(p->parse_table);
        route_put(p->route);
        topo_set_put(p->set);
        if (p->recheck_fd >= 0) close(p->recheck_fd);
        if (p->client_tp != NULL) transport_ctx_put(p->client_tp);
        if (p->server_tp != NULL) transport_ctx_put(p->server_tp);
        if (p->clients != NULL && atomic_fetch_sub(&p->clients->refs, 1) == 1) free(p->clients);
        free(p->health);
        free(p->refused_log);
        free(p->wstats);
        free(p->wservers);
        pthread_mutex_destroy(&p->lock);
    }
    free(rt->pools);
    conf_unref(rt->conf);
    free(rt);
}


void pool_topology_recheck(struct pool_shared *p)
{
    uint64_t one = 1;
    if (p->recheck_fd >= 0 && write(p->recheck_fd, &one, sizeof(one)) < 0) {
        /* EAGAIN: the counter is full, the source has been asked already */
    }
}

/* topo_sink.publish: the pool's new set, then the waker. */
static void runtime_publish_set(void *arg, struct topo_set *set)
{
    struct pool_shared *p = arg;
    pool_publish_set(p, set);
    if (p->waker.wake != NULL) p->waker.wake(p->waker.arg);
}

void runtime_sources_start(struct runtime *rt, struct event_base *base, const struct runtime_waker *waker)
{
    for (size_t i = 0; i < rt->npools; i++) {
        struct pool_shared *p = &rt->pools[i];
        if (p->source_ops->start == NULL || p->source != NULL) continue;
        if (waker != NULL) p->waker = *waker;
        struct topo_sink sink = { .publish = runtime_publish_set, .arg = p, .recheck_fd = p->recheck_fd,
                                  .up = &p->topo_up };
        p->source = p->source_ops->start(p->cp, p->set, base, &sink);
        if (p->source == NULL)
            log_error("pool '%s': cannot start its %s topology source: its servers stay as configured",
                      p->cp->name, p->source_ops->name);
    }
}

void runtime_sources_stop(struct runtime *rt)
{
    for (size_t i = 0; i < rt->npools; i++) {
        struct pool_shared *p = &rt->pools[i];
        if (p->source != NULL) p->source_ops->stop(p->source);
        p->source = NULL;
    }
}
