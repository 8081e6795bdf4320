/*
 * proto.c - which protocol a pool speaks (its `redis:` key).
 *
 * Threads: a pure function; any thread.
 */
#include "config.h"
#include "proto/proto.h"

#include "conf/conf.h"

const struct proto_ops *proto_for_pool(const struct conf_pool *cp)
{
    return cp->redis ? &redis_proto : &memcache_proto;
}
