/*
 * backend.h - a worker's connections to one backend server, shared across config generations.
 *
 * A backend is identified by its pool name, server name and address, protocol, redis_auth,
 * redis_db and server_connections (runtime_same_backend). When a reload keeps a server, the new
 * generation's server_rt acquires the backend the old one uses: its connections (and the requests
 * on them) carry on, and an identical reload opens no connection. A backend's connections take
 * their config, health and counters from its owner, the newest server_rt using it; when the last
 * server_rt releases it (its generation is gone), its connections are closed.
 *
 * Threads: a backend and its conns belong to one worker.
 */
#ifndef NC_BACKEND_H
#define NC_BACKEND_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

struct conn;
struct server_rt;
struct worker;

struct backend {
    TAILQ_ENTRY(backend) link;    /* the worker's backends */
    struct server_rt *owner;      /* the newest server_rt using it */
    struct conn **conns;          /* server_connections of them, created lazily */
    uint32_t nconns;
    uint32_t refs;                /* server_rts using it */
};

TAILQ_HEAD(backend_tqh, backend);

/* Gives s (of the generation being built, the newest) the worker's backend with its identity,
 * or a new one. Returns 0 or -ENOMEM. */
int backend_acquire(struct worker *w, struct server_rt *s);
/* s's generation is going away: drops its use of its backend. The last user closes the
 * connections; when s was the owner, another user (an older generation's) takes over. */
void backend_release(struct worker *w, struct server_rt *s);
/* Whether any connection of the backend has a request queued or awaiting its reply. */
bool backend_busy(const struct backend *be);

#endif
