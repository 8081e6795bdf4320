/*
 * redis_declared.c - a redis pool's command table with its declared commands (see
 * redis_declared.h): built from the conf's `commands:` entries (conf/conf_commands.c parsed
 * them), checked against the built-in table for -t, start and reload, and the parser's lookup of
 * a name the built-in table lacks (a binary search over the declared names, lowercased once).
 *
 * A declared entry: its key positions (first, last, step) as written, no numkeys; CMD_F_WRITE
 * unless readonly; CMD_F_FRAG_ONE when it may name several keys (they must all be on one server,
 * else the proxy's cross-server error, as MSETNX); arity: at least FIRST + 1 arguments (the name
 * included), FIRST - LAST with a negative LAST (its last key at or after its first), or the
 * built-in's arity when that is stricter.
 *
 * Threads: built and checked by the master; lookups by any worker on an immutable table.
 */
#include "config.h"
#include "proto/redis_declared.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"
#include "proto/proto.h"

_Static_assert(CONF_COMMAND_NAME_MAX == REDIS_CMD_NAME_MAX - 1, "a declared name fits where a built-in's does");

struct redis_declared {
    size_t ndeclared;               /* entries after the built-ins, sorted by name */
    struct redis_cmd cmds[];        /* redis_ncmds built-ins, then the declared */
};

/* The table whose entries table points to (parse_state.table is &d->cmds[0]). */
static const struct redis_declared *declared_of(const struct redis_cmd *table)
{
    return (const struct redis_declared *)(const void *)((const char *)table - offsetof(struct redis_declared, cmds));
}

const char *redis_declared_refusal(const struct redis_cmd *c)
{
    uint32_t f = c->flags;
    if ((f & CMD_F_LOCAL_MASK) || c->local != 0) return "the proxy answers it itself";
    if (f & CMD_F_FRAG_ALL) return "the proxy sends it to every server and merges their replies";
    if (f & CMD_F_PUBSUB) return "the proxy keeps its clients' subscriptions (Pub/Sub)";
    if ((f & CMD_F_BLOCK) || c->timeout_arg != 0)
        return "it blocks: the proxy runs it on a server connection of its client's own";
    if (f & CMD_F_TXN_MASK) return "the proxy runs transactions (MULTI, EXEC, WATCH) itself";
    if (f & (CMD_F_FRAG_MGET | CMD_F_FRAG_SUM | CMD_F_FRAG_MSET))
        return "the proxy splits it per server and merges the replies";
    if (f & CMD_F_ANY_SERVER) return "it has no key: the proxy sends it to any server";
    if (c->numkeys_pos == REDIS_KEYS_STREAMS) return "the proxy reads its keys after STREAMS (and its BLOCK)";
    return NULL;
}

/* The fewest arguments (the name included) that hold d's first key and, with a negative LAST,
 * a last key at or after it. */
static int declared_min_args(const struct conf_command *d)
{
    return d->first + (d->last < 0 ? -d->last : 1);
}

struct redis_cmd redis_declared_entry(const struct conf_command *d, const struct redis_cmd *builtin)
{
    int min = declared_min_args(d);
    int arity = -min;
    if (builtin != NULL && builtin->arity > 0) arity = builtin->arity;
    else if (builtin != NULL && -builtin->arity > min) arity = builtin->arity;
    bool several = d->last < 0 || d->last - d->first >= d->step;
    return (struct redis_cmd){
        .name = builtin != NULL ? builtin->name : d->name,
        .arity = (int8_t)arity,
        .first_key = (int8_t)d->first,
        .last_key = (int8_t)d->last,
        .key_step = (int8_t)d->step,
        .flags = (d->readonly ? 0 : CMD_F_WRITE) | (several ? CMD_F_FRAG_ONE : 0),
    };
}

unsigned redis_declared_check(const struct conf_pool *cp, void (*on_error)(void *, const char *), void *ctx)
{
    unsigned n = 0;
    for (size_t k = 0; k < cp->ncommands; k++) {
        const struct conf_command *d = &cp->commands[k];
        int i = redis_cmd_lookup((const uint8_t *)d->name, strlen(d->name));
        if (i < 0) continue;
        const struct redis_cmd *c = &redis_cmds[i];
        const char *why = redis_declared_refusal(c);
        if (why != NULL) {
            conf_pool_report_at(cp, "commands", d->line, on_error, ctx, "'%s' cannot be declared: %s", d->name, why);
            n++;
        } else if (c->arity > 0 && c->arity < declared_min_args(d)) {
            conf_pool_report_at(cp, "commands", d->line, on_error, ctx,
                                "'%s' takes exactly %d arguments (its name included): its keys cannot be at %d to %d",
                                d->name, c->arity, d->first, d->last);
            n++;
        }
    }
    return n;
}

static int declared_cmp(const void *a, const void *b)
{
    return strcmp(((const struct redis_cmd *)a)->name, ((const struct redis_cmd *)b)->name);
}

int redis_declared_new(const struct conf_pool *cp, const void **table)
{
    *table = NULL;
    if (cp->ncommands == 0) return 0;
    size_t extra = 0;
    for (size_t k = 0; k < cp->ncommands; k++)
        if (redis_cmd_lookup((const uint8_t *)cp->commands[k].name, strlen(cp->commands[k].name)) < 0) extra++;
    struct redis_declared *d = malloc(sizeof(*d) + (redis_ncmds + extra) * sizeof(d->cmds[0]));
    if (d == NULL) return -ENOMEM;
    memcpy(d->cmds, redis_cmds, redis_ncmds * sizeof(d->cmds[0]));
    d->ndeclared = 0;
    for (size_t k = 0; k < cp->ncommands; k++) {
        const struct conf_command *c = &cp->commands[k];
        int i = redis_cmd_lookup((const uint8_t *)c->name, strlen(c->name));
        if (i < 0) d->cmds[redis_ncmds + d->ndeclared++] = redis_declared_entry(c, NULL);
        else if (redis_declared_refusal(&redis_cmds[i]) == NULL) d->cmds[i] = redis_declared_entry(c, &redis_cmds[i]);
        /* (a refused one never gets here: conf_check failed the config) */
    }
    qsort(d->cmds + redis_ncmds, d->ndeclared, sizeof(d->cmds[0]), declared_cmp);
    *table = d->cmds;
    return 0;
}

void redis_declared_free(const void *table)
{
    if (table != NULL) free((void *)(uintptr_t)declared_of(table));
}

int redis_declared_lookup(const struct redis_cmd *table, const uint8_t *name, size_t len)
{
    _Static_assert(CONF_COMMAND_NAME_MAX < REDIS_CMD_NAME_MAX, "a declared name fits the lowercase buffer");
    char low[REDIS_CMD_NAME_MAX];
    if (!redis_cmd_name_lower(name, len, low)) return -1; /* "json.get\0x" is no "json.get" */
    const struct redis_declared *d = declared_of(table);
    const struct redis_cmd *decl = d->cmds + redis_ncmds;
    size_t lo = 0, hi = d->ndeclared;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(low, decl[mid].name);
        if (c == 0) return (int)(redis_ncmds + mid);
        if (c < 0) hi = mid;
        else lo = mid + 1;
    }
    return -1;
}
