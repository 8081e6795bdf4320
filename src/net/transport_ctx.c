/*
 * transport_ctx.c - the transport context of each side of a pool, chosen by its config (see
 * transport.h): the plain one for every pool today. A TLS context (certificates, verification,
 * session cache) will be built here per config generation from the pool's tls_* and server_tls_*
 * keys, and freed with the generation.
 *
 * Threads: the thread that builds a config generation (the master); contexts are immutable once
 * built and read by every thread.
 */
#include "config.h"
#include "net/transport.h"

#include "conf/conf.h"

const struct transport_ctx *transport_ctx_for_pool(const struct conf_pool *cp, enum transport_side side)
{
    (void)cp;
    (void)side;
    return &transport_plain_ctx;
}

void transport_ctx_put(const struct transport_ctx *ctx)
{
    (void)ctx; /* the plain context is static: nothing to free */
}
