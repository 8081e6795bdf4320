/*
 * memcache_fanout.c - the memcached commands sent to every server of a pool (CMD_F_FRAG_ALL,
 * notes/fan-out.md): flush_all and stats.
 *
 * flush_all [delay] [noreply]: "flush_all [delay]" to every server (never with noreply: the proxy
 * needs each answer); the reply is OK when every server said OK, else the first other reply (a
 * CLIENT_ERROR for a bad delay, ...). With noreply the client gets nothing, as from memcached.
 *
 * stats: "stats" to every server that is in the distribution; the reply is the proxy's own lines
 * then the servers' counters that add up, summed (memcache_stats.c), as STAT lines, then END.
 * A server that does not answer is left out (CMD_F_FRAG_PARTIAL); with none, the usual error.
 * `stats <arg>` is refused by the parser (its sub-stats are per server and do not add up).
 *
 * The binary protocol's stat and flush are served the same way by memcache_bin_fanout.c.
 *
 * Threads: no state; the worker that owns the request, its fragments and their replies.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "proto/memcache_bin.h"

/* A server's stats reply is taken up to this size (about 3 KB in practice). */
#define MC_STATS_TEXT_MAX (1u << 20)

struct mc_line {
    const char *text;
    size_t len;
};

/* mc_frag_fn: a fragment of the line ctx (struct mc_line). */
static struct msg *mc_frag(struct msg *req, uint32_t server, struct msg_pool *pool, const void *ctx)
{
    const struct mc_line *line = ctx;
    struct msg *fr = proto_frag_new(req, server, pool);
    if (fr != NULL && msg_append_literal(fr, line->text, line->len) < 0) {
        msg_put(pool, fr);
        return NULL;
    }
    return fr;
}

/* The line the servers get: the client's tokens without a last "noreply", joined by one space.
 * Returns its length (the line fits: the parser limits it to MC_LINE_MAX bytes). */
static size_t mc_fanout_line(const struct msg *req, char *out, size_t size)
{
    char line[MC_LINE_MAX + 2];
    size_t n = msg_copy_out(req, 0, line, sizeof(line) - 1), len = 0, ntok = 0;
    line[n] = '\0';
    const char *tok[8];
    size_t tlen[8];
    for (char *p = line; *p != '\0' && ntok < 8;) {
        while (*p == ' ') p++;
        size_t t = strcspn(p, " \r\n");
        if (t == 0) break;
        tok[ntok] = p;
        tlen[ntok++] = t;
        p += t;
    }
    if (req->noreply && ntok > 1) ntok--;
    for (size_t i = 0; i < ntok && len + tlen[i] + 3 < size; i++) {
        if (i > 0) out[len++] = ' ';
        memcpy(out + len, tok[i], tlen[i]);
        len += tlen[i];
    }
    memcpy(out + len, "\r\n", 2);
    return len + 2;
}

int mc_fragments_to(struct msg *req, const uint32_t *where, uint32_t n, struct msg_pool *pool, mc_frag_fn make,
                    const void *ctx)
{
    struct msg **frags = calloc(n ? n : 1, sizeof(*frags));
    if (frags == NULL) return -ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        frags[i] = make(req, where[i], pool, ctx);
        if (frags[i] == NULL) {
            while (i > 0) msg_put(pool, frags[--i]);
            free(frags);
            return -ENOMEM;
        }
    }
    req->frags = frags;
    req->nfrags = n;
    req->nfrags_done = 0;
    req->key_frag = NULL;
    return 0;
}

int mc_fragment_all(struct msg *req, const uint32_t *where, uint32_t n, struct msg_pool *pool)
{
    if (req->cmd == MC_CMD_BINARY) return mc_bin_fragment_all(req, where, n, pool);
    char text[MC_LINE_MAX + 4];
    size_t len = req->cmd == MC_CMD_STATS ? (size_t)snprintf(text, sizeof(text), "stats\r\n")
                                          : mc_fanout_line(req, text, sizeof(text));
    struct mc_line line = { text, len };
    return mc_fragments_to(req, where, n, pool, mc_frag, &line);
}

static int mc_slice(struct msg *rsp, const struct msg *r)
{
    rsp->rsp_type = r->rsp_type;
    return msg_append_slice(rsp, r, 0, r->len);
}

static int mc_coalesce_flush(struct msg *req, struct msg *rsp)
{
    for (uint32_t f = 0; f < req->nfrags; f++) {
        const struct msg *r = req->frags[f]->peer;
        if (r == NULL) return -EINVAL;
        if (r->rsp_type != RSP_MC_OK) return mc_slice(rsp, r);
    }
    rsp->rsp_type = RSP_MC_OK;
    return msg_append_copy(rsp, "OK\r\n", 4);
}

/* Adds one server's "STAT name value" lines. */
static int mc_stats_add(struct mc_stats_sum *sum, const struct msg *r)
{
    if (r->len > MC_STATS_TEXT_MAX) return 0;
    char *text = malloc(r->len + 1);
    if (text == NULL) return -ENOMEM;
    size_t n = msg_copy_out(r, 0, text, r->len);
    text[n] = '\0';
    for (char *line = text; *line != '\0';) {
        char *end = strchr(line, '\n');
        size_t len = end != NULL ? (size_t)(end - line) : strlen(line);
        if (len > 0 && line[len - 1] == '\r') len--;
        if (len > 5 && memcmp(line, "STAT ", 5) == 0) {
            const char *name = line + 5, *sp = memchr(name, ' ', len - 5);
            if (sp != NULL)
                mc_stats_pair(sum, name, (size_t)(sp - name), sp + 1, (size_t)(line + len - sp - 1));
        }
        line = end != NULL ? end + 1 : line + len;
    }
    free(text);
    sum->nservers++;
    return 0;
}

static void stats_line(void *ctx, const char *name, const char *value)
{
    textbuf_addf(ctx, "STAT %s %s\r\n", name, value);
}

static int mc_coalesce_stats(const struct proto_view *v, struct msg *req, struct msg *rsp)
{
    struct mc_stats_sum sum = { 0 };
    for (uint32_t f = 0; f < req->nfrags; f++) {
        const struct msg *r = req->frags[f]->peer;
        if (r == NULL || r->rsp_type != RSP_MC_END) continue; /* down, or an error */
        if (mc_stats_add(&sum, r) < 0) return -ENOMEM;
    }
    if (sum.nservers == 0) { /* every server answered with an error: the first one's */
        for (uint32_t f = 0; f < req->nfrags; f++)
            if (req->frags[f]->peer != NULL) return mc_slice(rsp, req->frags[f]->peer);
        return -EINVAL;
    }
    struct textbuf t = { 0 };
    mc_stats_render(&sum, v, req->nfrags, stats_line, &t);
    textbuf_adds(&t, "END\r\n");
    rsp->rsp_type = RSP_MC_END;
    return proto_text_put(&t, rsp);
}

int mc_coalesce_all(const struct proto_view *v, struct msg *req, struct msg *rsp)
{
    if (req->cmd == MC_CMD_BINARY) return mc_bin_coalesce_all(v, req, rsp);
    return req->cmd == MC_CMD_STATS ? mc_coalesce_stats(v, req, rsp) : mc_coalesce_flush(req, rsp);
}
