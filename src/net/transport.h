/*
 * transport.h - how bytes move on one connection's socket: a small interface under every
 * connection of the proxy (clients, servers, the listeners, the manage port, the prober). The
 * code above it never calls read, writev, recv, send or accept itself; it asks its connection's
 * transport, which reports what it needs from the event loop (readable, writable) when it cannot
 * go on.
 *
 * Implementations: the plain socket (net/transport_plain.c), and TLS (net/transport_tls.c:
 * OpenSSL on the proxy's own non-blocking sockets): its handshake takes several
 * round trips (handshake() returns -EAGAIN with `want` set until it is done), it holds bytes it
 * has decrypted but not yet handed out (pending(): the caller reads again before waiting on the
 * socket), a read may need the socket writable and a write may need it readable (`want` names
 * the other direction), and it has no writev (it coalesces the iovecs into records). How it
 * plugs in: notes/transport.md.
 *
 * A transport is chosen per side of a pool (its listener's clients, its servers) through a
 * transport context (struct transport_ctx): the plain one is transport_plain_ctx. A context is
 * shared by every thread once built (a TLS one hands each worker an OpenSSL context of its own,
 * net/tls_ctx.h); a struct transport belongs to the thread of its connection.
 */
#ifndef NC_TRANSPORT_H
#define NC_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

/* transport.want: what the last call that could not go on waits for */
#define TRANSPORT_WANT_READ 1u
#define TRANSPORT_WANT_WRITE 2u

struct transport;
struct transport_ctx;

/* The peer of a connection the proxy opens (the client side of a handshake). */
struct transport_peer {
    const char *name;              /* the name it must prove (TLS SNI, verification), or NULL */
    const char *id;                /* what its sessions are kept and resumed by: "host:port", a
                                    * unix socket's path (NULL: none kept) */
};

struct transport_ops {
    const char *name;              /* "plain", "tls": for logs and stats */
    /* Sets up t's state for its context (t->fd is set): a TLS session, the peer it connects to
     * (client side only, may be NULL: its name to verify, the session kept for its id). Returns
     * 0 or -errno. NULL: no state. */
    int (*open)(struct transport *t, const struct transport_ctx *ctx, const struct transport_peer *peer);
    /*
     * One step of the handshake that follows a connect or an accept: 0 when it is done (the
     * connection carries the protocol's bytes from now on), -EAGAIN when it waits for the
     * socket (t->want says for what), or -errno when it failed (ops->why may say why). NULL:
     * the transport has no handshake.
     */
    int (*handshake)(struct transport *t);
    /* Reads up to len bytes: > 0 bytes read, 0 end of stream, -EAGAIN (t->want says what it
     * waits for), or -errno. */
    ssize_t (*read)(struct transport *t, void *buf, size_t len);
    /* Writes the bytes of iov[0..n) in order: the bytes written (0 when none could be: t->want
     * says what it waits for), or -errno. A short count is not an error. */
    ssize_t (*writev)(struct transport *t, const struct iovec *iov, int n);
    /* Whether the transport holds bytes read from the socket and not handed out yet (the socket
     * will not signal them). NULL: never. */
    bool (*pending)(const struct transport *t);
    /* A listener's transport: the next connection, non-blocking and close-on-exec (its fd, or
     * -EAGAIN when none waits, or -errno); sa/salen as accept(2)'s (may be NULL). */
    int (*accept)(struct transport *t, struct sockaddr *sa, socklen_t *salen);
    /* Ends our sending side in order (plain: shutdown(SHUT_WR); TLS: its close_notify) while the
     * peer's bytes may still be read. */
    void (*shutdown)(struct transport *t);
    /* Ends the connection (an orderly close where the transport has one), frees its state and
     * closes the fd. */
    void (*close)(struct transport *t);
    /* Why its last call failed, in words (a TLS alert, a certificate that does not verify), or
     * NULL when errno's text says it. NULL: errno's text always does. */
    const char *(*why)(const struct transport *t);
    /* Whether the finished handshake resumed an earlier session (no full handshake). NULL:
     * never. */
    bool (*resumed)(const struct transport *t);
};

struct transport {
    const struct transport_ops *ops;
    void *state;                   /* the implementation's (NULL for plain) */
    int fd;                        /* -1: none */
    uint8_t want;                  /* TRANSPORT_WANT_*: set by a call that could not go on */
};

/* How the connections of one side of a pool move their bytes: ops, and the implementation's
 * shared configuration (a TLS context: certificates, verification). */
struct transport_ctx {
    const struct transport_ops *ops;
    void *impl;                    /* NULL for plain */
};

extern const struct transport_ops transport_plain_ops;
extern const struct transport_ctx transport_plain_ctx;

struct conf;
struct conf_pool;
enum transport_side { TRANSPORT_CLIENTS, TRANSPORT_SERVERS };

/* The context of one side of a pool (its listener's clients, its servers), as its config says,
 * for one config generation used by nthreads threads (the workers and the master's prober: all
 * that it needs is built now, from the files as they are now): transport_ctx_put when the
 * generation goes. NULL when it cannot be built (the config check has said why). */
const struct transport_ctx *transport_ctx_for_pool(const struct conf_pool *cp, enum transport_side side,
                                                   unsigned nthreads);
void transport_ctx_put(const struct transport_ctx *ctx);
/* The config check of what only building the contexts finds (a TLS key that does not match its
 * certificate, a file that does not parse): builds and frees every pool's contexts, reporting
 * each failure in the loader's format through on_error (a conf_error_fn; NULL: stderr).
 * Returns the number of failures. */
unsigned transport_conf_check(const struct conf *c, void (*on_error)(void *, const char *), void *arg);

/* Makes t the transport of fd for ctx (takes fd over: a failure closes it). peer: who a
 * client-side handshake talks to (its name for TLS SNI and verification, its id for the session
 * resumed), or NULL. Returns 0 or -errno. */
int transport_open(struct transport *t, const struct transport_ctx *ctx, int fd,
                   const struct transport_peer *peer);
/* t has no fd (closed, or never opened). */
void transport_init_closed(struct transport *t);

static inline bool transport_is_open(const struct transport *t)
{
    return t->fd >= 0;
}

/* Closes t (its fd too) when open; afterwards t has no fd. */
void transport_close(struct transport *t);

static inline ssize_t transport_read(struct transport *t, void *buf, size_t len)
{
    return t->ops->read(t, buf, len);
}

static inline ssize_t transport_writev(struct transport *t, const struct iovec *iov, int n)
{
    return t->ops->writev(t, iov, n);
}

/* One buffer: transport_writev of one iovec. */
ssize_t transport_write(struct transport *t, const void *buf, size_t len);

static inline bool transport_pending(const struct transport *t)
{
    return t->ops->pending != NULL && t->ops->pending(t);
}

static inline bool transport_has_handshake(const struct transport *t)
{
    return t->ops->handshake != NULL;
}

/* Whether t's finished handshake resumed a session (see transport_ops.resumed). */
static inline bool transport_resumed(const struct transport *t)
{
    return t->ops->resumed != NULL && t->ops->resumed(t);
}

/* The connections of ctx have a handshake (NULL: no context). */
static inline bool transport_ctx_has_handshake(const struct transport_ctx *ctx)
{
    return ctx != NULL && ctx->ops->handshake != NULL;
}

static inline void transport_shutdown(struct transport *t)
{
    t->ops->shutdown(t);
}

/* A listener's next connection (see transport_ops.accept). */
static inline int transport_accept(struct transport *t, struct sockaddr *sa, socklen_t *salen)
{
    return t->ops->accept(t, sa, salen);
}

/* Whether the peer of t's socket is gone, for a connection the proxy does not read: the socket
 * has an error (a reset) or its peer's end of stream is the next thing to read. Bytes waiting to
 * be read say it is not. Whatever the transport: it asks the socket itself. */
bool transport_peer_gone(const struct transport *t);

/* Why the last call failed, for a log line: ops->why's words, else strerror(err). */
const char *transport_strerror(const struct transport *t, int err);

#endif
