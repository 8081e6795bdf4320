/*
 * redis_admin.c - the redis commands about the servers themselves that the proxy decides on
 * (notes/functions-and-introspection.md):
 *   - FUNCTION: LOAD, DELETE, FLUSH and RESTORE go to every server of the pool (the library's
 *     name, or +OK, once every server accepted; the first error in server order otherwise); LIST,
 *     DUMP, STATS and HELP to the first live server; KILL is refused (a function runs on the
 *     server of its keys, which FUNCTION KILL does not name);
 *   - CONFIG: GET and HELP to the first live server; SET, REWRITE and RESETSTAT are refused (each
 *     server has its own configuration: set it there);
 *   - ROLE: the proxy is a master without replicas to its clients;
 *   - MEMORY without a key is refused (DOCTOR, STATS, MALLOC-STATS, PURGE speak of one server);
 *     MEMORY USAGE key is routed by its key.
 * A subcommand redis does not have gets redis's own error from the proxy (nothing unknown is sent
 * to a server); a known one with wrong arguments gets the server's error.
 *
 * Threads: no state; the worker that owns the request, its fragments and their replies.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "proto/redis.h"
#include "proto/redis_cmd.h"

/* Where a subcommand goes. */
enum admin_route {
    ADMIN_UNKNOWN = 0, /* not a subcommand of redis 7: redis's own error */
    ADMIN_EVERY,       /* to every server of the pool */
    ADMIN_FIRST,       /* to the first live server */
    ADMIN_REFUSED,     /* refused with the text of its row */
};

struct admin_sub {
    const char *name;    /* lowercase */
    uint8_t route;       /* enum admin_route */
    const char *refusal; /* ADMIN_REFUSED: the reply */
};

static const struct admin_sub function_subs[] = {
    { "load", ADMIN_EVERY, NULL },
    { "delete", ADMIN_EVERY, NULL },
    { "flush", ADMIN_EVERY, NULL },
    { "restore", ADMIN_EVERY, NULL },
    { "list", ADMIN_FIRST, NULL },
    { "dump", ADMIN_FIRST, NULL },
    { "stats", ADMIN_FIRST, NULL },
    { "help", ADMIN_FIRST, NULL },
    { "kill", ADMIN_REFUSED,
      "-ERR FUNCTION KILL is not supported by the proxy: a function runs on the server of its keys, "
      "send FUNCTION KILL to that server\r\n" },
};

static const struct admin_sub config_subs[] = {
    { "get", ADMIN_FIRST, NULL },
    { "help", ADMIN_FIRST, NULL },
    { "set", ADMIN_REFUSED, "-ERR CONFIG SET is not supported by the proxy: set it on each server\r\n" },
    { "rewrite", ADMIN_REFUSED, "-ERR CONFIG REWRITE is not supported by the proxy: run it on each server\r\n" },
    { "resetstat", ADMIN_REFUSED,
      "-ERR CONFIG RESETSTAT is not supported by the proxy: run it on each server\r\n" },
};

static const char admin_role_reply[] = "*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n";

static const char admin_memory_refusal[] =
    "-ERR MEMORY without a key is not supported by the proxy: MEMORY USAGE key is routed by its key; "
    "ask each server for DOCTOR, STATS, MALLOC-STATS or PURGE\r\n";

/* The row of req's subcommand (FUNCTION, CONFIG: keys[0]), or NULL when redis has none such. */
static const struct admin_sub *admin_sub_of(const struct msg *req)
{
    const struct admin_sub *subs = function_subs;
    size_t n = sizeof(function_subs) / sizeof(function_subs[0]);
    if (req->cmd >= redis_ncmds || req->nkeys == 0) return NULL;
    if (redis_cmds[req->cmd].local == REDIS_LOCAL_CONFIG) {
        subs = config_subs;
        n = sizeof(config_subs) / sizeof(config_subs[0]);
    } else if (redis_cmds[req->cmd].local != REDIS_LOCAL_FUNCTION) {
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        if (redis_key_is(&req->keys[0], subs[i].name)) return &subs[i];
    return NULL;
}

int redis_admin_local(const struct msg *req, struct msg *rsp)
{
    uint8_t which = redis_cmds[req->cmd].local;
    if (which == REDIS_LOCAL_ROLE) return redis_answer(rsp, admin_role_reply, PROTO_ANSWERED);
    if (which == REDIS_LOCAL_MEMORY)
        return req->nkeys == 0 ? redis_answer(rsp, admin_memory_refusal, PROTO_ANSWERED) : PROTO_FORWARD;
    const struct admin_sub *sub = admin_sub_of(req);
    if (sub == NULL)
        return redis_answer_unknown_sub(&req->keys[0], which == REDIS_LOCAL_CONFIG ? "CONFIG" : "FUNCTION", rsp);
    if (sub->route == ADMIN_REFUSED) return redis_answer(rsp, sub->refusal, PROTO_ANSWERED);
    return PROTO_FORWARD;
}

bool redis_admin_first_only(const struct msg *req)
{
    const struct admin_sub *sub = admin_sub_of(req);
    return sub != NULL && sub->route == ADMIN_FIRST;
}

static int admin_slice(struct msg *rsp, const struct msg *r)
{
    rsp->rsp_type = r->rsp_type;
    return msg_append_slice(rsp, r, 0, r->len);
}

int redis_coalesce_admin(struct msg *req, struct msg *rsp)
{
    if (req->nfrags == 0) return -EINVAL;
    const struct msg *first = req->frags[0]->peer;
    const struct admin_sub *sub = admin_sub_of(req);
    if (redis_cmds[req->cmd].fan == REDIS_FAN_FIRST || (sub != NULL && sub->route == ADMIN_FIRST))
        return admin_slice(rsp, first);
    if (redis_key_is(&req->keys[0], "load")) { /* the library's name, the same from every server */
        for (uint32_t f = 0; f < req->nfrags; f++)
            if (req->frags[f]->peer->rsp_type != RSP_BULK) return -EINVAL;
        return admin_slice(rsp, first);
    }
    for (uint32_t f = 0; f < req->nfrags; f++) /* DELETE, FLUSH, RESTORE */
        if (!redis_reply_is_ok(req->frags[f]->peer)) return -EINVAL;
    rsp->rsp_type = RSP_STATUS;
    return msg_append_copy(rsp, "+OK\r\n", 5);
}
