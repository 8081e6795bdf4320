/*
 * conf_yaml.c - the libyaml event walk: turns one YAML document into a small tree of scalars,
 * sequences and mappings, each with its line and column, so that the key checks (conf_keys.c) can
 * look at a whole value (and report where it is) instead of following a stream of events.
 *
 * Supported: any block or flow style, quoting, comments, CRLF line ends, one document ("---" and
 * "..." optional). Rejected with a message: aliases (*name), a second document, nesting deeper
 * than CONF_YAML_MAX_DEPTH, NUL characters inside values.
 *
 * Threads: whoever loads a config; the tree lives only during the load.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "common/util.h"
#include "conf/conf_int.h"

#define CONF_YAML_MAX_DEPTH 32 /* a config needs 3 levels: pools, keys, servers */

struct conf_yaml_walk {
    struct conf_report *r;
    struct conf_node *root;
    struct conf_node *open[CONF_YAML_MAX_DEPTH]; /* collections not yet ended, innermost last */
    size_t depth;
    unsigned ndocs;
};

const char *conf_node_what(const struct conf_node *n)
{
    switch (n->kind) {
    case CONF_NODE_SCALAR: return n->len == 0 ? "an empty value" : "a scalar";
    case CONF_NODE_SEQ: return "a sequence";
    case CONF_NODE_MAP: return "a mapping";
    }
    return "a node";
}

void conf_node_free(struct conf_node *n)
{
    if (n == NULL) return;
    for (size_t i = 0; i < n->nkids; i++) conf_node_free(n->kids[i]);
    free(n->kids);
    free(n->text);
    free(n);
}

static struct conf_node *conf_node_create(enum conf_node_kind kind, const yaml_mark_t *mark)
{
    struct conf_node *n = calloc(1, sizeof(*n));
    if (n == NULL) return NULL;
    n->kind = kind;
    n->line = (int)mark->line + 1;
    n->col = (int)mark->column + 1;
    return n;
}

static int conf_node_add_kid(struct conf_node *parent, struct conf_node *kid)
{
    if (parent->nkids == parent->cap) {
        size_t cap = parent->cap == 0 ? 8 : parent->cap * 2;
        struct conf_node **kids = realloc(parent->kids, cap * sizeof(*kids));
        if (kids == NULL) return -ENOMEM;
        parent->kids = kids;
        parent->cap = cap;
    }
    parent->kids[parent->nkids++] = kid;
    return 0;
}

/* Hangs n under the innermost open collection (or makes it the root); takes n over. */
static int conf_yaml_attach(struct conf_yaml_walk *w, struct conf_node *n)
{
    if (w->depth == 0) {
        NC_ASSERT(w->root == NULL);
        w->root = n;
    } else if (conf_node_add_kid(w->open[w->depth - 1], n) != 0) {
        conf_node_free(n);
        return -ENOMEM;
    }
    if (n->kind == CONF_NODE_SCALAR) return 0;
    if (w->depth == CONF_YAML_MAX_DEPTH) {
        conf_report(w->r, n->line, n->col, NULL, NULL, "nesting deeper than %d levels",
                    CONF_YAML_MAX_DEPTH);
        return -EINVAL;
    }
    w->open[w->depth++] = n;
    return 0;
}

static int conf_yaml_scalar(struct conf_yaml_walk *w, const yaml_event_t *ev)
{
    const char *value = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    if (strnlen(value, len) != len) {
        conf_report(w->r, (int)ev->start_mark.line + 1, (int)ev->start_mark.column + 1, NULL, NULL,
                    "a NUL character inside a value is not supported");
        return -EINVAL;
    }
    struct conf_node *n = conf_node_create(CONF_NODE_SCALAR, &ev->start_mark);
    if (n == NULL) return -ENOMEM;
    n->text = strndup(value, len);
    if (n->text == NULL) {
        free(n);
        return -ENOMEM;
    }
    n->len = len;
    return conf_yaml_attach(w, n);
}

static int conf_yaml_collection(struct conf_yaml_walk *w, enum conf_node_kind kind,
                                const yaml_event_t *ev)
{
    struct conf_node *n = conf_node_create(kind, &ev->start_mark);
    if (n == NULL) return -ENOMEM;
    return conf_yaml_attach(w, n);
}

/* One event; returns 0 to go on, 1 at the end of the stream, or a negative error. */
static int conf_yaml_event(struct conf_yaml_walk *w, const yaml_event_t *ev)
{
    int line = (int)ev->start_mark.line + 1, col = (int)ev->start_mark.column + 1;

    switch (ev->type) {
    case YAML_STREAM_END_EVENT:
        return 1;
    case YAML_DOCUMENT_START_EVENT:
        if (w->ndocs++ == 0) return 0;
        conf_report(w->r, line, col, NULL, NULL, "only one YAML document is supported");
        return -EINVAL;
    case YAML_ALIAS_EVENT:
        conf_report(w->r, line, col, NULL, NULL, "aliases are not supported (*%s)",
                    (const char *)ev->data.alias.anchor);
        return -EINVAL;
    case YAML_SCALAR_EVENT:
        return conf_yaml_scalar(w, ev);
    case YAML_SEQUENCE_START_EVENT:
        return conf_yaml_collection(w, CONF_NODE_SEQ, ev);
    case YAML_MAPPING_START_EVENT:
        return conf_yaml_collection(w, CONF_NODE_MAP, ev);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        NC_ASSERT(w->depth > 0);
        w->depth--;
        return 0;
    case YAML_NO_EVENT:
    case YAML_STREAM_START_EVENT:
    case YAML_DOCUMENT_END_EVENT:
        return 0;
    }
    return 0;
}

static void conf_yaml_report_syntax(struct conf_yaml_walk *w, const yaml_parser_t *parser)
{
    if (parser->error == YAML_MEMORY_ERROR) return; /* the caller reports -ENOMEM */
    conf_report(w->r, (int)parser->problem_mark.line + 1, (int)parser->problem_mark.column + 1,
                NULL, NULL, "%s", parser->problem != NULL ? parser->problem : "YAML syntax error");
}

int conf_yaml_parse(const char *text, size_t len, struct conf_report *r, struct conf_node **root)
{
    struct conf_yaml_walk w = { .r = r };
    yaml_parser_t parser;
    int rc = 0;

    *root = NULL;
    if (!yaml_parser_initialize(&parser)) return -ENOMEM;
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);

    while (rc == 0) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            conf_yaml_report_syntax(&w, &parser);
            rc = parser.error == YAML_MEMORY_ERROR ? -ENOMEM : -EINVAL;
            break;
        }
        rc = conf_yaml_event(&w, &ev);
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);

    if (rc < 0) {
        conf_node_free(w.root);
        return rc;
    }
    *root = w.root;
    return 0;
}
