/*
 * test_memcache_meta.c - unit tests of memcached's meta commands in memcache_proto (mg, ms, md,
 * ma, me, mn; src/proto/memcache_meta.c): every flag with and without q (a terminator appended,
 * the reply parsed up to its MN), base64 keys routed on their decoded bytes, ms framing exactly as
 * memcached frames it (its data forwarded unread, or the line answered by the proxy), token counts,
 * NUL bytes, line limits, mn answered by the proxy, and the replies alone and under a terminator.
 * Every stream runs through proto_drv whole, split in two at every byte and one byte at a time,
 * with 512-byte and 16 kB mbufs (the driver checks the parser contract and that each message is
 * the bytes fed, less its trim, plus its tail). The expected behaviours were measured on memcached
 * 1.6.18 (tests/integration/test_memcache_meta_diff.py checks them against it).
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
#include "proto/memcache.h"
#include "proto/proto.h"
#include "proto_drv.h"

#define TERM_OPTS (MC_RSP_META | MC_RSP_TERM)
#define BAD_FORMAT "bad command line format"

static void put_escaped(FILE *out, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] > ' ' && p[i] < 0x7f && p[i] != '\\') fputc(p[i], out);
        else fprintf(out, "\\x%02x", p[i]);
    }
}

/* Whether key k lies in m's own bytes (a decoded base64 key) rather than in what was read. */
static bool key_decoded(const struct msg *m, const struct msg_key *k)
{
    const struct mbuf *o = m->own;
    return o != NULL && k->ptr >= o->data && k->ptr < o->data + o->cap;
}

/* A key: its token's bytes, or for a decoded one the token decoded. */
static void check_key(const struct msg *m, const struct msg_key *k)
{
    char *tok = msg_range_text(m, k->start, k->end);
    if (key_decoded(m, k)) {
        uint8_t out[MC_KEY_MAX];
        assert_int_equal(mc_b64_decode((const uint8_t *)tok, k->end - k->start, out), k->len);
        assert_memory_equal(out, k->ptr, k->len);
    } else {
        assert_int_equal(k->end - k->start, k->len);
        assert_memory_equal(tok, k->ptr, k->len);
    }
    free(tok);
}

/* "mg k=foo(b64) q REJ=CE:<reason>", "ms k=k len=14": a quiet request has the terminator as its
 * tail and asks for a terminated reply; every forwarded meta command asks for a meta reply. */
static char *describe_req(const struct msg *m)
{
    char *s = NULL;
    size_t n = 0;
    FILE *out = open_memstream(&s, &n);
    assert_non_null(out);
    assert_true(m->cmd < MC_CMD_COUNT);
    fputs(m->cmd == MC_CMD_UNKNOWN ? "?" : mc_cmds[m->cmd].name, out);
    assert_int_equal(m->cmd_flags, mc_cmds[m->cmd].flags);
    assert_true(m->nkeys <= 1);
    for (uint32_t i = 0; i < m->nkeys; i++) {
        check_key(m, &m->keys[i]);
        fputs(" k=", out);
        put_escaped(out, m->keys[i].ptr, m->keys[i].len);
        if (key_decoded(m, &m->keys[i])) fputs("(b64)", out);
    }
    bool meta = mc_cmds[m->cmd].args[0] == 'M' && m->reject == REJECT_NONE;
    assert_int_equal(m->rsp_opts & MC_RSP_META, meta ? MC_RSP_META : 0);
    assert_int_equal(m->tail_len != 0, (m->rsp_opts & MC_RSP_TERM) != 0);
    if (m->tail_len != 0) {
        assert_memory_equal(m->tail, "mn\r\n", 4);
        fputs(" q", out);
    }
    assert_false(m->noreply);
    if (m->quit) fputs(" quit", out);
    if (m->reject == REJECT_ERROR) fputs(" REJ=ERROR", out);
    if (m->reject == REJECT_CLIENT_ERROR) fprintf(out, " REJ=CE:%s", m->reject_reason);
    if (m->cmd == MC_CMD_MS) fprintf(out, " len=%llu", (unsigned long long)m->len);
    assert_int_equal(memcache_proto.refused_bucket(m), m->cmd == MC_CMD_UNKNOWN ? 1 : -1);
    fclose(out);
    return s;
}

static const char *const type_names[] = {
    [RSP_MC_VA] = "VA", [RSP_MC_HD] = "HD", [RSP_MC_EN] = "EN", [RSP_MC_NF] = "NF",
    [RSP_MC_NS] = "NS", [RSP_MC_EX] = "EX", [RSP_MC_ME] = "ME", [RSP_MC_MN] = "MN",
    [RSP_MC_OK] = "OK", [RSP_MC_ERROR] = "ERROR", [RSP_MC_CLIENT_ERROR] = "CLIENT_ERROR",
    [RSP_MC_SERVER_ERROR] = "SERVER_ERROR",
};

/* "HD trim=4 len=4": the type, the terminator's bytes cut, what is left for the client. */
static char *describe_rsp(const struct msg *m)
{
    char *s = NULL;
    size_t n = 0;
    FILE *out = open_memstream(&s, &n);
    assert_non_null(out);
    assert_true(m->rsp_type < NC_ARRAY_LEN(type_names) && type_names[m->rsp_type] != NULL);
    assert_int_equal(m->nelems, 0);
    fputs(type_names[m->rsp_type], out);
    if (m->trim != 0) fprintf(out, " trim=%u", m->trim);
    fprintf(out, " len=%llu", (unsigned long long)m->len);
    fclose(out);
    return s;
}

static void check_req_n(const char *in, size_t n, const char *expect)
{
    drv_check_stream(&memcache_proto, false, false, 0, in, n, expect, describe_req);
}

static void check_req(const char *in, const char *expect)
{
    check_req_n(in, strlen(in), expect);
}

static void check_rsp(uint8_t opts, const char *in, const char *expect)
{
    drv_check_stream(&memcache_proto, true, false, opts, in, strlen(in), expect, describe_rsp);
}

struct meta_case {
    const char *in;
    const char *expect;
};

#define CHECK_REQS(cases) \
    for (size_t i_ = 0; i_ < NC_ARRAY_LEN(cases); i_++) check_req(cases[i_].in, cases[i_].expect)

/* A heap string: prefix, n copies of unit, suffix. */
static char *build(const char *prefix, const char *unit, int n, const char *suffix)
{
    char *s = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&s, &len);
    assert_non_null(out);
    fputs(prefix, out);
    for (int i = 0; i < n; i++) fputs(unit, out);
    fputs(suffix, out);
    fclose(out);
    return s;
}

/* ---- requests ---- */

/* Every flag of each command, as it came: only q changes what the proxy does. */
static void test_flags(void **state)
{
    (void)state;
    static const struct meta_case cases[] = {
        { "mg k v\r\n", "mg k=k\n" },
        { "mg Zm9v b c f h k l O123 q s t u v E5 N30 R30 T30\r\n", "mg k=foo(b64) q\n" },
        { "mg k s v t f c h l k O1 u E5 N30 R30 T30\r\n", "mg k=k\n" },
        { "mg k q\r\nmn\r\n", "mg k=k q\nmn\n" },
        { "mg k qq\r\n", "mg k=k q\n" },              /* a flag with an argument: still q */
        { "mg q v\r\n", "mg k=q\n" },                 /* the key is no flag */
        { "mg k Oq kq\r\n", "mg k=k\n" },             /* q as an argument is no flag */
        { "mg k v\nmg k q\n", "mg k=k\nmg k=k q\n" }, /* bare "\n" line ends */
        { "ms Zm9v 2 b c C5 F5 I k O1 q T30 MS\r\nhi\r\n", "ms k=foo(b64) q len=45\n" },
        { "ms k 2 c C5 F5 I k O1 T30 ME\r\nhi\r\n", "ms k=k len=34\n" },
        { "md Zm9v b C5 I k O1 q T30\r\n", "md k=foo(b64) q\n" },
        { "md k C5 I k O1 T30\r\n", "md k=k\n" },
        { "ma Zm9v b C5 N0 J5 D2 T30 MI q t c v\r\n", "ma k=foo(b64) q\n" },
        { "ma k C5 N0 J5 D2 T30 M+ t c v k O9\r\n", "ma k=k\n" },
        { "me k\r\n", "me k=k\n" },
        { "me k q\r\n", "me k=k\n" }, /* me has no q: memcached always answers it */
        { "mn\r\nmn x y\r\n", "mn\nmn\n" },
        /* keys that cannot be routed go to any server, which answers memcached's error */
        { "mg\r\nmd\r\nma\r\nme\r\n", "mg\nmd\nma\nme\n" },
        { "mx k\r\nMG k\r\n", "? REJ=ERROR\n? REJ=ERROR\n" },
        /* a q past the tokens memcached splits is no flag; one before it is */
        { "mg k v v v v v v v v v v v v v v v v v v v v q\r\n", "mg k=k q\n" },
        { "mg k v v v v v v v v v v v v v v v v v v v v v q\r\n", "mg k=k\n" },
    };
    CHECK_REQS(cases);
    char *in = build("mg k v q", "x", 300, "\r\nmg k ");
    char *more = build(in, "q", 400, " v\r\n");
    check_req(more, "mg k=k q\nmg k=k q\n"); /* a long flag counts by its first byte */
    free(in);
    free(more);
    in = build("mg k", " v", 28, " q\r\nmd k q T1\r\n"); /* 31 tokens: memcached refuses it */
    check_req(in, "mg k=k\nmd k=k q\n");
    free(in);
    in = build("mg ", "k", 251, " v q\r\nmd ");
    more = build(in, "k", 300, " q\r\n");
    check_req(more, "mg q\nmd q\n"); /* a key over 250 bytes: any server */
    free(in);
    free(more);
}

/* memcached's line is a C string: what follows a NUL byte is not in it. */
static void test_nul(void **state)
{
    (void)state;
    static const struct { const char *in; size_t n; const char *expect; } cases[] = {
        { "mg k\0x v q\r\n", 12, "mg k=k\n" },
        { "mg k v \0 q\r\n", 12, "mg k=k\n" },
        { "mg k v\0q q\r\n", 12, "mg k=k\n" },
        { "mg \0k q\r\n", 9, "mg\n" },
        { "ms k 5\0\r\nhello\r\n", 16, "ms k=k len=16\n" },
        { "ms k 5 T0 \0 q\r\nhello\r\n", 22, "ms k=k len=22\n" },
        { "ms k\0x 5\r\nhello\r\n", 17, "ms REJ=CE:" BAD_FORMAT " len=10\n? REJ=ERROR\n" },
        { "ms k \0" "5\r\nhello\r\n", 16, "ms REJ=CE:" BAD_FORMAT " len=9\n? REJ=ERROR\n" },
        { "ms \0k 5\r\nhello\r\n", 16, "ms REJ=ERROR len=9\n? REJ=ERROR\n" },
        { "me Zm9v b\0x\r\n", 13, "me k=foo(b64)\n" },
    };
    for (size_t i = 0; i < NC_ARRAY_LEN(cases); i++) check_req_n(cases[i].in, cases[i].n, cases[i].expect);
}

/* Base64 keys (b; me: token 2 exactly "b") are routed on what memcached decodes them to, and a
 * key it cannot decode on none (any server answers its error). */
static void test_base64_keys(void **state)
{
    (void)state;
    static const struct meta_case cases[] = {
        { "mg Zm9v b v\r\n", "mg k=foo(b64)\n" },
        { "mg Zm9vYg== b\r\n", "mg k=foob(b64)\n" },
        { "mg Zm9vYmE= b\r\n", "mg k=fooba(b64)\n" },
        { "mg Zm!9v b\r\n", "mg k=foo(b64)\n" },      /* bytes outside the alphabet skipped */
        { "mg Zm=v b\r\n", "mg k=f`(b64)\n" },        /* '=' inside a group: a 0 and a pad */
        { "mg Zm8=Zm9v b\r\n", "mg k=fo(b64)\n" },    /* the first group with a pad ends it */
        { "mg Zm9vYg b\r\n", "mg\n" },                /* unpadded: 6 digits */
        { "mg Zm9v==== b\r\n", "mg\n" },              /* a group of 4 pads */
        { "mg A=== b\r\n", "mg\n" },                  /* 3 pads */
        { "mg !!!! b\r\n", "mg\n" },                  /* nothing left */
        { "mg AAAA b\r\n", "mg k=\\x00\\x00\\x00(b64)\n" },
        { "ms Zm9v 3 b\r\nbar\r\n", "ms k=foo(b64) len=18\n" },
        { "md Zm9v q b\r\nma Zm9v b\r\n", "md k=foo(b64) q\nma k=foo(b64)\n" },
        { "me Zm9v b\r\nme Zm9v bb\r\nme Zm9v x b\r\nme foo b\r\n",
          "me k=foo(b64)\nme k=Zm9v\nme k=Zm9v\nme\n" },
    };
    CHECK_REQS(cases);
    char *in = build("mg ", "QUFB", 62, " b v\r\n"); /* 248 digits: 186 bytes, the most */
    char *expect = build("mg k=", "AAA", 62, "(b64)\n");
    check_req(in, expect);
    free(in);
    free(expect);
}

/* ms: when memcached reads the data (a key of at most 250 bytes, a datalen it accepts, fewer than
 * 20 tokens) exactly datalen + 2 bytes follow, whatever they are; otherwise the proxy answers
 * memcached's error and the data is the next request, as for memcached. */
static void test_ms_framing(void **state)
{
    (void)state;
    static const struct meta_case cases[] = {
        { "ms\r\nget a\r\n", "ms REJ=ERROR len=4\nget k=a\n" },
        { "ms k\r\nhi\r\n", "ms REJ=CE:" BAD_FORMAT " len=6\n? REJ=ERROR\n" },
        { "ms k abc\r\nhi\r\n", "ms REJ=CE:" BAD_FORMAT " len=10\n? REJ=ERROR\n" },
        { "ms k 0x5\r\nhello\r\n", "ms REJ=CE:" BAD_FORMAT " len=10\n? REJ=ERROR\n" },
        { "ms k -1\r\nhi\r\n", "ms REJ=CE:" BAD_FORMAT " len=9\n? REJ=ERROR\n" },
        { "ms k 2147483646\r\n", "ms REJ=CE:" BAD_FORMAT " len=17\n" },
        { "ms k 9223372036854775808\r\n", "ms REJ=CE:" BAD_FORMAT " len=26\n" },
        { "ms k +5\r\nhello\r\n", "ms k=k len=16\n" },
        { "ms k 5\tx\r\nhello\r\n", "ms k=k len=17\n" },
        { "ms k \t5\r\nhello\r\n", "ms k=k len=16\n" },
        { "ms k 5\r\r\nhello\r\n", "ms k=k len=16\n" },
        { "ms k 05\r\nhello\r\n", "ms k=k len=16\n" },
        { "ms k -0\r\n\r\n", "ms k=k len=11\n" },
        { "ms k 4294967301\r\nhello\r\n", "ms k=k len=24\n" },
        { "ms k -4294967291\r\nhello\r\n", "ms k=k len=25\n" },
        { "ms k -9223372036854775808\r\n\r\n", "ms k=k len=29\n" },
        { "ms k 2147483645\r\n", "PENDING\n" },
        /* the data is not checked: memcached reads datalen + 2 bytes and judges them */
        { "ms k 3\r\nabcde\r\nmn\r\n", "ms k=k len=13\n? REJ=ERROR\nmn\n" },
        { "ms k 3\r\nabc\r\rmn\r\n", "ms k=k len=13\nmn\n" },
        { "ms k 3 q\r\nab\r\r\nmg k\r\n", "ms k=k q len=19\nmg k=k\n" },
        /* errors after the datalen are memcached's: the data goes with the line */
        { "ms k 2 MX Q\r\nhi\r\n", "ms k=k len=17\n" },
    };
    CHECK_REQS(cases);
    char *tokens = build("ms k 5", " T1", 16, "\r\nhello\r\n"); /* 19 tokens */
    check_req(tokens, "ms k=k len=63\n");
    free(tokens);
    tokens = build("ms k 5", " T1", 17, "\r\nhello\r\n"); /* 20: memcached refuses the line */
    check_req(tokens, "ms REJ=CE:options flags too long len=59\n? REJ=ERROR\n");
    free(tokens);
    tokens = build("ms k abc", " T1", 17, "\r\n"); /* the count before the datalen */
    check_req(tokens, "ms REJ=CE:options flags too long len=61\n");
    free(tokens);
    tokens = build("ms ", "k", 251, " 5 T1 T1 T1 T1 T1 T1 T1 T1 T1 T1 T1 T1 T1 T1 T1 T1 T1 T1\r\n");
    check_req(tokens, "ms REJ=CE:" BAD_FORMAT " len=312\n"); /* the key before the count */
    free(tokens);
    tokens = build("ms k ", "\t", 300, "5\r\nhello\r\n"); /* a datalen past what is read */
    check_req(tokens, "ERROR " BAD_FORMAT "\n");
    free(tokens);
    tokens = build("ms ", "k", 300, " 5\r\nhi\r\n"); /* the key first: a line of its own */
    check_req(tokens, "ms REJ=CE:" BAD_FORMAT " len=307\n? REJ=ERROR\n");
    free(tokens);
}

/* A big ms data is forwarded in pieces, across mbufs. */
static void test_ms_big_data(void **state)
{
    (void)state;
    char *in = build("ms k 100000 T0 q\r\n", "d", 100000, "\r\nmg k v\r\n");
    size_t cuts[] = { 10, 18, 19, 600, 50000, 100018, 100019, 100020 };
    char *t = drv_transcript(&memcache_proto, false, false, 0, 512, in, strlen(in), cuts,
                             NC_ARRAY_LEN(cuts), describe_req);
    assert_string_equal(t, "ms k=k q len=100024\nmg k=k\n");
    free(t);
    free(in);
}

/* memcached drops a line over 2048 bytes before its "\n"; the proxy closes the client there. */
static void test_line_limit(void **state)
{
    (void)state;
    char *in = build("mg k ", "v", 2048 - 6, "\r\n"); /* 2048 bytes with the '\r' */
    check_req(in, "mg k=k\n");
    free(in);
    in = build("mg k ", "v", 2048 - 5, "\r\n");
    check_req(in, "ERROR line too long\n");
    free(in);
}

/* A quiet request and its terminator, parsed again from fresh, are the request then mn. */
static void test_tail_reparses(void **state)
{
    (void)state;
    static const char *const quiet[] = { "mg k v q\r\n", "ms k 2 q\r\nhi\r\n", "md Zm9v b q\n" };
    for (size_t i = 0; i < NC_ARRAY_LEN(quiet); i++) {
        struct tenv e;
        struct drv d;
        drv_open(&d, &e, 512, &memcache_proto, false, false);
        drv_feed(&d, quiet[i], strlen(quiet[i]), 0);
        assert_int_equal(d.nout, 1);
        char *bytes = msg_text(d.out[0]);
        char *first = describe_req(d.out[0]);
        assert_non_null(strstr(first, " q"));
        char *expect = build(first, "", 0, "\nmn\n");
        check_req(bytes, expect);
        free(expect);
        free(first);
        free(bytes);
        drv_close(&d);
    }
}

/* The proxy answers mn itself ("MN", written after every earlier reply); meta commands are
 * served, not refused: verbosity is the one refused name left. */
static void test_mn_local(void **state)
{
    (void)state;
    struct tenv e;
    struct drv d;
    drv_open(&d, &e, 512, &memcache_proto, false, false);
    drv_feed(&d, "mn\r\nmg k\r\n", 10, 0);
    assert_int_equal(d.nout, 2);
    struct proto_session s;
    memset(&s, 0, sizeof(s));
    memcache_proto.session_init(&s, NULL, NULL);
    for (int i = 0; i < 2; i++) {
        struct msg *rsp = msg_get(&e.pp);
        assert_int_equal(memcache_proto.local(&s, NULL, d.out[0], rsp), PROTO_ANSWERED);
        char *t = msg_text(rsp);
        assert_string_equal(t, "MN\r\n");
        free(t);
        msg_put(&e.pp, rsp); /* the second time its own chunk is reused */
    }
    struct msg *rsp = msg_get(&e.pp);
    assert_int_equal(memcache_proto.local(&s, NULL, d.out[1], rsp), PROTO_FORWARD);
    assert_int_equal(rsp->len, 0);
    msg_put(&e.pp, rsp);
    assert_int_equal(memcache_proto.nrefused, 1);
    assert_string_equal(memcache_proto.refused_names[0], "verbosity");
    drv_close(&d);
}

/* memcached's reading of a datalen (a C strtol, then the range), byte for byte. */
static void test_strtol32(void **state)
{
    (void)state;
    static const struct { const char *in; bool ok; uint32_t v; } cases[] = {
        { "5", true, 5 }, { "+5", true, 5 }, { "-0", true, 0 }, { "05", true, 5 },
        { "\t\v\f\r5", true, 5 }, { "5\tjunk", true, 5 }, { "5\r", true, 5 },
        { "2147483645", true, 2147483645u }, { "2147483646", false, 0 }, { "-1", false, 0 },
        { "4294967301", true, 5 }, { "-4294967291", true, 5 }, { "4294967296", true, 0 },
        { "9223372036854775807", false, 0 }, /* cut to 32 bits: -1 */
        { "9223372036854775808", false, 0 }, /* over a long */
        { "-9223372036854775808", true, 0 }, { "-9223372036854775809", false, 0 },
        { "99999999999999999999999", false, 0 }, { "", false, 0 }, { "+", false, 0 },
        { "\t", false, 0 }, { "x5", false, 0 }, { "5x", false, 0 }, { "0x5", false, 0 },
        { "5 ", true, 5 }, { "- 5", false, 0 }, { "+-5", false, 0 },
    };
    for (size_t i = 0; i < NC_ARRAY_LEN(cases); i++) {
        uint32_t v = 12345;
        bool ok = mc_parse_strtol32((const uint8_t *)cases[i].in, strlen(cases[i].in), &v);
        if (ok != cases[i].ok) print_error("'%s'\n", cases[i].in);
        assert_int_equal(ok, cases[i].ok);
        if (ok) assert_int_equal(v, cases[i].v);
        else assert_int_equal(v, 12345);
    }
}

/* ---- replies ---- */

static void test_replies(void **state)
{
    (void)state;
    static const struct meta_case cases[] = {
        { "VA 5 f0 c1\r\nhello\r\n", "VA len=19\n" },
        { "VA 0\r\n\r\n", "VA len=8\n" },
        { "VA 4\r\nMN\r\n\r\n", "VA len=12\n" },
        { "HD\r\nHD c5 O1 kfoo b\r\nEN\r\nNF\r\nNS\r\nEX\r\n",
          "HD len=4\nHD len=17\nEN len=4\nNF len=4\nNS len=4\nEX len=4\n" },
        { "ME k exp=-1 la=2 cas=17 fetch=yes cls=1 size=65\r\n", "ME len=49\n" },
        { "OK\r\nERROR\r\nCLIENT_ERROR bad command line format\r\nSERVER_ERROR out of memory\n",
          "OK len=4\nERROR len=7\nCLIENT_ERROR len=38\nSERVER_ERROR len=27\n" },
        { "HD\nEN\n", "HD len=3\nEN len=3\n" },
        /* the server connection is out of step: closed */
        { "MN\r\n", "ERROR MN without a quiet request\n" },
        { "XX\r\n", "ERROR unknown reply\n" },
        { "VALUE k 0 1\r\nx\r\nEND\r\n", "ERROR unknown reply\n" },
        { "VA\r\n", "ERROR bad VA line\n" },
        { "VA x\r\n", "ERROR bad VA length\n" },
        { "VA 5\r\nhelloXX", "ERROR bad data chunk\n" },
        { "\r\n", "ERROR empty reply line\n" },
    };
    for (size_t i = 0; i < NC_ARRAY_LEN(cases); i++) check_rsp(MC_RSP_META, cases[i].in, cases[i].expect);
    char *in = build("HD k", "x", 300, " O1\r\n"); /* flags are free text: a 250-byte key and more */
    check_rsp(MC_RSP_META, in, "HD len=309\n");
    free(in);
    in = build("VA 1 k", "x", 250, "\r\nv\r\n");
    check_rsp(MC_RSP_META, in, "VA len=261\n");
    free(in);
    in = build("HD ", "x", 2100, "\r\n");
    check_rsp(MC_RSP_META, in, "ERROR line too long\n");
    free(in);
}

/* Under a terminator: the reply (maybe none: memcached suppressed it) then MN, which is cut. */
static void test_replies_terminated(void **state)
{
    (void)state;
    static const struct meta_case cases[] = {
        { "MN\r\n", "MN trim=4 len=0\n" },
        { "MN\r\nMN\r\n", "MN trim=4 len=0\nMN trim=4 len=0\n" },
        { "HD\r\nMN\r\n", "HD trim=4 len=4\n" },
        { "NF O1 kk\r\nMN\r\n", "NF trim=4 len=10\n" },
        { "VA 4\r\nMN\r\n\r\nMN\r\n", "VA trim=4 len=12\n" },
        { "VA 2 t-1\r\nhi\r\nMN\r\nEN\r\nMN\r\n", "VA trim=4 len=14\nEN trim=4 len=4\n" },
        { "CLIENT_ERROR duplicate flag\r\nMN\r\n", "CLIENT_ERROR trim=4 len=29\n" },
        { "ERROR\r\nMN\n", "ERROR trim=3 len=7\n" },
        { "HD\r\nHD\r\n", "ERROR bad reply after quiet request\n" },
        { "HD\r\n\r\n", "ERROR bad reply after quiet request\n" },
        { "HD\r\nMN x\r\n", "ERROR bad MN line\n" },
        { "MN x\r\n", "ERROR bad MN line\n" },
        { "EN\r\nVALUE k 0 1\r\n", "ERROR bad reply after quiet request\n" },
    };
    for (size_t i = 0; i < NC_ARRAY_LEN(cases); i++) check_rsp(TERM_OPTS, cases[i].in, cases[i].expect);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flags),
        cmocka_unit_test(test_nul),
        cmocka_unit_test(test_base64_keys),
        cmocka_unit_test(test_ms_framing),
        cmocka_unit_test(test_ms_big_data),
        cmocka_unit_test(test_line_limit),
        cmocka_unit_test(test_tail_reparses),
        cmocka_unit_test(test_mn_local),
        cmocka_unit_test(test_strtol32),
        cmocka_unit_test(test_replies),
        cmocka_unit_test(test_replies_terminated),
    };
    return cmocka_run_group_tests_name("memcache_meta", tests, NULL, NULL);
}
