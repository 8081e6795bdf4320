/*
 * refused.h - refused commands: a request the proxy does not serve (a command it does not know or
 * does not support) is counted per name in its worker's pool block (stats_pool_block.refused, the
 * names are the protocol's refused_names, any other name counts as "other") and logged at notice
 * level, at most one line per name per log interval (pool_shared.refused_log).
 *
 * Threads: the loop owning the client; the counters are its worker's, the limiters shared
 * (lock-free).
 */
#ifndef NC_REFUSED_H
#define NC_REFUSED_H

#include "core/conn.h"
#include "msg/msg.h"

/* Counts and logs req (rejected, of client c) when it is a refused command. */
void refused_note(struct conn *c, const struct msg *req);

#endif
