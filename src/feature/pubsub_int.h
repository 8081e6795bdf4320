/*
 * pubsub_int.h - internals shared by the files of a client's Pub/Sub subscriptions (not for other
 * modules; the interface is feature/pubsub.h): the state (struct pubsub), the set of names
 * (pubsub_set.c), the links, the requests waiting for confirmations and the timer
 * (pubsub_link.c). The commands and the subscribed connection's role are pubsub.c's.
 *
 * Threads: the loop owning the client (and its dedicated connections).
 */
#ifndef NC_PUBSUB_INT_H
#define NC_PUBSUB_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "common/textbuf.h"
#include "core/conn.h"
#include "core/dedicated.h"
#include "feature/slots.h"
#include "msg/msg.h"
#include "proto/proto.h"

#define PS_BUCKETS_MIN 16u

/* One subscription of the client. */
struct ps_name {
    struct ps_name *next;      /* its hash chain */
    uint32_t server;           /* channel, shard channel: the server it is on (patterns: all) */
    uint32_t len;
    uint8_t kind;              /* enum proto_ps_kind */
    uint8_t bytes[];
};

/* A client request waiting for the confirmations of its servers. */
struct ps_op {
    struct msg *req;
    uint8_t *added;            /* added[i]: the request's name i was new to the set (NULL: unknown) */
    uint8_t kind;
    struct textbuf reply;        /* its confirmations, written once every server confirmed */
    uint32_t servers_left;
    int err;                   /* a server refused it: its error text is the reply */
    struct textbuf err_text;
};

/* A request sent on a link, waiting for confirms_left confirmations (op NULL: nobody waits). */
struct ps_wait {
    struct ps_op *op;
    uint64_t confirms_left;
    uint64_t t_queued;         /* when it was queued (usec): the pool's `timeout` counts from it */
};

/* The client's dedicated connection to one server. */
struct ps_link {
    struct dedicated_holder holder; /* what the connection knows it by (first member) */
    struct pubsub *ps;
    struct conn *d;            /* NULL: none held */
    struct ps_wait *waits;     /* a FIFO ring: nwait from whead */
    uint32_t whead, nwait, wcap;
    uint32_t server;
    bool pat_missing;          /* a PSUBSCRIBE left this server out (ejected): its patterns are
                                * subscribed there once it is back (ps_repair) */
};

struct pubsub {
    struct conn *c;
    struct ps_name **table;
    uint32_t nbuckets, nnames;
    uint64_t count[PROTO_PS_KINDS];
    struct ps_link *links;     /* one per server of the client's pool */
    uint32_t nlinks;
    struct event *tev;         /* the confirmations' timeout and the patterns' repair, NULL: none yet */
    uint64_t t_armed;          /* when tev fires, if it is pending (usec) */
    uint32_t nmissing;         /* links with pat_missing */
};

/* c's subscriptions (its feature slot), NULL when it has none. */
static inline struct pubsub *ps_of(const struct conn *c)
{
    return c->feat[FEATURE_SLOT_PUBSUB];
}


/* Per-server request texts being built for one client request. */
struct ps_batch {
    struct textbuf *text;        /* one per server: the arguments so far (head added at the end) */
    uint32_t *n;               /* arguments per server */
    uint32_t nservers;
};

/* ---- the set (pubsub_set.c) ---- */

/* Where (kind, name) is in ps's table, or where its chain ends. */
struct ps_name **ps_slot(struct pubsub *ps, uint8_t kind, const uint8_t *p, size_t n);
/* Adds (kind, name) on server when it is not there. Returns 1 (added), 0 (there already) or
 * -ENOMEM. */
int ps_add(struct pubsub *ps, uint8_t kind, const uint8_t *p, size_t n, uint32_t server);
/* Takes the name at *at (from ps_slot) out of the set. */
void ps_unlink(struct pubsub *ps, struct ps_name **at);
/* The count redis gives in a confirmation of kind: the shard channels count apart. */
int64_t ps_count(const struct pubsub *ps, uint8_t kind);

/* ---- the state, its links and what waits on them (pubsub_link.c) ---- */

/* c's state, made when it has none (NULL: out of memory). */
struct pubsub *ps_get(struct conn *c);
/* The client has no subscription left (or is leaving): every link dropped, the state freed. */
void ps_end(struct conn *c, bool client_gone);
/* op has all its confirmations (or its link is gone): its client gets the reply; a refused
 * request's names are taken out of the set when rollback says so. */
void ps_op_finish(struct loop *l, struct ps_op *op, bool client_gone, bool rollback);
/* One more of op's servers is done with it (op NULL: nobody waits). */
void ps_op_step(struct loop *l, struct ps_op *op, bool client_gone, bool rollback);
/* op's request could not be sent to every server: no wait queued for it waits for it any more. */
void ps_op_orphan(struct pubsub *ps, const struct ps_op *op);
/* The oldest request waiting on lk, or NULL. */
struct ps_wait *ps_wait_head(struct ps_link *lk);
/* Takes the oldest request waiting on lk (there is one) off its FIFO: its op. */
struct ps_op *ps_wait_pop(struct ps_link *lk);
/* (Re)arms ps's timer: for the first confirmation due, and for the patterns' repair. */
void ps_arm_timer(struct pubsub *ps);
/* lk holds a dedicated connection to its server. Returns 0, -EBUSY or -ENOMEM. */
int ps_link_take(struct conn *c, struct pubsub *ps, uint32_t server);

int ps_batch_init(struct ps_batch *b, uint32_t nservers);
void ps_batch_free(struct ps_batch *b);
void ps_batch_add(struct conn *c, struct ps_batch *b, uint32_t server, const uint8_t *p, size_t n);
/* Sends the batch's request to each server that has arguments (kind, unsub), each waiting for
 * one confirmation per argument on behalf of op (NULL: nobody waits). Returns the number of
 * servers sent to; *err: the error of a server it could not be sent to (0: none). */
uint32_t ps_batch_send(struct conn *c, struct ps_batch *b, uint8_t kind, bool unsub, struct ps_op *op,
                       int *err);

#endif
