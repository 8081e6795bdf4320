/*
 * backend.h - a loop's connections to one backend server, shared across config generations.
 *
 * A backend is identified by its pool name, server name and address, protocol, redis_auth,
 * redis_db and server_connections (runtime_same_backend). When a reload keeps a server, the new
 * generation's server_rt acquires the backend the old one uses: its connections (and the requests
 * on them) carry on, and an identical reload opens no connection. A backend knows its users (the
 * server_rts of every generation that has it); its connections take their config, health and
 * counters from its owner, the newest user. When the last user releases it (its generation is
 * gone), its connections are closed.
 *
 * Threads: a backend and its conns belong to one loop.
 */
#ifndef NC_BACKEND_H
#define NC_BACKEND_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "core/pool.h"

struct conn;
struct loop;

struct backend {
    TAILQ_ENTRY(backend) link;    /* the loop's backends */
    struct server_rt_tqh users;   /* server_rts using it, oldest generation first */
    struct server_rt *owner;      /* the newest user (the last of users) */
    struct conn **conns;          /* server_connections of them, created lazily */
    uint32_t nconns;
};

TAILQ_HEAD(backend_tqh, backend);

/* Gives s (of the generation being built, the newest) the loop's backend with its identity,
 * or a new one. Returns 0 or -ENOMEM. */
int backend_acquire(struct loop *l, struct server_rt *s);
/* s's generation is going away: drops its use of its backend. The last user closes the
 * connections; when s was the owner, the newest remaining user takes over. */
void backend_release(struct loop *l, struct server_rt *s);
/* Whether any connection of the backend has a request queued or awaiting its reply. */
bool backend_busy(const struct backend *be);
/* Whether s is the backend's only user. */
bool backend_used_only_by(const struct backend *be, const struct server_rt *s);

#endif
