/*
 * transport_tls.c - the TLS transport (see transport.h, notes/transport.md "How TLS plugs in"):
 * OpenSSL on the connection's own non-blocking socket. One SSL per connection, made from its pool
 * side's context (net/tls_ctx.c); the handshake runs in steps (-EAGAIN with t->want), reads and
 * writes that OpenSSL cannot finish say what they wait for, and writev coalesces the iovecs into
 * one record-sized buffer per thread (OpenSSL has no writev). A write that must be retried is
 * retried with the same first bytes: the caller only advances by what was reported written, and
 * the buffer may move (SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER). Toward a server, the session kept
 * for its id is offered (net/tls_sessions.h), and a failed handshake drops it.
 *
 * The OpenSSL error queue is the thread's: every call clears it first, so one connection's errors
 * never show in another's `why`.
 *
 * Threads: a struct transport and its SSL belong to the connection's thread; the write buffer is
 * per thread; the context is shared read-only.
 */
#include "config.h"
#include "net/transport_tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "net/tls_ctx.h"
#include "net/tls_sessions.h"

#define TLS_WRITE_MAX 16384 /* one record's payload */

struct tls_state {
    SSL *ssl;
    bool shut;            /* SSL_shutdown was called */
    char why[192];        /* why the last call failed, "" when errno says it */
};

static __thread unsigned char tls_wbuf[TLS_WRITE_MAX];

/* Whether name is an IP address (no SNI for those; verified as an address). */
static bool tls_is_ip(const char *name)
{
    unsigned char a[16];
    return inet_pton(AF_INET, name, a) == 1 || inet_pton(AF_INET6, name, a) == 1;
}

/* The peer name the servers' side sends (SNI) and verifies. Returns 0 or -errno. */
static int tls_set_peer(SSL *ssl, const struct tls_ctx *tc, const char *name)
{
    if (name == NULL || name[0] == '\0') return 0;
    bool ip = tls_is_ip(name);
    if (!ip && SSL_set_tlsext_host_name(ssl, name) != 1) return -EINVAL;
    if (!tc->verify) return 0;
    if (ip) return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name) == 1 ? 0 : -EINVAL;
    return SSL_set1_host(ssl, name) == 1 ? 0 : -EINVAL;
}

/* The servers' side: connect mode, the peer's name, the session kept for its id. */
static int tls_open_connecting(SSL *ssl, const struct tls_ctx *tc, const struct transport_peer *peer)
{
    SSL_set_connect_state(ssl);
    const char *name = tc->server_name != NULL ? tc->server_name : peer != NULL ? peer->name : NULL;
    int rc = tls_set_peer(ssl, tc, name);
    if (rc == 0 && peer != NULL && peer->id != NULL) rc = tls_sessions_offer(ssl, peer->id);
    return rc;
}

static int tls_open(struct transport *t, const struct transport_ctx *ctx, const struct transport_peer *peer)
{
    struct tls_ctx *tc = ctx->impl;
    SSL_CTX *own = tls_ctx_for_thread(tc);
    if (own == NULL) return -ENOMEM;
    struct tls_state *st = calloc(1, sizeof(*st));
    if (st == NULL) return -ENOMEM;
    ERR_clear_error();
    st->ssl = SSL_new(own);
    int rc = st->ssl != NULL && SSL_set_fd(st->ssl, t->fd) == 1 ? 0 : -ENOMEM;
    if (rc == 0 && tc->connects) {
        rc = tls_open_connecting(st->ssl, tc, peer);
    } else if (rc == 0) {
        SSL_set_accept_state(st->ssl);
    }
    if (rc < 0) {
        SSL_free(st->ssl);
        free(st);
        ERR_clear_error();
        return rc;
    }
    t->state = st;
    return 0;
}

/* Words for a failed call: a certificate that did not verify, else the error queue's reason. */
static void tls_note_why(struct tls_state *st, int err)
{
    long v = SSL_get_verify_result(st->ssl);
    char reason[160];
    if (v != X509_V_OK) {
        snprintf(st->why, sizeof(st->why), "certificate verify failed: %s", X509_verify_cert_error_string(v));
        ERR_clear_error();
    } else if (err == SSL_ERROR_SSL) {
        snprintf(st->why, sizeof(st->why), "TLS: %s", tls_error_text(reason, sizeof(reason), "protocol error"));
    } else {
        st->why[0] = '\0';
        ERR_clear_error();
    }
}

/*
 * What a call that returned ret <= 0 means: -EAGAIN with t->want (the socket must be readable or
 * writable first), 0 for the peer's orderly end (eof_ok), or -errno with st->why.
 */
static int tls_result(struct transport *t, struct tls_state *st, int ret, bool eof_ok)
{
    int err = SSL_get_error(st->ssl, ret);
    int saved = errno;
    switch (err) {
    case SSL_ERROR_WANT_READ:
        t->want = TRANSPORT_WANT_READ;
        return -EAGAIN;
    case SSL_ERROR_WANT_WRITE:
        t->want = TRANSPORT_WANT_WRITE;
        return -EAGAIN;
    case SSL_ERROR_ZERO_RETURN:
        if (eof_ok) return 0;
        snprintf(st->why, sizeof(st->why), "TLS: the peer closed the connection");
        return -ECONNRESET;
    case SSL_ERROR_SYSCALL:
        st->why[0] = '\0';
        ERR_clear_error();
        if (saved == EAGAIN || saved == EINTR) {
            t->want = TRANSPORT_WANT_READ;
            return -EAGAIN;
        }
        if (saved == 0 && eof_ok) return 0;
        return saved != 0 ? -saved : -ECONNRESET;
    default:
        tls_note_why(st, err);
        return -EPROTO;
    }
}

static int tls_handshake(struct transport *t)
{
    struct tls_state *st = t->state;
    ERR_clear_error();
    errno = 0;
    int ret = SSL_do_handshake(st->ssl);
    if (ret == 1) return 0;
    int rc = tls_result(t, st, ret, false);
    if (rc != -EAGAIN) tls_sessions_forget(st->ssl); /* toward a server: not offered again */
    return rc;
}

static ssize_t tls_read(struct transport *t, void *buf, size_t len)
{
    struct tls_state *st = t->state;
    ERR_clear_error();
    errno = 0;
    int ret = SSL_read(st->ssl, buf, len > INT32_MAX ? INT32_MAX : (int)len);
    if (ret > 0) return ret;
    return tls_result(t, st, ret, true);
}

/* The first TLS_WRITE_MAX bytes of iov[0..n): the iovec itself when one holds them, else copied
 * into the thread's buffer. */
static const void *tls_gather(const struct iovec *iov, int n, size_t *len)
{
    if (n == 1 || iov[0].iov_len >= TLS_WRITE_MAX) {
        *len = iov[0].iov_len < TLS_WRITE_MAX ? iov[0].iov_len : TLS_WRITE_MAX;
        return iov[0].iov_base;
    }
    size_t used = 0;
    for (int i = 0; i < n && used < TLS_WRITE_MAX; i++) {
        size_t take = iov[i].iov_len < TLS_WRITE_MAX - used ? iov[i].iov_len : TLS_WRITE_MAX - used;
        memcpy(tls_wbuf + used, iov[i].iov_base, take);
        used += take;
    }
    *len = used;
    return tls_wbuf;
}

static ssize_t tls_writev(struct transport *t, const struct iovec *iov, int n)
{
    struct tls_state *st = t->state;
    size_t len = 0;
    const void *buf = tls_gather(iov, n, &len);
    if (len == 0) return 0;
    ERR_clear_error();
    errno = 0;
    int ret = SSL_write(st->ssl, buf, (int)len);
    if (ret > 0) return ret;
    int rc = tls_result(t, st, ret, false);
    if (rc == -EAGAIN) return 0;
    if (rc == 0) rc = -ECONNRESET;
    return rc;
}

static bool tls_pending(const struct transport *t)
{
    const struct tls_state *st = t->state;
    return SSL_pending(st->ssl) > 0 || SSL_has_pending(st->ssl);
}

static int tls_accept(struct transport *t, struct sockaddr *sa, socklen_t *salen)
{
    return transport_plain_ops.accept(t, sa, salen); /* listeners stay plain */
}

/* Our close_notify, once, and only on a session that finished its handshake. */
static void tls_shutdown(struct transport *t)
{
    struct tls_state *st = t->state;
    if (st == NULL || st->shut) return;
    st->shut = true;
    ERR_clear_error();
    if (SSL_is_init_finished(st->ssl)) (void)SSL_shutdown(st->ssl);
    ERR_clear_error();
}

static void tls_close(struct transport *t)
{
    struct tls_state *st = t->state;
    if (st != NULL) {
        tls_shutdown(t);
        SSL_free(st->ssl);
        free(st);
    }
    t->state = NULL;
    close(t->fd);
}

static const char *tls_why(const struct transport *t)
{
    const struct tls_state *st = t->state;
    return st != NULL && st->why[0] != '\0' ? st->why : NULL;
}

static bool tls_resumed(const struct transport *t)
{
    const struct tls_state *st = t->state;
    return st != NULL && SSL_session_reused(st->ssl) == 1;
}

const struct transport_ops transport_tls_ops = {
    .name = "tls",
    .open = tls_open,
    .handshake = tls_handshake,
    .read = tls_read,
    .writev = tls_writev,
    .pending = tls_pending,
    .accept = tls_accept,
    .shutdown = tls_shutdown,
    .close = tls_close,
    .why = tls_why,
    .resumed = tls_resumed,
};
