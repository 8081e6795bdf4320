/*
 * redirect.c - requests a Redis Cluster redirected, sent on (see redirect.h).
 *
 * Threads: the loop's own.
 */
#include "config.h"
#include "core/redirect.h"

#include <errno.h>
#include <event2/event.h>
#include <string.h>

#include "common/clock.h"
#include "core/conn.h"
#include "core/dedicated.h"
#include "core/loop.h"
#include "core/pool.h"
#include "core/request.h"
#include "core/runtime.h"
#include "core/server.h"
#include "proto/proto.h"
#include "stats/stats.h"

#define REDIRECT_HOST_MAX 256

/* The client whose request (or fragment of one) req is; NULL when it left. */
static struct conn *redirect_client(const struct msg *req)
{
    return req->frag_owner != NULL ? req->frag_owner->owner : req->owner;
}

/* The server of p at host:port (a place holding a node), or DIST_NONE. */
static uint32_t redirect_find(struct pool_rt *p, const char *host, uint16_t port)
{
    if (atomic_load_explicit(&p->shared->version, memory_order_relaxed) != p->route_version)
        pool_rt_refresh(p); /* the newest table first */
    const struct topo_set *set = p->route->set;
    for (uint32_t i = 0; i < set->nservers && i < p->nservers; i++) {
        const struct conf_addr *a = &set->servers[i].addr;
        if (a->port == port && !a->is_unix && strcmp(a->host, host) == 0) return i;
    }
    return DIST_NONE;
}

/* Queues req on server s of p (after ASKING when ask), or fails it. */
static void redirect_send(struct loop *l, struct pool_rt *p, struct msg *req, uint32_t s, bool ask)
{
    const struct conn *client = redirect_client(req);
    int rc = -ECONNREFUSED;
    if (client != NULL && s != DIST_NONE && s < p->nservers) {
        rc = 0;
        if (ask) {
            struct msg *a = p->proto->asking(&l->msgs);
            rc = a != NULL ? server_enqueue(&p->servers[s], a, client->id, client->sess.variant) : -ENOMEM;
            if (rc < 0 && a != NULL) msg_put(&l->msgs, a);
        }
        if (rc == 0) rc = server_enqueue(&p->servers[s], req, client->id, client->sess.variant);
    } else if (client == NULL) {
        rc = -ECONNRESET;
    } else if (s == DIST_NONE) {
        rc = -EHOSTUNREACH; /* no node of the pool holds its slot */
    }
    if (rc < 0) request_fail(l, req, -rc);
}

/* Requests whose wait is over: routed again by their first key, with the newest map. */
static void redirect_on_timer(int fd, short what, void *arg)
{
    struct loop *l = arg;
    (void)fd;
    (void)what;
    uint64_t now = nc_usec_now();
    struct msg *req = TAILQ_FIRST(&l->redirecting), *next;
    for (; req != NULL; req = next) {
        next = TAILQ_NEXT(req, server_link);
        if (req->t_sent > now) continue;
        TAILQ_REMOVE(&l->redirecting, req, server_link);
        struct conn *client = redirect_client(req);
        if (client == NULL || req->nkeys == 0) {
            request_fail(l, req, client == NULL ? ECONNRESET : EHOSTUNREACH);
            continue;
        }
        struct pool_rt *p = client->pool;
        redirect_send(l, p, req, pool_rt_route(p, req->keys[0].ptr, req->keys[0].len), false);
    }
    loop_arm_earliest(l->redirect_ev, &l->redirecting);
}

/* req waits, then goes where the newest map says. False when out of memory. */
static bool redirect_wait(struct loop *l, struct msg *req)
{
    if (l->redirect_ev == NULL && (l->redirect_ev = evtimer_new(l->base, redirect_on_timer, l)) == NULL) return false;
    unsigned shift = req->redirects < 6 ? req->redirects - 1u : 5u;
    req->t_sent = nc_usec_now() + ((uint64_t)REDIRECT_WAIT_USEC << shift); /* while waiting: when it goes */
    TAILQ_INSERT_TAIL(&l->redirecting, req, server_link);
    loop_arm_earliest(l->redirect_ev, &l->redirecting);
    return true;
}

/* A redirection on a dedicated connection: its holder moves the request (a blocking command's
 * own connection), or it is relayed. */
static bool redirect_dedicated(struct conn *c, struct msg *req, struct msg *rsp)
{
    struct pool_rt *p = c->pool;
    struct dedicated_holder *h = c->holder;
    char host[REDIRECT_HOST_MAX];
    uint16_t port = 0;
    if (h == NULL || h->redirect == NULL || req->redirects >= REDIRECT_MAX || rsp->rsp_redirect == MSG_REDIRECT_TRYAGAIN ||
        p->proto->redirect_target(rsp, host, sizeof(host), &port) < 0)
        return false;
    uint32_t s = redirect_find(p, host, port);
    if (rsp->rsp_redirect == MSG_REDIRECT_MOVED) pool_topology_recheck(p->shared);
    if (s == DIST_NONE || !h->redirect(h, c, req, s, rsp->rsp_redirect == MSG_REDIRECT_ASK)) return false;
    req->redirects++;
    STATS_POOL_ADD(p->st, cluster_redirections, 1);
    msg_put(&c->loop->msgs, rsp);
    return true;
}

bool redirect_request(struct conn *c, struct msg *req, struct msg *rsp)
{
    struct pool_rt *p = c->pool;
    if (!p->shared->source_ops->redirects || req->swallow || redirect_client(req) == NULL ||
        p->proto->redirect_target == NULL)
        return false;
    if (c->ops != &server_conn_ops) return redirect_dedicated(c, req, rsp);
    struct loop *l = c->loop;
    uint8_t kind = rsp->rsp_redirect;
    if (req->redirects >= REDIRECT_MAX) { /* the cluster keeps moving it: -TRYAGAIN as it is */
        if (kind == MSG_REDIRECT_TRYAGAIN) return false;
        msg_put(&l->msgs, rsp);
        request_fail(l, req, EHOSTUNREACH); /* never a -MOVED or -ASK to the client */
        return true;
    }
    char host[REDIRECT_HOST_MAX];
    uint16_t port = 0;
    uint32_t s = DIST_NONE;
    if (kind != MSG_REDIRECT_TRYAGAIN && p->proto->redirect_target(rsp, host, sizeof(host), &port) == 0)
        s = redirect_find(p, host, port);
    req->redirects++;
    STATS_POOL_ADD(p->st, cluster_redirections, 1);
    if (kind == MSG_REDIRECT_MOVED) pool_topology_recheck(p->shared);
    if (s == DIST_NONE && !redirect_wait(l, req)) return false; /* out of memory: relayed */
    msg_put(&l->msgs, rsp);
    if (s != DIST_NONE) redirect_send(l, p, req, s, kind == MSG_REDIRECT_ASK);
    return true;
}

void redirect_release_all(struct loop *l)
{
    struct msg *req;
    while ((req = TAILQ_FIRST(&l->redirecting)) != NULL) {
        TAILQ_REMOVE(&l->redirecting, req, server_link);
        request_fail(l, req, ECONNRESET);
    }
    if (l->redirect_ev != NULL) event_free(l->redirect_ev);
    l->redirect_ev = NULL;
}
