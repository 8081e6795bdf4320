/*
 * proto_feed.c - the test driver of proto_feed.h.
 * Threads: the test's only.
 */
#include "config.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "proto_feed.h"

void feed_init(struct feed *f, const struct proto_ops *ops, bool rsp, bool want_elems,
               struct mbuf_pool *mp, struct msg_pool *pp)
{
    memset(f, 0, sizeof(*f));
    f->ops = ops;
    f->rsp = rsp;
    f->mp = mp;
    f->pp = pp;
    f->ps.want_elems = want_elems;
    ops->parse_reset(&f->ps);
    assert_true(f->ps.want_elems == want_elems);
}

void feed_deinit(struct feed *f)
{
    for (size_t i = 0; i < f->nout; i++) {
        if (f->out[i] != NULL) msg_put(f->pp, f->out[i]);
    }
    free(f->out);
    if (f->cur != NULL) msg_put(f->pp, f->cur);
    if (f->mb != NULL) mbuf_unref(f->mb);
    f->ops->parse_free(&f->ps);
    free(f->input);
    memset(f, 0, sizeof(*f));
}

struct msg *feed_take(struct feed *f, size_t i)
{
    assert_true(i < f->nout);
    struct msg *m = f->out[i];
    f->out[i] = NULL;
    return m;
}

static void push_out(struct feed *f, struct msg *m)
{
    if (f->nout == f->out_cap) {
        f->out_cap = f->out_cap ? f->out_cap * 2 : 16;
        f->out = realloc(f->out, f->out_cap * sizeof(*f->out));
        assert_non_null(f->out);
    }
    f->out[f->nout++] = m;
}

static int call_parser(struct feed *f, const uint8_t *buf, size_t len, size_t *consumed)
{
    if (f->rsp) return f->ops->parse_rsp(&f->ps, f->cur, buf, len, consumed);
    return f->ops->parse_req(&f->ps, f->cur, buf, len, consumed);
}

static bool same_state(const struct parse_state *a, const struct parse_state *b)
{
    return a->state == b->state && a->a == b->a && a->b == b->b && a->c == b->c &&
           a->d == b->d && a->off == b->off && a->depth == b->depth &&
           a->elem_start == b->elem_start && a->want_elems == b->want_elems &&
           a->error == b->error && a->stack == b->stack;
}

/* Parses what the current mbuf holds past pos. */
static void drain(struct feed *f)
{
    while (f->status == FEED_OK && f->pos < f->mb->len) {
        if (f->cur == NULL) {
            f->cur = msg_get(f->pp);
            assert_non_null(f->cur);
            f->ops->parse_reset(&f->ps);
        }
        const uint8_t *buf = f->mb->data + f->pos;
        size_t len = f->mb->len - f->pos, consumed = 0;
        int rc = call_parser(f, buf, len, &consumed);
        assert_true(consumed <= len);
        if (rc == PARSE_AGAIN) {
            /* the parser took all it could: the same bytes again change nothing */
            struct parse_state before = f->ps;
            uint64_t before_len = f->cur->len;
            size_t again = 99;
            f->cur->len += consumed; /* as the core will have appended them */
            assert_int_equal(call_parser(f, buf + consumed, len - consumed, &again), PARSE_AGAIN);
            assert_int_equal(again, 0);
            assert_true(same_state(&before, &f->ps));
            f->cur->len = before_len;
        }
        assert_int_equal(msg_append(f->cur, f->mb, f->pos, (uint32_t)consumed), 0);
        f->pos += (uint32_t)consumed;
        if (rc == PARSE_DONE) {
            assert_true(consumed > 0);
            push_out(f, f->cur);
            f->cur = NULL;
        } else if (rc == PARSE_ERROR) {
            assert_non_null(f->ps.error);
            f->status = FEED_ERROR;
        } else {
            assert_int_equal(rc, PARSE_AGAIN);
            break;
        }
    }
}

/* Makes room in the current mbuf, moving the unconsumed tail to a new one when it is full. */
static void make_room(struct feed *f)
{
    if (f->mb != NULL && mbuf_room(f->mb) > 0) return;
    struct mbuf *nb = mbuf_get(f->mp);
    assert_non_null(nb);
    if (f->mb != NULL) {
        uint32_t tail = f->mb->len - f->pos;
        if (tail == f->mb->cap) {
            mbuf_unref(nb);
            f->status = FEED_GAVE_UP;
            return;
        }
        memcpy(nb->data, f->mb->data + f->pos, tail);
        nb->len = tail;
        mbuf_unref(f->mb);
    }
    f->mb = nb;
    f->pos = 0;
}

enum feed_status feed_bytes(struct feed *f, const void *data, size_t n)
{
    const uint8_t *p = data;
    if (f->ninput + n > f->input_cap) {
        f->input_cap = (f->ninput + n) * 2;
        f->input = realloc(f->input, f->input_cap);
        assert_non_null(f->input);
    }
    if (n > 0) memcpy(f->input + f->ninput, data, n);
    f->ninput += n;
    while (n > 0 && f->status == FEED_OK) {
        make_room(f);
        if (f->status != FEED_OK) break;
        size_t take = mbuf_room(f->mb) < n ? mbuf_room(f->mb) : n;
        memcpy(f->mb->data + f->mb->len, p, take);
        f->mb->len += (uint32_t)take;
        p += take;
        n -= take;
        drain(f);
    }
    return f->status;
}

static void check_bytes(const struct feed *f)
{
    size_t off = 0;
    for (size_t i = 0; i < f->nout; i++) {
        const struct msg *m = f->out[i];
        assert_true(off + m->len <= f->ninput);
        uint8_t *copy = malloc(m->len + 1);
        assert_non_null(copy);
        assert_int_equal(msg_copy_out(m, 0, copy, m->len), m->len);
        assert_memory_equal(copy, f->input + off, m->len);
        free(copy);
        off += m->len;
    }
}

static void append_line(char **s, size_t *len, const char *line)
{
    size_t n = strlen(line);
    *s = realloc(*s, *len + n + 2);
    assert_non_null(*s);
    memcpy(*s + *len, line, n);
    (*s)[*len + n] = '\n';
    *len += n + 1;
    (*s)[*len] = '\0';
}

char *feed_transcript(const struct proto_ops *ops, bool rsp, size_t chunk_size,
                      feed_describe_fn describe, const void *data, size_t n,
                      const size_t *cuts, size_t ncuts)
{
    struct mbuf_pool mp;
    struct msg_pool pp;
    struct feed f;
    mbuf_pool_init(&mp, chunk_size, 16);
    msg_pool_init(&pp, 16);
    feed_init(&f, ops, rsp, true, &mp, &pp);
    const uint8_t *p = data;
    size_t at = 0;
    for (size_t i = 0; i <= ncuts; i++) {
        size_t to = i < ncuts ? cuts[i] : n;
        assert_true(to >= at && to <= n);
        feed_bytes(&f, p + at, to - at);
        at = to;
    }
    check_bytes(&f);

    char *s = malloc(1);
    size_t len = 0;
    assert_non_null(s);
    s[0] = '\0';
    for (size_t i = 0; i < f.nout; i++) {
        char *d = describe(f.out[i]);
        append_line(&s, &len, d);
        free(d);
    }
    char tail[160];
    tail[0] = '\0';
    if (f.status == FEED_ERROR)
        snprintf(tail, sizeof(tail), "ERROR %s", f.ps.error);
    else if (f.status == FEED_GAVE_UP)
        snprintf(tail, sizeof(tail), "GAVE UP");
    else if (f.cur != NULL || f.pos < (f.mb ? f.mb->len : 0))
        snprintf(tail, sizeof(tail), "PENDING");
    if (tail[0] != '\0') append_line(&s, &len, tail);

    feed_deinit(&f);
    assert_int_equal(mp.nlive, 0);
    assert_int_equal(pp.nlive, 0);
    msg_pool_deinit(&pp);
    mbuf_pool_deinit(&mp);
    return s;
}
