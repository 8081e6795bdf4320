/*
 * transport_tls.h - the TLS transport's ops (net/transport_tls.c), for the context builder
 * (net/transport_ctx.c) only: nothing above net/ names an implementation.
 *
 * Threads: the ops are const; see transport.h.
 */
#ifndef NC_TRANSPORT_TLS_H
#define NC_TRANSPORT_TLS_H

#include "net/transport.h"

extern const struct transport_ops transport_tls_ops;

#endif
