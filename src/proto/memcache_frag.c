/*
 * memcache_frag.c - multi-key get/gets/gat/gats: split into one sub-request per server
 * (proto.h fragment) and the client's reply rebuilt from the sub-replies (proto.h coalesce).
 *
 * A fragment is "<the client's line up to its first key><keys of that server>\r\n": the header
 * ("get ", "gats 300 ", ...) and the keys are slices of the client's request (no copy); runs of
 * keys that were next to each other in the client's line are taken with the spaces between them,
 * other keys are joined by a literal " "; " \r\n" is written once in the request's own chunk
 * (msg_own; a literal mbuf when it has no room) and every fragment takes its " " and "\r\n" there.
 * The arrays of a split are kept with the request across reuses (msg_frags_array), and the scratch
 * arrays of up to MC_STACK_KEYS keys live on the stack: no malloc per request once warm.
 *
 * The reply is, for each key of the client's line in order, the VALUE block of that key from its
 * fragment's reply, then one "END\r\n". memcached answers a fragment's keys in its order and
 * leaves out misses, so each fragment's VALUE blocks are matched against its keys in order with a
 * cursor: a missing key is left out and the order is kept; a key asked twice gets its VALUE block
 * twice, as memcached itself answers "get a a".
 *
 * Threads: the worker owning the request, its fragments and their replies.
 */
#include "config.h"
#include "proto/memcache.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

#define MC_NO_KEY UINT32_MAX
#define MC_STACK_KEYS 64

/* " \r\n" for a split's fragments: bytes off..off+3 of mb */
struct mc_sep {
    struct mbuf *mb;
    uint32_t off;
    bool literal; /* mb is a literal of this split's own (unref'd at its end) */
};

static int sep_init(struct mc_sep *sep, struct msg *req)
{
    uint8_t *p = msg_own(req, 3);
    if (p != NULL) {
        memcpy(p, " \r\n", 3);
        *sep = (struct mc_sep){ .mb = req->own, .off = (uint32_t)(p - req->own->data), .literal = false };
        return 0;
    }
    struct mbuf *mb = mbuf_literal(" \r\n", 3);
    if (mb == NULL) return -ENOMEM;
    *sep = (struct mc_sep){ .mb = mb, .off = 0, .literal = true };
    return 0;
}

/* Groups the keys by server in order of first appearance: key_frag[i] and the fragments' servers
 * (frag_server[0..*nfrags)). */
static uint32_t group_keys(const struct msg *req, const uint32_t *server_of_key, uint32_t *key_frag,
                           uint32_t *frag_server)
{
    uint32_t nfrags = 0, last = 0;
    for (uint32_t i = 0; i < req->nkeys; i++) {
        uint32_t s = server_of_key[i];
        if (nfrags == 0 || frag_server[last] != s) {
            for (last = 0; last < nfrags && frag_server[last] != s; last++) {}
            if (last == nfrags) frag_server[nfrags++] = s;
        }
        key_frag[i] = last;
    }
    return nfrags;
}

static struct msg *frag_create(struct msg *req, uint32_t server, struct msg_pool *pool)
{
    struct msg *f = msg_get(pool);
    if (f == NULL) return NULL;
    f->frag_owner = req;
    f->server_idx = server;
    f->cmd = req->cmd;
    f->cmd_flags = req->cmd_flags;
    f->name = req->name;
    f->name_len = req->name_len;
    if (msg_append_slice(f, req, 0, req->keys[0].start) < 0) {
        msg_put(pool, f);
        return NULL;
    }
    return f;
}

/* Appends key i of req to fragment f; prev is the index of f's previous key or MC_NO_KEY. */
static int frag_add_key(struct msg *f, const struct msg *req, uint32_t i, uint32_t prev,
                        const struct mc_sep *sep)
{
    const struct msg_key *k = &req->keys[i];
    int rc;
    if (prev != MC_NO_KEY && prev + 1 == i) {
        rc = msg_append_slice(f, req, req->keys[prev].end, k->end);
    } else {
        rc = prev == MC_NO_KEY ? 0 : msg_append(f, sep->mb, sep->off, 1);
        if (rc == 0) rc = msg_append_slice(f, req, k->start, k->end);
    }
    if (rc == 0) rc = msg_add_key(f, k->ptr, k->len, f->len - k->len, f->len);
    return rc;
}

int mc_fragment(struct msg *req, const uint32_t *server_of_key, uint32_t nwhere, struct msg_pool *pool)
{
    if (req->cmd_flags & CMD_F_FRAG_ALL) return mc_fragment_all(req, server_of_key, nwhere, pool);
    uint32_t n = req->nkeys;
    (void)nwhere; /* == nkeys */
    uint32_t *key_frag = msg_key_frag_array(req, n); /* (kept with req, as frags below) */
    uint32_t stack_scratch[MC_STACK_KEYS];
    uint32_t *scratch = n <= MC_STACK_KEYS ? stack_scratch : malloc((size_t)n * sizeof(*scratch));
    struct mc_sep sep = { 0 };
    struct msg **frags = NULL;
    uint32_t nfrags = 0;
    int rc = -ENOMEM;

    if (key_frag == NULL || scratch == NULL || sep_init(&sep, req) < 0) goto out;
    nfrags = group_keys(req, server_of_key, key_frag, scratch); /* scratch: servers, then last keys */
    frags = msg_frags_array(req, nfrags);
    if (frags == NULL) goto out;
    for (uint32_t j = 0; j < nfrags; j++) {
        frags[j] = frag_create(req, scratch[j], pool);
        if (frags[j] == NULL) goto out;
        scratch[j] = MC_NO_KEY;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t j = key_frag[i];
        if (frag_add_key(frags[j], req, i, scratch[j], &sep) < 0) goto out;
        scratch[j] = i;
    }
    for (uint32_t j = 0; j < nfrags; j++) {
        if (msg_append(frags[j], sep.mb, sep.off + 1, 2) < 0) goto out;
    }
    req->frags = frags;
    req->nfrags = nfrags;
    req->nfrags_done = 0;
    req->key_frag = key_frag;
    frags = NULL;
    rc = 0;
out:
    if (frags != NULL) {
        for (uint32_t j = 0; j < nfrags && frags[j] != NULL; j++) msg_put(pool, frags[j]);
    }
    if (sep.literal) mbuf_unref(sep.mb);
    if (scratch != stack_scratch) free(scratch);
    return rc;
}

static bool elem_is_key(const struct msg_elem *e, const struct msg_key *k)
{
    return e->key_len == k->len && memcmp(e->key, k->ptr, k->len) == 0;
}

int mc_coalesce(const struct proto_view *v, struct msg *req, struct msg *rsp)
{
    if (req->cmd_flags & CMD_F_FRAG_ALL) return mc_coalesce_all(v, req, rsp);
    for (uint32_t j = 0; j < req->nfrags; j++) {
        const struct msg *r = req->frags[j]->peer;
        if (r == NULL || r->rsp_type != RSP_MC_END) return -EINVAL;
    }
    uint32_t stack_cursor[MC_STACK_KEYS];
    uint32_t *cursor = req->nfrags <= MC_STACK_KEYS ? stack_cursor : malloc(req->nfrags * sizeof(*cursor));
    if (cursor == NULL) return -ENOMEM;
    memset(cursor, 0, req->nfrags * sizeof(*cursor));
    int rc = 0;
    for (uint32_t i = 0; i < req->nkeys && rc == 0; i++) {
        uint32_t j = req->key_frag[i];
        const struct msg *r = req->frags[j]->peer;
        if (cursor[j] < r->nelems && elem_is_key(&r->elems[cursor[j]], &req->keys[i])) {
            const struct msg_elem *e = &r->elems[cursor[j]++];
            rc = msg_append_slice(rsp, r, e->start, e->end);
        }
    }
    if (cursor != stack_cursor) free(cursor);
    if (rc == 0) rc = msg_append_copy(rsp, "END\r\n", 5);
    if (rc == 0) rsp->rsp_type = RSP_MC_END;
    return rc;
}
