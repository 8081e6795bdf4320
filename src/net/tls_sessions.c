/*
 * tls_sessions.c - the sessions a connecting SSL_CTX keeps per peer id (see tls_sessions.h). The
 * store hangs on the SSL_CTX (ex_data, freed by OpenSSL with the context); each SSL of a
 * connection that gave an id holds its own copy of it (ex_data, freed with the SSL), which is how
 * the new-session callback, called on a later read, knows whose session it is. OpenSSL keeps no
 * sessions of its own for the context (SSL_SESS_CACHE_NO_INTERNAL_STORE): the callback takes
 * each new session over (returns 1) and frees the one it replaces.
 *
 * Threads: a store is used by the thread whose SSL_CTX it hangs on (tls_sessions.h), but freed
 * by whichever thread drops the context's last reference, and OpenSSL's reference count orders
 * nothing else: the store's lock, never contended, makes the owner's last change happen before
 * the free. It is taken per connection opened and per session received, never per request. The
 * ex_data indexes are made once, under pthread_once.
 */
#include "config.h"
#include "net/tls_sessions.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/x509.h>

#define TLS_SESSIONS_FIRST 8 /* slots of a store's first array */

struct tls_kept {
    char *id;             /* owned */
    SSL_SESSION *sess;    /* one reference, or NULL (none, or dropped) */
};

struct tls_sessions {
    pthread_mutex_t lock; /* see the top: orders the owner's changes before the free */
    struct tls_kept *kept;
    size_t n, cap;
    size_t next;          /* the slot taken over next once TLS_SESSIONS_MAX ids are kept */
};

static pthread_once_t tls_sessions_once = PTHREAD_ONCE_INIT;
static int tls_sessions_ctx_idx = -1; /* SSL_CTX ex_data: its struct tls_sessions */
static int tls_sessions_ssl_idx = -1; /* SSL ex_data: its peer's id (owned copy) */

static void tls_sessions_free_store(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp)
{
    (void)parent, (void)ad, (void)idx, (void)argl, (void)argp;
    struct tls_sessions *st = ptr;
    if (st == NULL) return;
    pthread_mutex_lock(&st->lock);
    for (size_t i = 0; i < st->n; i++) {
        free(st->kept[i].id);
        SSL_SESSION_free(st->kept[i].sess);
    }
    free(st->kept);
    pthread_mutex_unlock(&st->lock);
    pthread_mutex_destroy(&st->lock);
    free(st);
}

static void tls_sessions_free_id(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp)
{
    (void)parent, (void)ad, (void)idx, (void)argl, (void)argp;
    free(ptr);
}

static void tls_sessions_make_indexes(void)
{
    tls_sessions_ctx_idx = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, tls_sessions_free_store);
    tls_sessions_ssl_idx = SSL_get_ex_new_index(0, NULL, NULL, NULL, tls_sessions_free_id);
}

static bool tls_sessions_indexes(void)
{
    pthread_once(&tls_sessions_once, tls_sessions_make_indexes);
    return tls_sessions_ctx_idx >= 0 && tls_sessions_ssl_idx >= 0;
}

/* The store of ssl's context, and the id ssl was opened for (NULL when not recorded). */
static struct tls_sessions *tls_sessions_of(SSL *ssl, const char **id)
{
    *id = SSL_get_ex_data(ssl, tls_sessions_ssl_idx);
    return SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), tls_sessions_ctx_idx);
}

static struct tls_kept *tls_sessions_find(struct tls_sessions *st, const char *id)
{
    for (size_t i = 0; i < st->n; i++)
        if (strcmp(st->kept[i].id, id) == 0) return &st->kept[i];
    return NULL;
}

/* id's slot, made when it has none (taking over the next slot in turn when the store is full);
 * NULL when out of memory. */
static struct tls_kept *tls_sessions_slot(struct tls_sessions *st, const char *id)
{
    struct tls_kept *k = tls_sessions_find(st, id);
    if (k != NULL) return k;
    char *copy = strdup(id);
    if (copy == NULL) return NULL;
    if (st->n == TLS_SESSIONS_MAX) {
        k = &st->kept[st->next];
        st->next = (st->next + 1) % TLS_SESSIONS_MAX;
        free(k->id);
        SSL_SESSION_free(k->sess);
    } else {
        if (st->n == st->cap) {
            size_t cap = st->cap == 0 ? TLS_SESSIONS_FIRST : st->cap * 2;
            if (cap > TLS_SESSIONS_MAX) cap = TLS_SESSIONS_MAX;
            struct tls_kept *grown = realloc(st->kept, cap * sizeof(*grown));
            if (grown == NULL) {
                free(copy);
                return NULL;
            }
            st->kept = grown;
            st->cap = cap;
        }
        k = &st->kept[st->n++];
    }
    k->id = copy;
    k->sess = NULL;
    return k;
}

/* sess (NULL: none) becomes id's session, the one it replaces freed (NULL: only an id with a
 * slot). Returns false when out of memory (sess not taken). */
static bool tls_sessions_put(struct tls_sessions *st, const char *id, SSL_SESSION *sess)
{
    pthread_mutex_lock(&st->lock);
    struct tls_kept *k = sess != NULL ? tls_sessions_slot(st, id) : tls_sessions_find(st, id);
    if (k != NULL) {
        SSL_SESSION_free(k->sess);
        k->sess = sess;
    }
    pthread_mutex_unlock(&st->lock);
    return k != NULL || sess == NULL;
}

/* OpenSSL's new-session callback: a session (a TLS 1.3 ticket, or a TLS 1.2 session at the end
 * of the handshake) for ssl's peer replaces the one kept for it. 1: taken over; 0: OpenSSL
 * frees it. A peer whose certificate did not verify leaves nothing to resume. */
static int tls_sessions_new(SSL *ssl, SSL_SESSION *sess)
{
    const char *id;
    struct tls_sessions *st = tls_sessions_of(ssl, &id);
    if (id == NULL || st == NULL || !SSL_SESSION_is_resumable(sess)) return 0;
    if ((SSL_get_verify_mode(ssl) & SSL_VERIFY_PEER) && SSL_get_verify_result(ssl) != X509_V_OK) return 0;
    return tls_sessions_put(st, id, sess) ? 1 : 0;
}

int tls_sessions_attach(SSL_CTX *s)
{
    if (!tls_sessions_indexes()) return -1;
    struct tls_sessions *st = calloc(1, sizeof(*st));
    if (st == NULL) return -1;
    pthread_mutex_init(&st->lock, NULL);
    if (SSL_CTX_set_ex_data(s, tls_sessions_ctx_idx, st) != 1) {
        pthread_mutex_destroy(&st->lock);
        free(st);
        return -1;
    }
    SSL_CTX_set_session_cache_mode(s, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(s, tls_sessions_new);
    return 0;
}

int tls_sessions_offer(SSL *ssl, const char *id)
{
    if (!tls_sessions_indexes()) return 0; /* nothing kept anywhere */
    char *copy = strdup(id);
    if (copy == NULL || SSL_set_ex_data(ssl, tls_sessions_ssl_idx, copy) != 1) {
        free(copy);
        return -ENOMEM;
    }
    const char *known;
    struct tls_sessions *st = tls_sessions_of(ssl, &known);
    if (st == NULL) return 0;
    pthread_mutex_lock(&st->lock);
    struct tls_kept *k = tls_sessions_find(st, id);
    if (k != NULL && k->sess != NULL &&
        (!SSL_SESSION_is_resumable(k->sess) || SSL_set_session(ssl, k->sess) != 1)) {
        SSL_SESSION_free(k->sess); /* of no use: a full handshake, whose session replaces it */
        k->sess = NULL;
        ERR_clear_error();
    }
    pthread_mutex_unlock(&st->lock);
    return 0;
}

void tls_sessions_forget(SSL *ssl)
{
    if (!tls_sessions_indexes()) return;
    const char *id;
    struct tls_sessions *st = tls_sessions_of(ssl, &id);
    if (st != NULL && id != NULL) tls_sessions_put(st, id, NULL);
}
