/*
 * conn.h - a connection: a client of a pool, or one connection to a backend server. Holds the
 * socket, its one libevent event, the read buffer and parser state, and the message queues.
 *
 * What a connection does with its events is its role's: a const struct conn_ops set at creation
 * (client_conn_ops in client.c, server_conn_ops in server.c, dedicated_conn_ops in dedicated.c:
 * a server connection that one client holds at a time, for its transaction; pubsub_conn_ops in
 * pubsub.c while a subscriber holds one). conn.c knows no
 * role by name: it reads, parses and writes, and calls the role's ops.
 *
 * The queues, per role:
 *   client: reqs = its requests in arrival order; the head's reply is written first (out_off
 *           bytes of it already are). Replies leave in request order whatever server answers first.
 *   server: to_send = requests to write (out_off bytes of the head written); sent = written
 *           requests waiting for their reply, in order (replies are matched FIFO). The same for
 *           a dedicated connection.
 *
 * Threads: a conn and everything it points to belongs to one loop (core/loop.h); it never
 * crosses threads.
 */
#ifndef NC_CONN_H
#define NC_CONN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "msg/msg.h"
#include "proto/proto.h"

struct loop;
struct pool_rt;
struct server_rt;
struct event;
struct conn;
struct txn;
struct pubsub;
struct dedicated_holder;

TAILQ_HEAD(conn_tqh, conn);

/* What a role does with a connection's events (one const table per role). */
struct conn_ops {
    const char *role;                            /* "client", "server", "dedicated": for logs */
    /* EV_WRITE fired: the socket has room, or a connect finished. Returns true when the event
     * must not go on to reading: c was freed, or its socket closed. */
    bool (*on_writable)(struct conn *c);
    /* EV_READ fired (and c still wants to read). */
    void (*on_readable)(struct conn *c);
    /* c is taken from its loop's flush queue: write what is queued. */
    void (*flush)(struct conn *c);
    /* A new message is about to be parsed into c->rmsg: reset c->ps for it. */
    void (*msg_begin)(struct conn *c);
    /* The protocol parser of this side of the connection (proto.h's contract) on c->ps, c->rmsg. */
    int (*parse)(struct conn *c, const uint8_t *buf, size_t len, size_t *consumed);
    /* Server roles: c's socket is being closed by a failure or a shutdown (err), before its
     * requests are failed. NULL: nothing to do. */
    void (*on_close)(struct conn *c, int err);
    /* The peer closed (EV_CLOSED) while c does not read (conn_watch_hangup); NULL: not watched. */
    void (*on_hangup)(struct conn *c);
    uint64_t msg_max;                            /* a larger message is refused (-EMSGSIZE) */
};

#define CONN_HUP_WANTED 1u         /* conn.hup: conn_watch_hangup is on */
#define CONN_HUP_ADDED 2u          /* conn.hup: EV_CLOSED is in the event now */

/* Laid out so that an idle client costs little memory: no padding holes, one libevent event. */
struct conn {
    TAILQ_ENTRY(conn) link;        /* clients: the loop's list of clients */
    TAILQ_ENTRY(conn) flush_link;  /* the loop's flush queue (while flush_queued) */
    const struct conn_ops *ops;    /* its role */
    struct loop *loop;
    struct pool_rt *pool;
    struct server_rt *server;      /* server conns: the server */
    struct event *ev;              /* the socket's event: EV_READ while reading, EV_WRITE only
                                    * while output waits for room */
    struct event *tev;             /* server conns: timeout */
    union {
        struct txn *txn;           /* client: its transaction state (core/txn.h), NULL when none */
        struct dedicated_holder *holder; /* dedicated: who holds it (a transaction, a
                                    * subscriber), NULL when free */
    };
    struct pubsub *psub;           /* client: its subscriptions (core/pubsub.h), NULL when none */

    struct mbuf *rbuf;             /* current read buffer (NULL when idle) */
    struct msg *rmsg;              /* message being parsed */
    struct parse_state ps;
    struct proto_session sess;     /* client: what its protocol remembers of it (proto.h) */

    union {                        /* see the top of this file */
        struct msg_tqh reqs;       /* client */
        struct msg_tqh to_send;    /* server */
    };
    struct msg_tqh sent;           /* server */
    uint64_t out_off;
    uint64_t t_wblocked;           /* server: usec since when bytes wait for a full socket with no
                                    * progress (0: none waiting); the timeout covers it too */
    uint64_t held_bytes;           /* client: memory its queued requests and subscriptions hold (client.c) */
    const struct mbuf *held_mb;    /* client: the read buffer last charged to held_bytes */
    uint64_t held_max;             /* client: the largest request's held since reqs was last empty */
    bool kill;                     /* client: closed from the loop's flush queue (over its limit) */
    bool quit;                     /* client: it sent QUIT (the protocol's close, counted as eof) */
    uint8_t hup;                   /* CONN_HUP_*: the peer's close watched while not reading */

    uint64_t id;

    int fd;
    int err;                       /* the error that ends the connection, 0 if none */
    uint32_t rpos;                 /* first byte of rbuf not yet consumed by the parser */
    union {
        uint32_t nreqs;            /* client */
        uint32_t nto_send;         /* server */
    };
    uint32_t nsent;                /* server */
    uint32_t slot;                 /* server conns: index among the server's connections */
    bool flush_queued;
    bool wev_on;                   /* EV_WRITE wanted */
    bool reading;                  /* EV_READ wanted */
    bool connecting;               /* server: non-blocking connect in progress */
    bool connected;
    bool closing;                  /* client: close once the replies before `quit` are written */
    bool eof;                      /* the peer closed its side */
    uint8_t variant;               /* server conns: the protocol variant it was set up for, the
                                    * one of the clients whose requests it carries (proto.h) */
};

/* Creates a conn of role ops for fd (takes the fd over; closes it on failure; -1: none yet).
 * Events are not yet added. */
struct conn *conn_create(struct loop *l, const struct conn_ops *ops, int fd, struct pool_rt *pool);
/* Attaches a socket: creates its event (not added). On failure fd is left open for the caller. */
int conn_attach_fd(struct conn *c, int fd);
/* Frees the events, the read buffer and the partial msg, and closes the fd (the conn stays). */
void conn_detach_fd(struct conn *c);
/* Frees the events, the read buffer, the partial msg and closes the fd. The queues must be empty. */
void conn_destroy(struct conn *c);

void conn_want_write(struct conn *c, bool on);
void conn_want_read(struct conn *c, bool on);
/* While on and c does not read, the peer's close (EV_CLOSED: epoll's RDHUP, seen without reading
 * the bytes before it) calls ops->on_hangup: a blocked client whose reading is paused is seen
 * leaving (core/txn.c). Where the event backend cannot tell, nothing is watched. */
void conn_watch_hangup(struct conn *c, bool on);

/*
 * Output is written without waiting for EV_WRITE: a conn with something to write is queued on its
 * loop, and the queue is flushed once the callbacks of the current loop iteration have run (so
 * the requests of many clients go to a server in one writev, and a client's pipelined replies in
 * one). EV_WRITE is added only when a socket is full. Idempotent; the conn leaves the queue when
 * it is flushed or destroyed.
 */
void conn_flush_later(struct conn *c);
/* Runs the loop's flush queue (the loop's flush event). */
void conn_flush_queue(struct loop *l);

/*
 * Reads what the socket has and parses it into messages, calling on_msg for each one completed.
 * Returns 0 when the socket is drained, or -errno (ECONNRESET / EPIPE ...), 0 with *eof set on
 * end of stream, or -EPROTO on a parse error (ps.error says why), -E2BIG for a token larger than
 * an mbuf, or -EMSGSIZE for a message over its role's msg_max. on_msg may
 * stop the loop by returning non-zero (its value is returned).
 */
typedef int (*conn_msg_fn)(struct conn *c, struct msg *m);
int conn_recv(struct conn *c, bool *eof, conn_msg_fn on_msg);

/*
 * Writes queued bytes with writev: the spans of the given msgs starting first_off into the first one.
 * msgs[] holds n msgs whose bytes are written in order; returns bytes written (>= 0) or -errno.
 * -EAGAIN is returned as 0.
 */
int64_t conn_writev(struct conn *c, struct msg *const *msgs, uint32_t n, uint64_t first_off);

#endif
