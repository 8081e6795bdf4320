/*
 * test_redis_oom.c - redis_proto under allocation failures: malloc, calloc and realloc are
 * wrapped (-Wl,--wrap: oom_alloc.h) to fail at the k-th call, for every k, both alone and with
 * every later call, through fragment (MGET, MSET, DEL, EXISTS split over 2 to 4 servers, RESP and
 * inline; an MGET over 66 servers, past the stack arrays; KEYS, DBSIZE, RANDOMKEY, FLUSHDB,
 * SCRIPT, PUBSUB and SCAN sent to every server; INFO and HELLO, answered from every server's
 * INFO), coalesce (after fake fragment replies) and parse_req / parse_rsp (keys, top-level
 * elements, the nesting stack; failing from the k-th call on). Each either fails with
 * -ENOMEM (the parsers: PARSE_ERROR "out of memory") leaving nothing allocated (mbuf and msg pools
 * back to their counts; ASan checks the rest), or succeeds whole: the same fragments, key map and
 * reply as with no failure, never 0 with a half-built request (no fragments, no key map) nor a
 * reply built from part of the servers' answers (INFO's sums).
 *
 * Threads: the test's only.
 */
#include "config.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/textbuf.h"
#include "conf/conf.h"
#include "proto/proto.h"
#include "proto/redis.h"
#include "oom_alloc.h"
#include "proto_drv.h"

#define CHUNK 16384
#define MAX_WHERE 72
#define BIG_KEYS 70    /* the big MGET: more keys than the stack slots of fragment() hold ... */
#define BIG_SERVERS 66 /* ... over more servers than its stack arrays (64 fragments) */

struct oom_case {
    const char *line;                  /* the request's words (sent as RESP unless inl) */
    bool inl;                          /* sent as an inline line */
    uint32_t n;                        /* entries of where */
    uint32_t where[MAX_WHERE];         /* each key's server, or the servers (sent to every one) */
    uint32_t nfrags;                   /* the fragments it makes */
    const char *replies[MAX_WHERE];    /* each fragment's reply */
    const char *want;                  /* the coalesced reply */
};

#define INFO_A "# Keyspace\r\ndb0:keys=3,expires=0,avg_ttl=0\r\ndb5:keys=1,expires=1,avg_ttl=100\r\n"
#define INFO_B "# Keyspace\r\ndb0:keys=4,expires=2,avg_ttl=50\r\n"
#define INFO_SUM "# Keyspace\r\ndb0:keys=7,expires=2,avg_ttl=50\r\ndb5:keys=1,expires=1,avg_ttl=100\r\n"

static const struct oom_case cases[] = {
    { "MGET a b c d e f g h i", false, 9, { 0, 1, 2, 0, 1, 2, 2, 1, 0 }, 3,
      { "*3\r\n$1\r\nA\r\n$1\r\nD\r\n$1\r\nI\r\n", "*3\r\n$1\r\nB\r\n$-1\r\n$1\r\nH\r\n",
        "*3\r\n$1\r\nC\r\n$1\r\nF\r\n$1\r\nG\r\n" },
      "*9\r\n$1\r\nA\r\n$1\r\nB\r\n$1\r\nC\r\n$1\r\nD\r\n$-1\r\n$1\r\nF\r\n$1\r\nG\r\n$1\r\nH\r\n$1\r\nI\r\n" },
    { "MGET k1 k2 k3", true, 3, { 1, 0, 1 }, 2, { "*2\r\n$2\r\nv1\r\n$2\r\nv3\r\n", "*1\r\n$2\r\nv2\r\n" },
      "*3\r\n$2\r\nv1\r\n$2\r\nv2\r\n$2\r\nv3\r\n" },
    { "MSET a 1 b 2 c 3", false, 3, { 0, 1, 0 }, 2, { "+OK\r\n", "+OK\r\n" }, "+OK\r\n" },
    { "MSET a 1 b 2 c 3", true, 3, { 2, 1, 0 }, 3, { "+OK\r\n", "+OK\r\n", "+OK\r\n" }, "+OK\r\n" },
    { "DEL a b c d e", false, 5, { 3, 1, 0, 2, 3 }, 4, { ":1\r\n", ":0\r\n", ":1\r\n", ":1\r\n" }, ":3\r\n" },
    { "EXISTS a b", false, 2, { 0, 1 }, 2, { ":1\r\n", "-ERR boom\r\n" }, "-ERR boom\r\n" },
    { "KEYS *", false, 3, { 2, 0, 1 }, 3, { "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "*0\r\n", "*1\r\n$1\r\nc\r\n" },
      "*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n" },
    { "DBSIZE", false, 2, { 0, 1 }, 2, { ":3\r\n", ":4\r\n" }, ":7\r\n" },
    { "INFO keyspace", false, 2, { 1, 0 }, 2, { "$78\r\n" INFO_A "\r\n", "$45\r\n" INFO_B "\r\n" },
      "$79\r\n" INFO_SUM "\r\n" },
    { "HELLO", false, 2, { 0, 1 }, 2,
      { "$31\r\n# Server\r\nredis_version:7.2.4\r\n\r\n", "$32\r\n# Server\r\nredis_version:6.2.14\r\n\r\n" },
      "*14\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n6.2.14\r\n$5\r\nproto\r\n:2\r\n"
      "$2\r\nid\r\n:7\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n" },
    { "SCRIPT EXISTS a b", false, 2, { 0, 1 }, 2, { "*2\r\n:1\r\n:0\r\n", "*2\r\n:1\r\n:1\r\n" },
      "*2\r\n:1\r\n:0\r\n" },
    { "PUBSUB NUMSUB a b", false, 2, { 0, 1 }, 2,
      { "*4\r\n$1\r\na\r\n:1\r\n$1\r\nb\r\n:0\r\n", "*4\r\n$1\r\na\r\n:2\r\n$1\r\nb\r\n:5\r\n" },
      "*4\r\n$1\r\na\r\n:3\r\n$1\r\nb\r\n:5\r\n" },
    { "RANDOMKEY", false, 3, { 0, 1, 2 }, 3, { "$-1\r\n", "$1\r\nx\r\n", "$1\r\ny\r\n" }, "$1\r\ny\r\n" },
    { "PUBSUB NUMPAT", false, 2, { 0, 1 }, 2, { ":2\r\n", ":5\r\n" }, ":5\r\n" },
    { "FLUSHDB", false, 2, { 1, 0 }, 2, { "+OK\r\n", "+OK\r\n" }, "+OK\r\n" },
    { "SCAN 0 COUNT 5", false, 3, { 0, 1, 2 }, 1, { "*2\r\n$2\r\n17\r\n*1\r\n$1\r\nk\r\n" },
      "*2\r\n$2\r\n17\r\n*1\r\n$1\r\nk\r\n" },
};

/* The big MGET: key i ("k<i>", its value the same) on server i % BIG_SERVERS. */
struct big_case {
    struct oom_case tc;
    char line[1024];
    char replies[BIG_SERVERS][64];
    char want[2048];
};

static void big_case_init(struct big_case *b)
{
    memset(b, 0, sizeof(*b));
    size_t n = (size_t)snprintf(b->line, sizeof(b->line), "MGET");
    int w = snprintf(b->want, sizeof(b->want), "*%d\r\n", BIG_KEYS);
    for (uint32_t i = 0; i < BIG_KEYS; i++) {
        char key[8];
        int kl = snprintf(key, sizeof(key), "k%" PRIu32, i);
        n += (size_t)snprintf(b->line + n, sizeof(b->line) - n, " %s", key);
        w += snprintf(b->want + w, sizeof(b->want) - (size_t)w, "$%d\r\n%s\r\n", kl, key);
        b->tc.where[i] = i % BIG_SERVERS;
    }
    for (uint32_t f = 0; f < BIG_SERVERS; f++) {
        uint32_t second = f + BIG_SERVERS;
        if (second < BIG_KEYS)
            snprintf(b->replies[f], sizeof(b->replies[f]), "*2\r\n$%d\r\nk%" PRIu32 "\r\n$%d\r\nk%" PRIu32 "\r\n",
                     f < 10 ? 2 : 3, f, second < 100 ? 3 : 4, second);
        else
            snprintf(b->replies[f], sizeof(b->replies[f]), "*1\r\n$%d\r\nk%" PRIu32 "\r\n", f < 10 ? 2 : 3, f);
        b->tc.replies[f] = b->replies[f];
    }
    assert_true(n < sizeof(b->line) && (size_t)w < sizeof(b->want));
    b->tc.line = b->line;
    b->tc.n = BIG_KEYS;
    b->tc.nfrags = BIG_SERVERS;
    b->tc.want = b->want;
}

/* tc's request, parsed with no failure. */
static struct msg *case_parse(struct oom_pools *c, const struct oom_case *tc)
{
    char in[4096];
    size_t n;
    if (tc->inl) {
        n = (size_t)snprintf(in, sizeof(in), "%s\r\n", tc->line);
    } else {
        char words[2048];
        const char *argv[128];
        int argc = split_words(tc->line, words, sizeof(words), argv, 128);
        n = resp_build(in, sizeof(in), argc, argv);
    }
    assert_true(n < sizeof(in));
    struct msg *req = oom_parse(c, &redis_proto, in, n, false);
    assert_int_equal(req->reject, REJECT_NONE);
    return req;
}

/* What fragment() built for req, as text: each fragment (its server, keys, nargs and bytes),
 * then the key map. */
static char *frags_text(const struct msg *req)
{
    struct textbuf t = { 0 };
    textbuf_addf(&t, "%" PRIu32 " fragments\n", req->nfrags);
    for (uint32_t f = 0; f < req->nfrags; f++) {
        const struct msg *fr = req->frags[f];
        assert_non_null(fr);
        assert_ptr_equal(fr->frag_owner, req);
        char *bytes = msg_text(fr);
        textbuf_addf(&t, "server %" PRIu32 ", %" PRIu32 " keys, nargs %" PRIu64 ": %s\n", fr->server_idx,
                     fr->nkeys, fr->nargs, bytes);
        free(bytes);
    }
    if (req->key_frag == NULL) textbuf_adds(&t, "no key map");
    for (uint32_t i = 0; req->key_frag != NULL && i < req->nkeys; i++) textbuf_addf(&t, " %" PRIu32, req->key_frag[i]);
    textbuf_addc(&t, '\0');
    assert_false(textbuf_failed(&t));
    return t.data;
}

/* Puts req, its fragments and their replies (the core's job); checks that nothing is left. */
static void case_put(struct oom_pools *c, struct msg *req)
{
    for (uint32_t f = 0; f < req->nfrags; f++) {
        if (req->frags[f]->peer != NULL) msg_put(&c->pp, req->frags[f]->peer);
        msg_put(&c->pp, req->frags[f]);
    }
    msg_put(&c->pp, req);
    assert_int_equal(c->pp.nlive, 0);
    assert_int_equal(c->mp.nlive, 0);
}

/* Allocation k fails, and every later one too unless once. */
static void fail_at(long k, bool once)
{
    if (once) oom_fail_once(k);
    else oom_fail_after(k);
}

/* fragment() of tc's request with allocations failing at k (fail_at): -ENOMEM with nothing
 * built, or 0 with the whole split (want: what it builds with no failure). Returns whether an
 * allocation failed (false: k is past them, and fragment() must have succeeded). */
static bool fragment_at(struct oom_pools *c, const struct oom_case *tc, const char *want, long k, bool once)
{
    struct msg *req = case_parse(c, tc);
    fail_at(k, once);
    int rc = redis_proto.fragment(req, tc->where, tc->n, &c->pp);
    oom_stop();
    bool failed = oom_failed();
    if (rc == 0) {
        /* whole: never 0 with no fragments, nor a key split without its key map */
        if (req->nfrags != tc->nfrags)
            print_error("%s: 0 with %" PRIu32 " fragments at k=%ld%s\n", tc->line, req->nfrags, k, once ? " once" : "");
        assert_int_equal(req->nfrags, tc->nfrags);
        if (!(req->cmd_flags & CMD_F_FRAG_ALL)) assert_non_null(req->key_frag);
        char *got = frags_text(req);
        assert_string_equal(got, want);
        free(got);
    } else {
        assert_true(failed);
        assert_int_equal(rc, -ENOMEM);
        assert_null(req->frags);
        assert_null(req->key_frag);
        assert_int_equal(req->nfrags, 0);
        assert_int_equal(c->pp.nlive, 1);
    }
    case_put(c, req);
    return failed;
}

static void fragment_case(const struct oom_case *tc)
{
    struct oom_pools c;
    oom_pools_init(&c, CHUNK);
    struct msg *req = case_parse(&c, tc);
    assert_int_equal(redis_proto.fragment(req, tc->where, tc->n, &c.pp), 0);
    assert_int_equal(req->nfrags, tc->nfrags);
    char *want = frags_text(req);
    case_put(&c, req);
    for (int once = 0; once < 2; once++) {
        long k = 0;
        while (fragment_at(&c, tc, want, k, once != 0)) k++;
        assert_true(k > (long)tc->nfrags); /* each fragment allocates */
    }
    free(want);
    oom_pools_deinit(&c);
}

/* Runs check on every case, the big MGET last. */
static void each_case(void (*check)(const struct oom_case *tc))
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) check(&cases[i]);
    struct big_case *big = malloc(sizeof(*big));
    assert_non_null(big);
    big_case_init(big);
    check(&big->tc);
    free(big);
}

static void test_fragment_oom(void **state)
{
    (void)state;
    each_case(fragment_case);
}

/* Fragments tc's request and gives each fragment its reply (no failure), then coalesces with
 * allocations failing at k (fail_at; k < 0: none). Returns coalesce's rc; *text: the reply;
 * *failed: whether an allocation failed. */
static int coalesce_run(const struct oom_case *tc, long k, bool once, char **text, bool *failed)
{
    struct oom_pools c;
    oom_pools_init(&c, CHUNK);
    struct msg *req = case_parse(&c, tc);
    assert_int_equal(redis_proto.fragment(req, tc->where, tc->n, &c.pp), 0);
    assert_int_equal(req->nfrags, tc->nfrags);
    for (uint32_t f = 0; f < req->nfrags; f++)
        req->frags[f]->peer = oom_parse(&c, &redis_proto, tc->replies[f], strlen(tc->replies[f]), true);
    struct proto_session s;
    memset(&s, 0, sizeof(s));
    s.id = 7;
    struct conf_pool cp;
    memset(&cp, 0, sizeof(cp));
    cp.redis = true;
    cp.nservers = tc->n;
    cp.listen.port = 22121;
    struct proto_view v = { .sess = &s, .cp = &cp, .pool_clients = 1 };
    struct msg *rsp = msg_get(&c.pp);
    assert_non_null(rsp);
    fail_at(k, once);
    int rc = redis_proto.coalesce(&v, req, rsp);
    oom_stop();
    *failed = oom_failed();
    *text = msg_text(rsp);
    msg_put(&c.pp, rsp);
    case_put(&c, req);
    oom_pools_deinit(&c);
    return rc;
}

/* Coalesces tc's fragments with allocation k failing, for every k, in both ways (fail_at): each
 * gives -ENOMEM, or 0 with the whole reply. */
static void coalesce_case(const struct oom_case *tc)
{
    char *got;
    bool failed = true;
    assert_int_equal(coalesce_run(tc, -1, false, &got, &failed), 0);
    assert_string_equal(got, tc->want);
    free(got);
    for (int once = 0; once < 2; once++) {
        long k;
        for (k = 0, failed = true; failed; k++) {
            int rc = coalesce_run(tc, k, once != 0, &got, &failed);
            if (rc != 0 && rc != -ENOMEM) print_error("%s: %d at k=%ld%s\n", tc->line, rc, k, once ? " once" : "");
            if (rc == 0 && strcmp(got, tc->want) != 0)
                print_error("%s: 0 at k=%ld%s with '%s'\n", tc->line, k, once ? " once" : "", got);
            if (rc == 0) assert_string_equal(got, tc->want);
            else assert_int_equal(rc, -ENOMEM);
            assert_true(failed || rc == 0);
            free(got);
        }
        assert_true(k > 1); /* the reply's bytes at least */
    }
}

static void test_coalesce_oom(void **state)
{
    (void)state;
    each_case(coalesce_case);
}

/* A key or an element that cannot be recorded, or a nesting level that cannot be opened, stops
 * the stream with "out of memory". */
static void test_parse_oom(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        bool rsp;
        uint32_t count;
    } pcases[] = {
        { "*10\r\n$4\r\nMGET\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n$1\r\nf\r\n$1\r\ng\r\n"
          "$1\r\nh\r\n$1\r\ni\r\n", false, 9 },
        { "MSET a 1 b 2 c 3 d 4 e 5\r\n", false, 5 },
        { "*6\r\n$1\r\na\r\n:1\r\n*2\r\n+x\r\n$-1\r\n$1\r\nb\r\n_\r\n-ERR no\r\n", true, 6 },
        { "*2\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n:2\r\n", true, 2 },
        { "%3\r\n+a\r\n:1\r\n+b\r\n|1\r\n+k\r\n+v\r\n:2\r\n+c\r\n~2\r\n:3\r\n:4\r\n", true, 6 },
    };
    for (size_t i = 0; i < sizeof(pcases) / sizeof(pcases[0]); i++) {
        uint32_t count;
        int rc = PARSE_ERROR;
        long k;
        for (k = 0; rc != PARSE_DONE; k++) {
            rc = oom_parse_at(&redis_proto, pcases[i].text, pcases[i].rsp, k, &count);
            if (rc == PARSE_DONE) assert_int_equal(count, pcases[i].count);
        }
        assert_true(k > 1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fragment_oom),
        cmocka_unit_test(test_coalesce_oom),
        cmocka_unit_test(test_parse_oom),
    };
    return cmocka_run_group_tests_name("redis_oom", tests, NULL, NULL);
}
