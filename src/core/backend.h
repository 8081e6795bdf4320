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
 * The shared connections are a set per protocol variant (proto.h PROTO_VARIANTS: redis RESP2 and
 * RESP3, connections opened with HELLO 3): a client's requests use the set of the variant it
 * speaks. Beside the shared connections, a backend has its set of dedicated connections (core/dedicated.h):
 * created on demand, each held by one client's transaction at a time, at most the owner's
 * dedicated_connections held at once (the limit follows reloads; no connection is closed for it).
 *
 * Threads: a backend and its conns belong to one loop.
 */
#ifndef NC_BACKEND_H
#define NC_BACKEND_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "core/pool.h"
#include "proto/proto.h"

struct conn;
struct loop;

struct backend {
    TAILQ_ENTRY(backend) link;    /* the loop's backends */
    struct server_rt_tqh users;   /* server_rts using it, oldest generation first */
    struct server_rt *owner;      /* the newest user (the last of users) */
    struct conn **conns[PROTO_VARIANTS]; /* per protocol variant (proto.h), server_connections of
                                   * them, created lazily (the array of a variant too: a
                                   * deployment whose clients all speak RESP2 has no other) */
    uint32_t nconns;
    uint32_t ndconns;             /* dedicated connections created (dconns[0..ndconns)) */
    struct conn **dconns;         /* dedicated connections, held or free (core/dedicated.c) */
    uint32_t dconns_cap;
    uint32_t ndheld;              /* of them held by a client */
};

TAILQ_HEAD(backend_tqh, backend);

/* Gives s (of the generation being built, the newest) the loop's backend with its identity,
 * or a new one. Returns 0 or -ENOMEM. */
int backend_acquire(struct loop *l, struct server_rt *s);
/* s's generation is going away: drops its use of its backend. The last user closes the
 * connections; when s was the owner, the newest remaining user takes over. */
void backend_release(struct loop *l, struct server_rt *s);
/* Whether any connection of the backend (shared or dedicated) has a request queued or awaiting
 * its reply. */
bool backend_busy(const struct backend *be);
/* The backend's server moved to another address (its topology source said so): every open
 * connection, shared or dedicated, is closed (its requests fail; a holder loses its dedicated
 * one); they connect to the new address when next used. */
void backend_moved(struct backend *be);
/* Whether s is the backend's only user. */
bool backend_used_only_by(const struct backend *be, const struct server_rt *s);

#endif
