/*
 * manage_health.c - `GET /healthz`'s verdict and body (see manage_health.h).
 *
 * Threads: the stats thread.
 */
#include "config.h"
#include "manage/manage_health.h"

#include "core/route.h"
#include "core/runtime.h"

/* Whether server s of p may serve: not ejected, fewer consecutive failures than the limit. */
static bool manage_health_server_live(const struct pool_shared *p, uint32_t s, bool *ejected)
{
    *ejected = pool_server_ejected(p, s);
    unsigned failures = atomic_load_explicit(&p->health[s].failures, memory_order_relaxed);
    int limit = p->cp->server_failure_limit > 0 ? p->cp->server_failure_limit : 1;
    return !*ejected && failures < (unsigned)limit;
}

bool manage_health_render(const struct runtime *rt, struct textbuf *body)
{
    bool healthy = true;
    for (size_t i = 0; i < rt->npools; i++) {
        struct pool_shared *p = &rt->pools[i];
        size_t nservers = 0, live = 0, ejected = 0;
        struct route *r = pool_route_get(p);
        for (size_t s = 0; s < p->cp->nservers; s++) {
            bool ej;
            if (s < r->set->nservers && topo_slot_empty(r->set, (uint32_t)s)) continue; /* a place with no server */
            nservers++;
            if (manage_health_server_live(p, (uint32_t)s, &ej)) live++;
            if (ej) ejected++;
        }
        route_put(r);
        if (live > 0) continue;
        healthy = false;
        textbuf_addf(body, "pool %s: no live server (%zu server%s: %zu ejected, %zu failing)\n", p->cp->name,
                       nservers, nservers == 1 ? "" : "s", ejected, nservers - ejected);
    }
    if (healthy) textbuf_addf(body, "ok: every pool (%zu) has a live server\n", rt->npools);
    return healthy;
}
