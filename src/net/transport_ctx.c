/*
 * transport_ctx.c - the transport context of each side of a pool, chosen by its config (see
 * transport.h): the plain one, or a TLS one (net/tls_ctx.c: certificates, verification, session
 * cache) built per config generation from the pool's tls_* (clients) or server_tls_* (servers)
 * keys and freed with the generation. Also the config check of what only building the contexts
 * finds (a key that does not match its certificate, a file that does not parse).
 *
 * Threads: the thread that builds a config generation (the master, or -t); contexts are read by
 * every thread once built (a TLS context hands each worker an SSL_CTX of its own, under its
 * mutex: net/tls_ctx.h).
 */
#include "config.h"
#include "net/transport.h"

#include <stdlib.h>

#include "common/log.h"
#include "conf/conf.h"
#include "net/tls_ctx.h"
#include "net/transport_tls.h"

struct transport_tls_ctx {
    struct transport_ctx base;  /* first: a transport_ctx * is a transport_tls_ctx * */
    struct tls_ctx *tls;
};

static bool transport_side_tls(const struct conf_pool *cp, enum transport_side side)
{
    return side == TRANSPORT_CLIENTS ? cp->tls : cp->server_tls;
}

/* Builds side's context of cp; NULL after reporting why through on_error. */
static const struct transport_ctx *transport_ctx_build(const struct conf_pool *cp, enum transport_side side,
                                                       unsigned nthreads, conf_error_fn on_error, void *arg)
{
    if (!transport_side_tls(cp, side)) return &transport_plain_ctx;
    char what[768];
    const char *key = NULL;
    struct tls_ctx *tls = tls_ctx_new(cp, side, nthreads, &key, what, sizeof(what));
    if (tls == NULL) {
        conf_pool_report(cp, key, on_error, arg, "%s", what);
        return NULL;
    }
    struct transport_tls_ctx *tc = calloc(1, sizeof(*tc));
    if (tc == NULL) {
        tls_ctx_free(tls);
        conf_pool_report(cp, side == TRANSPORT_CLIENTS ? "tls" : "server_tls", on_error, arg, "out of memory");
        return NULL;
    }
    tc->base.ops = &transport_tls_ops;
    tc->base.impl = tls;
    tc->tls = tls;
    return &tc->base;
}

static void transport_ctx_log(void *arg, const char *line)
{
    (void)arg;
    log_error("%s", line);
}

const struct transport_ctx *transport_ctx_for_pool(const struct conf_pool *cp, enum transport_side side,
                                                   unsigned nthreads)
{
    return transport_ctx_build(cp, side, nthreads, transport_ctx_log, NULL);
}

void transport_ctx_put(const struct transport_ctx *ctx)
{
    if (ctx == NULL || ctx == &transport_plain_ctx) return; /* the plain context is static */
    struct transport_tls_ctx *tc = (struct transport_tls_ctx *)(void *)ctx;
    tls_ctx_free(tc->tls);
    free(tc);
}

unsigned transport_conf_check(const struct conf *c, conf_error_fn on_error, void *arg)
{
    unsigned bad = 0;
    for (size_t i = 0; i < c->npools; i++) {
        for (int side = TRANSPORT_CLIENTS; side <= TRANSPORT_SERVERS; side++) {
            const struct transport_ctx *ctx =
                transport_ctx_build(&c->pools[i], (enum transport_side)side, 1, on_error, arg);
            if (ctx == NULL) bad++;
            transport_ctx_put(ctx);
        }
    }
    return bad;
}
