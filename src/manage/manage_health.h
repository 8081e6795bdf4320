/*
 * manage_health.h - `GET /healthz`: whether every pool has a live server.
 *
 * A server is live when it is in its pool's distribution (not ejected) and has not failed
 * server_failure_limit times in a row since its last good reply (core/route.h counts the
 * consecutive failures for every pool, with or without auto_eject_hosts). So:
 *   - auto_eject_hosts: true: a pool is down when all its servers are ejected;
 *   - auto_eject_hosts: false (nothing is ever ejected): a pool is down when all its servers failed
 *     server_failure_limit times in a row (connect errors, resets, timeouts, fatal replies), and
 *     up again once one answers.
 * The check is passive: it reads what the traffic (and the prober of ejected servers) found; a
 * backend that died while no request went to it is still taken for live.
 *
 * Threads: the stats thread (reads the shared health atomics of its runtime).
 */
#ifndef NC_MANAGE_HEALTH_H
#define NC_MANAGE_HEALTH_H

#include <stdbool.h>

#include "manage/text_escape.h"

struct runtime;

/* Appends the body (one line "ok ..." or one line per pool without a live server) and returns
 * whether every pool has a live server. */
bool manage_health_render(const struct runtime *rt, struct textbuf *body);

#endif
