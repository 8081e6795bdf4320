/*
 * memcache_cmd.c - the memcached command table (built from MC_CMD_TABLE in memcache.h) and verb
 * lookup.
 *
 * Threads: const data and a pure function; any thread.
 */
#include "config.h"
#include "proto/memcache.h"

const struct mc_cmd mc_cmds[MC_CMD_COUNT] = {
#define MC_CMD_ENTRY(id, n, a, f, u) \
    [MC_CMD_##id] = { .name = n, .name_len = sizeof(n) - 1, .args = a, .flags = f, .unsupported = u },
    MC_CMD_TABLE(MC_CMD_ENTRY)
#undef MC_CMD_ENTRY
};

const char *const mc_cmd_names[MC_CMD_COUNT] = {
#define MC_CMD_NAME(id, n, a, f, u) [MC_CMD_##id] = n,
    MC_CMD_TABLE(MC_CMD_NAME)
#undef MC_CMD_NAME
};

enum mc_cmd_id mc_cmd_lookup(const uint8_t *verb, size_t len)
{
    for (int i = MC_CMD_UNKNOWN + 1; i < MC_CMD_COUNT; i++) {
        const struct mc_cmd *c = &mc_cmds[i];
        if (c->name_len == len && len > 0 && proto_bytes_equal(c->name, verb, len)) return (enum mc_cmd_id)i;
    }
    return MC_CMD_UNKNOWN;
}
