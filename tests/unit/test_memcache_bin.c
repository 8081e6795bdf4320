/*
 * test_memcache_bin.c - unit tests of memcached's binary protocol on the proxy's memcached port,
 * the client's side (src/proto/memcache_bin_req.c, memcache_bin_local.c): the choice of the
 * protocol on a connection's first byte, every opcode's shape accepted and refused (memcached's
 * rules as memcache_bin_req.c lists them), the refusals that close the connection and those that
 * keep it (the body passed over, the next request parsed), key and body limits, quiet requests'
 * NOOP tails, quit and quitq, CMD_F_LOCAL on a connection's first message, and what the proxy
 * answers itself (noop, quit, refusals, failed requests). Every stream runs through proto_drv
 * whole, split in two at every byte and one byte at a time, with 512-byte and 16 kB mbufs (the
 * driver checks the parser contract and that each message is the bytes fed, plus its tail).
 * The replies and stat/flush over every server are test_memcache_bin_rsp.c's.
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
#include <cmocka.h>

#include "common/util.h"
#include "msg/mbuf.h"
#include "msg/msg.h"
#include "proto/memcache_bin.h"
#include "proto/proto.h"
#include "bin_pkt.h"
#include "proto_drv.h"

static const uint8_t noop_req[24] = { 0x80, 0x0a };

/* Whether p lies in one of m's spans (bytes of the message). */
static bool in_msg(const struct msg *m, const uint8_t *p)
{
    for (uint32_t i = 0; i < m->nspans; i++) {
        const uint8_t *d = m->spans[i].mb->data + m->spans[i].off;
        if (p >= d && p < d + m->spans[i].len) return true;
    }
    return false;
}

/* A refusal's reply: one packet, the request's opcode and opaque, the reason as its body; its
 * status. */
static uint32_t check_reject_reply(const struct msg *m, const uint8_t *h)
{
    char buf[256];
    size_t n = memcache_proto.reject_reply(m, buf, sizeof(buf));
    const uint8_t *r = (const uint8_t *)buf;
    assert_non_null(m->reject_reason);
    assert_int_equal(n, 24 + strlen(m->reject_reason));
    assert_memory_equal(buf + 24, m->reject_reason, n - 24);
    assert_int_equal(r[0], 0x81);
    assert_int_equal(r[1], h[1]);
    assert_int_equal(bpk_u16(r + 2), 0);
    assert_int_equal(r[4], 0);
    assert_int_equal(bpk_u32(r + 8), n - 24);
    assert_memory_equal(r + 12, h + 12, 4);
    static const uint8_t zero[8] = { 0 };
    assert_memory_equal(r + 16, zero, 8);
    assert_int_equal(memcache_proto.reject_reply(m, buf, n - 1), 0); /* never cut */
    return bpk_u16(r + 6);
}

/* The key, if any: the header's key bytes, read in place. */
static void put_key(FILE *out, const struct msg *m, const uint8_t *h)
{
    if (m->nkeys == 0) return;
    const struct msg_key *k = &m->keys[0];
    assert_int_equal(m->nkeys, 1);
    assert_int_equal(k->len, bpk_u16(h + 2));
    assert_int_equal(k->start, 24 + h[4]);
    assert_int_equal(k->end, k->start + k->len);
    char *bytes = msg_range_text(m, k->start, k->end);
    assert_memory_equal(bytes, k->ptr, k->len);
    free(bytes);
    assert_true(in_msg(m, k->ptr));
    if (k->len <= 16) fprintf(out, " k=%.*s", (int)k->len, (const char *)k->ptr);
    else fprintf(out, " k=(%u bytes)", k->len);
}

/* "get k=a q L quit noreply REJ=0004 len=25": the name (static text, not the message's), the key,
 * a quiet request's NOOP tail, CMD_F_LOCAL, quit, noreply, a refusal's status, the length. A
 * text request: "TEXT <verb>". */
static char *describe_req(const struct msg *m)
{
    char *s = NULL;
    size_t n = 0;
    FILE *out = open_memstream(&s, &n);
    assert_non_null(out);
    if (m->cmd != MC_CMD_BINARY) {
        fprintf(out, "TEXT %s", m->cmd == MC_CMD_UNKNOWN ? "?" : mc_cmds[m->cmd].name);
        fclose(out);
        return s;
    }
    uint8_t h[24] = { 0 };
    msg_copy_out(m, 0, h, sizeof(h));
    if (m->name == NULL) { /* bad magic: closed without a reply */
        assert_int_equal(m->len, 1);
        assert_true(m->reject != REJECT_NONE && m->quit && m->noreply);
        fputs("?", out);
    } else {
        assert_false(in_msg(m, m->name));
        assert_int_equal(m->name_len, strlen((const char *)m->name));
        fputs((const char *)m->name, out);
    }
    put_key(out, m, h);
    assert_int_equal(m->tail_len != 0, (m->rsp_opts & MC_RSP_TERM) != 0);
    if (m->tail_len != 0) {
        assert_int_equal(m->tail_len, 24);
        assert_memory_equal(m->tail, noop_req, 24);
        fputs(" q", out);
    }
    if (m->reject == REJECT_NONE) assert_int_equal(m->rsp_opts & MC_RSP_BIN, MC_RSP_BIN);
    if (m->cmd_flags & CMD_F_LOCAL) fputs(" L", out);
    if (m->quit) fputs(" quit", out);
    if (m->noreply) fputs(" noreply", out);
    if (m->reject != REJECT_NONE && m->noreply) fputs(" REJ", out);
    else if (m->reject != REJECT_NONE) fprintf(out, " REJ=%04x", check_reject_reply(m, h));
    fprintf(out, " len=%llu", (unsigned long long)m->len);
    bool other = m->reject != REJECT_NONE && !m->quit && m->reject_reason == MC_BIN_TXT_UNKNOWN;
    assert_int_equal(memcache_proto.refused_bucket(m), other ? (int)memcache_proto.nrefused : -1);
    fclose(out);
    return s;
}

static void check_req(const struct bpk *b, const char *expect)
{
    drv_check_stream(&memcache_proto, false, false, 0, (const char *)b->p, b->n, expect, describe_req);
}

/* ---- every opcode's shape ---- */

enum shape { S_KEY, S_KEY_VALUE, S_BARE, S_FLUSH, S_STAT };

static const struct op_case {
    uint8_t op;
    const char *name;
    uint8_t shape, ext;
    bool quiet;
} ops[] = {
    { 0x00, "get", S_KEY, 0, false },        { 0x09, "getq", S_KEY, 0, true },
    { 0x0c, "getk", S_KEY, 0, false },       { 0x0d, "getkq", S_KEY, 0, true },
    { 0x01, "set", S_KEY_VALUE, 8, false },  { 0x11, "setq", S_KEY_VALUE, 8, true },
    { 0x02, "add", S_KEY_VALUE, 8, false },  { 0x12, "addq", S_KEY_VALUE, 8, true },
    { 0x03, "replace", S_KEY_VALUE, 8, false }, { 0x13, "replaceq", S_KEY_VALUE, 8, true },
    { 0x04, "delete", S_KEY, 0, false },     { 0x14, "deleteq", S_KEY, 0, true },
    { 0x05, "incr", S_KEY, 20, false },      { 0x15, "incrq", S_KEY, 20, true },
    { 0x06, "decr", S_KEY, 20, false },      { 0x16, "decrq", S_KEY, 20, true },
    { 0x0e, "append", S_KEY_VALUE, 0, false }, { 0x19, "appendq", S_KEY_VALUE, 0, true },
    { 0x0f, "prepend", S_KEY_VALUE, 0, false }, { 0x1a, "prependq", S_KEY_VALUE, 0, true },
    { 0x1c, "touch", S_KEY, 4, false },      { 0x1d, "gat", S_KEY, 4, false },
    { 0x1e, "gatq", S_KEY, 4, true },        { 0x23, "gatk", S_KEY, 4, false },
    { 0x24, "gatkq", S_KEY, 4, true },       { 0x0a, "noop", S_BARE, 0, false },
    { 0x07, "quit", S_BARE, 0, false },      { 0x17, "quitq", S_BARE, 0, false },
    { 0x0b, "version", S_BARE, 0, false },   { 0x08, "flush", S_FLUSH, 0, false },
    { 0x18, "flushq", S_FLUSH, 0, false },   { 0x10, "stat", S_STAT, 0, false },
};

/* A well-formed request of c with ext extras and vlen value bytes, then a version: both parsed,
 * the first with CMD_F_LOCAL (a connection's first message goes through local()). */
static void check_accepted(const struct op_case *c, uint8_t ext, uint32_t vlen)
{
    bool keyed = c->shape == S_KEY || c->shape == S_KEY_VALUE;
    struct bpk b = { 0 };
    bpk_req(&b, c->op, keyed ? "k" : "", ext, vlen, 7);
    bpk_req(&b, 0x0b, "", 0, 0, 8);
    const char *flags = c->op == 0x07 ? " L quit" : c->op == 0x17 ? " L quit noreply" : " L";
    char expect[128];
    snprintf(expect, sizeof(expect), "%s%s%s%s len=%u\nversion len=24\n", c->name, keyed ? " k=k" : "",
             c->quiet ? " q" : "", flags, 24 + ext + (keyed ? 1 : 0) + vlen + (c->quiet ? 24 : 0));
    check_req(&b, expect);
    bpk_free(&b);
}

/* A header of c's opcode with parts it may not have: "Invalid arguments", closed, its body
 * never read. */
static void check_refused(const struct op_case *c, uint16_t key, uint8_t ext, uint32_t value)
{
    struct bpk b = { 0 };
    bpk_hdr(&b, 0x80, c->op, key, ext, 0, key + ext + value, 9);
    char expect[128];
    snprintf(expect, sizeof(expect), "%s L quit REJ=0004 len=24\n", c->name);
    check_req(&b, expect);
    bpk_free(&b);
}

static void test_opcode_shapes(void **state)
{
    (void)state;
    for (size_t i = 0; i < NC_ARRAY_LEN(ops); i++) {
        const struct op_case *c = &ops[i];
        uint8_t other_ext = c->ext == 0 ? 4 : 0;
        switch (c->shape) {
        case S_KEY_VALUE:
            check_accepted(c, c->ext, 0);
            check_accepted(c, c->ext, 5);
            check_refused(c, 1, other_ext, 0);
            check_refused(c, 0, c->ext, 3); /* no key */
            break;
        case S_KEY:
            check_accepted(c, c->ext, 0);
            check_refused(c, 1, other_ext, 0);
            check_refused(c, 0, c->ext, 0);
            check_refused(c, 1, c->ext, 1); /* a value */
            break;
        case S_FLUSH:
            check_accepted(c, 0, 0);
            check_accepted(c, 4, 0); /* a delay */
            check_refused(c, 0, 8, 0);
            check_refused(c, 1, 0, 0);
            check_refused(c, 0, 0, 1);
            break;
        default: /* bare; stat: a key is refused otherwise, test_stat_with_key */
            check_accepted(c, 0, 0);
            check_refused(c, 0, 4, 0);
            check_refused(c, 0, 0, 1);
            if (c->shape == S_BARE) check_refused(c, 1, 0, 0);
        }
    }
}

/* ---- the protocol of a connection ---- */

/* The first byte picks the protocol for good: a connection that starts with anything but 0x80
 * is text (0x81 too: an unknown verb there); one that starts with 0x80 stays binary, and a later
 * request with another magic (text included) closes it without a reply. */
static void test_first_byte(void **state)
{
    (void)state;
    struct bpk b = { 0 };
    bpk_put(&b, "\x81get\r\nget a\r\n", 13);
    check_req(&b, "TEXT ?\nTEXT get\n");
    bpk_reset(&b);
    bpk_put(&b, "get a\r\n", 7);
    bpk_req(&b, 0x00, "a", 0, 0, 1);
    bpk_put(&b, "\r\n", 2);
    check_req(&b, "TEXT get\nTEXT ?\n"); /* 0x80 is a text byte on a text connection */
    bpk_reset(&b);
    bpk_req(&b, 0x0a, "", 0, 0, 1);
    bpk_put(&b, "g", 1);
    check_req(&b, "noop L len=24\n? quit noreply REJ len=1\n");
    bpk_reset(&b);
    bpk_req(&b, 0x00, "a", 0, 0, 1);
    bpk_put(&b, "\x81", 1); /* a reply's magic in a request */
    check_req(&b, "get k=a L len=25\n? quit noreply REJ len=1\n");
    bpk_reset(&b);
    bpk_put(&b, "\x80", 1);
    check_req(&b, "PENDING\n"); /* a header is read whole */
    bpk_free(&b);
}

/* Only the first message has CMD_F_LOCAL (noop always has it: the proxy answers it); the mode
 * stays binary, also after a refusal that keeps the connection. */
static void test_first_local_and_mode(void **state)
{
    (void)state;
    struct bpk b = { 0 };
    bpk_req(&b, 0x00, "a", 0, 0, 1);
    bpk_req(&b, 0x00, "b", 0, 0, 2);
    bpk_req(&b, 0x20, "", 0, 0, 3); /* SASL list mechanisms: not served */
    bpk_req(&b, 0x0a, "", 0, 0, 4);
    bpk_req(&b, 0x01, "c", 8, 2, 5);
    check_req(&b, "get k=a L len=25\nget k=b len=25\nunknown REJ=0081 len=24\nnoop L len=24\n"
                  "set k=c len=35\n");
    struct tenv e;
    struct drv d;
    drv_open(&d, &e, 512, &memcache_proto, false, false);
    drv_feed(&d, b.p, 1, 0);
    assert_int_equal(d.rd.ps.mode, MC_MODE_BIN_FIRST); /* its first message goes through local() */
    drv_feed(&d, b.p + 1, 24, 0);
    assert_int_equal(d.nout, 1);
    assert_int_equal(d.rd.ps.mode, MC_MODE_BINARY);
    drv_feed(&d, b.p + 25, 40, 0);
    assert_int_equal(d.rd.ps.mode, MC_MODE_BINARY);
    assert_int_equal(d.nout, 2);
    drv_close(&d);
    bpk_free(&b);
}

/* A body shorter than its key and extras: "Unknown command", closed. */
static void test_short_body(void **state)
{
    (void)state;
    struct bpk b = { 0 };
    bpk_hdr(&b, 0x80, 0x00, 3, 0, 0, 2, 1);
    check_req(&b, "get L quit REJ=0081 len=24\n");
    bpk_reset(&b);
    bpk_req(&b, 0x0a, "", 0, 0, 1);
    bpk_hdr(&b, 0x80, 0x01, 1, 8, 0, 8, 2);
    check_req(&b, "noop L len=24\nset quit REJ=0081 len=24\n");
    bpk_free(&b);
}

/* memcached's longest key is 250 bytes; 251 is "Invalid arguments", closed (stat's too). */
static void test_key_limit(void **state)
{
    (void)state;
    char key[252];
    memset(key, 'k', 251);
    key[251] = '\0';
    struct bpk b = { 0 };
    bpk_req(&b, 0x00, key + 1, 0, 0, 1);
    bpk_req(&b, 0x11, key + 1, 8, 3, 2);
    check_req(&b, "get k=(250 bytes) L len=274\nsetq k=(250 bytes) q len=309\n");
    bpk_reset(&b);
    bpk_hdr(&b, 0x80, 0x00, 251, 0, 0, 251, 1);
    check_req(&b, "get L quit REJ=0004 len=24\n");
    bpk_reset(&b);
    bpk_hdr(&b, 0x80, 0x10, 251, 0, 0, 251, 1);
    check_req(&b, "stat L quit REJ=0004 len=24\n");
    bpk_free(&b);
}

/* A body over the proxy's limit (1 GiB less 4 KiB): "Too large.", closed; at the limit it is
 * read (the rest of it still to come). */
static void test_body_limit(void **state)
{
    (void)state;
    const uint32_t max = (1u << 30) - 4096;
    struct bpk b = { 0 };
    bpk_hdr(&b, 0x80, 0x01, 1, 8, 0, max + 1, 1);
    check_req(&b, "set L quit REJ=0003 len=24\n");
    bpk_reset(&b);
    bpk_hdr(&b, 0x80, 0x01, 1, 8, 0, max, 1);
    bpk_fill(&b, 'e', 8);
    bpk_put(&b, "k", 1);
    bpk_fill(&b, 'v', 100);
    check_req(&b, "PENDING\n");
    bpk_free(&b);
}

/* An opcode the proxy does not serve (SASL, verbosity, anything unknown): "Unknown command", its
 * body passed over whatever it holds, the connection kept and the next request parsed. */
static void test_unknown_opcode(void **state)
{
    (void)state;
    struct bpk b = { 0 };
    bpk_req(&b, 0x21, "PLAIN", 0, 12, 1); /* SASL auth */
    bpk_req(&b, 0x1b, "", 4, 0, 2);       /* verbosity */
    bpk_req(&b, 0xff, "key", 7, 1000, 3); /* over mbufs */
    bpk_req(&b, 0x00, "next", 0, 0, 4);
    check_req(&b, "unknown L REJ=0081 len=41\nunknown REJ=0081 len=28\nunknown REJ=0081 len=1034\n"
                  "get k=next len=28\n");
    bpk_free(&b);
}

/* stat with a key (a group of per-server statistics that do not add up): refused, kept. */
static void test_stat_with_key(void **state)
{
    (void)state;
    struct bpk b = { 0 };
    bpk_req(&b, 0x10, "items", 0, 0, 1);
    bpk_req(&b, 0x10, "", 0, 0, 2);
    check_req(&b, "stat L REJ=0083 len=29\nstat len=24\n");
    bpk_free(&b);
}

/* A quiet request carries the NOOP the proxy appends (its reply ends the quiet one's); the bytes
 * with it, parsed again on a fresh connection, are the request then that NOOP. */
static void test_quiet_tail(void **state)
{
    (void)state;
    struct bpk b = { 0 };
    bpk_req(&b, 0x0d, "key", 0, 0, 0x01020304);
    struct tenv e;
    struct drv d;
    drv_open(&d, &e, 512, &memcache_proto, false, false);
    drv_feed(&d, b.p, b.n, 0);
    assert_int_equal(d.nout, 1);
    struct msg *m = d.out[0];
    assert_int_equal(m->rsp_opts, MC_RSP_BIN | MC_RSP_TERM);
    assert_int_equal(m->len, b.n + 24); /* the reader appended the tail (msg_finish) */
    char *bytes = msg_text(m);
    struct bpk again = { 0 };
    bpk_put(&again, bytes, m->len);
    assert_memory_equal(again.p + b.n, noop_req, 24);
    check_req(&again, "getkq k=key q L len=51\nnoop L len=24\n");
    free(bytes);
    bpk_free(&again);
    drv_close(&d);
    bpk_free(&b);
}

/* A long pipeline of every kind, in random pieces with 512-byte mbufs (and 549 ones, for crashes
 * and leaks): the same messages whatever the split. */
static void test_pipeline_splits(void **state)
{
    (void)state;
    struct bpk b = { 0 };
    for (int round = 0; round < 20; round++) {
        for (size_t i = 0; i < NC_ARRAY_LEN(ops); i++) {
            const struct op_case *c = &ops[i];
            if (c->op == 0x07 || c->op == 0x17) continue;
            bool keyed = c->shape == S_KEY || c->shape == S_KEY_VALUE;
            bpk_req(&b, c->op, keyed ? "somekey" : "", c->ext, c->shape == S_KEY_VALUE ? 37u * (uint32_t)i : 0, (uint32_t)i);
        }
        bpk_req(&b, 0x21, "PLAIN", 0, 300, 1);
    }
    uint64_t seed = 42;
    drv_fuzz_splits(&memcache_proto, false, false, (const char *)b.p, b.n, 512, 549, 20, 300, &seed, describe_req);
    bpk_free(&b);
}

/* ---- what the proxy answers itself ---- */

/* local() of the one request in b: its verdict, and the reply's bytes in out (*n). */
static int local_of(const struct bpk *b, struct proto_session *s, uint8_t *out, size_t *n)
{
    struct tenv e;
    struct drv d;
    drv_open(&d, &e, 4096, &memcache_proto, false, false);
    drv_feed(&d, b->p, b->n, 0);
    assert_int_equal(d.nout, 1);
    struct msg *rsp = msg_get(&e.pp);
    int rc = memcache_proto.local(s, NULL, d.out[0], rsp);
    *n = msg_copy_out(rsp, 0, out, 256);
    assert_int_equal(*n, rsp->len);
    msg_put(&e.pp, rsp);
    drv_close(&d);
    return rc;
}

/* noop: an empty success with its opcode and opaque; quit: the same, then closed; quitq: closed
 * without a reply; anything served is forwarded. The session becomes binary on the first. */
static void test_local_answers(void **state)
{
    (void)state;
    struct proto_session s;
    memset(&s, 0, sizeof(s));
    memcache_proto.session_init(&s, NULL, NULL);
    assert_int_equal(s.variant, 0);
    uint8_t out[256], want[24];
    size_t n;
    struct bpk b = { 0 };
    bpk_req(&b, 0x0a, "", 0, 0, 0xcafef00d);
    assert_int_equal(local_of(&b, &s, out, &n), PROTO_ANSWERED);
    assert_int_equal(s.variant, MC_VARIANT_BINARY);
    mc_bin_hdr(want, 0x0a, 0, 0, 0, 0, b.p + 12);
    assert_int_equal(n, 24);
    assert_memory_equal(out, want, 24);
    assert_memory_equal(out + 12, "\xca\xfe\xf0\x0d", 4);
    bpk_reset(&b);
    bpk_req(&b, 0x07, "", 0, 0, 77);
    assert_int_equal(local_of(&b, &s, out, &n), PROTO_ANSWERED_CLOSE);
    mc_bin_hdr(want, 0x07, 0, 0, 0, 0, b.p + 12);
    assert_int_equal(n, 24);
    assert_memory_equal(out, want, 24);
    bpk_reset(&b);
    bpk_req(&b, 0x17, "", 0, 0, 78);
    assert_int_equal(local_of(&b, &s, out, &n), PROTO_ANSWERED_CLOSE);
    assert_int_equal(n, 0);
    bpk_reset(&b);
    bpk_req(&b, 0x00, "k", 0, 0, 79);
    memset(&s, 0, sizeof(s));
    assert_int_equal(local_of(&b, &s, out, &n), PROTO_FORWARD);
    assert_int_equal(n, 0);
    assert_int_equal(s.variant, MC_VARIANT_BINARY);
    bpk_free(&b);
}

/* Refusals through local(): the status of the reason, the request's opcode and opaque, the reason
 * as text; closed or kept as the parser said; a bad magic closes without a reply. */
static void test_local_refusals(void **state)
{
    (void)state;
    static const struct {
        uint8_t op;
        uint16_t key;
        uint8_t ext;
        uint32_t body;
        uint16_t status;
        const char *text;
        int rc;
    } cases[] = {
        { 0x21, 0, 0, 0, 0x0081, "Unknown command", PROTO_ANSWERED },
        { 0x00, 3, 0, 1, 0x0081, "Unknown command", PROTO_ANSWERED_CLOSE },
        { 0x00, 1, 4, 5, 0x0004, "Invalid arguments", PROTO_ANSWERED_CLOSE },
        { 0x01, 1, 8, (1u << 30), 0x0003, "Too large.", PROTO_ANSWERED_CLOSE },
        { 0x10, 1, 0, 1, 0x0083, "stats with arguments is not supported by the proxy (only stats)", PROTO_ANSWERED },
    };
    for (size_t i = 0; i < NC_ARRAY_LEN(cases); i++) {
        struct proto_session s;
        memset(&s, 0, sizeof(s));
        struct bpk b = { 0 };
        bpk_hdr(&b, 0x80, cases[i].op, cases[i].key, cases[i].ext, 0, cases[i].body, 0x11223344);
        if (cases[i].rc == PROTO_ANSWERED) bpk_fill(&b, 'x', cases[i].body);
        uint8_t out[256], want[24];
        size_t n, tlen = strlen(cases[i].text);
        assert_int_equal(local_of(&b, &s, out, &n), cases[i].rc);
        assert_int_equal(s.variant, MC_VARIANT_BINARY);
        mc_bin_hdr(want, cases[i].op, cases[i].status, 0, 0, (uint32_t)tlen, b.p + 12);
        assert_int_equal(n, 24 + tlen);
        assert_memory_equal(out, want, 24);
        assert_memory_equal(out + 24, cases[i].text, tlen);
        bpk_free(&b);
    }
    struct bpk b = { 0 };
    bpk_req(&b, 0x0a, "", 0, 0, 1);
    bpk_put(&b, "\x81", 1);
    struct tenv e;
    struct drv d;
    drv_open(&d, &e, 512, &memcache_proto, false, false);
    drv_feed(&d, b.p, b.n, 0);
    assert_int_equal(d.nout, 2);
    struct proto_session s;
    memset(&s, 0, sizeof(s));
    struct msg *rsp = msg_get(&e.pp);
    assert_int_equal(memcache_proto.local(&s, NULL, d.out[1], rsp), PROTO_ANSWERED_CLOSE);
    assert_int_equal(rsp->len, 0);
    msg_put(&e.pp, rsp);
    drv_close(&d);
    bpk_free(&b);
}

/* A request that failed: temporary failure (0x0086) with strerror's text, out of memory 0x0082;
 * the request's opcode and opaque, never cut. A text request still gets SERVER_ERROR. */
static void test_error_reply(void **state)
{
    (void)state;
    struct bpk b = { 0 };
    bpk_req(&b, 0x0d, "k", 0, 0, 0xa1b2c3d4);
    struct tenv e;
    struct drv d;
    drv_open(&d, &e, 512, &memcache_proto, false, false);
    drv_feed(&d, b.p, b.n, 0);
    assert_int_equal(d.nout, 1);
    static const struct { int err; uint16_t status; const char *text; } cases[] = {
        { ETIMEDOUT, 0x0086, "Connection timed out" },
        { ECONNREFUSED, 0x0086, "Connection refused" },
        { ENOMEM, 0x0082, "Out of memory" },
    };
    for (size_t i = 0; i < NC_ARRAY_LEN(cases); i++) {
        char buf[256];
        uint8_t want[24];
        size_t tlen = strlen(cases[i].text);
        size_t n = memcache_proto.error_reply(d.out[0], cases[i].err, buf, sizeof(buf));
        mc_bin_hdr(want, 0x0d, cases[i].status, 0, 0, (uint32_t)tlen, b.p + 12);
        assert_int_equal(n, 24 + tlen);
        assert_memory_equal(buf, want, 24);
        assert_memory_equal(buf + 24, cases[i].text, tlen);
        assert_int_equal(memcache_proto.error_reply(d.out[0], cases[i].err, buf, n - 1), 0);
    }
    char buf[128];
    size_t n = memcache_proto.error_reply(NULL, ETIMEDOUT, buf, sizeof(buf));
    assert_memory_equal(buf, "SERVER_ERROR Connection timed out\r\n", n);
    drv_close(&d);
    bpk_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_opcode_shapes),
        cmocka_unit_test(test_first_byte),
        cmocka_unit_test(test_first_local_and_mode),
        cmocka_unit_test(test_short_body),
        cmocka_unit_test(test_key_limit),
        cmocka_unit_test(test_body_limit),
        cmocka_unit_test(test_unknown_opcode),
        cmocka_unit_test(test_stat_with_key),
        cmocka_unit_test(test_quiet_tail),
        cmocka_unit_test(test_pipeline_splits),
        cmocka_unit_test(test_local_answers),
        cmocka_unit_test(test_local_refusals),
        cmocka_unit_test(test_error_reply),
    };
    return cmocka_run_group_tests_name("memcache_bin", tests, NULL, NULL);
}
