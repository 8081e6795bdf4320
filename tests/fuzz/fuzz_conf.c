/*
 * fuzz_conf.c - libFuzzer target: the configuration loader (conf_load_string) on arbitrary text.
 * Every error line must name the file, be one line of printable text, and a refused config must
 * leave nothing allocated (LeakSanitizer). An accepted config must be complete (every pool has a
 * listen address and servers with a weight >= 1 and names), and its pools' distributions are
 * built and used as the core does (src/core/route.c), with the pool's hash and hash_tag.
 *
 * Threads: the fuzzer's only.
 */
#include "config.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"
#include "fuzz_check.h"
#include "hash/dist.h"
#include "hash/hash.h"

#define FZ_CONF_NAME "fuzz.yml"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fz_conf_errors {
    unsigned n;
};

static void fz_conf_error(void *ctx, const char *line)
{
    struct fz_conf_errors *e = ctx;
    e->n++;
    size_t n = strlen(line);
    FZ_CHECK(n > strlen(FZ_CONF_NAME) && n < 4096);
    FZ_CHECK(strncmp(line, FZ_CONF_NAME ":", strlen(FZ_CONF_NAME) + 1) == 0);
    for (size_t i = 0; i < n; i++) FZ_CHECK((unsigned char)line[i] >= 0x20 && line[i] != 0x7f);
}

static void fz_conf_addr(const struct conf_addr *a)
{
    FZ_CHECK(a->text != NULL && a->host != NULL && a->text[0] != '\0');
    FZ_CHECK(a->is_unix ? a->port == 0 : a->port != 0);
}

static void fz_conf_pool(const struct conf *c, const struct conf_pool *p)
{
    FZ_CHECK(p->name != NULL && conf_pool_find(c, p->name) == p);
    fz_conf_addr(&p->listen);
    FZ_CHECK(p->nservers >= 1 && p->servers != NULL);
    FZ_CHECK((unsigned)p->hash < HASH_COUNT && (unsigned)p->distribution < DIST_COUNT);
    struct dist_server *ds = calloc(p->nservers, sizeof(*ds));
    FZ_CHECK(ds != NULL);
    for (size_t i = 0; i < p->nservers; i++) {
        const struct conf_server *s = &p->servers[i];
        fz_conf_addr(&s->addr);
        FZ_CHECK(s->weight >= 1 && s->pname != NULL && s->stats_name != NULL &&
                 s->ketama_name != NULL);
        ds[i].ketama_name = s->ketama_name;
        ds[i].sort_name = s->stats_name;
        ds[i].weight = s->weight;
    }
    struct dist *d = dist_build(p->distribution, ds, p->nservers, NULL);
    FZ_CHECK(d != NULL);
    const char *tag = p->has_hash_tag ? p->hash_tag : NULL;
    uint32_t h = hash_key(p->hash, tag, (const uint8_t *)p->name, strlen(p->name));
    FZ_CHECK(dist_dispatch(d, h) < p->nservers);
    FZ_CHECK(dist_dispatch(d, ~h) < p->nservers);
    dist_destroy(d);
    free(ds);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fz_conf_errors e = { 0 };
    struct conf *c = conf_load_string((const char *)data, size, FZ_CONF_NAME, fz_conf_error, &e);
    if (c == NULL) {
        FZ_CHECK(e.n > 0);
        return 0;
    }
    FZ_CHECK(e.n == 0);
    FZ_CHECK(c->npools >= 1 && c->pools != NULL);
    for (size_t i = 0; i < c->npools; i++) fz_conf_pool(c, &c->pools[i]);
    struct conf *again = conf_ref(c);
    FZ_CHECK(again == c);
    conf_unref(again);
    conf_unref(c);
    return 0;
}
