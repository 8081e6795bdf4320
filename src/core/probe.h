/*
 * probe.h - the liveness prober: when an ejected server's server_retry_timeout has passed, it
 * connects to it and sends its protocol's probe request (proto_ops.probe_request: redis PING,
 * memcached version); only an answer of the protocol (proto_ops.probe_alive) counts. If the server
 * answers, it goes back into the pool's distribution for every worker; if not, it stays ejected
 * for another retry period. So clients never pay for trying a server that is still down.
 *
 * Threads: runs on the master's event loop; touches shared pool health only through route.h.
 */
#ifndef NC_PROBE_H
#define NC_PROBE_H

struct event_base;
struct runtime;
struct prober;

/* Starts checking rt's ejected servers every 100 ms on base. NULL when out of memory. */
struct prober *prober_create(struct event_base *base, struct runtime *rt);
void prober_destroy(struct prober *pr);

#endif
