/*
 * refused.c - counting and logging refused commands (see refused.h). Only rejected requests come
 * here: the plain request path pays nothing.
 *
 * Threads: the loop owning the client.
 */
#include "config.h"
#include "core/refused.h"

#include "common/clock.h"
#include "common/log.h"
#include "common/ratelimit.h"
#include "core/pool.h"
#include "stats/stats.h"

/* how much of a name the log line shows */
#define REFUSED_NAME_SHOWN 32

void refused_note(struct conn *c, const struct msg *req)
{
    struct pool_rt *p = c->pool;
    const struct proto_ops *proto = p->proto;
    int b = proto->refused_bucket(req);
    if (b < 0) return;
    size_t other = stats_refused_other(proto->nrefused);
    if ((size_t)b > other) b = (int)other;
    STATS_POOL_ADD(p->st, refused_commands, 1);
    stats_ctr_add(&p->st->refused[b], 1);
    uint64_t sup;
    if (!log_enabled(LOG_NOTICE) || !nc_ratelimit_allow(&p->shared->refused_log[b], nc_usec_now(), &sup))
        return;
    char shown[REFUSED_NAME_SHOWN + 1];
    log_printable(shown, sizeof(shown), req->name, req->name_len);
    const char *as = (size_t)b == other ? " (unknown: counted as " STATS_REFUSED_OTHER ")" : "";
    log_notice("pool '%s': refused command '%s'%s from client %llu: the proxy does not serve it%s", p->cp->name,
               shown, as, (unsigned long long)c->sess.id, NC_RATELIMIT_NOTE(sup));
}
