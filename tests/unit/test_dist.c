/*
 * test_dist.c - unit tests of the distributions: every line of every case in tests/vectors (the
 * answers of the real twemproxy 0.5.0), then the live mask, DIST_NONE and random dispatch.
 * Each case's pool is built from its .yml by the config loader and routed through the runtime,
 * exactly as the proxy does. The vectors are found through NC_VECTORS_DIR (set by `make check`); without them the test fails.
 *
 * Threads: the test's own; test_random_concurrent starts a few dispatch threads.
 */
#include "config.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "conf/conf.h"
#include "core/route.h"
#include "core/runtime.h"
#include "hash/dist.h"
#include "hash/hash.h"

#define VEC_MAX_CASES 64
#define VEC_NAME_MAX 128                     /* case names, server names, host:port:weight */
#define VEC_MAX_KEY 4096
#define VEC_SHOW_MISMATCHES 5

/* One case of tests/vectors: its name and key count (cases.tsv); its pool comes from <name>.yml. */
struct vec_case {
    char name[VEC_NAME_MAX];
    enum hash_type hash;  /* from cases.tsv, checked against what the .yml says */
    enum dist_type dist;
    size_t nkeys;         /* lines in <name>.tsv */
};

static const char *vec_dir(void)
{
    const char *dir = getenv("NC_VECTORS_DIR");
    return dir != NULL && dir[0] != '\0' ? dir : NULL;
}

static FILE *vec_open(const char *file)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", vec_dir(), file);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        fprintf(stderr, "test_dist: cannot open %s: %s\n", path, strerror(errno));
    return f;
}

/* Splits line at tabs into at most max fields (in place); returns the number of fields. */
static size_t split_tabs(char *line, char **fields, size_t max)
{
    size_t n = 0;
    line[strcspn(line, "\r\n")] = '\0';
    for (char *p = line; n < max;) {
        fields[n++] = p;
        char *tab = strchr(p, '\t');
        if (tab == NULL)
            break;
        *tab = '\0';
        p = tab + 1;
    }
    return n;
}

/* Takes case c's name, hash, distribution and key count from its cases.tsv row. */
static bool load_case(struct vec_case *c, char **f, size_t nf)
{
    /* case hash distribution weights server_names hash_tag ports port_dependent nkeys sha256 */
    if (nf < 9) {
        fprintf(stderr, "test_dist: short cases.tsv row (%zu fields)\n", nf);
        return false;
    }
    memset(c, 0, sizeof(*c));
    snprintf(c->name, sizeof(c->name), "%s", f[0]);
    int h = hash_type_from_name(f[1], strlen(f[1]));
    int d = dist_type_from_name(f[2], strlen(f[2]));
    if (h < 0 || d < 0) {
        fprintf(stderr, "test_dist: %s: unknown hash '%s' or distribution '%s'\n", c->name,
                f[1], f[2]);
        return false;
    }
    c->hash = (enum hash_type)h;
    c->dist = (enum dist_type)d;
    c->nkeys = strtoul(f[8], NULL, 10);
    return true;
}

/* Decodes lowercase/uppercase hex; returns the byte count or -1. */
static long hex_decode(const char *hex, uint8_t *out, size_t cap)
{
    size_t n = strlen(hex);
    if (n % 2 != 0 || n / 2 > cap)
        return -1;
    for (size_t i = 0; i < n / 2; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1)
            return -1;
        out[i] = (uint8_t)v;
    }
    return (long)(n / 2);
}

/* Checks every line of one case's .tsv. */
static void test_vector_case(void **state)
{
    const struct vec_case *c = *state;
    char file[VEC_NAME_MAX + 8];
    snprintf(file, sizeof(file), "%s.tsv", c->name);
    FILE *f = vec_open(file);
    assert_non_null(f);

    /* the pool exactly as the proxy builds it: the config loader, then the shared runtime */
    char yml[1024];
    snprintf(yml, sizeof(yml), "%s/%s.yml", vec_dir(), c->name);
    struct conf *conf = conf_load(yml, NULL, NULL);
    assert_non_null(conf);
    assert_int_equal(conf->npools, 1);
    assert_int_equal(conf->pools[0].hash, c->hash);
    assert_int_equal(conf->pools[0].distribution, c->dist);
    struct runtime *rt = runtime_create(conf, NULL, 1);
    assert_non_null(rt);
    struct pool_shared *pool = &rt->pools[0];

    char *line = NULL;
    size_t cap = 0, nlines = 0, bad = 0;
    uint8_t key[VEC_MAX_KEY];
    while (getline(&line, &cap, f) != -1) {
        char *fields[2] = {NULL, NULL};
        nlines++;
        long klen = split_tabs(line, fields, 2) == 2 ? hex_decode(fields[0], key, sizeof(key)) : -1;
        if (klen < 0) {
            fprintf(stderr, "  %s line %zu: not key_hex<TAB>index\n", c->name, nlines);
            bad++;
            continue;
        }
        uint32_t want = (uint32_t)strtoul(fields[1], NULL, 10);
        uint32_t hash = pool_key_hash(pool, key, (size_t)klen);
        uint32_t got = pool_route(pool, key, (size_t)klen);
        if (got != want) {
            if (bad < VEC_SHOW_MISMATCHES)
                fprintf(stderr, "  %s line %zu: key %s hash %08" PRIx32 " -> %" PRIu32
                        ", want %" PRIu32 "\n", c->name, nlines, fields[0], hash, got, want);
            bad++;
        }
    }
    free(line);
    fclose(f);
    runtime_put(rt);
    conf_unref(conf);

    printf("  %-38s %5zu lines, %zu mismatches\n", c->name, nlines, bad);
    if (nlines != c->nkeys)
        fail_msg("%s: %zu lines, cases.tsv says nkeys %zu", c->name, nlines, c->nkeys);
    if (bad != 0)
        fail_msg("%s: %zu of %zu lines mismatch", c->name, bad, nlines);
}

/* Reads cases.tsv; returns the number of cases or -1. */
static int load_cases(struct vec_case *cases, size_t max)
{
    FILE *f = vec_open("cases.tsv");
    if (f == NULL)
        return -1;
    char line[2048];
    int n = 0;
    bool header = true, ok = true;
    while (ok && fgets(line, sizeof(line), f) != NULL) {
        char *fields[10];
        size_t nf = split_tabs(line, fields, 10);
        if (header) {
            header = false;
            ok = strcmp(fields[0], "case") == 0;
            continue;
        }
        if (nf == 1 && fields[0][0] == '\0')
            continue;
        ok = (size_t)n < max && load_case(&cases[n], fields, nf);
        n++;
    }
    fclose(f);
    return ok ? n : -1;
}

/* ---- behaviour beyond the vectors ---- */

#define T_NSERVERS 4
#define T_NKEYS 20000

static void test_servers(struct dist_server *s, const uint32_t *weights, const char *const *names)
{
    for (size_t i = 0; i < T_NSERVERS; i++) {
        s[i].ketama_name = names[i];
        s[i].sort_name = names[i];
        s[i].weight = weights ? weights[i] : 1;
    }
}

static const char *const t_names[T_NSERVERS] = {"10.0.0.1:6379", "10.0.0.2:6379",
                                                "10.0.0.3:6379", "10.0.0.4:6379"};

static uint32_t t_key_hash(unsigned i)
{
    char key[32];
    int n = snprintf(key, sizeof(key), "key:%u", i);
    return hash_key(HASH_MD5, NULL, (const uint8_t *)key, (size_t)n);
}

/* Ketama, equal weights: ejecting a server moves only the keys it owned. */
static void test_ketama_eject_moves_only_its_keys(void **state)
{
    (void)state;
    struct dist_server s[T_NSERVERS];
    test_servers(s, NULL, t_names);
    const bool live[T_NSERVERS] = {true, true, false, true};
    struct dist *all = dist_build(DIST_KETAMA, s, T_NSERVERS, NULL);
    struct dist *some = dist_build(DIST_KETAMA, s, T_NSERVERS, live);
    assert_non_null(all);
    assert_non_null(some);
    unsigned moved = 0;
    for (unsigned i = 0; i < T_NKEYS; i++) {
        uint32_t h = t_key_hash(i);
        uint32_t a = dist_dispatch(all, h), b = dist_dispatch(some, h);
        assert_true(a < T_NSERVERS);
        assert_int_not_equal(b, 2);
        if (a != 2)
            assert_int_equal(a, b);
        else
            moved++;
    }
    /* server 2 held about a quarter of the keys */
    assert_in_range(moved, T_NKEYS / 8, T_NKEYS * 3 / 8);
    dist_destroy(all);
    dist_destroy(some);
}

/* Ketama, unequal weights: the survivors gain points, the dead server is never chosen. */
static void test_ketama_eject_weighted(void **state)
{
    (void)state;
    struct dist_server s[T_NSERVERS];
    const uint32_t w[T_NSERVERS] = {1, 2, 3, 4};
    test_servers(s, w, t_names);
    const bool live[T_NSERVERS] = {true, true, true, false};
    struct dist *d = dist_build(DIST_KETAMA, s, T_NSERVERS, live);
    assert_non_null(d);
    unsigned count[T_NSERVERS] = {0};
    for (unsigned i = 0; i < T_NKEYS; i++) {
        uint32_t idx = dist_dispatch(d, t_key_hash(i));
        assert_true(idx < 3);
        count[idx]++;
    }
    assert_int_equal(count[3], 0);
    assert_true(count[0] > 0 && count[1] > count[0] / 2 && count[2] > count[0]);
    dist_destroy(d);
}

/* Modula: the table holds only live servers, in sort_name order, `weight` times each. */
static void test_modula_live_mask(void **state)
{
    (void)state;
    struct dist_server s[T_NSERVERS];
    /* name order (shorter first, then bytewise) is b, a1, c1, zz: not the config order */
    static const char *const names[T_NSERVERS] = {"zz", "a1", "b", "c1"};
    const uint32_t w[T_NSERVERS] = {1, 2, 1, 3};
    test_servers(s, w, names);
    const bool live[T_NSERVERS] = {true, true, true, false};
    struct dist *d = dist_build(DIST_MODULA, s, T_NSERVERS, live);
    assert_non_null(d);
    /* live names sorted: "b"(2) "a1"(1) "zz"(0); table: 2, 1, 1, 0 */
    const uint32_t table[] = {2, 1, 1, 0};
    for (uint32_t h = 0; h < 64; h++)
        assert_int_equal(dist_dispatch(d, h), table[h % 4]);
    assert_int_equal(dist_dispatch(d, UINT32_MAX), table[UINT32_MAX % 4]);
    dist_destroy(d);

    d = dist_build(DIST_MODULA, s, T_NSERVERS, NULL);
    assert_non_null(d);
    /* all: "b"(2) "a1"(1) "c1"(3) "zz"(0); table: 2, 1, 1, 3, 3, 3, 0 */
    const uint32_t full[] = {2, 1, 1, 3, 3, 3, 0};
    for (uint32_t h = 0; h < 70; h++)
        assert_int_equal(dist_dispatch(d, h), full[h % 7]);
    dist_destroy(d);
}

static void test_none_live(void **state)
{
    (void)state;
    struct dist_server s[T_NSERVERS];
    test_servers(s, NULL, t_names);
    const bool dead[T_NSERVERS] = {false, false, false, false};
    for (int t = 0; t < DIST_COUNT; t++) {
        struct dist *d = dist_build((enum dist_type)t, s, T_NSERVERS, dead);
        assert_non_null(d);
        assert_int_equal(dist_dispatch(d, 0), DIST_NONE);
        assert_int_equal(dist_dispatch(d, 12345), DIST_NONE);
        dist_destroy(d);
        d = dist_build((enum dist_type)t, s, 0, NULL);
        assert_non_null(d);
        assert_int_equal(dist_dispatch(d, 7), DIST_NONE);
        dist_destroy(d);
    }
}

static void test_single_live(void **state)
{
    (void)state;
    struct dist_server s[T_NSERVERS];
    test_servers(s, NULL, t_names);
    const bool live[T_NSERVERS] = {false, false, false, true};
    for (int t = 0; t < DIST_COUNT; t++) {
        struct dist *d = dist_build((enum dist_type)t, s, T_NSERVERS, live);
        assert_non_null(d);
        for (unsigned i = 0; i < 100; i++)
            assert_int_equal(dist_dispatch(d, t_key_hash(i)), 3);
        dist_destroy(d);
    }
}

static void test_random_in_range(void **state)
{
    (void)state;
    struct dist_server s[T_NSERVERS];
    const uint32_t w[T_NSERVERS] = {1, 5, 1, 1}; /* random ignores weights */
    test_servers(s, w, t_names);
    const bool live[T_NSERVERS] = {true, false, true, true};
    struct dist *d = dist_build(DIST_RANDOM, s, T_NSERVERS, live);
    assert_non_null(d);
    unsigned count[T_NSERVERS] = {0};
    for (unsigned i = 0; i < 30000; i++) {
        uint32_t idx = dist_dispatch(d, 42); /* same hash every time: it is ignored */
        assert_true(idx < T_NSERVERS);
        count[idx]++;
    }
    assert_int_equal(count[1], 0);
    assert_in_range(count[0], 9000, 11000);
    assert_in_range(count[2], 9000, 11000);
    assert_in_range(count[3], 9000, 11000);
    dist_destroy(d);
}

struct random_worker {
    const struct dist *d;
    unsigned bad;
};

static void *random_worker_main(void *arg)
{
    struct random_worker *w = arg;
    for (unsigned i = 0; i < 20000; i++) {
        uint32_t idx = dist_dispatch(w->d, i);
        w->bad += idx != 0 && idx != 3;
    }
    return NULL;
}

/* Several threads dispatch from one dist at once (run under TSan to see it is lock-free safe). */
static void test_random_concurrent(void **state)
{
    (void)state;
    struct dist_server s[T_NSERVERS];
    test_servers(s, NULL, t_names);
    const bool live[T_NSERVERS] = {true, false, false, true};
    struct dist *d = dist_build(DIST_RANDOM, s, T_NSERVERS, live);
    assert_non_null(d);
    struct random_worker w[3];
    pthread_t tid[3];
    for (unsigned i = 0; i < 3; i++) {
        w[i] = (struct random_worker){.d = d, .bad = 0};
        assert_int_equal(pthread_create(&tid[i], NULL, random_worker_main, &w[i]), 0);
    }
    for (unsigned i = 0; i < 3; i++) {
        assert_int_equal(pthread_join(tid[i], NULL), 0);
        assert_int_equal(w[i].bad, 0);
    }
    dist_destroy(d);
}

static void test_dist_names(void **state)
{
    (void)state;
    for (int t = 0; t < DIST_COUNT; t++) {
        const char *name = dist_type_name((enum dist_type)t);
        assert_int_equal(dist_type_from_name(name, strlen(name)), t);
    }
    assert_int_equal(dist_type_from_name("ketama", 6), DIST_KETAMA);
    assert_int_equal(dist_type_from_name("modula", 6), DIST_MODULA);
    assert_int_equal(dist_type_from_name("random", 6), DIST_RANDOM);
    assert_int_equal(dist_type_from_name("ketamax", 6), DIST_KETAMA);
    assert_int_equal(dist_type_from_name("ketama", 5), -1);
    assert_int_equal(dist_type_from_name("Ketama", 6), -1);
    assert_int_equal(dist_type_from_name("", 0), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ketama_eject_moves_only_its_keys),
        cmocka_unit_test(test_ketama_eject_weighted),
        cmocka_unit_test(test_modula_live_mask),
        cmocka_unit_test(test_none_live),
        cmocka_unit_test(test_single_live),
        cmocka_unit_test(test_random_in_range),
        cmocka_unit_test(test_random_concurrent),
        cmocka_unit_test(test_dist_names),
    };
    int failed = cmocka_run_group_tests_name("dist", tests, NULL, NULL);

    if (vec_dir() == NULL) {
        fprintf(stderr, "test_dist: NC_VECTORS_DIR is not set; run through `make check` or set "
                        "it to tests/vectors\n");
        return 1;
    }
    static struct vec_case cases[VEC_MAX_CASES];
    int ncases = load_cases(cases, VEC_MAX_CASES);
    if (ncases <= 0) {
        fprintf(stderr, "test_dist: cannot load the cases of %s/cases.tsv\n", vec_dir());
        return 1;
    }
    struct CMUnitTest vec_tests[VEC_MAX_CASES];
    for (int i = 0; i < ncases; i++) {
        vec_tests[i] = (struct CMUnitTest){
            .name = cases[i].name,
            .test_func = test_vector_case,
            .initial_state = &cases[i],
        };
    }
    failed += _cmocka_run_group_tests("vectors", vec_tests, (size_t)ncases, NULL, NULL);
    return failed != 0;
}
