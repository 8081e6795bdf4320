/*
 * tls_ctx.h - the OpenSSL context of one side of a pool that asks for TLS (notes/tls.md): its
 * certificates, what it verifies, its protocols and ciphers, built from the pool's tls_* keys
 * (the clients' side: the proxy is the TLS server) or server_tls_* keys (the servers' side: the
 * proxy is the TLS client).
 *
 * Threads: built and freed by the thread that builds a config generation (the master, or -t).
 * Each thread that uses it (every worker, the master's prober) gets an SSL_CTX of its own
 * (tls_ctx_for_thread, on its first connection of the generation, under the context's mutex:
 * once per new connection, never per request): OpenSSL 3.0 fills some values of a shared
 * context's certificate store lazily, racing between threads, and contends on its locks. Those
 * contexts are all built with the generation, from the files as they were then: a file replaced
 * later (a reload that fails, or none yet) never reaches a thread that connects later. The accepting side's contexts share one set of session-ticket keys, so
 * a client resumes its session on any worker; a worker's connecting context keeps the last
 * session of each server, to resume its next connection there (net/tls_sessions.h).
 */
#ifndef NC_TLS_CTX_H
#define NC_TLS_CTX_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include <openssl/ssl.h>

#include "net/transport.h"

#define TLS_TICKET_KEYS_LEN 80 /* SSL_CTX_set_tlsext_ticket_keys: name, HMAC and AES keys */

/* One worker's own SSL_CTX. */
struct tls_thread_ctx {
    pthread_t thread;
    SSL_CTX *ssl;
};

struct tls_ctx {
    SSL_CTX *ssl;         /* the one built with it (the config check's), until a worker takes it */
    bool connects;        /* the servers' side: the proxy is the TLS client */
    bool verify;          /* connects: the server's certificate and name are verified */
    char *server_name;    /* connects: server_tls_server_name, or NULL (each server's host) */
    const struct conf_pool *cp; /* what it was built from (lives as long as the generation) */
    unsigned char ticket_keys[TLS_TICKET_KEYS_LEN];
    pthread_mutex_t lock; /* guards per, nper, spare and nspare */
    SSL_CTX **spare;      /* built with it, for the threads that have none yet */
    size_t nspare;
    struct tls_thread_ctx *per;
    size_t nper;
};

/* Builds side's context of cp, with an SSL_CTX for each of nthreads threads. NULL on failure,
 * with *key the pool key to blame and what in words (what is wrong with it). */
struct tls_ctx *tls_ctx_new(const struct conf_pool *cp, enum transport_side side, unsigned nthreads,
                            const char **key, char *what, size_t cap);
void tls_ctx_free(struct tls_ctx *t);
/* The calling thread's own SSL_CTX of t (made on its first call). NULL when out of memory or
 * when OpenSSL fails to build it again (logged). */
SSL_CTX *tls_ctx_for_thread(struct tls_ctx *t);

/* The first reason of the calling thread's OpenSSL error queue, in words (or dflt), into buf. */
const char *tls_error_text(char *buf, size_t cap, const char *dflt);

#endif
