/*
 * tls_ctx.c - builds the OpenSSL context of one side of a pool from its config keys (see
 * tls_ctx.h): the clients' side is a TLS server (certificate and key, client certificates as
 * tls_auth_clients says, protocols, ciphers, a server-side session cache), the servers' side a
 * TLS client (the servers' certificates verified against a CA file or the system's store, an
 * optional client certificate, a session kept per server to resume: net/tls_sessions.h). A
 * failure names the key to blame and OpenSSL's reason, for the config check's line.
 *
 * Threads: the thread that builds a config generation (the master, or -t). The OpenSSL error
 * queue it reads is that thread's own.
 */
#include "config.h"
#include "net/tls_ctx.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

#include "common/log.h"
#include "conf/conf.h"
#include "net/tls_sessions.h"

#define TLS_SID_CTX "nutcrackers"

struct tls_err {
    const char *key;
    char *what;
    size_t cap;
};

const char *tls_error_text(char *buf, size_t cap, const char *dflt)
{
    unsigned long e = ERR_get_error();
    const char *reason = e != 0 ? ERR_reason_error_string(e) : NULL;
    if (reason != NULL) snprintf(buf, cap, "%s", reason);
    else if (e != 0) ERR_error_string_n(e, buf, cap);
    else snprintf(buf, cap, "%s", dflt);
    ERR_clear_error();
    return buf;
}

/* Fails with key and "<fmt>: <OpenSSL's reason>". Returns -1. */
static int __attribute__((format(printf, 3, 4))) tls_fail(struct tls_err *e, const char *key, const char *fmt, ...)
{
    char head[512], reason[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof(head), fmt, ap);
    va_end(ap);
    e->key = key;
    snprintf(e->what, e->cap, "%s: %s", head, tls_error_text(reason, sizeof(reason), "unknown error"));
    return -1;
}

/* Never asks for a passphrase on the terminal: an encrypted key does not load. */
static int tls_no_passphrase(char *buf, int size, int rwflag, void *u)
{
    (void)buf, (void)size, (void)rwflag, (void)u;
    return 0;
}

static int tls_version(unsigned bit)
{
    switch (bit) {
    case CONF_TLS_V1_0: return TLS1_VERSION;
    case CONF_TLS_V1_1: return TLS1_1_VERSION;
    case CONF_TLS_V1_2: return TLS1_2_VERSION;
    default: return TLS1_3_VERSION;
    }
}

/* What both sides set: modes, options, the protocol range (mask 0: TLSv1.2 and up). */
static int tls_common(SSL_CTX *s, unsigned mask, struct tls_err *e)
{
    SSL_CTX_set_mode(s, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE |
                            SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    uint64_t opts = SSL_OP_NO_RENEGOTIATION;
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
    opts |= SSL_OP_IGNORE_UNEXPECTED_EOF; /* a peer that closes without close_notify: an end */
#endif
    SSL_CTX_set_options(s, opts);
    SSL_CTX_set_default_passwd_cb(s, tls_no_passphrase);
    int lo = TLS1_2_VERSION, hi = 0;
    if (mask != 0) {
        lo = tls_version(mask & -mask);
        unsigned top = mask;
        while (top & (top - 1)) top &= top - 1;
        hi = tls_version(top);
    }
    if (!SSL_CTX_set_min_proto_version(s, lo) || !SSL_CTX_set_max_proto_version(s, hi))
        return tls_fail(e, "tls_protocols", "cannot set the protocol range");
    return 0;
}

/* A certificate (with its chain) and its key; both named by their keys for errors. */
static int tls_pair(SSL_CTX *s, const char *cert, const char *key, const char *cert_key,
                    const char *key_key, struct tls_err *e)
{
    if (SSL_CTX_use_certificate_chain_file(s, cert) != 1)
        return tls_fail(e, cert_key, "cannot load the certificate '%s'", cert);
    if (SSL_CTX_use_PrivateKey_file(s, key, SSL_FILETYPE_PEM) != 1) {
        if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH)
            return tls_fail(e, key_key, "'%s' does not match %s '%s'", key, cert_key, cert);
        return tls_fail(e, key_key, "cannot load the private key '%s'", key);
    }
    if (SSL_CTX_check_private_key(s) != 1)
        return tls_fail(e, key_key, "'%s' does not match %s '%s'", key, cert_key, cert);
    return 0;
}

/* The clients' side: the proxy is the TLS server. */
static int tls_accepting(SSL_CTX *s, const struct conf_pool *cp, struct tls_err *e)
{
    if (tls_common(s, cp->tls_protocols, e) < 0) return -1;
    if (tls_pair(s, cp->tls_cert_file, cp->tls_key_file, "tls_cert_file", "tls_key_file", e) < 0) return -1;
    if (cp->tls_ca_cert_file != NULL) {
        if (SSL_CTX_load_verify_locations(s, cp->tls_ca_cert_file, NULL) != 1)
            return tls_fail(e, "tls_ca_cert_file", "cannot load the CA certificates '%s'", cp->tls_ca_cert_file);
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(cp->tls_ca_cert_file);
        if (names != NULL) SSL_CTX_set_client_CA_list(s, names);
        ERR_clear_error();
    }
    int mode = SSL_VERIFY_NONE;
    if (cp->tls_auth_clients == CONF_TLS_AUTH_YES) mode = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    else if (cp->tls_auth_clients == CONF_TLS_AUTH_OPTIONAL) mode = SSL_VERIFY_PEER;
    SSL_CTX_set_verify(s, mode, NULL);
    if (cp->tls_ciphers != NULL && SSL_CTX_set_cipher_list(s, cp->tls_ciphers) != 1)
        return tls_fail(e, "tls_ciphers", "no usable cipher in '%s'", cp->tls_ciphers);
    if (cp->tls_ciphersuites != NULL && SSL_CTX_set_ciphersuites(s, cp->tls_ciphersuites) != 1)
        return tls_fail(e, "tls_ciphersuites", "no usable ciphersuite in '%s'", cp->tls_ciphersuites);
    SSL_CTX_set_session_cache_mode(s, SSL_SESS_CACHE_SERVER);
    SSL_CTX_set_session_id_context(s, (const unsigned char *)TLS_SID_CTX, sizeof(TLS_SID_CTX) - 1);
    return 0;
}

/* The servers' side: the proxy is the TLS client. */
static int tls_connecting(SSL_CTX *s, const struct conf_pool *cp, struct tls_err *e)
{
    if (tls_common(s, 0, e) < 0) return -1;
    if (cp->server_tls_verify) {
        SSL_CTX_set_verify(s, SSL_VERIFY_PEER, NULL);
        const char *ca = cp->server_tls_ca_cert_file;
        if (ca != NULL && SSL_CTX_load_verify_locations(s, ca, NULL) != 1)
            return tls_fail(e, "server_tls_ca_cert_file", "cannot load the CA certificates '%s'", ca);
        if (ca == NULL && SSL_CTX_set_default_verify_paths(s) != 1)
            return tls_fail(e, "server_tls_verify", "cannot load the system's CA certificates");
    } else {
        SSL_CTX_set_verify(s, SSL_VERIFY_NONE, NULL);
    }
    if (tls_sessions_attach(s) < 0) return tls_fail(e, "server_tls", "cannot keep TLS sessions");
    if (cp->server_tls_cert_file != NULL && cp->server_tls_key_file != NULL)
        return tls_pair(s, cp->server_tls_cert_file, cp->server_tls_key_file, "server_tls_cert_file",
                        "server_tls_key_file", e);
    return 0;
}

/* One SSL_CTX of t's side, as its keys say; NULL with e filled. */
static SSL_CTX *tls_ctx_build(const struct tls_ctx *t, struct tls_err *e)
{
    SSL_CTX *s = SSL_CTX_new(t->connects ? TLS_client_method() : TLS_server_method());
    int rc = s == NULL ? tls_fail(e, e->key, "cannot make a TLS context") : 0;
    if (rc == 0) rc = t->connects ? tls_connecting(s, t->cp, e) : tls_accepting(s, t->cp, e);
    if (rc == 0 && !t->connects &&
        SSL_CTX_set_tlsext_ticket_keys(s, (void *)t->ticket_keys, sizeof(t->ticket_keys)) != 1)
        rc = tls_fail(e, e->key, "cannot set the session ticket keys");
    if (rc < 0) {
        SSL_CTX_free(s);
        return NULL;
    }
    return s;
}

/* The contexts of the threads after the first, built now. Returns 0 or -1 with e filled. */
static int tls_ctx_spares(struct tls_ctx *t, unsigned n, struct tls_err *e)
{
    t->spare = calloc(n ? n : 1, sizeof(*t->spare));
    if (t->spare == NULL) return tls_fail(e, e->key, "out of memory");
    for (; t->nspare < n; t->nspare++) {
        t->spare[t->nspare] = tls_ctx_build(t, e);
        if (t->spare[t->nspare] == NULL) return -1;
    }
    return 0;
}

struct tls_ctx *tls_ctx_new(const struct conf_pool *cp, enum transport_side side, unsigned nthreads,
                            const char **key, char *what, size_t cap)
{
    struct tls_err e = { .key = side == TRANSPORT_SERVERS ? "server_tls" : "tls", .what = what, .cap = cap };
    bool connects = side == TRANSPORT_SERVERS;
    ERR_clear_error();
    struct tls_ctx *t = calloc(1, sizeof(*t));
    if (t == NULL) {
        snprintf(what, cap, "out of memory");
        *key = e.key;
        return NULL;
    }
    t->connects = connects;
    t->verify = connects && cp->server_tls_verify;
    t->cp = cp;
    pthread_mutex_init(&t->lock, NULL);
    int rc = RAND_bytes(t->ticket_keys, sizeof(t->ticket_keys)) == 1
                 ? 0 : tls_fail(&e, e.key, "no random bytes for the session ticket keys");
    if (rc == 0) {
        t->ssl = tls_ctx_build(t, &e);
        if (t->ssl == NULL) rc = -1;
    }
    if (rc == 0 && nthreads > 1) rc = tls_ctx_spares(t, nthreads - 1, &e);
    if (rc == 0 && connects && cp->server_tls_server_name != NULL) {
        t->server_name = strdup(cp->server_tls_server_name);
        if (t->server_name == NULL) rc = tls_fail(&e, "server_tls_server_name", "out of memory");
    }
    if (rc < 0) {
        *key = e.key;
        tls_ctx_free(t);
        return NULL;
    }
    return t;
}

/* Records ssl as thread's own context of t. Returns false when out of memory. */
static bool tls_ctx_adopt(struct tls_ctx *t, pthread_t thread, SSL_CTX *ssl)
{
    struct tls_thread_ctx *grown = realloc(t->per, (t->nper + 1) * sizeof(*grown));
    if (grown == NULL) return false;
    t->per = grown;
    t->per[t->nper++] = (struct tls_thread_ctx){ thread, ssl };
    return true;
}

/* A context for the calling thread: one built with t (the first, then the spares); past them
 * (more threads than t was built for) one built now, from the files as they are now. */
static SSL_CTX *tls_ctx_make_own(struct tls_ctx *t, pthread_t self)
{
    char what[512];
    struct tls_err e = { .key = t->connects ? "server_tls" : "tls", .what = what, .cap = sizeof(what) };
    SSL_CTX *s = t->ssl != NULL ? t->ssl : t->nspare > 0 ? t->spare[t->nspare - 1] : NULL;
    bool built = s == NULL;
    if (built) {
        log_notice("pool '%s': key '%s': one more thread than TLS contexts built: one built now", t->cp->name, e.key);
        s = tls_ctx_build(t, &e);
    }
    if (s == NULL) {
        log_error("pool '%s': key '%s': a worker's TLS context: %s", t->cp->name, e.key, what);
        return NULL;
    }
    if (!tls_ctx_adopt(t, self, s)) {
        if (built) SSL_CTX_free(s);
        log_error("pool '%s': a worker's TLS context: out of memory", t->cp->name);
        return NULL;
    }
    if (s == t->ssl) t->ssl = NULL; /* per[] owns it now */
    else if (!built) t->nspare--;
    return s;
}

SSL_CTX *tls_ctx_for_thread(struct tls_ctx *t)
{
    pthread_t self = pthread_self();
    SSL_CTX *found = NULL;
    pthread_mutex_lock(&t->lock);
    for (size_t i = 0; i < t->nper && found == NULL; i++)
        if (pthread_equal(t->per[i].thread, self)) found = t->per[i].ssl;
    if (found == NULL) found = tls_ctx_make_own(t, self);
    pthread_mutex_unlock(&t->lock);
    return found;
}

void tls_ctx_free(struct tls_ctx *t)
{
    if (t == NULL) return;
    SSL_CTX_free(t->ssl); /* connections still open keep it alive through their SSL */
    for (size_t i = 0; i < t->nper; i++) SSL_CTX_free(t->per[i].ssl);
    for (size_t i = 0; i < t->nspare; i++) SSL_CTX_free(t->spare[i]);
    free(t->per);
    free(t->spare);
    pthread_mutex_destroy(&t->lock);
    free(t->server_name);
    free(t);
}
