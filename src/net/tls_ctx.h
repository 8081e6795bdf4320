/*
 * tls_ctx.h - the OpenSSL context of one side of a pool that asks for TLS (notes/tls.md): its
 * certificates, what it verifies, its protocols and ciphers, built from the pool's tls_* keys
 * (the clients' side: the proxy is the TLS server) or server_tls_* keys (the servers' side: the
 * proxy is the TLS client).
 *
 * Threads: built and freed by the thread that builds a config generation (the master, or -t);
 * read-only afterwards and shared by every worker (OpenSSL's SSL_CTX is safe to use from several
 * threads once set up: each connection has its own SSL).
 */
#ifndef NC_TLS_CTX_H
#define NC_TLS_CTX_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/ssl.h>

#include "net/transport.h"

struct tls_ctx {
    SSL_CTX *ssl;
    bool connects;        /* the servers' side: the proxy is the TLS client */
    bool verify;          /* connects: the server's certificate and name are verified */
    char *server_name;    /* connects: server_tls_server_name, or NULL (each server's host) */
};

/* Builds side's context of cp. NULL on failure, with *key the pool key to blame and what in
 * words (what is wrong with it). */
struct tls_ctx *tls_ctx_new(const struct conf_pool *cp, enum transport_side side, const char **key,
                            char *what, size_t cap);
void tls_ctx_free(struct tls_ctx *t);

/* The first reason of the calling thread's OpenSSL error queue, in words (or dflt), into buf. */
const char *tls_error_text(char *buf, size_t cap, const char *dflt);

#endif
