/*
 * oom_alloc.c - the wrapped malloc, calloc and realloc of the allocation-failure tests (see
 * oom_alloc.h), and their shared pools and parses.
 *
 * Threads: the test's only.
 */
#include "config.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "oom_alloc.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);

static long allocs_before_failure = -1; /* -1: never fail */
static bool fail_sticky;                /* after the failure, every later allocation fails too */
static bool failed;                     /* an allocation failed since the last oom_fail_* */

static bool should_fail(void)
{
    if (allocs_before_failure < 0) return false;
    if (allocs_before_failure > 0) {
        allocs_before_failure--;
        return false;
    }
    failed = true;
    if (!fail_sticky) allocs_before_failure = -1;
    return true;
}

void *__wrap_malloc(size_t n)
{
    return should_fail() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
    return should_fail() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
    return should_fail() ? NULL : __real_realloc(p, n);
}

void oom_fail_after(long k)
{
    allocs_before_failure = k < 0 ? -1 : k;
    fail_sticky = true;
    failed = false;
}

void oom_fail_once(long k)
{
    allocs_before_failure = k < 0 ? -1 : k;
    fail_sticky = false;
    failed = false;
}

void oom_stop(void)
{
    allocs_before_failure = -1;
}

bool oom_failed(void)
{
    return failed;
}

void oom_pools_init(struct oom_pools *c, size_t chunk_size)
{
    mbuf_pool_init(&c->mp, chunk_size, 0);
    msg_pool_init(&c->pp, 0);
}

void oom_pools_deinit(struct oom_pools *c)
{
    assert_int_equal(c->pp.nlive, 0);
    assert_int_equal(c->mp.nlive, 0);
    msg_pool_deinit(&c->pp);
    mbuf_pool_deinit(&c->mp);
}

struct msg *oom_parse(struct oom_pools *c, const struct proto_ops *ops, const char *s, size_t n, bool rsp)
{
    return oom_parse_opts(c, ops, s, n, rsp, 0);
}

struct msg *oom_parse_opts(struct oom_pools *c, const struct proto_ops *ops, const char *s, size_t n, bool rsp,
                           uint8_t opts)
{
    struct parse_state ps;
    memset(&ps, 0, sizeof(ps));
    ps.want_elems = rsp;
    parse_state_reset(&ps);
    ps.opts = opts;
    struct mbuf *mb = mbuf_get(&c->mp);
    assert_non_null(mb);
    size_t consumed = 0;
    assert_true(n <= mb->cap);
    memcpy(mb->data, s, n);
    mb->len = (uint32_t)n;
    struct msg *m = msg_get(&c->pp);
    assert_non_null(m);
    int rc = rsp ? ops->parse_rsp(&ps, m, mb->data, n, &consumed) : ops->parse_req(&ps, m, mb->data, n, &consumed);
    assert_int_equal(rc, PARSE_DONE);
    assert_int_equal(consumed, n);
    assert_int_equal(msg_append(m, mb, 0, (uint32_t)n), 0);
    mbuf_unref(mb);
    parse_state_free(&ps);
    return m;
}

int oom_parse_at(const struct proto_ops *ops, const char *text, bool rsp, long k, uint32_t *count)
{
    return oom_parse_bytes_at(ops, text, strlen(text), rsp, k, count);
}

int oom_parse_bytes_at(const struct proto_ops *ops, const char *text, size_t n, bool rsp, long k, uint32_t *count)
{
    struct msg_pool pp;
    msg_pool_init(&pp, 0);
    struct parse_state ps;
    memset(&ps, 0, sizeof(ps));
    ps.want_elems = true;
    parse_state_reset(&ps);
    struct msg *m = msg_get(&pp);
    assert_non_null(m);
    size_t consumed = 0;
    const uint8_t *buf = (const uint8_t *)text;
    oom_fail_after(k);
    int rc = rsp ? ops->parse_rsp(&ps, m, buf, n, &consumed) : ops->parse_req(&ps, m, buf, n, &consumed);
    oom_stop();
    if (rc == PARSE_ERROR) {
        assert_string_equal(ps.error, "out of memory");
    } else {
        assert_int_equal(rc, PARSE_DONE);
        assert_int_equal(consumed, n);
    }
    if (count != NULL) *count = rsp ? m->nelems : m->nkeys;
    parse_state_free(&ps);
    msg_put(&pp, m);
    assert_int_equal(pp.nlive, 0);
    msg_pool_deinit(&pp);
    return rc;
}
