/*
 * proto_drv.c - feeds bytes to a protocol parser through the core's reader (proto/reader.c) and
 * checks the parser contract on every call, in the reader's sink (see proto_drv.h).
 * Threads: the test's only.
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../common/reader_scrub.h"
#include "proto_drv.h"

void tenv_init(struct tenv *e, size_t mbuf_size)
{
    /* no free chunks kept: a stale pointer into a returned mbuf is a use-after-free under ASan */
    mbuf_pool_init(&e->mp, mbuf_size, 0);
    msg_pool_init(&e->pp, 0);
}

void tenv_deinit(struct tenv *e)
{
    assert_int_equal(e->mp.nlive, 0);
    assert_int_equal(e->pp.nlive, 0);
    msg_pool_deinit(&e->pp);
    mbuf_pool_deinit(&e->mp);
}

void drv_init(struct drv *d, struct tenv *e, const struct proto_ops *ops, bool rsp, bool want_elems)
{
    memset(d, 0, sizeof(*d));
    d->env = e;
    d->ops = ops;
    d->rsp = rsp;
    d->want_elems = want_elems;
}

void drv_open(struct drv *d, struct tenv *e, size_t mbuf_size, const struct proto_ops *ops,
              bool rsp, bool want_elems)
{
    tenv_init(e, mbuf_size);
    drv_init(d, e, ops, rsp, want_elems);
}

void drv_close(struct drv *d)
{
    struct tenv *e = d->env;
    drv_deinit(d);
    tenv_deinit(e);
}

static bool same_state(const struct parse_state *a, const struct parse_state *b)
{
    return a->state == b->state && a->a == b->a && a->b == b->b && a->c == b->c &&
           a->d == b->d && a->off == b->off && a->depth == b->depth &&
           a->stack_cap == b->stack_cap && a->stack == b->stack &&
           a->elem_start == b->elem_start && a->want_elems == b->want_elems && a->opts == b->opts &&
           a->mode == b->mode && a->error == b->error;
}

/* reader_sink.begin: as the core's roles, parse_state_reset (which keeps want_elems), then the
 * want_elems this side wants. */
static void drv_begin(void *ctx, struct parse_state *ps)
{
    const struct drv *d = ctx;
    bool want_elems = ps->want_elems;
    parse_state_reset(ps);
    assert_true(ps->want_elems == want_elems);
    ps->want_elems = d->want_elems;
    ps->opts = d->opts;
    ps->table = d->table;
}

/* reader_sink.parse: the protocol's parser, its contract checked. After PARSE_AGAIN it took all it
 * could: called again with the bytes it left (the msg's len counting the consumed ones, as the
 * reader will have appended them), it consumes nothing and leaves its state alone. */
static int drv_parse(void *ctx, struct parse_state *ps, struct msg *m, const uint8_t *buf,
                     size_t len, size_t *consumed)
{
    const struct drv *d = ctx;
    int (*parse)(struct parse_state *, struct msg *, const uint8_t *, size_t, size_t *) =
        d->rsp ? d->ops->parse_rsp : d->ops->parse_req;
    size_t n = (size_t)-1, again = (size_t)-1;
    int rc = parse(ps, m, buf, len, &n);
    assert_true(n <= len);
    if (rc == PARSE_AGAIN) {
        struct parse_state before = *ps;
        m->len += n;
        assert_int_equal(parse(ps, m, buf + n, len - n, &again), PARSE_AGAIN);
        assert_int_equal(again, 0);
        assert_true(same_state(&before, ps));
        m->len -= n;
    } else if (rc == PARSE_ERROR) {
        assert_non_null(ps->error);
    } else {
        assert_int_equal(rc, PARSE_DONE);
        assert_true(n > 0);
    }
    *consumed = n;
    return rc;
}

/* reader_sink.on_msg: a completed msg holds exactly the bytes that followed the previous one,
 * less the trim bytes at their end, then its tail (the parser's edits, msg_finish). */
static int drv_msg(void *ctx, struct msg *m)
{
    struct drv *d = ctx;
    assert_true(m->len >= m->tail_len);
    uint64_t kept = m->len - m->tail_len, consumed = kept + m->trim;
    assert_true(consumed <= d->ninput - d->ndone);
    uint8_t chunk[4096];
    for (uint64_t off = 0; off < kept;) {
        size_t n = kept - off < sizeof(chunk) ? (size_t)(kept - off) : sizeof(chunk);
        assert_int_equal(msg_copy_out(m, off, chunk, n), n);
        assert_memory_equal(chunk, d->input + d->ndone + off, n);
        off += n;
    }
    if (m->tail_len > 0) {
        assert_non_null(m->tail);
        assert_int_equal(msg_copy_out(m, kept, chunk, m->tail_len), m->tail_len);
        assert_memory_equal(chunk, m->tail, m->tail_len);
    }
    d->ndone += (size_t)consumed;
    if (d->nout == d->out_cap) {
        d->out_cap = d->out_cap ? d->out_cap * 2 : 16;
        d->out = realloc(d->out, d->out_cap * sizeof(*d->out));
        assert_non_null(d->out);
    }
    d->out[d->nout++] = m;
    return 0;
}

static const struct reader_sink drv_sink = {
    .begin = drv_begin, .parse = drv_parse, .on_msg = drv_msg, .msg_max = UINT64_MAX,
};

/* Keeps a copy of the bytes read, to check the msgs' bytes against. */
static void drv_record(struct drv *d, const uint8_t *p, size_t k)
{
    if (d->ninput + k > d->input_cap) {
        d->input_cap = (d->ninput + k) * 2;
        d->input = realloc(d->input, d->input_cap);
        assert_non_null(d->input);
    }
    memcpy(d->input + d->ninput, p, k);
    d->ninput += k;
}

void drv_read(struct drv *d, const void *data, size_t len)
{
    const uint8_t *p = data;
    while (len > 0 && !d->failed) {
        uint8_t *at = NULL;
        uint32_t room = 0;
        int rc = reader_room_scrub(&d->rd, &d->env->mp, &at, &room);
        if (rc == -E2BIG) {
            d->failed = d->gave_up = true;
            break;
        }
        assert_int_equal(rc, 0);
        uint32_t k = room < len ? room : (uint32_t)len;
        memcpy(at, p, k);
        drv_record(d, p, k);
        p += k;
        len -= k;
        rc = reader_parse(&d->rd, k, &d->env->pp, &drv_sink, d);
        assert_true(rc == 0 || rc == -EPROTO);
        d->failed = rc == -EPROTO;
        if (d->failed) d->error = d->rd.ps.error;
    }
    reader_trim(&d->rd);
}

void drv_feed(struct drv *d, const void *data, size_t len, size_t step)
{
    const uint8_t *p = data;
    if (step == 0) step = len;
    for (size_t off = 0; off < len; off += step)
        drv_read(d, p + off, len - off < step ? len - off : step);
}

void drv_feed_cuts(struct drv *d, const void *data, size_t len, const size_t *cuts, size_t ncuts)
{
    const uint8_t *p = data;
    size_t at = 0;
    for (size_t i = 0; i <= ncuts; i++) {
        size_t to = i < ncuts ? cuts[i] : len;
        assert_true(to >= at && to <= len);
        drv_read(d, p + at, to - at);
        at = to;
    }
}

void drv_feed2(struct drv *d, const void *data, size_t len, size_t cut)
{
    drv_feed_cuts(d, data, len, &cut, 1);
}

struct msg *drv_take(struct drv *d, size_t i)
{
    assert_true(i < d->nout);
    struct msg *m = d->out[i];
    d->out[i] = NULL;
    return m;
}

uint64_t drv_pending(const struct drv *d)
{
    const struct reader *r = &d->rd;
    return (r->msg != NULL ? r->msg->len : 0) + (r->buf != NULL ? r->buf->len - r->pos : 0);
}

void drv_deinit(struct drv *d)
{
    for (size_t i = 0; i < d->nout; i++)
        if (d->out[i] != NULL) msg_put(&d->env->pp, d->out[i]);
    free(d->out);
    reader_deinit(&d->rd, &d->env->pp);
    free(d->input);
    memset(d, 0, sizeof(*d));
}

/* Summarizes what d found into r, then closes d. */
static void drv_collect(struct drv_run *r, struct drv *d, drv_summary_fn fn)
{
    r->n = d->nout;
    r->lines = calloc(d->nout + 1, sizeof(char *));
    assert_non_null(r->lines);
    for (size_t i = 0; i < d->nout; i++) r->lines[i] = fn(d->out[i]);
    r->failed = d->failed;
    r->gave_up = d->gave_up;
    r->error = d->error;
    r->pending = drv_pending(d);
    drv_close(d);
}

void drv_run(struct drv_run *r, const struct proto_ops *ops, bool rsp, bool want_elems,
             size_t mbuf, const char *in, size_t len, size_t step, size_t cut, drv_summary_fn fn)
{
    struct tenv e;
    struct drv d;
    drv_open(&d, &e, mbuf, ops, rsp, want_elems);
    if (cut != SIZE_MAX) drv_feed2(&d, in, len, cut);
    else drv_feed(&d, in, len, step);
    drv_collect(r, &d, fn);
}

void drv_run_cuts(struct drv_run *r, const struct proto_ops *ops, bool rsp, bool want_elems,
                  size_t mbuf, const char *in, size_t len, const size_t *cuts, size_t ncuts,
                  drv_summary_fn fn)
{
    struct tenv e;
    struct drv d;
    drv_open(&d, &e, mbuf, ops, rsp, want_elems);
    drv_feed_cuts(&d, in, len, cuts, ncuts);
    drv_collect(r, &d, fn);
}

char *drv_run_text(const struct drv_run *r)
{
    char *s = NULL;
    size_t n = 0;
    FILE *out = open_memstream(&s, &n);
    assert_non_null(out);
    for (size_t i = 0; i < r->n; i++) fprintf(out, "%s\n", r->lines[i]);
    if (r->gave_up) fputs("GAVE UP\n", out);
    else if (r->failed) fprintf(out, "ERROR %s\n", r->error);
    else if (r->pending > 0) fputs("PENDING\n", out);
    assert_int_equal(fclose(out), 0);
    return s;
}

/* drv_transcript with parse_state.table set to table before each msg. */
static char *transcript_with(const struct proto_ops *ops, bool rsp, bool want_elems, uint8_t opts, const void *table,
                             size_t mbuf, const char *in, size_t n, const size_t *cuts, size_t ncuts,
                             drv_summary_fn fn)
{
    struct tenv e;
    struct drv d;
    struct drv_run r;
    drv_open(&d, &e, mbuf, ops, rsp, want_elems);
    d.opts = opts;
    d.table = table;
    drv_feed_cuts(&d, in, n, cuts, ncuts);
    drv_collect(&r, &d, fn);
    char *t = drv_run_text(&r);
    drv_run_free(&r);
    return t;
}

char *drv_transcript(const struct proto_ops *ops, bool rsp, bool want_elems, uint8_t opts,
                            size_t mbuf, const char *in, size_t n, const size_t *cuts, size_t ncuts,
                            drv_summary_fn fn)
{
    return transcript_with(ops, rsp, want_elems, opts, NULL, mbuf, in, n, cuts, ncuts, fn);
}

/* drv_check_stream with parse_state.table set to table before each msg. */
static void check_stream_with(const struct proto_ops *ops, bool rsp, bool want_elems, uint8_t opts,
                              const void *table, const char *in, size_t n, const char *expect, drv_summary_fn fn)
{
    static const size_t chunk_sizes[] = { 512, 16384 };
    size_t *cuts = malloc((n + 1) * sizeof(*cuts));
    assert_non_null(cuts);
    for (size_t c = 0; c < sizeof(chunk_sizes) / sizeof(chunk_sizes[0]); c++) {
        size_t chunk = chunk_sizes[c];
        char *t = transcript_with(ops, rsp, want_elems, opts, table, chunk, in, n, NULL, 0, fn);
        if (strcmp(t, expect) != 0) print_error("input:\n%.*s\n", (int)n, in);
        assert_string_equal(t, expect);
        free(t);
        for (size_t k = 1; k < n; k++) {
            t = transcript_with(ops, rsp, want_elems, opts, table, chunk, in, n, &k, 1, fn);
            if (strcmp(t, expect) != 0) print_error("split at %zu (chunk %zu)\n", k, chunk);
            assert_string_equal(t, expect);
            free(t);
        }
        for (size_t k = 1; k < n; k++) cuts[k - 1] = k;
        t = transcript_with(ops, rsp, want_elems, opts, table, chunk, in, n, cuts, n ? n - 1 : 0, fn);
        if (strcmp(t, expect) != 0) print_error("one byte at a time (chunk %zu)\n", chunk);
        assert_string_equal(t, expect);
        free(t);
    }
    free(cuts);
}

void drv_check_stream(const struct proto_ops *ops, bool rsp, bool want_elems, uint8_t opts,
                      const char *in, size_t n, const char *expect, drv_summary_fn fn)
{
    check_stream_with(ops, rsp, want_elems, opts, NULL, in, n, expect, fn);
}

void drv_check_stream_table(const struct proto_ops *ops, const void *table, const char *in, size_t n,
                            const char *expect, drv_summary_fn fn)
{
    check_stream_with(ops, false, false, 0, table, in, n, expect, fn);
}

void drv_run_free(struct drv_run *r)
{
    for (size_t i = 0; i < r->n; i++) free(r->lines[i]);
    free(r->lines);
}

void drv_run_same(const struct drv_run *a, struct drv_run *b)
{
    assert_int_equal(a->n, b->n);
    assert_int_equal(a->failed, b->failed);
    assert_int_equal(a->gave_up, b->gave_up);
    if (a->failed) assert_string_equal(a->error, b->error);
    else assert_int_equal(a->pending, b->pending);
    for (size_t i = 0; i < a->n; i++) assert_string_equal(a->lines[i], b->lines[i]);
    drv_run_free(b);
}

uint64_t test_rand(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* Feeds in random pieces; returns the driver's findings. */
static void drv_run_random(struct drv_run *r, const struct proto_ops *ops, bool rsp, bool want,
                           size_t mbuf, const char *in, size_t len, size_t max_step,
                           uint64_t *seed, drv_summary_fn fn)
{
    struct tenv e;
    struct drv d;
    drv_open(&d, &e, mbuf, ops, rsp, want);
    for (size_t off = 0; off < len && !d.failed;) {
        size_t k = 1 + (size_t)(test_rand(seed) % max_step);
        if (k > len - off) k = len - off;
        drv_read(&d, in + off, k);
        off += k;
    }
    drv_collect(r, &d, fn);
}

void drv_fuzz_splits(const struct proto_ops *ops, bool rsp, bool want_elems, const char *in,
                     size_t len, size_t mbuf, size_t small_mbuf, int n_splits, size_t max_step,
                     uint64_t *seed, drv_summary_fn fn)
{
    struct drv_run ref, r;
    drv_run(&ref, ops, rsp, want_elems, mbuf, in, len, 0, SIZE_MAX, fn);
    assert_false(ref.failed && ref.error == NULL); /* the reference never gives up */
    if (getenv("NC_FUZZ_VERBOSE") != NULL)
        fprintf(stderr, "fuzz: %zu bytes, %zu msgs, %s\n", len, ref.n, ref.failed ? ref.error : "ok");
    for (int i = 0; i < n_splits; i++) {
        drv_run_random(&r, ops, rsp, want_elems, mbuf, in, len, max_step, seed, fn);
        drv_run_same(&ref, &r);
    }
    drv_run_free(&ref);
    for (int i = 0; small_mbuf != 0 && i < n_splits; i++) {
        drv_run_random(&r, ops, rsp, want_elems, small_mbuf, in, len, max_step, seed, fn);
        drv_run_free(&r);
    }
}

char *msg_range_text(const struct msg *m, uint64_t start, uint64_t end)
{
    assert_true(start <= end && end <= m->len);
    char *s = malloc((size_t)(end - start) + 1);
    assert_non_null(s);
    size_t n = msg_copy_out(m, start, s, (size_t)(end - start));
    assert_int_equal(n, end - start);
    s[n] = '\0';
    return s;
}

char *msg_text(const struct msg *m)
{
    return msg_range_text(m, 0, m->len);
}

size_t resp_build(char *out, size_t size, int argc, const char *const *argv)
{
    int n = snprintf(out, size, "*%d\r\n", argc);
    assert_true(n > 0 && (size_t)n < size);
    size_t len = (size_t)n;
    for (int i = 0; i < argc; i++) {
        size_t al = strlen(argv[i]);
        n = snprintf(out + len, size - len, "$%zu\r\n", al);
        assert_true(n > 0 && len + (size_t)n + al + 2 < size);
        len += (size_t)n;
        memcpy(out + len, argv[i], al);
        memcpy(out + len + al, "\r\n", 2);
        len += al + 2;
    }
    out[len] = '\0';
    return len;
}

int split_words(const char *line, char *buf, size_t size, const char **argv, int max)
{
    size_t n = strlen(line);
    assert_true(n < size);
    memcpy(buf, line, n + 1);
    int argc = 0;
    char *p = buf;
    while (*p != '\0') {
        assert_true(argc < max);
        argv[argc++] = p;
        char *sp = strchr(p, ' ');
        if (sp == NULL) break;
        *sp = '\0';
        p = sp + 1;
    }
    return argc;
}
