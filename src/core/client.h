/*
 * client.h - client connections: read and parse requests, hand them to request dispatch, write
 * replies back in request order, close cleanly (replies first) on quit, EOF or protocol errors.
 *
 * A client belongs to one generation's pool (c->pool) and moves to the current generation only
 * when it has no request queued: a pipeline is never split across two configs.
 *
 * Threads: a client conn belongs to the loop that took it (core/loop.h).
 */
#ifndef NC_CLIENT_H
#define NC_CLIENT_H

#include <stdbool.h>

#include "core/conn.h"
#include "msg/msg.h"

struct loop;
struct pool_rt;

extern const struct conn_ops client_conn_ops;

/* Takes over fd, an accepted client socket of pool. Returns 0 or -errno (fd closed). */
int client_accept(struct loop *l, struct pool_rt *pool, int fd);
/* Closes the client now: its finished requests are freed, those in flight are orphaned (freed
 * when their replies arrive). */
void client_close(struct conn *c);
/* req was just queued on c (reqs): charge the memory it holds to c (see client.c). A client over
 * its limit is dropped (closed from the loop's flush queue): returns true then. */
bool client_req_queued(struct conn *c, struct msg *req);
/* delta bytes c holds besides its requests and replies (a subscriber's set of names, feature/pubsub.c)
 * are counted in its limits; returns true when that drops it (as client_req_queued). */
bool client_hold(struct conn *c, int64_t delta);
/* delta bytes req (of client c, queued) holds besides its bytes and its reply (its fragments'
 * replies until they are merged): counted in c's limits and -M as the request's own. */
void client_hold_for(struct conn *c, struct msg *req, int64_t delta);
/* req (of client c) has its reply: account for its bytes and schedule a write when it is the
 * head of the queue. A client over its limit is dropped (closed from the loop's flush queue). */
void client_reply_ready(struct conn *c, struct msg *req);

/* req, on c's queue (reqs), is answered: done, and counted in c->nreqs_done. */
static inline void client_req_mark_done(struct conn *c, struct msg *req)
{
    req->done = true;
    c->nreqs_done++;
}
/* Takes req off c's queue, with its counts (nreqs, nreqs_done). */
static inline void client_req_unlink(struct conn *c, struct msg *req)
{
    TAILQ_REMOVE(&c->reqs, req, client_link);
    c->nreqs--;
    if (req->done) c->nreqs_done--;
}

/* Drops c (err): it stops reading and is closed from the loop's flush queue, outside whatever
 * callback it is in. */
void client_kill(struct conn *c, int err);
/* Reading from c may go on, unless it is closing, dropped or paused (back-pressure, -M). */
void client_resume_reading(struct conn *c);

/* c is in some feature's state (on) or in none any more (core/feature.h): its ops follow. */
void client_features_on(struct conn *c, bool on);

/* A client whose transport's handshake (TLS) has not ended this long after its accept is closed
 * (or after its pool's client_idle_timeout, if shorter): a stalled handshake holds no worker, but
 * it must not hold a connection for ever. */
#define CLIENT_HANDSHAKE_LIMIT_MS 10000

/* client_idle_timeout (its pool's): closes c when for that long it sent nothing, read no reply
 * and waited for no server (a request in flight, a subscriber's messages); a client that stopped
 * in the middle of a request is idle too. And CLIENT_HANDSHAKE_LIMIT_MS for a handshake. Returns
 * true when it closed c (freed). */
bool client_idle_check(struct conn *c, uint64_t now);

/* The process stops (loop_drain): an idle client is closed now; a busy one stops reading and is
 * closed once the replies to what it already sent are written. */
void client_drain(struct conn *c);

/* A reload happened (the loop has a new current generation): an idle client moves to it now (or
 * is closed, its pool gone); a busy one follows once its queue is empty, or, its pool gone, stops
 * reading and is closed once answered. */
void client_on_reload(struct conn *c);
/* Moves c, which has nothing queued, to the pool of the same name in the loop's current
 * generation; a client in a transaction (feature/txn.h) stays where it is until that is over.
 * Returns -1 when there is none (or it changed protocol): the caller closes c. */
int client_follow_reload(struct conn *c);

#endif
