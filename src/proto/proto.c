/*
 * proto.c - which protocol a pool speaks (its `redis:` key) and the checks of its config only the
 * protocol knows (proto_conf_check), the parser state both share, a new
 * fragment, the step that turns a reply text (common/textbuf.h) into a reply, and the filter of
 * a list of clients (CLIENT LIST).
 *
 * Threads: pure functions, or on a parse_state of the caller's own; any thread.
 */
#include "config.h"
#include "proto/proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"

const struct proto_ops *proto_for_pool(const struct conf_pool *cp)
{
    return cp->redis ? &redis_proto : &memcache_proto;
}

unsigned proto_conf_check(const struct conf *c, void (*on_error)(void *, const char *), void *ctx)
{
    unsigned n = 0;
    for (size_t i = 0; i < c->npools; i++) {
        const struct proto_ops *ops = proto_for_pool(&c->pools[i]);
        if (ops->conf_check != NULL) n += ops->conf_check(&c->pools[i], on_error, ctx);
    }
    return n;
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

void parse_state_free(struct parse_state *ps)
{
    free(ps->stack);
    ps->stack = NULL;
    ps->stack_cap = 0;
    ps->depth = 0;
}

int proto_text_put(struct textbuf *t, struct msg *rsp)
{
    int rc = textbuf_failed(t) ? -ENOMEM : msg_append_literal(rsp, t->data, t->len);
    textbuf_deinit(t);
    return rc < 0 ? -ENOMEM : 0;
}

bool proto_list_match(const struct proto_list_filter *f, uint64_t id, bool subscribed)
{
    switch (f->type) {
    case PROTO_LIST_NONE:
    case PROTO_LIST_SELF: return false; /* the core renders the asker's line itself */
    case PROTO_LIST_NORMAL:
        if (subscribed) return false;
        break;
    case PROTO_LIST_PUBSUB:
        if (!subscribed) return false;
        break;
    default: break;
    }
    if (!f->by_id) return true;
    for (uint32_t i = 0; i < f->nids; i++) {
        if (f->ids[i] == id) return true;
    }
    return false;
}

int proto_list_filter_copy(struct proto_list_filter *dst, const struct proto_list_filter *src)
{
    *dst = *src;
    dst->ids = NULL;
    if (src->nids == 0) return 0;
    if ((dst->ids = malloc(sizeof(*dst->ids) * src->nids)) == NULL) {
        dst->nids = 0;
        return -ENOMEM;
    }
    memcpy(dst->ids, src->ids, sizeof(*dst->ids) * src->nids);
    return 0;
}

void proto_list_filter_free(struct proto_list_filter *f)
{
    free(f->ids);
    f->ids = NULL;
    f->nids = 0;
}
