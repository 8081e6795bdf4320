/*
 * stats_fixture.c - the manage unit tests' shared set-up (see stats_fixture.h).
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

#include "stats_fixture.h"

const char sfix_yaml[] =
    "alpha:\n"
    "  listen: 127.0.0.1:22121\n"
    "  redis: true\n"
    "  servers:\n"
    "   - 127.0.0.1:6379:1 s1\n"
    "   - 127.0.0.1:6380:1 s2\n"
    "   - 127.0.0.1:6381:2 s3\n"
    "\"we\\\"ird\\\\pool\\tname \\u00e9\":\n"
    "  listen: 127.0.0.1:22122\n"
    "  servers:\n"
    "   - 127.0.0.1:11211:1\n"
    "   - \"127.0.0.1:11212:1 odd\\\"name\"\n";

void sfix_init(struct sfix *f, const char *yaml, size_t nworkers)
{
    memset(f, 0, sizeof(*f));
    assert_true(nworkers <= SFIX_MAX_WORKERS);
    f->conf = conf_load_string(yaml, strlen(yaml), "test.yml", NULL, NULL);
    assert_non_null(f->conf);
    f->rt = runtime_create(f->conf, NULL, nworkers);
    assert_non_null(f->rt);
    f->nworkers = nworkers;
    for (size_t i = 0; i < nworkers; i++) {
        f->blocks[i] = stats_worker_create();
        assert_non_null(f->blocks[i]);
        stats_slowlog_configure(&f->blocks[i]->slowlog, (uint32_t)i, 1000);
    }
    assert_int_equal(stats_bind(f->rt, f->blocks, nworkers), 0);
    f->src.rt = f->rt;
    f->src.blocks = f->blocks;
    f->src.nblocks = nworkers;
    f->src.start_wall_usec = 0;
    strcpy(f->src.host, "test-host");
}

void sfix_deinit(struct sfix *f)
{
    for (size_t i = 0; i < f->nworkers; i++) stats_worker_destroy(f->blocks[i]);
    runtime_put(f->rt);
    conf_unref(f->conf);
    memset(f, 0, sizeof(*f));
}

size_t sfix_pool(const struct sfix *f, const char *name)
{
    for (size_t i = 0; i < f->rt->npools; i++) {
        if (strcmp(f->rt->pools[i].cp->name, name) == 0) return i;
    }
    fail_msg("no pool '%s'", name);
    return 0;
}

struct stats_pool_block *sfix_pb(const struct sfix *f, size_t w, const char *pool)
{
    return f->rt->pools[sfix_pool(f, pool)].wstats[w];
}

struct stats_server_block *sfix_sb(const struct sfix *f, size_t w, const char *pool, size_t k)
{
    const struct pool_shared *p = &f->rt->pools[sfix_pool(f, pool)];
    assert_true(k < p->cp->nservers);
    return p->wservers[w * p->cp->nservers + k];
}

char *sfix_cstr(const struct textbuf *b)
{
    char *s = malloc(b->len + 1);
    assert_non_null(s);
    if (b->len) memcpy(s, b->data, b->len);
    s[b->len] = '\0';
    return s;
}
