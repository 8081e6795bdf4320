/*
 * memcache_bin_fanout.c - the binary protocol's requests sent to every server of a pool
 * (CMD_F_FRAG_ALL, notes/fan-out.md), as their text twins (memcache_fanout.c):
 *   - stat (without a key): the client's request to every server; the reply is a packet per
 *     statistic (the proxy's own, then the servers' counters that add up, summed:
 *     memcache_stats.c), then the closing packet without a key, all with the client's opaque. A
 *     server that does not answer is left out; when none answers well, the first error's packet.
 *   - flush, flushq (with its delay, if any): a flush to every server (never quiet: the proxy needs
 *     each answer); the reply is an empty success (nothing for flushq), or the first server's
 *     error, with the client's opcode.
 *
 * Threads: no state; the worker that owns the request, its fragments and their replies.
 */
#include "config.h"
#include "proto/memcache_bin.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/textbuf.h"

/* A server's stat reply is taken up to this size (about 5 KB in practice). */
#define MC_BIN_STATS_MAX (1u << 20)

/* The fragment of req for server: the client's header (its opcode replaced by a flush's when it
 * is one: a quiet flush would answer nothing), then the rest of its bytes. */
static struct msg *bin_frag(struct msg *req, uint32_t server, struct msg_pool *pool, const void *ctx)
{
    (void)ctx;
    struct msg *fr = proto_frag_new(req, server, pool);
    if (fr == NULL) return NULL;
    fr->rsp_opts = MC_RSP_BIN;
    uint8_t h[MC_BIN_HDR_LEN];
    msg_copy_out(req, 0, h, sizeof(h));
    if (h[MC_BIN_OFF_OPCODE] == MC_BIN_OP_FLUSHQ) h[MC_BIN_OFF_OPCODE] = MC_BIN_OP_FLUSH;
    if (msg_append_own(fr, h, sizeof(h)) < 0 || msg_append_slice(fr, req, MC_BIN_HDR_LEN, req->len) < 0) {
        msg_put(pool, fr);
        return NULL;
    }
    return fr;
}

int mc_bin_fragment_all(struct msg *req, const uint32_t *where, uint32_t n, struct msg_pool *pool)
{
    return mc_fragments_to(req, where, n, pool, bin_frag, NULL);
}

/* r's packets, the client's opcode in the first one's header. */
static int reheaded(struct msg *rsp, const struct msg *r, uint8_t opcode)
{
    if (r->len > MC_BIN_STATS_MAX) return -EINVAL;
    uint8_t *copy = malloc(r->len);
    if (copy == NULL) return -ENOMEM;
    msg_copy_out(r, 0, copy, r->len);
    copy[MC_BIN_OFF_OPCODE] = opcode;
    rsp->rsp_type = RSP_MC_BIN;
    int rc = msg_append_literal(rsp, copy, r->len);
    free(copy);
    return rc;
}

static int coalesce_flush(struct msg *req, struct msg *rsp, const uint8_t *h)
{
    for (uint32_t f = 0; f < req->nfrags; f++) {
        const struct msg *r = req->frags[f]->peer;
        if (r == NULL) return -EINVAL;
        if (r->integer != MC_BIN_ST_OK) return reheaded(rsp, r, h[MC_BIN_OFF_OPCODE]);
    }
    rsp->rsp_type = RSP_MC_BIN;
    if (h[MC_BIN_OFF_OPCODE] == MC_BIN_OP_FLUSHQ) return 0; /* quiet: nothing */
    uint8_t out[MC_BIN_HDR_LEN];
    mc_bin_hdr(out, h[MC_BIN_OFF_OPCODE], MC_BIN_ST_OK, 0, 0, 0, h + MC_BIN_OFF_OPAQUE);
    return msg_append_own(rsp, out, sizeof(out));
}

/* Adds one server's stat packets. */
static int stats_add(struct mc_stats_sum *sum, const struct msg *r)
{
    if (r->len > MC_BIN_STATS_MAX) return 0;
    uint8_t *p = malloc(r->len ? r->len : 1);
    if (p == NULL) return -ENOMEM;
    size_t n = msg_copy_out(r, 0, p, r->len);
    for (size_t at = 0; n - at >= MC_BIN_HDR_LEN;) {
        const uint8_t *h = p + at;
        size_t key = mc_bin_u16(h + MC_BIN_OFF_KEYLEN), ext = h[MC_BIN_OFF_EXTLEN];
        size_t body = mc_bin_u32(h + MC_BIN_OFF_BODY);
        if (body > n - at - MC_BIN_HDR_LEN || key + ext > body) break;
        const char *name = (const char *)h + MC_BIN_HDR_LEN + ext;
        if (key > 0) mc_stats_pair(sum, name, key, name + key, body - key - ext);
        at += MC_BIN_HDR_LEN + body;
    }
    free(p);
    sum->nservers++;
    return 0;
}

struct stat_out {
    struct textbuf t;
    const uint8_t *opaque;
};

/* One statistic's packet. */
static void stat_packet(void *ctx, const char *name, const char *value)
{
    struct stat_out *o = ctx;
    size_t nlen = strlen(name), vlen = strlen(value);
    uint8_t h[MC_BIN_HDR_LEN];
    mc_bin_hdr(h, MC_BIN_OP_STAT, MC_BIN_ST_OK, (uint16_t)nlen, 0, (uint32_t)(nlen + vlen), o->opaque);
    textbuf_add(&o->t, h, sizeof(h));
    textbuf_add(&o->t, name, nlen);
    textbuf_add(&o->t, value, vlen);
}

static int coalesce_stat(const struct proto_view *v, struct msg *req, struct msg *rsp, const uint8_t *h)
{
    struct mc_stats_sum sum = { 0 };
    for (uint32_t f = 0; f < req->nfrags; f++) {
        const struct msg *r = req->frags[f]->peer;
        if (r == NULL || r->rsp_type != RSP_MC_BIN || r->integer != MC_BIN_ST_OK) continue;
        if (stats_add(&sum, r) < 0) return -ENOMEM;
    }
    if (sum.nservers == 0) { /* every server answered with an error: the first one's */
        for (uint32_t f = 0; f < req->nfrags; f++)
            if (req->frags[f]->peer != NULL) return reheaded(rsp, req->frags[f]->peer, MC_BIN_OP_STAT);
        return -EINVAL;
    }
    struct stat_out o = { .opaque = h + MC_BIN_OFF_OPAQUE };
    mc_stats_render(&sum, v, req->nfrags, stat_packet, &o);
    uint8_t end[MC_BIN_HDR_LEN];
    mc_bin_hdr(end, MC_BIN_OP_STAT, MC_BIN_ST_OK, 0, 0, 0, o.opaque);
    textbuf_add(&o.t, end, sizeof(end));
    rsp->rsp_type = RSP_MC_BIN;
    return proto_text_put(&o.t, rsp);
}

int mc_bin_coalesce_all(const struct proto_view *v, struct msg *req, struct msg *rsp)
{
    uint8_t h[MC_BIN_HDR_LEN];
    msg_copy_out(req, 0, h, sizeof(h));
    if (h[MC_BIN_OFF_OPCODE] == MC_BIN_OP_STAT) return coalesce_stat(v, req, rsp, h);
    return coalesce_flush(req, rsp, h);
}
