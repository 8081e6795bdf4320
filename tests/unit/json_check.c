/*
 * json_check.c - the unit tests' strict JSON parser (see json_check.h).
 *
 * Threads: the test's only.
 */
#include "config.h"
#include "json_check.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

struct jp {
    const char *p, *end;
    int depth;
};

static void jp_ws(struct jp *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}

static struct jv *jv_new(enum jv_type t)
{
    struct jv *v = calloc(1, sizeof(*v));
    if (v != NULL) v->type = t;
    return v;
}

static struct jv *jp_value(struct jp *j);

static int jp_hex4(struct jp *j, unsigned *out)
{
    if (j->end - j->p < 4) return -1;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = j->p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return -1;
    }
    j->p += 4;
    *out = v;
    return 0;
}

static void jp_put_utf8(char *out, size_t *n, unsigned cp)
{
    if (cp < 0x80) {
        out[(*n)++] = (char)cp;
    } else if (cp < 0x800) {
        out[(*n)++] = (char)(0xc0 | (cp >> 6));
        out[(*n)++] = (char)(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        out[(*n)++] = (char)(0xe0 | (cp >> 12));
        out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[(*n)++] = (char)(0x80 | (cp & 0x3f));
    } else {
        out[(*n)++] = (char)(0xf0 | (cp >> 18));
        out[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3f));
        out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[(*n)++] = (char)(0x80 | (cp & 0x3f));
    }
}

/* a string at j->p (the opening quote); decoded into *out */
static int jp_string(struct jp *j, char **out, size_t *outlen)
{
    if (j->p >= j->end || *j->p != '"') return -1;
    j->p++;
    char *buf = malloc((size_t)(j->end - j->p) * 2 + 1);
    if (buf == NULL) return -1;
    size_t n = 0;
    while (j->p < j->end && *j->p != '"') {
        unsigned char c = (unsigned char)*j->p;
        if (c < 0x20) goto bad;
        if (c != '\\') {
            buf[n++] = (char)c;
            j->p++;
            continue;
        }
        j->p++;
        if (j->p >= j->end) goto bad;
        char e = *j->p++;
        switch (e) {
        case '"': buf[n++] = '"'; break;
        case '\\': buf[n++] = '\\'; break;
        case '/': buf[n++] = '/'; break;
        case 'b': buf[n++] = '\b'; break;
        case 'f': buf[n++] = '\f'; break;
        case 'n': buf[n++] = '\n'; break;
        case 'r': buf[n++] = '\r'; break;
        case 't': buf[n++] = '\t'; break;
        case 'u': {
            unsigned cp;
            if (jp_hex4(j, &cp) < 0) goto bad;
            if (cp >= 0xd800 && cp <= 0xdbff) {
                unsigned lo;
                if (j->end - j->p < 2 || j->p[0] != '\\' || j->p[1] != 'u') goto bad;
                j->p += 2;
                if (jp_hex4(j, &lo) < 0 || lo < 0xdc00 || lo > 0xdfff) goto bad;
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            } else if (cp >= 0xdc00 && cp <= 0xdfff) {
                goto bad;
            }
            jp_put_utf8(buf, &n, cp);
            break;
        }
        default: goto bad;
        }
    }
    if (j->p >= j->end) goto bad;
    j->p++;
    buf[n] = '\0';
    *out = buf;
    *outlen = n;
    return 0;
bad:
    free(buf);
    return -1;
}

static struct jv *jp_number(struct jp *j)
{
    const char *start = j->p;
    bool is_int = true;
    if (j->p < j->end && *j->p == '-') j->p++;
    if (j->p >= j->end) return NULL;
    if (*j->p == '0') {
        j->p++;
    } else if (*j->p >= '1' && *j->p <= '9') {
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
    } else {
        return NULL;
    }
    if (j->p < j->end && *j->p == '.') {
        is_int = false;
        j->p++;
        if (j->p >= j->end || *j->p < '0' || *j->p > '9') return NULL;
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
    }
    if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
        is_int = false;
        j->p++;
        if (j->p < j->end && (*j->p == '+' || *j->p == '-')) j->p++;
        if (j->p >= j->end || *j->p < '0' || *j->p > '9') return NULL;
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
    }
    char tmp[64];
    size_t len = (size_t)(j->p - start);
    if (len >= sizeof(tmp)) len = sizeof(tmp) - 1;
    memcpy(tmp, start, len);
    tmp[len] = '\0';
    struct jv *v = jv_new(JV_NUMBER);
    if (v == NULL) return NULL;
    v->num = strtod(tmp, NULL);
    v->is_int = is_int;
    if (is_int) v->i = strtoll(tmp, NULL, 10);
    return v;
}

static int jv_push(struct jv *v, char *key, struct jv *val)
{
    char **keys = realloc(v->keys, (v->n + 1) * sizeof(*keys));
    if (keys == NULL) return -1;
    v->keys = keys;
    struct jv **vals = realloc(v->vals, (v->n + 1) * sizeof(*vals));
    if (vals == NULL) return -1;
    v->vals = vals;
    v->keys[v->n] = key;
    v->vals[v->n] = val;
    v->n++;
    return 0;
}

static struct jv *jp_container(struct jp *j, bool object)
{
    struct jv *v = jv_new(object ? JV_OBJECT : JV_ARRAY);
    if (v == NULL || ++j->depth > 64) goto bad;
    j->p++;
    jp_ws(j);
    if (j->p < j->end && *j->p == (object ? '}' : ']')) {
        j->p++;
        j->depth--;
        return v;
    }
    for (;;) {
        char *key = NULL;
        size_t klen;
        jp_ws(j);
        if (object) {
            if (jp_string(j, &key, &klen) < 0) goto bad;
            jp_ws(j);
            if (j->p >= j->end || *j->p != ':') {
                free(key);
                goto bad;
            }
            j->p++;
        }
        struct jv *child = jp_value(j);
        if (child == NULL || jv_push(v, key, child) < 0) {
            free(key);
            jv_free(child);
            goto bad;
        }
        jp_ws(j);
        if (j->p >= j->end) goto bad;
        if (*j->p == ',') {
            j->p++;
            continue;
        }
        if (*j->p != (object ? '}' : ']')) goto bad;
        j->p++;
        j->depth--;
        return v;
    }
bad:
    jv_free(v);
    return NULL;
}

static bool jp_word(struct jp *j, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, w, n) != 0) return false;
    j->p += n;
    return true;
}

static struct jv *jp_value(struct jp *j)
{
    jp_ws(j);
    if (j->p >= j->end) return NULL;
    char c = *j->p;
    if (c == '{') return jp_container(j, true);
    if (c == '[') return jp_container(j, false);
    if (c == '"') {
        struct jv *v = jv_new(JV_STRING);
        if (v == NULL || jp_string(j, &v->s, &v->slen) < 0) {
            free(v);
            return NULL;
        }
        return v;
    }
    if (jp_word(j, "true") || jp_word(j, "false")) {
        struct jv *v = jv_new(JV_BOOL);
        if (v) v->b = j->p[-1] == 'e' && j->p[-2] == 'u';
        return v;
    }
    if (jp_word(j, "null")) return jv_new(JV_NULL);
    return jp_number(j);
}

struct jv *jv_parse(const char *text, size_t len)
{
    struct jp j = { text, text + len, 0 };
    struct jv *v = jp_value(&j);
    if (v == NULL) return NULL;
    jp_ws(&j);
    if (j.p != j.end) {
        jv_free(v);
        return NULL;
    }
    return v;
}

void jv_free(struct jv *v)
{
    if (v == NULL) return;
    for (size_t i = 0; i < v->n; i++) {
        if (v->keys) free(v->keys[i]);
        jv_free(v->vals[i]);
    }
    free(v->keys);
    free(v->vals);
    free(v->s);
    free(v);
}

const struct jv *jv_get(const struct jv *obj, const char *key)
{
    if (obj == NULL || obj->type != JV_OBJECT) return NULL;
    for (size_t i = 0; i < obj->n; i++) {
        if (strcmp(obj->keys[i], key) == 0) return obj->vals[i];
    }
    return NULL;
}

const struct jv *jv_path(const struct jv *v, ...)
{
    va_list ap;
    va_start(ap, v);
    const char *k;
    while (v != NULL && (k = va_arg(ap, const char *)) != NULL) v = jv_get(v, k);
    va_end(ap);
    return v;
}
