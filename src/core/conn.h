/*
 * conn.h - a connection: a client of a pool, or one connection to a backend server. Holds the
 * socket, its one libevent event, the read buffer and parser state, and the message queues.
 *
 * What a connection does with its events is its role's: a const struct conn_ops set at creation
 * (client_conn_ops in client.c, server_conn_ops in server.c, dedicated_conn_ops in dedicated.c:
 * a server connection that one client holds at a time, for its transaction; pubsub_conn_ops in
 * feature/pubsub.c while a subscriber holds one). conn.c knows no
 * role by name: it reads, parses and writes, and calls the role's ops.
 *
 * How its bytes move is its transport's (net/transport.h: the plain socket, or another
 * implementation chosen per side of a pool): conn.c reads through it into the connection's reader
 * (proto/reader.h: the read buffer and the parse loop), writes the spans of queued messages
 * through it, runs its handshake (a role is told by on_handshake when it ends), and arms the
 * socket's event for what the transport waits for besides what the role wants. No read, write or
 * writev is called here or in any role.
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

#include "core/feature.h"
#include "msg/msg.h"
#include "net/transport.h"
#include "proto/proto.h"
#include "proto/reader.h"

struct loop;
struct pool_rt;
struct server_rt;
struct event;
struct conn;
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
    /* What the role does with the bytes it reads (proto/reader.h; ctx: the conn): begin resets
     * c->rd.ps for a new message, parse is the protocol's parser of this side, on_msg takes each
     * completed message (non-zero stops the reading: conn_recv returns it), msg_max refuses a
     * larger one (-EMSGSIZE). */
    struct reader_sink sink;
    /* The transport's handshake (conn_handshake_start) ended: err 0, c carries the protocol's
     * bytes now; else it failed (c->tr says why) and the role closes c. NULL: the role never
     * starts one. */
    void (*on_handshake)(struct conn *c, int err);
    /* Server roles: c's socket is being closed by a failure or a shutdown (err), before its
     * requests are failed. NULL: nothing to do. */
    void (*on_close)(struct conn *c, int err);
    /* The peer closed (EV_CLOSED) while c does not read (conn_watch_hangup); NULL: not watched. */
    void (*on_hangup)(struct conn *c);
    /* c's peer still works on what c sent it (a server), or still waits for more than c has to
     * write (a client whose pipeline is answered in part), so holding c's next write a few µs
     * costs the peer nothing (the loop's batch wait, core/batch_wait.h): how many waits that hold
     * is worth (0: the peer is not busy; NULL: never). */
    unsigned (*peer_busy)(const struct conn *c);
    /* How many of c's requests its peer has still to answer (a server's queue of this connection,
     * the one it works on included): the batch wait's measure of how far behind the servers are
     * (core/batch_wait.h). NULL: c's peer answers none (a client). */
    uint32_t (*peer_queue)(const struct conn *c);
    /* c's writes gain nothing from the batch wait while its peer is not busy (peer_busy 0 or
     * NULL: a client waiting for nothing more than what c has): the loop writes them before each
     * wait, not after it (core/batch_wait.c). */
    bool flush_before_wait;
};

#define CONN_HUP_WANTED 1u         /* conn.hup: conn_watch_hangup is on */

/* conn.tio: what the transport needs from the event loop besides what the role wants */
#define CONN_TIO_HANDSHAKE 1u      /* its handshake runs: the socket's events go to it */
#define CONN_TIO_READ_WAITS 2u     /* a read waits for the socket to be writable */
#define CONN_TIO_WRITE_WAITS 4u    /* a write waits for the socket to be readable */

/* Laid out so that an idle client costs little memory: no padding holes, one libevent event. */
struct conn {
    TAILQ_ENTRY(conn) link;        /* clients: the loop's list of clients */
    TAILQ_ENTRY(conn) flush_link;  /* the loop's flush queue (while flush_queued) */
    TAILQ_ENTRY(conn) hold_link;   /* the loop's hold queue (while hold_queued, core/flush_hold.h) */
    const struct conn_ops *ops;    /* its role */
    struct loop *loop;
    struct pool_rt *pool;
    struct server_rt *server;      /* server conns: the server */
    struct event *ev;              /* the socket's event: EV_READ while reading, EV_WRITE only
                                    * while output waits for room */
    struct event *tev;             /* server conns: timeout */
    union {
        void *feat[FEATURE_SLOTS]; /* client: each feature's state (core/feature.h), NULL when
                                    * it is not in it */
        struct dedicated_holder *holder; /* dedicated: who holds it (a transaction, a
                                    * subscriber), NULL when free */
    };

    struct transport tr;           /* its socket and how bytes move on it (tr.fd < 0: none) */
    struct reader rd;              /* the read buffer, the message being parsed, the parser state */
    struct proto_session sess;     /* client: what its protocol remembers of it (proto.h) */

    union {                        /* see the top of this file */
        struct msg_tqh reqs;       /* client */
        struct msg_tqh to_send;    /* server */
    };
    union {
        struct msg_tqh sent;       /* server */
        struct {                   /* client: its share of the shared server connections (fair.h) */
            struct msg *fair_first; /* its oldest request held back, NULL: none */
            uint32_t fair_inflight; /* what its forwarded, unanswered requests cost */
            uint32_t fair_est;     /* the size it expects of a reply (its recent ones) */
        };
    };
    uint64_t out_off;
    union {
        uint64_t t_wblocked;       /* server: usec since when bytes wait for a full socket with no
                                    * progress (0: none waiting); the timeout covers it too */
        const struct mbuf *held_mb; /* client: the read buffer last charged to held_bytes */
    };
    uint64_t t_hold_until;         /* usec: the end of its flush's hold (flush_hold_until), 0: none */
    uint64_t t_active;             /* usec when its socket last gave bytes (client: or took replies) */
    uint64_t held_bytes;           /* client: memory its queued requests and subscriptions hold (client.c) */
    uint64_t held_max;             /* client: the largest request's held since reqs was last empty */
    bool kill;                     /* client: closed from the loop's flush queue (over its limit) */
    bool quit;                     /* client: it sent QUIT (the protocol's close, counted as eof) */
    uint8_t hup;                   /* CONN_HUP_*: the peer's close watched while not reading */
    uint8_t tio;                   /* CONN_TIO_*: what its transport waits for (0 on the plain path) */
    uint8_t feat_on;               /* client: bit i set while feat[i] is (feature_attach) */
    bool mem_paused;               /* client: not read while the proxy is over -M (client_mem.h) */
    uint8_t armed;                 /* the EV_* flags its event was last added with (0: none) */

    uint64_t id;

    int err;                       /* the error that ends the connection, 0 if none */
    union {
        uint32_t nreqs;            /* client */
        uint32_t nto_send;         /* server */
    };
    union {
        uint32_t nsent;            /* server */
        uint32_t fair_nheld;       /* client: its requests held back (fair.h) */
    };
    union {
        uint32_t slot;             /* server conns: index among the server's connections */
        uint32_t held_partial;     /* client: bytes of the request it is still sending (client_mem.h) */
    };
    bool flush_queued;
    bool hold_queued;
    bool wev_on;                   /* EV_WRITE wanted */
    bool reading;                  /* EV_READ wanted */
    bool connecting;               /* server: non-blocking connect in progress */
    bool gated;                    /* server: a set-up request's reply must pass its check before
                                    * the requests after it are written (msg.gate) */
    bool connected;
    bool closing;                  /* client: close once the replies before `quit` are written */
    bool eof;                      /* the peer closed its side */
    uint8_t variant;               /* server conns: the protocol variant it was set up for, the
                                    * one of the clients whose requests it carries (proto.h) */
    uint32_t nreqs_done;           /* client: of its nreqs, those answered (msg.done), so that
                                    * whether it waits for a server needs no walk (client.h) */
};

/* Creates a conn of role ops with no socket yet (conn_attach gives it one). */
struct conn *conn_create(struct loop *l, const struct conn_ops *ops, struct pool_rt *pool);
/* Gives c the socket fd (taken over: closed on failure), moving its bytes with a transport of
 * ctx (peer: the server a client-side handshake talks to, its name to verify and its id for the
 * session resumed; or NULL), and creates its event (not added). Returns 0 or -errno. */
int conn_attach(struct conn *c, const struct transport_ctx *ctx, int fd, const struct transport_peer *peer);
/* Frees the event, the read buffer and the partial msg, and closes the transport and its socket
 * (the conn stays). */
void conn_detach(struct conn *c);
/* conn_detach, then frees c. The queues must be empty. */
void conn_destroy(struct conn *c);

/* Whether c has a socket. */
static inline bool conn_open(const struct conn *c)
{
    return transport_is_open(&c->tr);
}

/*
 * Starts the transport's handshake on c's socket (after the connect completed, or at accept).
 * Returns 0 when there is none (a plain socket) or it is already done: c carries the protocol's
 * bytes now; 1 when it runs: the socket's events serve it until it ends, then the events the role
 * wants meanwhile (conn_want_read/write) are armed and ops->on_handshake is called; -errno when
 * it failed at once.
 */
int conn_handshake_start(struct conn *c);

/* Re-arms c's event for what its role wants (reading, writing): rare, back-pressure, a full
 * socket, a connect. */
void conn_set_events(struct conn *c, bool rd, bool wr);

/* The usual call changes nothing (client_write asks for what it has): one test for it, inline. */
static inline void conn_want_write(struct conn *c, bool on)
{
    if (c->wev_on != on || (c->hup | c->tio) != 0) conn_set_events(c, c->reading, on);
}

static inline void conn_want_read(struct conn *c, bool on)
{
    if (c->reading != on || (c->hup | c->tio) != 0) conn_set_events(c, on, c->wev_on);
}
/* While on and c does not read, the peer's close (EV_CLOSED: epoll's RDHUP, seen without reading
 * the bytes before it) calls ops->on_hangup: a blocked client whose reading is paused is seen
 * leaving (feature/txn.c). Where the event backend cannot tell, nothing is watched. */
void conn_watch_hangup(struct conn *c, bool on);

/*
 * Output is written without waiting for EV_WRITE: a conn with something to write is queued on its
 * loop, and the queue is flushed once the callbacks of the current pass of the loop have run
 * (loop_pass: so the requests of many clients go to a server in one writev, and a client's
 * pipelined replies in one). EV_WRITE is added only when a socket is full. Idempotent; the conn
 * leaves the queue when it is flushed or destroyed.
 */
void conn_flush_later(struct conn *c);
/* Runs the loop's flush queue (loop_pass, after the pass's callbacks). */
void conn_flush_queue(struct loop *l);

/*
 * Reads what the transport has and parses it into messages (proto/reader.h) with the role's sink,
 * whose on_msg takes each one completed. Returns 0 when the socket is drained, or -errno
 * (ECONNRESET / EPIPE ...), 0 with *eof set on end of stream, or -EPROTO on a parse error
 * (rd.ps.error says why), -E2BIG for a token larger than an mbuf, or -EMSGSIZE for a message over
 * the sink's msg_max. on_msg may stop the loop by returning non-zero (its value is returned).
 */
int conn_recv(struct conn *c, bool *eof);

/*
 * Writes queued bytes through the transport: the spans of the given msgs starting first_off into
 * the first one (as iovecs: zero copy up to the transport). msgs[] holds n msgs whose bytes are
 * written in order; returns bytes written (>= 0; 0 when the socket takes none now) or -errno.
 */
int64_t conn_writev(struct conn *c, struct msg *const *msgs, uint32_t n, uint64_t first_off);

#endif
