/*
 * test_memcache_bin_rsp.c - unit tests of memcached's binary protocol on the proxy's server side
 * (src/proto/memcache_bin_rsp.c, memcache_bin_fanout.c): the replies of binary requests (one
 * packet of any status, a get hit's extras and value, a stat sequence up to its closing packet or
 * an error, under MC_RSP_TERM every packet up to the NOOP's reply, which is cut, and the replies
 * that put the server connection out of step), and stat, flush and flushq sent to every server:
 * the fragments, the statistics summed behind the proxy's own, a server that failed, a flush
 * error with the client's opcode. Every reply stream runs through proto_drv whole, split in two at
 * every byte and one byte at a time, with 512-byte and 16 kB mbufs.
 *
 * Threads: the test's only.
 */
#include "config.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/util.h"
#include "msg/mbuf.h"
#include "msg/msg.h"
#include "proto/memcache_bin.h"
#include "proto/proto.h"
#include "bin_pkt.h"
#include "proto_drv.h"

#define TERM (MC_RSP_BIN | MC_RSP_TERM)

/* "BIN st=0001 n=2 len=60 trim=24": the first packet's status (the msg's integer), the packets
 * (whole, magic 0x81), the length, the bytes cut. */
static char *describe_rsp(const struct msg *m)
{
    char *s = NULL;
    size_t sn = 0;
    FILE *out = open_memstream(&s, &sn);
    assert_non_null(out);
    assert_int_equal(m->rsp_type, RSP_MC_BIN);
    assert_int_equal(m->nelems, 0);
    assert_false(m->rsp_fatal);
    char *b = msg_text(m);
    const uint8_t *p = (const uint8_t *)b;
    uint64_t at = 0;
    int n = 0;
    while (at < m->len) {
        assert_true(m->len - at >= 24);
        assert_int_equal(p[at], 0x81);
        if (n++ == 0) assert_int_equal(m->integer, bpk_u16(p + at + 6));
        at += 24 + bpk_u32(p + at + 8);
    }
    assert_int_equal(at, m->len);
    free(b);
    fprintf(out, "BIN st=%04x n=%d len=%llu", (unsigned)m->integer, n, (unsigned long long)m->len);
    if (m->trim != 0) fprintf(out, " trim=%u", m->trim);
    fclose(out);
    return s;
}

static void check_rsp(uint8_t opts, const struct bpk *b, const char *expect)
{
    drv_check_stream(&memcache_proto, true, false, opts, (const char *)b->p, b->n, expect, describe_rsp);
}

/* ---- replies ---- */

/* One packet a message, whatever its status (memcached's and the proxy's own). */
static void test_statuses(void **state)
{
    (void)state;
    static const uint16_t statuses[] = { 0x0000, 0x0001, 0x0002, 0x0003, 0x0004, 0x0005, 0x0006,
                                         0x0007, 0x0008, 0x0020, 0x0021, 0x0081, 0x0082, 0x0083,
                                         0x0084, 0x0085, 0x0086 };
    struct bpk b = { 0 };
    char expect[2048] = "";
    for (size_t i = 0; i < NC_ARRAY_LEN(statuses); i++) {
        bpk_rsp(&b, 0x01, statuses[i], NULL, NULL, statuses[i] ? "Not stored." : NULL, (uint32_t)i);
        size_t n = strlen(expect);
        snprintf(expect + n, sizeof(expect) - n, "BIN st=%04x n=1 len=%d\n", statuses[i], statuses[i] ? 35 : 24);
    }
    check_rsp(MC_RSP_BIN, &b, expect);
    bpk_free(&b);
}

/* A hit: flags as extras, the value (getk: the key too); big values across mbufs. */
static void test_get_hit(void **state)
{
    (void)state;
    struct bpk b = { 0 };
    bpk_rsp(&b, 0x00, 0, "FLAG", NULL, "hello", 1);
    bpk_rsp(&b, 0x0c, 0, "FLAG", "key", "hello", 2);
    bpk_rsp(&b, 0x00, 1, NULL, NULL, "Not found", 3);
    check_rsp(MC_RSP_BIN, &b, "BIN st=0000 n=1 len=33\nBIN st=0000 n=1 len=36\nBIN st=0001 n=1 len=33\n");
    bpk_reset(&b);
    bpk_hdr(&b, 0x81, 0x00, 0, 4, 0, 4 + 3000, 4);
    bpk_fill(&b, 'f', 4);
    bpk_fill(&b, 'v', 3000);
    bpk_rsp(&b, 0x0b, 0, NULL, NULL, "1.6.18", 5);
    check_rsp(MC_RSP_BIN, &b, "BIN st=0000 n=1 len=3028\nBIN st=0000 n=1 len=30\n");
    bpk_free(&b);
}

/* stat: a packet per statistic up to the closing one without a key, or up to an error. */
static void test_stat_sequence(void **state)
{
    (void)state;
    struct bpk b = { 0 };
    bpk_rsp(&b, 0x10, 0, NULL, "pid", "1", 1);
    bpk_rsp(&b, 0x10, 0, NULL, "curr_items", "7", 1);
    bpk_rsp(&b, 0x10, 0, NULL, "version", "1.6.18", 1);
    bpk_rsp(&b, 0x10, 0, NULL, NULL, NULL, 1);
    bpk_rsp(&b, 0x00, 0, "FLAG", NULL, "v", 2); /* the next request's */
    check_rsp(MC_RSP_BIN, &b, "BIN st=0000 n=4 len=124\nBIN st=0000 n=1 len=29\n");
    bpk_reset(&b);
    bpk_rsp(&b, 0x10, 0, NULL, "pid", "1", 1);
    bpk_rsp(&b, 0x10, 0x0081, NULL, NULL, "Unknown command", 1); /* an error ends it */
    bpk_rsp(&b, 0x10, 0x0083, NULL, "items", NULL, 2);           /* a keyed error too */
    bpk_rsp(&b, 0x10, 0x0082, NULL, NULL, "Out of memory", 3);
    check_rsp(MC_RSP_BIN, &b, "BIN st=0000 n=2 len=67\nBIN st=0083 n=1 len=29\nBIN st=0082 n=1 len=37\n");
    bpk_free(&b);
}

/* Under MC_RSP_TERM: every packet up to the reply to the proxy's NOOP, which is cut (trim 24):
 * none when memcached kept quiet, several when a quiet request was answered in parts. */
static void test_terminated(void **state)
{
    (void)state;
    struct bpk b = { 0 };
    bpk_rsp(&b, 0x0a, 0, NULL, NULL, NULL, 0);
    bpk_rsp(&b, 0x09, 0, "FLAG", NULL, "hello", 1);
    bpk_rsp(&b, 0x0a, 0, NULL, NULL, NULL, 0);
    bpk_rsp(&b, 0x11, 0x0002, NULL, NULL, "Data exists for key.", 2);
    bpk_rsp(&b, 0x10, 0, NULL, "pid", "1", 3);
    bpk_rsp(&b, 0x0a, 0, NULL, NULL, NULL, 0);
    check_rsp(TERM, &b, "BIN st=0000 n=0 len=0 trim=24\nBIN st=0000 n=1 len=33 trim=24\n"
                        "BIN st=0002 n=2 len=72 trim=24\n");
    bpk_reset(&b);
    bpk_rsp(&b, 0x09, 0, "FLAG", NULL, "hello", 1);
    check_rsp(TERM, &b, "PENDING\n"); /* until the NOOP's reply */
    bpk_free(&b);
}

/* The server connection is out of step: a request's magic, garbage, a NOOP reply with a body
 * where the proxy's NOOP is answered (its whole reply is cut: a body would be left to the
 * client). Without a terminator a NOOP reply is one packet like any other. */
static void test_out_of_step(void **state)
{
    (void)state;
    struct bpk b = { 0 };
    bpk_rsp(&b, 0x00, 0, "FLAG", NULL, "v", 1);
    bpk_req(&b, 0x00, "k", 0, 0, 2);
    check_rsp(MC_RSP_BIN, &b, "BIN st=0000 n=1 len=29\nERROR bad binary reply magic\n");
    bpk_reset(&b);
    bpk_put(&b, "END\r\nEND\r\nEND\r\nEND\r\nEND\r\n", 25);
    check_rsp(MC_RSP_BIN, &b, "ERROR bad binary reply magic\n");
    bpk_reset(&b);
    bpk_rsp(&b, 0x09, 1, NULL, NULL, NULL, 1);
    bpk_rsp(&b, 0x0a, 0, NULL, NULL, "x", 0);
    bpk_rsp(&b, 0x0a, 0, NULL, NULL, NULL, 0);
    check_rsp(TERM, &b, "ERROR binary NOOP reply with a body\n");
    check_rsp(MC_RSP_BIN, &b, "BIN st=0001 n=1 len=24\nBIN st=0000 n=1 len=25\nBIN st=0000 n=1 len=24\n");
    bpk_free(&b);
}

/* ---- stat, flush and flushq on every server ---- */

struct fan {
    struct tenv e;
    struct drv req_drv, rsp_drv;
};

static void fan_init(struct fan *c)
{
    tenv_init(&c->e, 512);
    drv_init(&c->req_drv, &c->e, &memcache_proto, false, false);
    drv_init(&c->rsp_drv, &c->e, &memcache_proto, true, false);
    c->rsp_drv.opts = MC_RSP_BIN;
}

static struct msg *parse_one(struct drv *d, const struct bpk *b)
{
    size_t before = d->nout;
    drv_read(d, b->p, b->n);
    assert_false(d->failed);
    assert_int_equal(d->nout, before + 1);
    return drv_take(d, before);
}

/* The request in b split over n servers: each fragment is the request (a flush's opcode for a
 * flushq), on its server, with a binary reply. */
static struct msg *fan_split(struct fan *c, const struct bpk *b, const uint32_t *where, uint32_t n)
{
    struct msg *req = parse_one(&c->req_drv, b);
    assert_true(req->cmd_flags & CMD_F_FRAG_ALL);
    assert_int_equal(memcache_proto.fragment(req, where, n, &c->e.pp), 0);
    assert_int_equal(req->nfrags, n);
    for (uint32_t i = 0; i < n; i++) {
        struct msg *f = req->frags[i];
        assert_ptr_equal(f->frag_owner, req);
        assert_int_equal(f->server_idx, where[i]);
        assert_int_equal(f->rsp_opts, MC_RSP_BIN);
        char *t = msg_text(f);
        assert_int_equal(f->len, b->n);
        assert_int_equal((uint8_t)t[1], b->p[1] == 0x18 ? 0x08 : b->p[1]);
        assert_memory_equal(t + 2, b->p + 2, b->n - 2);
        free(t);
    }
    return req;
}

/* The fragment's reply (NULL: the server did not answer). */
static void fan_reply(struct fan *c, struct msg *req, uint32_t i, const struct bpk *b)
{
    req->frags[i]->peer = b != NULL ? parse_one(&c->rsp_drv, b) : NULL;
}

/* Coalesces; returns the reply's bytes (a heap string) or NULL when coalesce returned rc != 0. */
static char *fan_coalesce(struct fan *c, struct msg *req, long clients, int rc_want, uint64_t *len)
{
    struct proto_view v = { .pool_clients = clients };
    struct msg *rsp = msg_get(&c->e.pp);
    assert_int_equal(memcache_proto.coalesce(&v, req, rsp), rc_want);
    char *t = NULL;
    if (rc_want == 0) {
        assert_int_equal(rsp->rsp_type, RSP_MC_BIN);
        t = msg_text(rsp);
        *len = rsp->len;
    }
    for (uint32_t j = 0; j < req->nfrags; j++) {
        if (req->frags[j]->peer != NULL) msg_put(&c->e.pp, req->frags[j]->peer);
        msg_put(&c->e.pp, req->frags[j]);
    }
    msg_put(&c->e.pp, req);
    msg_put(&c->e.pp, rsp);
    return t;
}

static void fan_deinit(struct fan *c)
{
    drv_deinit(&c->req_drv);
    drv_deinit(&c->rsp_drv);
    tenv_deinit(&c->e);
}

/* "name=value,...": the coalesced stat packets, each checked (stat, status 0, the client's
 * opaque), up to the closing one. */
static char *stat_pairs(const char *t, uint64_t len, const uint8_t *opaque)
{
    char *s = NULL;
    size_t sn = 0;
    FILE *out = open_memstream(&s, &sn);
    const uint8_t *p = (const uint8_t *)t;
    int n = 0;
    for (uint64_t at = 0; at < len;) {
        const uint8_t *h = p + at;
        uint32_t key = bpk_u16(h + 2), body = bpk_u32(h + 8);
        assert_int_equal(h[0], 0x81);
        assert_int_equal(h[1], 0x10);
        assert_int_equal(bpk_u16(h + 6), 0);
        assert_int_equal(h[4], 0);
        assert_memory_equal(h + 12, opaque, 4);
        at += 24 + body;
        if (key == 0) {
            assert_int_equal(body, 0);
            assert_int_equal(at, len); /* the closing packet is the last */
            break;
        }
        fprintf(out, "%s%.*s=%.*s", n++ ? "," : "", (int)key, (const char *)h + 24, (int)(body - key),
                (const char *)h + 24 + key);
    }
    fclose(out);
    return s;
}

/* stat: the proxy's own statistics, then the servers' counters that add up, summed; a server
 * that failed is left out (servers_answered), the lowest version is the pool's. */
static void test_stat_fanout(void **state)
{
    (void)state;
    struct fan c;
    fan_init(&c);
    struct bpk b = { 0 }, r0 = { 0 }, r1 = { 0 }, r2 = { 0 };
    bpk_req(&b, 0x10, "", 0, 0, 0xabcdef01);
    static const uint32_t where[3] = { 3, 5, 8 };
    struct msg *req = fan_split(&c, &b, where, 3);
    bpk_rsp(&r0, 0x10, 0, NULL, "pid", "111", 0xabcdef01);
    bpk_rsp(&r0, 0x10, 0, NULL, "curr_items", "3", 0xabcdef01);
    bpk_rsp(&r0, 0x10, 0, NULL, "total_items", "10", 0xabcdef01);
    bpk_rsp(&r0, 0x10, 0, NULL, "version", "1.6.18", 0xabcdef01);
    bpk_rsp(&r0, 0x10, 0, NULL, "get_hits", "5", 0xabcdef01);
    bpk_rsp(&r0, 0x10, 0, NULL, NULL, NULL, 0xabcdef01);
    bpk_rsp(&r1, 0x10, 0, NULL, "version", "1.6.9", 0xabcdef01);
    bpk_rsp(&r1, 0x10, 0, NULL, "curr_items", "4", 0xabcdef01);
    bpk_rsp(&r1, 0x10, 0, NULL, "get_hits", "7", 0xabcdef01);
    bpk_rsp(&r1, 0x10, 0, NULL, NULL, NULL, 0xabcdef01);
    bpk_rsp(&r2, 0x10, 0x0086, NULL, NULL, "Temporary failure", 0xabcdef01);
    fan_reply(&c, req, 0, &r0);
    fan_reply(&c, req, 1, &r1);
    fan_reply(&c, req, 2, &r2);
    uint64_t len = 0;
    char *t = fan_coalesce(&c, req, 12, 0, &len);
    char *pairs = stat_pairs(t, len, b.p + 12);
    char want[512];
    const char *up = strstr(pairs, ",uptime=");
    assert_non_null(up);
    snprintf(want, sizeof(want), "pid=%ld", (long)getpid()); /* the proxy's, not a server's */
    assert_memory_equal(pairs, want, strlen(want));
    const char *tail = strstr(pairs, ",version=");
    assert_non_null(tail);
    snprintf(want, sizeof(want), ",version=1.6.9,pointer_size=%u,curr_connections=12,servers=3,servers_answered=2,"
             "curr_items=7,total_items=10,get_hits=12", (unsigned)(sizeof(void *) * 8));
    assert_string_equal(tail, want);
    free(pairs);
    /* the reply parses again as one stat sequence: 11 statistics and the closing packet */
    char *run = drv_transcript(&memcache_proto, true, false, MC_RSP_BIN, 512, t, len, NULL, 0, describe_rsp);
    snprintf(want, sizeof(want), "BIN st=0000 n=12 len=%llu\n", (unsigned long long)len);
    assert_string_equal(run, want);
    free(run);
    free(t);
    fan_deinit(&c);
    bpk_free(&b);
    bpk_free(&r0);
    bpk_free(&r1);
    bpk_free(&r2);
}

/* stat where no server answered well: the first error's packet; none answered: -EINVAL. */
static void test_stat_all_failed(void **state)
{
    (void)state;
    struct fan c;
    fan_init(&c);
    struct bpk b = { 0 }, r = { 0 };
    bpk_req(&b, 0x10, "", 0, 0, 0x01010101);
    static const uint32_t where[2] = { 0, 1 };
    struct msg *req = fan_split(&c, &b, where, 2);
    bpk_rsp(&r, 0x10, 0x0082, NULL, NULL, "Out of memory", 0x01010101);
    fan_reply(&c, req, 0, NULL);
    fan_reply(&c, req, 1, &r);
    uint64_t len = 0;
    char *t = fan_coalesce(&c, req, 1, 0, &len);
    assert_int_equal(len, r.n);
    assert_memory_equal(t, r.p, r.n);
    free(t);
    req = fan_split(&c, &b, where, 2);
    fan_reply(&c, req, 0, NULL);
    fan_reply(&c, req, 1, NULL);
    assert_null(fan_coalesce(&c, req, 1, -EINVAL, &len));
    fan_deinit(&c);
    bpk_free(&b);
    bpk_free(&r);
}

/* flush (with its delay) and flushq: a flush to every server; an empty success with the client's
 * opcode and opaque, nothing for flushq; the first server's error with the client's opcode; a
 * server that did not answer fails the request. */
static void test_flush_fanout(void **state)
{
    (void)state;
    struct fan c;
    fan_init(&c);
    struct bpk b = { 0 }, ok = { 0 }, err = { 0 };
    static const uint32_t where[3] = { 0, 1, 2 };
    bpk_rsp(&ok, 0x08, 0, NULL, NULL, NULL, 0x55);
    bpk_rsp(&err, 0x08, 0x0086, NULL, NULL, "Temporary failure", 0x55);
    uint64_t len = 0;
    uint8_t want[24];

    bpk_req(&b, 0x08, "", 4, 0, 0x55);
    struct msg *req = fan_split(&c, &b, where, 3);
    for (uint32_t i = 0; i < 3; i++) fan_reply(&c, req, i, &ok);
    char *t = fan_coalesce(&c, req, 1, 0, &len);
    mc_bin_hdr(want, 0x08, 0, 0, 0, 0, b.p + 12);
    assert_int_equal(len, 24);
    assert_memory_equal(t, want, 24);
    free(t);

    bpk_reset(&b);
    bpk_req(&b, 0x18, "", 0, 0, 0x55);
    req = fan_split(&c, &b, where, 3);
    for (uint32_t i = 0; i < 3; i++) fan_reply(&c, req, i, &ok);
    t = fan_coalesce(&c, req, 1, 0, &len);
    assert_int_equal(len, 0); /* quiet: nothing */
    free(t);

    req = fan_split(&c, &b, where, 3);
    fan_reply(&c, req, 0, &ok);
    fan_reply(&c, req, 1, &err);
    fan_reply(&c, req, 2, &ok);
    t = fan_coalesce(&c, req, 1, 0, &len);
    assert_int_equal(len, err.n);
    assert_int_equal((uint8_t)t[1], 0x18); /* the client's opcode */
    assert_memory_equal(t + 2, err.p + 2, err.n - 2);
    free(t);

    req = fan_split(&c, &b, where, 3);
    fan_reply(&c, req, 0, &ok);
    fan_reply(&c, req, 1, NULL);
    fan_reply(&c, req, 2, &ok);
    assert_null(fan_coalesce(&c, req, 1, -EINVAL, &len));
    fan_deinit(&c);
    bpk_free(&b);
    bpk_free(&ok);
    bpk_free(&err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_statuses),
        cmocka_unit_test(test_get_hit),
        cmocka_unit_test(test_stat_sequence),
        cmocka_unit_test(test_terminated),
        cmocka_unit_test(test_out_of_step),
        cmocka_unit_test(test_stat_fanout),
        cmocka_unit_test(test_stat_all_failed),
        cmocka_unit_test(test_flush_fanout),
    };
    return cmocka_run_group_tests_name("memcache_bin_rsp", tests, NULL, NULL);
}
