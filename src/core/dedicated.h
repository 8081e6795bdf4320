/*
 * dedicated.h - dedicated server connections, the third conn role (dedicated_conn_ops): a server
 * connection that one client holds at a time, for its transaction (feature/txn.h). A client in
 * MULTI/EXEC or holding a WATCH needs a connection on which no other client's commands run
 * between its own: redis keeps the WATCH and MULTI state per connection.
 *
 * Each backend (core/backend.h) has a set of them, created on demand and kept open when given
 * back; at most its pool's dedicated_connections are held at once (per server and worker). A
 * dedicated connection connects, writes, reads, times out and fails as a shared one (the server
 * role's ops, core/server.h), with the protocol's set-up requests (redis AUTH/SELECT) first; when
 * it closes while held, its holder is told (struct dedicated_holder: a transaction, or a
 * subscriber, feature/pubsub.h, which gives it its own ops while it holds it). The stats count the held
 * ones per server (`dedicated_connections`).
 *
 * Threads: the owning loop only, like every server connection.
 */
#ifndef NC_DEDICATED_H
#define NC_DEDICATED_H

#include <stdbool.h>

#include "core/conn.h"
#include "core/pool.h"

extern const struct conn_ops dedicated_conn_ops;

/* Who holds a dedicated connection (embedded in a transaction, a subscriber's link): told when the
 * connection closes while held (it is no longer held then), and asked to move a request a Redis
 * Cluster redirected (core/redirect.h): true when it sent req to server (after ASKING when ask)
 * on another connection it holds, false to relay the redirection. NULL: relayed. */
struct dedicated_holder {
    void (*lost)(struct dedicated_holder *h, struct conn *d, int err);
    bool (*redirect)(struct dedicated_holder *h, struct conn *d, struct msg *req, uint32_t server, bool ask);
};

/* How many dedicated connections to s may be held at once (its newest config's). */
int dedicated_limit(const struct server_rt *s);
/* Takes a free dedicated connection of server s for holder h, set up for protocol variant (the
 * client's, proto.h; a new one when the set has none free of that variant and room for one).
 * Returns 0 (*out set, (*out)->holder == h), -EBUSY when s's dedicated_connections are all held
 * (whatever their variant), or -ENOMEM. */
int dedicated_acquire(struct server_rt *s, struct dedicated_holder *h, uint8_t variant, struct conn **out);
/* Gives d back to its set. clean: first queue the protocol's request that leaves it clean for
 * the next client (redis UNWATCH, its reply dropped); when that cannot be queued, d is closed
 * instead. What d still has in flight is answered in order before anything of its next client. */
void dedicated_release(struct conn *d, bool clean);
/* Sends req (which d's server did not run: a Redis Cluster redirected it) to server s on a
 * dedicated connection taken for d's holder (after the protocol's ASKING when ask), and gives d
 * back (nothing else in flight on it). Returns 0 (*out: the new connection), or -errno (d kept,
 * req not queued). */
int dedicated_move(struct conn *d, struct server_rt *s, uint8_t variant, struct msg *req, bool ask, struct conn **out);
/* conn_ops.on_close of a dedicated connection (any ops a holder gives it call it): the holder
 * loses d. */
void dedicated_on_close(struct conn *d, int err);

#endif
