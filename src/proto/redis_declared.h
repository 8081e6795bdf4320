/*
 * redis_declared.h - the command table of a redis pool that declares commands (its `commands:`
 * key, notes/declared-commands.md): the built-in table (redis_cmd.h) with the pool's declarations
 * of built-in names in place of their entries, then the commands the built-in table lacks, sorted
 * by name. The parser reads it through parse_state.table (proto_ops.parse_table_new): a request's
 * msg->cmd is an index into it, below redis_ncmds the same command as in redis_cmds[] (only its
 * key positions and mode may differ); at redis_ncmds and above a declared command, which the code
 * after the parser never looks up (it is plain routing by key: msg->cmd_flags and the keys say
 * all, and redis_cmds[] is read only for the commands the proxy handles itself, which cannot be
 * declared).
 *
 * Threads: built by the master once per config generation (core/runtime.c), never written
 * afterwards; read by every worker's parser, no lock; freed with its generation.
 */
#ifndef NC_REDIS_DECLARED_H
#define NC_REDIS_DECLARED_H

#include <stddef.h>
#include <stdint.h>

#include "proto/redis_cmd.h"

struct conf_pool;
struct conf_command;

/* proto_ops.parse_table_new: NULL for a pool without `commands:`. Returns 0 or -ENOMEM. */
int redis_declared_new(const struct conf_pool *cp, const void **table);
/* proto_ops.parse_table_free */
void redis_declared_free(const void *table);
/* proto_ops.conf_check: every declared name the proxy handles itself (and a built-in of fixed
 * arity whose declared keys lie past it), reported with its entry's line. */
unsigned redis_declared_check(const struct conf_pool *cp, void (*on_error)(void *, const char *), void *ctx);

/* Why built-in c cannot be declared (the proxy does more than route it by key), or NULL. */
const char *redis_declared_refusal(const struct redis_cmd *c);
/* The entry declaration d gives a command (builtin: the built-in entry of its name, or NULL):
 * its name, key positions, mode, and the arity its keys need (a built-in's when stricter). */
struct redis_cmd redis_declared_entry(const struct conf_command *d, const struct redis_cmd *builtin);

/* In table (a parse_state.table: a pool's command table), the index of the declared command named
 * name[0..len) (any case) that the built-in table lacks, or -1. */
int redis_declared_lookup(const struct redis_cmd *table, const uint8_t *name, size_t len);

#endif
