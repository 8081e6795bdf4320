/*
 * fuzz_feed.c - the feeding through the core's reader (proto/reader.c) and the parser-contract
 * checks, in the reader's sink, of fuzz_feed.h.
 *
 * Threads: the fuzzer's only.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/reader_scrub.h"
#include "fuzz_feed.h"
#include "proto/memcache_bin.h"
#include "proto/redis_cmd.h"

uint64_t fz_rand(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

uint64_t fz_seed(const uint8_t *data, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ data[i]) * 0x100000001b3ULL;
    return h != 0 ? h : 1;
}

void fz_params(struct fz_params *p, const uint8_t **data, size_t *size)
{
    static const size_t sizes[4] = { 512, 549, 1024, 4096 };
    uint8_t h[4] = { 0, 0, 0, 0 };
    size_t n = *size < 4 ? *size : 4;
    memcpy(h, *data, n);
    *data += n;
    *size -= n;
    p->mbuf_size = sizes[h[0] & 3];
    p->want_elems = (h[0] & 4) != 0;
    p->nservers = 1 + ((h[0] >> 3) & 3);
    p->opts = (h[0] >> 5) & 7;
    memcpy(p->reads, h + 1, 3);
}

uint8_t fz_opts(const struct fz_params *p, const struct proto_ops *ops, bool rsp)
{
    static const uint8_t mc_rsp[8] = { 0, MC_RSP_META, MC_RSP_META | MC_RSP_TERM, MC_RSP_META | MC_RSP_TERM,
                                       MC_RSP_BIN, MC_RSP_BIN, MC_RSP_BIN | MC_RSP_TERM, MC_RSP_BIN | MC_RSP_TERM };
    if (ops == &redis_proto) return rsp ? 0 : p->opts & 1; /* client_cluster_mode */
    return rsp ? mc_rsp[p->opts] : 0;
}

void fz_buf_put(struct fz_buf *b, const void *d, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
        FZ_CHECK(b->p != NULL);
    }
    if (n > 0) memcpy(b->p + b->n, d, n);
    b->n += n;
    b->p[b->n] = '\0';
}

uint8_t *fz_msg_bytes(const struct msg *m, struct fz_buf *buf)
{
    if (buf->cap < m->len + 1) {
        buf->cap = m->len + 1;
        buf->p = realloc(buf->p, buf->cap);
        FZ_CHECK(buf->p != NULL);
    }
    FZ_CHECK(msg_copy_out(m, 0, buf->p, m->len) == m->len);
    buf->n = m->len;
    buf->p[buf->n] = '\0';
    return buf->p;
}

void fz_feed_init(struct fz_feed *f, const struct proto_ops *ops, bool rsp, bool want_elems,
                  const struct fz_pools *pools, const uint8_t *stream, fz_msg_fn on_msg,
                  void *ctx)
{
    memset(f, 0, sizeof(*f));
    f->ops = ops;
    f->rsp = rsp;
    f->want_elems = want_elems;
    f->mp = pools->mp;
    f->pp = pools->pp;
    f->re = (struct fz_pools){ pools->re_mp, pools->re_pp, pools->re_mp, pools->re_pp };
    f->stream = stream;
    f->on_msg = on_msg;
    f->ctx = ctx;
}

void fz_feed_deinit(struct fz_feed *f)
{
    reader_deinit(&f->rd, f->pp);
    free(f->bytes.p);
    free(f->elem.p);
    f->bytes = f->elem = (struct fz_buf){ 0 };
}

/* The stream offset of the reader's first unconsumed byte. */
static uint64_t fz_stream_pos(const struct fz_feed *f)
{
    return f->fed - (f->rd.buf != NULL ? f->rd.buf->len - f->rd.pos : 0);
}

bool fz_offset_in(const struct msg *m, const uint8_t *p, uint32_t len, uint64_t *off)
{
    uint64_t pos = 0;
    for (uint32_t i = 0; i < m->nspans; i++) {
        const struct span *s = &m->spans[i];
        const uint8_t *b = s->mb->data + s->off;
        if (p >= b && p <= b + s->len && (size_t)(p - b) + len <= s->len) {
            *off = pos + (uint64_t)(p - b);
            return true;
        }
        pos += s->len;
    }
    return false;
}

static bool fz_one_line(const char *buf, size_t n, size_t size)
{
    if (n < 3 || n >= size || buf[n - 2] != '\r' || buf[n - 1] != '\n') return false;
    for (size_t i = 0; i + 2 < n; i++)
        if (buf[i] == '\r' || buf[i] == '\n') return false;
    return true;
}

/* A reply slice (an element) must parse alone as one complete reply. */
static void fz_check_alone(const struct fz_feed *f, const uint8_t *b, size_t n, bool want,
                           uint32_t expect_elems)
{
    static const uint8_t whole[3] = { 0, 0, 0 };
    struct msg *out = NULL;
    enum fz_status st;
    uint64_t left;
    size_t k = fz_parse_all(f->ops, true, want, &f->re, b, n, whole, &out, 1, &st, &left);
    FZ_CHECK(k == 1 && st == FZ_OK && left == 0);
    FZ_CHECK(out->len == n);
    if (want) FZ_CHECK(out->nelems == expect_elems);
    msg_put(f->re.pp, out);
}

/* The type byte a redis reply of type t starts with (when no attribute comes first). */
static uint8_t fz_redis_type_byte(uint8_t t)
{
    switch (t) {
    case RSP_STATUS:     return '+';
    case RSP_ERROR:      return '-';
    case RSP_INTEGER:    return ':';
    case RSP_BULK:
    case RSP_NIL_BULK:   return '$';
    case RSP_ARRAY:
    case RSP_NIL_ARRAY:  return '*';
    case RSP_MAP:        return '%';
    case RSP_SET:        return '~';
    case RSP_DOUBLE:     return ',';
    case RSP_BOOL:       return '#';
    case RSP_NULL:       return '_';
    case RSP_BIGNUM:     return '(';
    case RSP_VERBATIM:   return '=';
    case RSP_BLOB_ERROR: return '!';
    case RSP_PUSH:       return '>';
    default:             return 0;
    }
}

/* Whether p[0..n) is one memcached MN line: "MN" between spaces, then "\r\n" or "\n". */
static bool fz_mn_line(const uint8_t *p, size_t n)
{
    size_t i = 0, end = n;
    if (end == 0 || p[--end] != '\n') return false;
    if (end > 0 && p[end - 1] == '\r') end--;
    while (i < end && p[i] == ' ') i++;
    while (end > i && p[end - 1] == ' ') end--;
    return end - i == 2 && p[i] == 'M' && p[i + 1] == 'N';
}

static void fz_check_rsp(struct fz_feed *f, const struct msg *m, const uint8_t *b)
{
    bool redis = f->ops == &redis_proto;
    if (!redis && (f->opts & MC_RSP_BIN)) {
        fz_check_bin_rsp(f, m, b);
        return;
    }
    FZ_CHECK(m->rsp_type != RSP_NONE);
    /* what is cut is exactly the last terminator's reply, asked for */
    FZ_CHECK(m->trim == 0 || (!redis && (f->opts & MC_RSP_TERM)));
    if (m->trim != 0) FZ_CHECK(fz_mn_line(f->stream + f->cur_start + m->len, m->trim));
    FZ_CHECK(!(f->opts & MC_RSP_TERM) || m->trim != 0);
    FZ_CHECK(m->nkeys == 0);
    if (!f->want_elems) FZ_CHECK(m->nelems == 0);
    uint64_t prev_end = 0;
    for (uint32_t i = 0; i < m->nelems; i++) {
        const struct msg_elem *e = &m->elems[i];
        FZ_CHECK(e->start >= prev_end && e->start < e->end && e->end <= m->len);
        prev_end = e->end;
        if (redis) {
            FZ_CHECK(e->key == NULL);
        } else {
            uint64_t off;
            FZ_CHECK(e->key != NULL && fz_offset_in(m, e->key, e->key_len, &off));
            FZ_CHECK(off > e->start && off + e->key_len < e->end);
            FZ_CHECK(e->end - e->start > 6 && memcmp(b + e->start, "VALUE ", 6) == 0);
        }
        if (i < 8 && !f->nested) {
            if (redis) {
                fz_check_alone(f, b + e->start, (size_t)(e->end - e->start), false, 0);
            } else {
                f->elem.n = 0;
                fz_buf_put(&f->elem, b + e->start, (size_t)(e->end - e->start));
                fz_buf_put(&f->elem, "END\r\n", 5);
                fz_check_alone(f, f->elem.p, f->elem.n, true, 1);
            }
        }
    }
    if (!redis) return;
    FZ_CHECK(!m->rsp_fatal || m->rsp_type == RSP_ERROR || m->rsp_type == RSP_BLOB_ERROR);
    if (b[0] == '|') return; /* an attribute first: the type is that of the value after it */
    FZ_CHECK(b[0] == fz_redis_type_byte(m->rsp_type));
    bool agg = m->rsp_type == RSP_ARRAY || m->rsp_type == RSP_SET || m->rsp_type == RSP_PUSH ||
               m->rsp_type == RSP_MAP;
    if (agg && f->want_elems) {
        uint64_t n = (uint64_t)strtoll((const char *)b + 1, NULL, 10);
        FZ_CHECK((m->rsp_type == RSP_MAP ? 2 * n : n) == m->nelems);
    }
    if (!agg) FZ_CHECK(m->nelems == 0);
    if (m->rsp_type == RSP_INTEGER) FZ_CHECK(strtoll((const char *)b + 1, NULL, 10) == m->integer);
}

/* A key outside the msg's bytes is a meta command's base64 key: the token decoded, in its own
 * bytes. */
static void fz_check_decoded_key(const struct fz_feed *f, const struct msg *m, const struct msg_key *k)
{
    (void)f;
    FZ_CHECK(m->cmd < MC_CMD_COUNT && mc_cmds[m->cmd].args[0] == 'M' && m->nkeys == 1);
    FZ_CHECK(m->own != NULL && k->ptr >= m->own->data && k->ptr + k->len <= m->own->data + m->own->len);
    uint8_t tok[MC_KEY_MAX], out[MC_KEY_MAX];
    FZ_CHECK(k->end - k->start <= MC_KEY_MAX);
    size_t n = (size_t)(k->end - k->start);
    FZ_CHECK(msg_copy_out(m, k->start, tok, n) == n);
    FZ_CHECK(mc_b64_decode(tok, n, out) == k->len && k->len > 0 && memcmp(out, k->ptr, k->len) == 0);
}

void fz_reparse_tail(const struct fz_feed *f, const struct msg *m, struct msg *out[2])
{
    static const uint8_t whole[3] = { 0, 0, 0 };
    struct fz_buf b = { 0 };
    fz_msg_bytes(m, &b);
    enum fz_status st;
    uint64_t left;
    out[0] = out[1] = NULL;
    size_t k = fz_parse_all(f->ops, false, false, &f->re, b.p, b.n, whole, out, 2, &st, &left);
    FZ_CHECK(k == 2 && st == FZ_OK && left == 0);
    FZ_CHECK(out[0]->cmd == m->cmd && out[0]->len == m->len && out[0]->tail_len == m->tail_len);
    free(b.p);
}

/* A quiet request with its terminator (the tail) parses again, from a fresh state, as the request
 * then mn: the server frames them as the proxy did. */
static void fz_check_tail(const struct fz_feed *f, const struct msg *m)
{
    FZ_CHECK(f->ops == &memcache_proto && m->tail_len == 4 && memcmp(m->tail, "mn\r\n", 4) == 0);
    FZ_CHECK(m->rsp_opts == (MC_RSP_META | MC_RSP_TERM));
    struct msg *out[2];
    fz_reparse_tail(f, m, out);
    FZ_CHECK(out[1]->cmd == MC_CMD_MN && out[1]->len == 4);
    msg_put(f->re.pp, out[0]);
    msg_put(f->re.pp, out[1]);
}

/* A request the proxy forwards (no reject). */
static void fz_check_forwarded(const struct fz_feed *f, const struct msg *m)
{
    bool redis = f->ops == &redis_proto;
    /* a forwarded request names its server by a key; the transaction commands without keys
     * are the core's (core/txn.c), so are the (un)subscriptions (core/pubsub.c: UNSUBSCRIBE
     * of everything names none), and the ones the proxy answers or sends to every server
     * need none. A redis command whose keys come after a subcommand (XGROUP, XINFO) or after
     * STREAMS (XREAD) may name none (XINFO HELP, too few arguments): any server answers it */
    uint32_t keyless = CMD_F_ANY_SERVER | CMD_F_LOCAL_MASK | CMD_F_FRAG_ALL | CMD_F_TXN_MASK | CMD_F_PUBSUB;
    bool late_keys = redis && m->cmd < redis_ncmds &&
                     (redis_cmds[m->cmd].first_key >= 2 || redis_cmds[m->cmd].numkeys_pos == REDIS_KEYS_STREAMS);
    /* a memcached meta command whose key cannot be routed: any server answers its error */
    bool meta = !redis && m->cmd < MC_CMD_COUNT && mc_cmds[m->cmd].args[0] == 'M';
    FZ_CHECK(m->nkeys >= 1 || (m->cmd_flags & keyless) != 0 || late_keys || meta);
    FZ_CHECK(meta ? (m->rsp_opts & MC_RSP_META) != 0 : m->rsp_opts == 0);
    if (m->tail_len != 0 && !f->nested) fz_check_tail(f, m);
    else FZ_CHECK(m->tail_len == 0 || (m->rsp_opts & MC_RSP_TERM));
    if (redis) FZ_CHECK(m->nargs >= 1 && m->name != NULL);
    /* a blocking command has its deadline (its timeout, or for ever), no other has one */
    FZ_CHECK(((m->cmd_flags & CMD_F_BLOCK) != 0) == (m->block_ms != 0));
}

static void fz_check_req(const struct fz_feed *f, const struct msg *m)
{
    FZ_CHECK(m->rsp_type == RSP_NONE && m->nelems == 0);
    bool redis = f->ops == &redis_proto;
    if (m->name != NULL) {
        uint64_t off;
        FZ_CHECK(fz_offset_in(m, m->name, m->name_len, &off));
    }
    uint64_t prev_start = 0;
    for (uint32_t i = 0; i < m->nkeys; i++) {
        const struct msg_key *k = &m->keys[i];
        uint64_t off;
        FZ_CHECK(k->start <= k->end && k->end <= m->len);
        FZ_CHECK(k->start >= prev_start);
        prev_start = k->start;
        if (!redis && !fz_offset_in(m, k->ptr, k->len, &off)) {
            fz_check_decoded_key(f, m, k); /* a meta command's base64 key */
            continue;
        }
        FZ_CHECK(fz_offset_in(m, k->ptr, k->len, &off));
        FZ_CHECK(off >= k->start && off + k->len <= k->end);
        if (!redis) FZ_CHECK(off == k->start && k->end - k->start == k->len);
    }
    if (m->reject != REJECT_NONE) {
        /* only a memcached CLIENT_ERROR may be silent (noreply: memcached sends nothing). A
         * reject that closes the connection is a silent one (an unsupported command with
         * noreply) or a redis request refused before its arguments (one line); a binary-protocol
         * request's are fz_check_bin_req's */
        FZ_CHECK(m->nkeys == 0);
        FZ_CHECK(!m->noreply || (!redis && m->reject == REJECT_CLIENT_ERROR));
        char buf[256];
        size_t n = f->ops->reject_reply(m, buf, sizeof(buf));
        FZ_CHECK(!m->quit || m->noreply || redis);
        FZ_CHECK(fz_one_line(buf, n, sizeof(buf)));
    } else {
        fz_check_forwarded(f, m);
    }
}

/* A complete msg: its bytes are the stream's (less the trim bytes at their end, then its tail:
 * the parser's edits, msg_finish), and what the parser recorded is within them. */
static void fz_check_msg(struct fz_feed *f, const struct msg *m)
{
    FZ_CHECK(m->len + m->trim > 0 && m->len >= m->tail_len);
    FZ_CHECK(m->tail_len == 0 || m->tail != NULL);
    uint64_t kept = m->len - m->tail_len;
    FZ_CHECK(f->cur_start + kept + m->trim == fz_stream_pos(f));
    uint64_t total = 0;
    for (uint32_t i = 0; i < m->nspans; i++) {
        const struct span *s = &m->spans[i];
        FZ_CHECK(s->len > 0 && (uint64_t)s->off + s->len <= s->mb->len);
        total += s->len;
    }
    FZ_CHECK(total == m->len);
    uint8_t *b = fz_msg_bytes(m, &f->bytes); /* NUL-terminated, for strtoll: a reply line
                                               * always ends before it */
    FZ_CHECK(memcmp(b, f->stream + f->cur_start, kept) == 0);
    FZ_CHECK(m->tail_len == 0 || memcmp(b + kept, m->tail, m->tail_len) == 0);
    if (f->rsp) fz_check_rsp(f, m, b);
    else if (f->ops == &memcache_proto && m->cmd == MC_CMD_BINARY) fz_check_bin_req(f, m, b);
    else fz_check_req(f, m);
}

/* What a call that consumed nothing may not change. */
struct fz_snap {
    struct parse_state ps;
    uint64_t stack_top[4];
    struct msg m;
    struct msg_key last_key;
    struct msg_elem last_elem;
};

static void fz_snap_take(struct fz_snap *s, const struct parse_state *ps, const struct msg *m)
{
    memset(s, 0, sizeof(*s));
    s->ps = *ps;
    for (uint32_t i = 0; i < 4 && i < ps->depth; i++) s->stack_top[i] = ps->stack[ps->depth - 1 - i];
    s->m = *m;
    if (m->nkeys > 0) s->last_key = m->keys[m->nkeys - 1];
    if (m->nelems > 0) s->last_elem = m->elems[m->nelems - 1];
}

static void fz_snap_same(const struct fz_snap *s, const struct parse_state *ps, const struct msg *m)
{
    struct fz_snap now;
    fz_snap_take(&now, ps, m);
    const struct parse_state *a = &s->ps, *b = &now.ps;
    FZ_CHECK(a->state == b->state && a->a == b->a && a->b == b->b && a->c == b->c &&
             a->d == b->d && a->off == b->off && a->depth == b->depth &&
             a->elem_start == b->elem_start && a->want_elems == b->want_elems &&
             a->opts == b->opts && a->mode == b->mode && a->error == b->error);
    FZ_CHECK(memcmp(s->stack_top, now.stack_top, sizeof(s->stack_top)) == 0);
    FZ_CHECK(memcmp(&s->m, &now.m, sizeof(s->m)) == 0);
    FZ_CHECK(memcmp(&s->last_key, &now.last_key, sizeof(s->last_key)) == 0);
    FZ_CHECK(memcmp(&s->last_elem, &now.last_elem, sizeof(s->last_elem)) == 0);
}

/* reader_sink.begin: as the core's roles (parse_state_reset, then this side's want_elems). */
static void fz_sink_begin(void *ctx, struct parse_state *ps)
{
    struct fz_feed *f = ctx;
    parse_state_reset(ps);
    ps->want_elems = f->want_elems;
    ps->opts = f->opts;
    f->cur_start = fz_stream_pos(f);
}

/* reader_sink.parse: the protocol's parser, its contract checked. After PARSE_AGAIN it took all it
 * could: the bytes it left, given again (the msg's len counting the consumed ones, as the reader
 * will have appended them), change nothing. */
static int fz_sink_parse(void *ctx, struct parse_state *ps, struct msg *m, const uint8_t *buf,
                         size_t len, size_t *consumed)
{
    struct fz_feed *f = ctx;
    int (*parse)(struct parse_state *, struct msg *, const uint8_t *, size_t, size_t *) =
        f->rsp ? f->ops->parse_rsp : f->ops->parse_req;
    size_t n = (size_t)-1, again = (size_t)-1;
    int st = parse(ps, m, buf, len, &n);
    FZ_CHECK(st == PARSE_DONE || st == PARSE_AGAIN || st == PARSE_ERROR);
    FZ_CHECK(n <= len);
    if (st == PARSE_ERROR) FZ_CHECK(ps->error != NULL && ps->error[0] != '\0');
    else FZ_CHECK(ps->error == NULL);
    if (st == PARSE_DONE) FZ_CHECK(n > 0);
    if (st == PARSE_AGAIN && n < len && !f->light) {
        struct fz_snap s;
        m->len += n;
        fz_snap_take(&s, ps, m);
        FZ_CHECK(parse(ps, m, buf + n, len - n, &again) == PARSE_AGAIN);
        FZ_CHECK(again == 0);
        fz_snap_same(&s, ps, m);
        m->len -= n;
    }
    *consumed = n;
    return st;
}

/* reader_sink.on_msg: the msg is checked and handed to the feed's owner. */
static int fz_sink_msg(void *ctx, struct msg *m)
{
    struct fz_feed *f = ctx;
    if (!f->light) fz_check_msg(f, m);
    f->nmsgs++;
    f->done_end = fz_stream_pos(f);
    f->on_msg(f, m, f->ctx);
    return 0;
}

static const struct reader_sink fz_sink = {
    .begin = fz_sink_begin, .parse = fz_sink_parse, .on_msg = fz_sink_msg, .msg_max = UINT64_MAX,
};

void fz_feed_read(struct fz_feed *f, size_t n)
{
    while (n > 0 && f->status == FZ_OK) {
        uint8_t *at = NULL;
        uint32_t room = 0;
        int rc = reader_room_scrub(&f->rd, f->mp, &at, &room);
        if (rc == -E2BIG) {
            f->status = FZ_GAVE_UP;
            break;
        }
        FZ_CHECK(rc == 0);
        uint32_t k = n < room ? (uint32_t)n : room;
        memcpy(at, f->stream + f->fed, k);
        f->fed += k;
        n -= k;
        rc = reader_parse(&f->rd, k, f->pp, &fz_sink, f);
        FZ_CHECK(rc == 0 || rc == -EPROTO);
        if (rc == -EPROTO) f->status = FZ_ERROR;
    }
    reader_trim(&f->rd);
}

struct fz_collect {
    struct msg **out;
    size_t max, n;
    struct msg_pool *pp;
};

static void fz_collect_msg(struct fz_feed *f, struct msg *m, void *ctx)
{
    struct fz_collect *c = ctx;
    if (c->n < c->max) c->out[c->n] = m;
    else msg_put(c->pp, m);
    c->n++;
}

size_t fz_parse_all(const struct proto_ops *ops, bool rsp, bool want_elems,
                    const struct fz_pools *pools, const uint8_t *data, size_t n,
                    const uint8_t reads[3], struct msg **out, size_t max, enum fz_status *status,
                    uint64_t *left)
{
    struct fz_collect c = { .out = out, .max = max, .n = 0, .pp = pools->pp };
    struct fz_feed f;
    fz_feed_init(&f, ops, rsp, want_elems, pools, data, fz_collect_msg, &c);
    f.nested = true;
    for (unsigned r = 0; f.fed < n && f.status == FZ_OK; r++) {
        size_t k = reads[r % 3] != 0 ? reads[r % 3] : n;
        fz_feed_read(&f, k < n - f.fed ? k : n - f.fed);
    }
    *status = f.status;
    *left = f.fed - f.done_end;
    fz_feed_deinit(&f);
    return c.n;
}
