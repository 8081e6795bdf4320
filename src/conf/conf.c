/*
 * conf.c - loading a config generation and its lifecycle: read the file, build the YAML tree
 * (conf_yaml.c), walk the top-level mapping of pools (each pool through conf_keys.c), check what
 * spans pools (duplicate names, shared listen addresses), and free it all on the last unref.
 * Also the error reporter every conf file uses.
 *
 * Threads: conf_load* runs on the master (or a test). A returned struct conf is never written
 * again; any thread may read it while it holds a reference (conf_ref/conf_unref are atomic).
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "conf/conf_int.h"

#define CONF_LINE_MAX 2048                 /* longest error line; longer ones are cut */
#define CONF_FILE_MAX (16u * 1024 * 1024) /* a config larger than this is refused */

/* One line "<file>:<line>[:<col>]: [pool '<pool>': ][key '<key>': ]<what><msg>" to r's callback
 * (stderr without one), control characters shown as '?'. */
static void conf_report_line(struct conf_report *r, int line, int col, const char *pool, const char *key,
                             const char *what, const char *msg)
{
    char where[32] = "", out[CONF_LINE_MAX];
    if (line > 0 && col > 0) snprintf(where, sizeof(where), ":%d:%d", line, col);
    else if (line > 0) snprintf(where, sizeof(where), ":%d", line);
    snprintf(out, sizeof(out), "%s%s: %s%s%s%s%s%s%s%s", r->file, where,
             pool != NULL ? "pool '" : "", pool != NULL ? pool : "", pool != NULL ? "': " : "",
             key != NULL ? "key '" : "", key != NULL ? key : "", key != NULL ? "': " : "", what, msg);
    for (char *c = out; *c != '\0'; c++) {
        if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
    }
    if (r->fn != NULL) r->fn(r->ctx, out);
    else fprintf(stderr, "nutcrackers: %s\n", out);
}

void conf_report(struct conf_report *r, int line, int col, const char *pool, const char *key,
                 const char *fmt, ...)
{
    char msg[CONF_LINE_MAX / 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    r->nerrors++;
    conf_report_line(r, line, col, pool, key, "", msg);
}

void conf_warn(struct conf_report *r, int line, const char *pool, const char *key, const char *fmt, ...)
{
    char msg[CONF_LINE_MAX / 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    conf_report_line(r, line, 0, pool, key, "warning: ", msg);
}

/* A problem of p's key at line (<= 0: the key's line), in the loader's format. */
static void conf_pool_vreport(const struct conf_pool *p, const char *key, int line, conf_error_fn on_error,
                              void *ctx, const char *fmt, va_list ap)
{
    char msg[CONF_LINE_MAX / 2];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    struct conf_report r = { .file = p->file != NULL ? p->file : "(string)", .fn = on_error, .ctx = ctx };
    conf_report(&r, line > 0 ? line : conf_pool_key_line(p, key), 0, p->name, key, "%s", msg);
}

void conf_pool_report(const struct conf_pool *p, const char *key, conf_error_fn on_error, void *ctx,
                      const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    conf_pool_vreport(p, key, 0, on_error, ctx, fmt, ap);
    va_end(ap);
}

void conf_pool_report_at(const struct conf_pool *p, const char *key, int line, conf_error_fn on_error, void *ctx,
                         const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    conf_pool_vreport(p, key, line, on_error, ctx, fmt, ap);
    va_end(ap);
}

static void conf_free(struct conf *c)
{
    if (c == NULL) return;
    for (size_t i = 0; i < c->npools; i++) conf_pool_deinit(&c->pools[i]);
    free(c->pools);
    free(c->path);
    free(c);
}

struct conf *conf_ref(struct conf *c)
{
    unsigned old = atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
    NC_ASSERT(old > 0);
    (void)old;
    return c;
}

void conf_unref(struct conf *c)
{
    if (c == NULL) return;
    unsigned old = atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel);
    NC_ASSERT(old > 0);
    if (old == 1) conf_free(c);
}

const struct conf_pool *conf_pool_find(const struct conf *c, const char *name)
{
    for (size_t i = 0; i < c->npools; i++) {
        if (strcmp(c->pools[i].name, name) == 0) return &c->pools[i];
    }
    return NULL;
}

/* What spans pools: pool names and listen addresses must be unique. */
static void conf_check_pools(const struct conf *c, struct conf_report *r)
{
    for (size_t i = 0; i < c->npools; i++) {
        const struct conf_pool *p = &c->pools[i];
        for (size_t j = 0; j < i; j++) {
            if (strcmp(p->name, c->pools[j].name) == 0) {
                conf_report(r, p->line, 0, p->name, NULL, "duplicate pool name (first at line %d)",
                            c->pools[j].line);
                break;
            }
        }
        for (size_t j = 0; j < i; j++) {
            const struct conf_pool *q = &c->pools[j];
            if (conf_addr_same(&p->listen, &q->listen)) {
                conf_report(r, p->listen_line, 0, p->name, "listen",
                            "'%s' is already the listen address of pool '%s' (line %d)",
                            p->listen.text, q->name, q->listen_line);
                break;
            }
        }
    }
}

/* One pool: name -> mapping of keys. Appends it to c->pools (which has room for it). */
static void conf_pool_add(struct conf *c, const struct conf_node *name,
                          const struct conf_node *value, struct conf_report *r)
{
    if (name->kind != CONF_NODE_SCALAR || name->len == 0) {
        conf_report(r, name->line, 0, NULL, NULL, "a pool name must be a non-empty scalar, got %s",
                    conf_node_what(name));
        return;
    }
    struct conf_pool *p = &c->pools[c->npools];
    p->name = strdup(name->text);
    if (p->name == NULL) {
        conf_report(r, name->line, 0, NULL, NULL, "out of memory");
        return;
    }
    p->line = name->line;
    p->file = c->path;
    c->npools++;
    if (value->kind != CONF_NODE_MAP) {
        conf_report(r, value->line, 0, p->name, NULL, "expected a mapping of keys, got %s",
                    conf_node_what(value));
        return;
    }
    conf_pool_parse(p, value, r);
}

static struct conf *conf_build(const char *name, const struct conf_node *root,
                               struct conf_report *r)
{
    bool empty = root == NULL || (root->kind == CONF_NODE_MAP && root->nkids == 0) ||
                 (root->kind == CONF_NODE_SCALAR && root->len == 0);
    if (empty) {
        conf_report(r, root != NULL ? root->line : 1, 0, NULL, NULL, "no pools defined");
        return NULL;
    }
    if (root->kind != CONF_NODE_MAP) {
        conf_report(r, root->line, 0, NULL, NULL,
                    "expected a mapping of pool names to pools, got %s", conf_node_what(root));
        return NULL;
    }

    struct conf *c = calloc(1, sizeof(*c));
    if (c == NULL) goto oom;
    atomic_init(&c->refs, 1);
    c->loaded_at = time(NULL);
    c->path = strdup(name);
    c->pools = calloc(root->nkids / 2, sizeof(*c->pools));
    if (c->path == NULL || c->pools == NULL) goto oom;

    for (size_t i = 0; i + 1 < root->nkids; i += 2) {
        conf_pool_add(c, root->kids[i], root->kids[i + 1], r);
    }
    conf_check_pools(c, r);
    return c;

oom:
    conf_report(r, 0, 0, NULL, NULL, "out of memory");
    conf_free(c);
    return NULL;
}

struct conf *conf_load_string(const char *text, size_t len, const char *name,
                              conf_error_fn on_error, void *ctx)
{
    if (name == NULL) name = "(string)";
    struct conf_report r = { .file = name, .fn = on_error, .ctx = ctx };
    struct conf_node *root = NULL;
    struct conf *c = NULL;

    int rc = conf_yaml_parse(text, len, &r, &root);
    if (rc == -ENOMEM) conf_report(&r, 0, 0, NULL, NULL, "out of memory");
    if (rc == 0) c = conf_build(name, root, &r);
    conf_node_free(root);
    if (r.nerrors > 0) {
        conf_free(c);
        return NULL;
    }
    return c;
}

/* Reads a whole file into *text (NUL-terminated, caller frees). Returns 0 or -errno. */
static int conf_read_file(const char *path, char **text, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) return -errno;

    size_t cap = 4096, used = 0;
    char *buf = malloc(cap);
    int rc = buf == NULL ? -ENOMEM : 0;
    while (rc == 0) {
        if (used + 1 == cap) {
            char *bigger = cap < CONF_FILE_MAX ? realloc(buf, cap * 2) : NULL;
            if (bigger == NULL) {
                rc = cap < CONF_FILE_MAX ? -ENOMEM : -EFBIG;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
        size_t n = fread(buf + used, 1, cap - used - 1, f);
        used += n;
        if (n == 0) {
            if (ferror(f)) rc = -EIO;
            break;
        }
    }
    fclose(f);
    if (rc != 0) {
        free(buf);
        return rc;
    }
    buf[used] = '\0';
    *text = buf;
    *len = used;
    return 0;
}

struct conf *conf_load(const char *path, conf_error_fn on_error, void *ctx)
{
    char *text = NULL;
    size_t len = 0;
    int rc = conf_read_file(path, &text, &len);
    if (rc != 0) {
        struct conf_report r = { .file = path, .fn = on_error, .ctx = ctx };
        conf_report(&r, 0, 0, NULL, NULL, "cannot read the file: %s", strerror(-rc));
        return NULL;
    }
    struct conf *c = conf_load_string(text, len, path, on_error, ctx);
    free(text);
    return c;
}
