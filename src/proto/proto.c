/*
 * proto.c - which protocol a pool speaks (its `redis:` key), the parser state both share, a new
 * fragment, and the growable text both build their longer replies in (rtext).
 *
 * Threads: pure functions, or on a parse_state of the caller's own; any thread.
 */
#include "config.h"
#include "proto/proto.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"

const struct proto_ops *proto_for_pool(const struct conf_pool *cp)
{
    return cp->redis ? &redis_proto : &memcache_proto;
}

struct msg *proto_frag_new(struct msg *req, uint32_t server, struct msg_pool *pool)
{
    struct msg *fr = msg_get(pool);
    if (fr == NULL) return NULL;
    fr->cmd = req->cmd;
    fr->cmd_flags = req->cmd_flags;
    fr->name = req->name;
    fr->name_len = req->name_len;
    fr->nargs = req->nargs;
    fr->frag_owner = req;
    fr->server_idx = server;
    return fr;
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

/* Makes room for n more bytes (and a NUL). */
static bool rtext_room(struct rtext *t, size_t n)
{
    if (t->oom) return false;
    if (t->cap - t->len > n) return true;
    size_t cap = t->cap ? t->cap : 256;
    while (cap - t->len <= n) {
        if (cap > SIZE_MAX / 2) {
            t->oom = true;
            return false;
        }
        cap *= 2;
    }
    char *p = realloc(t->p, cap);
    if (p == NULL) {
        t->oom = true;
        return false;
    }
    t->p = p;
    t->cap = cap;
    return true;
}

void rtext_add(struct rtext *t, const void *data, size_t n)
{
    if (n == 0 || !rtext_room(t, n)) return;
    memcpy(t->p + t->len, data, n);
    t->len += n;
}

void rtext_str(struct rtext *t, const char *str)
{
    rtext_add(t, str, strlen(str));
}

void rtext_printf(struct rtext *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        t->oom = true;
        return;
    }
    if (!rtext_room(t, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(t->p + t->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

void rtext_free(struct rtext *t)
{
    free(t->p);
    memset(t, 0, sizeof(*t));
}

int rtext_put(struct rtext *t, struct msg *rsp)
{
    int rc = t->oom ? -ENOMEM : msg_append_literal(rsp, t->p, t->len);
    rtext_free(t);
    return rc < 0 ? -ENOMEM : 0;
}
