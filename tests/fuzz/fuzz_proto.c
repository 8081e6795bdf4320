/*
 * fuzz_proto.c - fz_run_proto (fuzz_feed.h): one fuzz input through a protocol's parser as the core
 * feeds it, compared with the same stream parsed in whole reads (a split may not change what is
 * found), every multi-key request through fragment() + coalesce() with fake server replies
 * whose expected coalesced bytes are computed here independently, and every request through the
 * protocol's local() answers.
 *
 * Threads: the fuzzer's only.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "conf/conf.h"
#include "fuzz_feed.h"

struct fz_fake;

/* What two parses of one stream must agree on, per msg. */
struct fz_sum {
    uint64_t len, nargs, keys_hash, elems_hash;
    int64_t integer;
    uint32_t cmd, cmd_flags, nkeys, nelems;
    uint32_t reject, rsp_type, noreply, quit, fatal;
};

struct fz_run {
    const struct proto_ops *ops;
    bool rsp;
    bool redis;
    struct fz_params prm;
    struct fz_pools stream;   /* the client's stream and what the core builds from it */
    struct fz_pools re;       /* the harness's re-parses of copies (fuzz_feed.h) */
    const uint8_t *data;
    size_t size;
    uint64_t rng;
    bool fragments;           /* split multi-key requests (the run under test, not the reference) */
    struct fz_sum *sums;
    size_t nsums, sums_cap;
    /* scratch reused from request to request: no malloc per use */
    struct fz_buf bytes, exp; /* a msg's bytes; the coalesced reply expected */
    uint32_t *where;          /* each key's server */
    size_t where_cap;
    struct fz_fake *fk;       /* the fake replies (FZ_MAX_SERVERS) */
};

/* ---- byte buffers (fuzz_feed.h fz_buf) ---- */

__attribute__((format(printf, 2, 3))) static void fb_printf(struct fz_buf *b, const char *fmt, ...)
{
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    FZ_CHECK(n >= 0 && (size_t)n < sizeof(tmp));
    fz_buf_put(b, tmp, (size_t)n);
}

/* n bytes of the fuzz input (so replies carry fuzzer-chosen data), or 'x's. */
static void fb_put_input(struct fz_buf *b, struct fz_run *r, size_t n)
{
    if (r->size >= n && r->size > 0) {
        size_t at = (size_t)(fz_rand(&r->rng) % (r->size - n + 1));
        fz_buf_put(b, r->data + at, n);
        return;
    }
    for (size_t i = 0; i < n; i++) fz_buf_put(b, "x", 1);
}

/* ---- summaries ---- */

static uint64_t fz_mix(uint64_t h, uint64_t v)
{
    return (h ^ v) * 0x100000001b3ULL + (h >> 29);
}

static void fz_summarize(struct fz_sum *s, const struct msg *m)
{
    memset(s, 0, sizeof(*s));
    s->len = m->len;
    s->nargs = m->nargs;
    s->integer = m->integer;
    s->cmd = m->cmd;
    s->cmd_flags = m->cmd_flags;
    s->nkeys = m->nkeys;
    s->nelems = m->nelems;
    s->reject = m->reject;
    s->rsp_type = m->rsp_type;
    s->noreply = m->noreply;
    s->quit = m->quit;
    s->fatal = m->rsp_fatal;
    for (uint32_t i = 0; i < m->nkeys; i++)
        s->keys_hash = fz_mix(fz_mix(fz_mix(s->keys_hash, m->keys[i].start), m->keys[i].end),
                              m->keys[i].len);
    for (uint32_t i = 0; i < m->nelems; i++)
        s->elems_hash = fz_mix(fz_mix(fz_mix(s->elems_hash, m->elems[i].start), m->elems[i].end),
                               m->elems[i].key_len);
}

/* ---- fake server replies ---- */

enum fz_fake_kind { FAKE_OK, FAKE_ERROR, FAKE_BAD };

struct fz_fake {
    struct fz_buf text;
    enum fz_fake_kind kind;
    int64_t integer;          /* redis SUM commands */
    size_t nel, el_cap;       /* redis MGET: one element per key; memcached: the VALUE blocks */
    size_t *el_start, *el_end;
    const uint8_t **el_key;
    uint32_t *el_klen;
};

static void fake_elem(struct fz_fake *fk, size_t start, const uint8_t *key, uint32_t klen)
{
    if (fk->nel == fk->el_cap) { /* doubling: a request may have thousands of keys */
        fk->el_cap = fk->el_cap ? fk->el_cap * 2 : 16;
        fk->el_start = realloc(fk->el_start, fk->el_cap * sizeof(size_t));
        fk->el_end = realloc(fk->el_end, fk->el_cap * sizeof(size_t));
        fk->el_key = realloc(fk->el_key, fk->el_cap * sizeof(*fk->el_key));
        fk->el_klen = realloc(fk->el_klen, fk->el_cap * sizeof(uint32_t));
        FZ_CHECK(fk->el_start && fk->el_end && fk->el_key && fk->el_klen);
    }
    fk->el_start[fk->nel] = start;
    fk->el_end[fk->nel] = fk->text.n;
    fk->el_key[fk->nel] = key;
    fk->el_klen[fk->nel] = klen;
    fk->nel++;
}

/* Empty for the next reply (its buffers kept). */
static void fake_reset(struct fz_fake *fk)
{
    fk->text.n = 0;
    fk->kind = FAKE_OK;
    fk->integer = 0;
    fk->nel = 0;
}

static void fake_free(struct fz_fake *fk)
{
    free(fk->text.p);
    free(fk->el_start);
    free(fk->el_end);
    free(fk->el_key);
    free(fk->el_klen);
}

static void fake_redis_value(struct fz_buf *b, struct fz_run *r)
{
    switch (fz_rand(&r->rng) % 16) {
    case 0: fb_printf(b, "$-1\r\n"); break;
    case 1: fb_printf(b, ":%" PRId64 "\r\n", (int64_t)(fz_rand(&r->rng) % 2001) - 1000); break;
    case 2: fb_printf(b, "*2\r\n$1\r\na\r\n*1\r\n:7\r\n"); break;
    case 3: fb_printf(b, "+status\r\n"); break;
    case 4: fb_printf(b, "-ERR inside an array\r\n"); break;
    /* RESP3 (a server connection after HELLO 3) */
    case 8: fb_printf(b, "_\r\n"); break;
    case 9: fb_printf(b, fz_rand(&r->rng) % 2 ? "#t\r\n" : "#f\r\n"); break;
    case 10:
        fb_printf(b, fz_rand(&r->rng) % 2 ? ",-1.5e+20\r\n" : "(123456789012345678901234\r\n");
        break;
    case 11: fb_printf(b, "%%1\r\n+k\r\n_\r\n"); break;
    case 12: fb_printf(b, "~2\r\n:1\r\n,inf\r\n"); break;
    case 13: fb_printf(b, "=6\r\ntxt:ab\r\n"); break;
    case 14: fb_printf(b, "!3\r\nERR\r\n"); break;
    case 15: /* an attribute, then the value it describes */
        fb_printf(b, "|1\r\n+ttl\r\n:3600\r\n");
        fake_redis_value(b, r);
        break;
    default: {
        size_t n = (size_t)(fz_rand(&r->rng) % 40);
        fb_printf(b, "$%zu\r\n", n);
        fb_put_input(b, r, n);
        fz_buf_put(b, "\r\n", 2);
        break;
    }
    }
}

static void fake_redis(struct fz_fake *fk, struct fz_run *r, const struct msg *req,
                       const struct msg *frag, uint32_t j)
{
    uint64_t mode = fz_rand(&r->rng) % 24;
    struct fz_buf *b = &fk->text;
    /* RESP3: now and then an attribute before the reply (the coalesced one leaves it out) */
    if (fz_rand(&r->rng) % 8 == 0)
        fb_printf(b, "|1\r\n+key-popularity\r\n%%1\r\n$1\r\na\r\n,0.1923\r\n");
    if (mode == 0) {
        fk->kind = FAKE_ERROR;
        if (fz_rand(&r->rng) % 2) {
            fb_printf(b, "-ERR fake error from fragment %" PRIu32 "\r\n", j);
        } else { /* RESP3 blob error */
            char text[64];
            int n = snprintf(text, sizeof(text), "ERR fake\r\nblob error from fragment %" PRIu32,
                             j);
            fb_printf(b, "!%d\r\n%s\r\n", n, text);
        }
        return;
    }
    if (req->cmd_flags & CMD_F_FRAG_MGET) {
        if (mode == 1) {
            fk->kind = FAKE_BAD;
            fb_printf(b, "*%" PRIu32 "\r\n", frag->nkeys + 1);
            for (uint32_t i = 0; i <= frag->nkeys; i++) fake_redis_value(b, r);
        } else if (mode == 2) {
            fk->kind = FAKE_BAD;
            fb_printf(b, "$-1\r\n");
        } else {
            fb_printf(b, "*%" PRIu32 "\r\n", frag->nkeys);
            for (uint32_t i = 0; i < frag->nkeys; i++) {
                size_t start = b->n;
                fake_redis_value(b, r);
                fake_elem(fk, start, NULL, 0);
            }
        }
    } else if (req->cmd_flags & CMD_F_FRAG_SUM) {
        if (mode == 1) {
            fk->kind = FAKE_BAD;
            fb_printf(b, "+OK\r\n");
        } else {
            fk->integer = mode == 2   ? INT64_MAX - (int64_t)(fz_rand(&r->rng) % 3)
                          : mode == 3 ? INT64_MIN + (int64_t)(fz_rand(&r->rng) % 3)
                                      : (int64_t)(fz_rand(&r->rng) % 100) - 10;
            fb_printf(b, ":%" PRId64 "\r\n", fk->integer);
        }
    } else {
        FZ_CHECK(req->cmd_flags & CMD_F_FRAG_MSET);
        if (mode == 1) {
            fk->kind = FAKE_BAD;
            fb_printf(b, "+OKAY\r\n");
        } else if (mode == 2) {
            fk->kind = FAKE_BAD;
            fb_printf(b, ":1\r\n");
        } else {
            fb_printf(b, "+OK\r\n");
        }
    }
}

static void fake_mc_value(struct fz_fake *fk, struct fz_run *r, const uint8_t *key, uint32_t klen)
{
    struct fz_buf *b = &fk->text;
    size_t start = b->n;
    size_t n = (size_t)(fz_rand(&r->rng) % 40);
    fz_buf_put(b, "VALUE ", 6);
    fz_buf_put(b, key, klen);
    fb_printf(b, " %" PRIu32 " %zu", (uint32_t)fz_rand(&r->rng), n);
    if (fz_rand(&r->rng) % 2) fb_printf(b, " %" PRIu64, fz_rand(&r->rng) >> 1);
    fz_buf_put(b, "\r\n", 2);
    fb_put_input(b, r, n);
    fz_buf_put(b, "\r\n", 2);
    fake_elem(fk, start, key, klen);
}

static void fake_memcache(struct fz_fake *fk, struct fz_run *r, const struct msg *frag)
{
    uint64_t mode = fz_rand(&r->rng) % 24;
    struct fz_buf *b = &fk->text;
    if (mode <= 2) {
        static const char *const bad[3] = { "SERVER_ERROR fake\r\n", "ERROR\r\n", "STORED\r\n" };
        fk->kind = FAKE_BAD;
        fz_buf_put(b, bad[mode], strlen(bad[mode]));
        return;
    }
    for (uint32_t i = 0; i < frag->nkeys; i++) {
        if (fz_rand(&r->rng) % 3 != 0)
            fake_mc_value(fk, r, frag->keys[i].ptr, frag->keys[i].len);
        if (fz_rand(&r->rng) % 32 == 0) /* a server answering a key it was not asked */
            fake_mc_value(fk, r, (const uint8_t *)"zz-not-asked", 12);
    }
    fz_buf_put(b, "END\r\n", 5);
}

/* ---- fragments ---- */

static uint32_t fz_key_hash(const struct msg_key *k, uint64_t salt)
{
    uint64_t h = fz_seed(k->ptr, k->len) ^ salt;
    return (uint32_t)(h ^ (h >> 32));
}

/* A fragment must parse again as one request of the same command with the same keys. */
static void fz_check_fragment(struct fz_run *r, const struct msg *req, const struct msg *frag)
{
    FZ_CHECK(frag->frag_owner == req && frag->cmd == req->cmd && frag->nkeys >= 1);
    uint8_t *b = fz_msg_bytes(frag, &r->bytes);
    struct msg *out = NULL;
    enum fz_status st;
    uint64_t left;
    static const uint8_t whole[3] = { 0, 0, 0 };
    size_t k = fz_parse_all(r->ops, false, false, &r->re, b, frag->len, whole, &out, 1, &st, &left);
    /* with small mbufs a fragment may hold a token the mbuf cannot (as the client's request) */
    if (!(st == FZ_GAVE_UP && k == 0)) {
        FZ_CHECK(k == 1 && st == FZ_OK && left == 0);
        FZ_CHECK(out->reject == REJECT_NONE && out->cmd == frag->cmd);
        FZ_CHECK(out->nkeys == frag->nkeys);
        for (uint32_t i = 0; i < frag->nkeys; i++) {
            FZ_CHECK(out->keys[i].len == frag->keys[i].len);
            FZ_CHECK(memcmp(out->keys[i].ptr, frag->keys[i].ptr, frag->keys[i].len) == 0);
        }
    }
    if (out != NULL) msg_put(r->re.pp, out);
}

/* The client's reply coalesce() must build from these fake replies; false: -EINVAL expected. */
static bool fz_expected(struct fz_run *r, const struct msg *req, struct fz_fake *fk,
                        struct fz_buf *exp)
{
    uint32_t nf = req->nfrags;
    if (r->redis) {
        for (uint32_t j = 0; j < nf; j++) {
            if (fk[j].kind == FAKE_ERROR) {
                fz_buf_put(exp, fk[j].text.p, fk[j].text.n);
                return true;
            }
        }
    }
    for (uint32_t j = 0; j < nf; j++)
        if (fk[j].kind != FAKE_OK) return false;
    size_t cursor[FZ_MAX_SERVERS] = { 0 };
    FZ_CHECK(nf <= FZ_MAX_SERVERS);
    bool ok = true;
    if (!r->redis) {
        for (uint32_t i = 0; i < req->nkeys; i++) {
            struct fz_fake *f = &fk[req->key_frag[i]];
            size_t *c = &cursor[req->key_frag[i]];
            const struct msg_key *k = &req->keys[i];
            if (*c < f->nel && f->el_klen[*c] == k->len && memcmp(f->el_key[*c], k->ptr, k->len) == 0) {
                fz_buf_put(exp, f->text.p + f->el_start[*c], f->el_end[*c] - f->el_start[*c]);
                (*c)++;
            }
        }
        fz_buf_put(exp, "END\r\n", 5);
    } else if (req->cmd_flags & CMD_F_FRAG_MGET) {
        fb_printf(exp, "*%" PRIu32 "\r\n", req->nkeys);
        for (uint32_t i = 0; i < req->nkeys; i++) {
            struct fz_fake *f = &fk[req->key_frag[i]];
            size_t c = cursor[req->key_frag[i]]++;
            FZ_CHECK(c < f->nel);
            fz_buf_put(exp, f->text.p + f->el_start[c], f->el_end[c] - f->el_start[c]);
        }
    } else if (req->cmd_flags & CMD_F_FRAG_SUM) {
        int64_t sum = 0;
        for (uint32_t j = 0; j < nf && ok; j++)
            ok = !__builtin_add_overflow(sum, fk[j].integer, &sum);
        if (ok) fb_printf(exp, ":%" PRId64 "\r\n", sum);
    } else {
        fb_printf(exp, "+OK\r\n");
    }
    return ok;
}

static void fz_fragment(struct fz_run *r, struct msg *req)
{
    uint32_t n = req->nkeys, ns = r->prm.nservers;
    if (n > r->where_cap) {
        r->where_cap = (size_t)n * 2;
        r->where = realloc(r->where, r->where_cap * sizeof(*r->where));
        FZ_CHECK(r->where != NULL);
    }
    uint32_t *where = r->where;
    uint64_t salt = fz_rand(&r->rng);
    bool one_server = true;
    for (uint32_t i = 0; i < n; i++) {
        where[i] = fz_key_hash(&req->keys[i], salt) % ns;
        if (where[i] != where[0]) one_server = false;
    }
    if (one_server) return; /* the core forwards it whole */
    FZ_CHECK(r->ops->fragment(req, where, req->nkeys, r->stream.pp) == 0);
    uint32_t nf = req->nfrags;
    if (req->cmd_flags & CMD_F_FRAG_ONE) { /* XREAD: keys on several servers make no fragment; */
        FZ_CHECK(nf == 0);                  /* the merge answers its error */
        struct msg *err = msg_get(r->stream.pp);
        FZ_CHECK(err != NULL);
        FZ_CHECK(r->ops->coalesce(NULL, req, err) == 0 && err->rsp_type == RSP_ERROR && err->len > 0);
        msg_put(r->stream.pp, err);
        return;
    }
    FZ_CHECK(nf >= 2 && nf <= ns && req->frags != NULL && req->key_frag != NULL);

    /* every key went to the fragment of its server, in the client's order */
    uint32_t seen[FZ_MAX_SERVERS] = { 0 };
    for (uint32_t i = 0; i < n; i++) {
        uint32_t j = req->key_frag[i];
        FZ_CHECK(j < nf);
        const struct msg *f = req->frags[j];
        FZ_CHECK(f->server_idx == where[i] && seen[j] < f->nkeys);
        const struct msg_key *fk = &f->keys[seen[j]++];
        FZ_CHECK(fk->len == req->keys[i].len && memcmp(fk->ptr, req->keys[i].ptr, fk->len) == 0);
        FZ_CHECK(fk->start <= fk->end && fk->end <= f->len);
    }
    for (uint32_t j = 0; j < nf; j++) {
        FZ_CHECK(seen[j] == req->frags[j]->nkeys);
        fz_check_fragment(r, req, req->frags[j]);
    }

    /* fake replies, parsed as the server connection would (want_elems) */
    struct fz_fake *fk = r->fk;
    for (uint32_t j = 0; j < nf; j++) {
        struct msg *f = req->frags[j];
        fake_reset(&fk[j]);
        if (r->redis) fake_redis(&fk[j], r, req, f, j);
        else fake_memcache(&fk[j], r, f);
        struct msg *rsp = NULL;
        enum fz_status st;
        uint64_t left;
        /* the stream's pools: the coalesced reply must hold its own references to these mbufs */
        size_t k = fz_parse_all(r->ops, true, true, &r->stream, fk[j].text.p, fk[j].text.n,
                                r->prm.reads, &rsp, 1, &st, &left);
        if (k == 0 && st == FZ_GAVE_UP) { /* a reply token larger than the mbuf: no reply */
            rsp = msg_get(r->stream.pp);
            FZ_CHECK(rsp != NULL);
            fk[j].kind = FAKE_BAD;
        } else {
            FZ_CHECK(k == 1 && st == FZ_OK && left == 0);
        }
        f->peer = rsp;
        rsp->peer = f;
    }

    struct fz_buf exp = r->exp;
    exp.n = 0;
    bool want_ok = fz_expected(r, req, fk, &exp);
    r->exp = exp;
    struct msg *out = msg_get(r->stream.pp);
    FZ_CHECK(out != NULL);
    int rc = r->ops->coalesce(NULL, req, out);
    FZ_CHECK(rc == (want_ok ? 0 : -EINVAL));

    /* as the core: the fragments and their replies go before the reply is written */
    for (uint32_t j = 0; j < nf; j++) {
        msg_put(r->stream.pp, req->frags[j]->peer);
        msg_put(r->stream.pp, req->frags[j]);
        req->frags[j] = NULL;
    }
    if (rc == 0) {
        uint8_t *b = fz_msg_bytes(out, &r->bytes);
        FZ_CHECK(out->len == exp.n && memcmp(b, exp.p, exp.n) == 0);
        FZ_CHECK(out->rsp_type != RSP_NONE);
        static const uint8_t whole[3] = { 0, 0, 0 };
        struct msg *again = NULL;
        enum fz_status st;
        uint64_t left;
        size_t k = fz_parse_all(r->ops, true, false, &r->re, b, out->len, whole, &again, 1, &st,
                                &left);
        FZ_CHECK(k == 1 || st == FZ_GAVE_UP);
        if (k == 1) {
            FZ_CHECK(st == FZ_OK && left == 0 && again->rsp_type == out->rsp_type);
            msg_put(r->re.pp, again);
        }
    }
    msg_put(r->stream.pp, out);
}

/* What the proxy answers itself: local() on every request, for a client that must AUTH first
 * (redis_auth set, every other request) or not. Its verdict is one of enum proto_local, a request
 * to forward gets no reply text, a reject or quit is never forwarded, and nothing but the reply
 * is allocated (the pools' leak checks). */
static void fz_local(struct fz_run *r, const struct msg *m)
{
    char pw[] = "pw", host[] = "127.0.0.1";
    struct conf_pool cp = { .redis = r->redis, .redis_auth = r->nsums % 2 ? pw : NULL,
                            .listen = { .host = host, .port = 22121 },
                            .client_cluster_mode = r->redis && (r->prm.opts & 1) != 0 }; /* as the stream was parsed */
    struct proto_session s;
    memset(&s, 0, sizeof(s));
    s.fd = -1; /* no socket: CLIENT INFO's addresses are "?" */
    r->ops->session_init(&s, &cp, NULL);
    struct msg *rsp = msg_get(r->stream.pp);
    FZ_CHECK(rsp != NULL);
    int rc = r->ops->local(&s, &cp, m, rsp);
    FZ_CHECK(rc == PROTO_FORWARD || rc == PROTO_ANSWERED || rc == PROTO_ANSWERED_CLOSE || rc == PROTO_CLIENT_LIST);
    if (rc == PROTO_CLIENT_LIST) { /* the core asks the protocol for its filter, or its error */
        FZ_CHECK(rsp->len == 0);
        struct proto_list_filter f;
        int lr = r->ops->list_filter(m, &f, rsp);
        FZ_CHECK(lr == 0 || (lr == PROTO_ANSWERED && rsp->len > 0) || lr == -ENOMEM);
        if (lr == 0) proto_list_filter_free(&f);
    }
    if (rc == PROTO_FORWARD) FZ_CHECK(rsp->len == 0);
    if (m->reject != REJECT_NONE || m->quit) FZ_CHECK(rc != PROTO_FORWARD);
    FZ_CHECK(s.variant < PROTO_VARIANTS);
    r->ops->session_free(&s); /* the names CLIENT SETNAME / SETINFO kept */
    msg_put(r->stream.pp, rsp);
}

static void fz_on_msg(struct fz_feed *f, struct msg *m, void *ctx)
{
    struct fz_run *r = ctx;
    if (r->nsums == r->sums_cap) {
        r->sums_cap = r->sums_cap ? r->sums_cap * 2 : 16;
        r->sums = realloc(r->sums, r->sums_cap * sizeof(*r->sums));
        FZ_CHECK(r->sums != NULL);
    }
    fz_summarize(&r->sums[r->nsums++], m);
    if (r->fragments && !r->rsp) fz_local(r, m);
    /* (a blocking command is never split: the core sends it whole to its keys' one server, or
     * answers the crossing error itself) */
    if (r->fragments && !r->rsp && m->reject == REJECT_NONE && (m->cmd_flags & CMD_F_FRAG_MASK) &&
        !(m->cmd_flags & CMD_F_BLOCK) && m->nkeys >= 2)
        fz_fragment(r, m);
    msg_put(f->pp, m);
}

/* Feeds data[0..size) in reads of the given sizes (0: all that fits); returns the status. */
static enum fz_status fz_stream(struct fz_run *r, const uint8_t reads[3], const char **error)
{
    struct fz_feed f;
    fz_feed_init(&f, r->ops, r->rsp, r->rsp && r->prm.want_elems,
                 r->fragments ? &r->stream : &r->re, r->data, fz_on_msg, r);
    f.light = !r->fragments; /* the reference: the run under test does the checks */
    f.opts = fz_opts(&r->prm, r->ops, r->rsp); /* a pool's options; a meta (quiet) request's reply */
    for (unsigned i = 0; f.fed < r->size && f.status == FZ_OK; i++) {
        size_t k = reads[i % 3] != 0 ? reads[i % 3] : r->size;
        fz_feed_read(&f, k < r->size - f.fed ? k : r->size - f.fed);
    }
    enum fz_status st = f.status;
    *error = st == FZ_ERROR ? f.rd.ps.error : NULL;
    fz_feed_deinit(&f);
    return st;
}

int fz_run_proto(const struct proto_ops *ops, bool rsp, const uint8_t *data, size_t size)
{
    struct fz_run r;
    memset(&r, 0, sizeof(r));
    log_level_set(LOG_CRIT); /* the parsers' notices (a memcached binary request) are noise here */
    r.rng = fz_seed(data, size);
    fz_params(&r.prm, &data, &size);
    r.ops = ops;
    r.rsp = rsp;
    r.redis = ops == &redis_proto;
    r.data = data;
    r.size = size;

    struct mbuf_pool mp, re_mp;
    struct msg_pool pp, re_pp;
    mbuf_pool_init(&mp, r.prm.mbuf_size, 0); /* nothing kept: a stale pointer is a use-after-free */
    msg_pool_init(&pp, 0);
    mbuf_pool_init(&re_mp, r.prm.mbuf_size, 64); /* the re-parses' pools keep free chunks */
    msg_pool_init(&re_pp, 64);
    r.stream = (struct fz_pools){ &mp, &pp, &re_mp, &re_pp };
    r.re = (struct fz_pools){ &re_mp, &re_pp, &re_mp, &re_pp };
    struct fz_fake fk[FZ_MAX_SERVERS];
    memset(fk, 0, sizeof(fk));
    r.fk = fk;

    /* the reference: the same stream in whole reads */
    static const uint8_t whole[3] = { 0, 0, 0 };
    const char *ref_error, *error;
    enum fz_status ref = fz_stream(&r, whole, &ref_error);
    struct fz_sum *ref_sums = r.sums;
    size_t ref_n = r.nsums;
    r.sums = NULL;
    r.nsums = r.sums_cap = 0;

    /* the run under test: the fuzzer's reads, with fragments */
    r.fragments = true;
    enum fz_status st = fz_stream(&r, r.prm.reads, &error);
    if (st != ref || r.nsums != ref_n || (st == FZ_ERROR && !rsp && strcmp(error, ref_error) != 0))
        fprintf(stderr, "split reads: status %d, %zu msgs, error '%s'; whole reads: status %d, "
                "%zu msgs, error '%s'\n", (int)st, r.nsums, error ? error : "", (int)ref, ref_n,
                ref_error ? ref_error : "");
    FZ_CHECK(st == ref);
    FZ_CHECK(r.nsums == ref_n);
    FZ_CHECK(ref_n == 0 || memcmp(r.sums, ref_sums, ref_n * sizeof(*ref_sums)) == 0);
    /* a request's error text goes to the client, so it may not depend on the split either (a
     * reply's only goes to the log: the first problem in sight may differ) */
    if (st == FZ_ERROR && !rsp) FZ_CHECK(strcmp(error, ref_error) == 0);
    free(ref_sums);
    free(r.sums);

    /* the proxy's own error replies are one line */
    char line[160];
    int err = size > 0 ? data[0] % 140 : 0;
    size_t n = ops->error_reply(NULL, err, line, sizeof(line));
    FZ_CHECK(n >= 3 && n < sizeof(line) && line[n - 2] == '\r' && line[n - 1] == '\n');

    FZ_CHECK(mp.nlive == 0 && re_mp.nlive == 0);
    FZ_CHECK(pp.nlive == 0 && re_pp.nlive == 0);
    msg_pool_deinit(&pp);
    mbuf_pool_deinit(&mp);
    msg_pool_deinit(&re_pp);
    mbuf_pool_deinit(&re_mp);
    for (uint32_t j = 0; j < FZ_MAX_SERVERS; j++) fake_free(&fk[j]);
    free(r.bytes.p);
    free(r.exp.p);
    free(r.where);
    return 0;
}
