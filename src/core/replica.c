/*
 * replica.c - reads served by replicas (see replica.h).
 *
 * Threads: the loop's own.
 */
#include "config.h"
#include "core/replica.h"

#include "conf/conf.h"
#include "core/pool.h"
#include "core/route.h"
#include "core/runtime.h"
#include "msg/msg.h"
#include "proto/proto.h"
#include "topo/topology.h"

/* What never goes to a replica. */
#define REPLICA_NEVER (CMD_F_WRITE | CMD_F_BLOCK | CMD_F_PUBSUB | CMD_F_TXN_MASK | CMD_F_LOCAL_MASK | CMD_F_SWITCH | \
                       CMD_F_ANY_SERVER)

uint32_t replica_route(struct pool_rt *p, const struct msg *req, uint32_t m, uint32_t *rr)
{
    int mode = p->cp->read_from;
    if (mode == CONF_READ_MASTER || m >= p->nshards || (req->cmd_flags & REPLICA_NEVER)) return m;
    const struct topo_set *set = p->route->set;
    uint32_t up[CONF_REPLICA_SLOTS], n = 0;
    uint32_t base = p->nshards + m * CONF_REPLICA_SLOTS;
    for (uint32_t k = 0; k < CONF_REPLICA_SLOTS && base + k < set->nservers; k++) {
        if (!topo_slot_empty(set, base + k) && !pool_server_ejected(p->shared, base + k)) up[n++] = base + k;
    }
    uint32_t turn = (*rr)++;
    switch (mode) {
    case CONF_READ_PREFER_MASTER: return n == 0 || !pool_server_ejected(p->shared, m) ? m : up[turn % n];
    case CONF_READ_REPLICA: return n == 0 ? DIST_NONE : up[turn % n];
    case CONF_READ_PREFER_REPLICA: return n == 0 ? m : up[turn % n];
    default: return turn % (n + 1) == n ? m : up[turn % (n + 1)]; /* any */
    }
}
