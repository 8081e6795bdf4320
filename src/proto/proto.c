/*
 * proto.c - which protocol a pool speaks (its `redis:` key), and the parser state both share.
 *
 * Threads: pure functions, or on a parse_state of the caller's own; any thread.
 */
#include "config.h"
#include "proto/proto.h"

#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"

const struct proto_ops *proto_for_pool(const struct conf_pool *cp)
{
    return cp->redis ? &redis_proto : &memcache_proto;
}

void parse_state_reset(struct parse_state *ps)
{
    bool want_elems = ps->want_elems;
    uint64_t *stack = ps->stack;
    uint32_t stack_cap = ps->stack_cap;
    memset(ps, 0, sizeof(*ps));
    ps->want_elems = want_elems;
    ps->stack = stack;
    ps->stack_cap = stack_cap;
}

void parse_state_free(struct parse_state *ps)
{
    free(ps->stack);
    ps->stack = NULL;
    ps->stack_cap = 0;
    ps->depth = 0;
}
