/*
 * json_check.h - a small strict JSON parser for the unit tests: it checks that rendered text is
 * one valid JSON value (RFC 8259 grammar, UTF-8 as given, \u escapes decoded) and builds a tree
 * that keeps object members in order, so tests can check values and key order.
 *
 * Threads: the test's only.
 */
#ifndef NC_TEST_JSON_CHECK_H
#define NC_TEST_JSON_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum jv_type { JV_NULL, JV_BOOL, JV_NUMBER, JV_STRING, JV_ARRAY, JV_OBJECT };

struct jv {
    enum jv_type type;
    bool b;
    double num;
    bool is_int;
    int64_t i;          /* numbers without fraction or exponent */
    char *s;            /* strings (decoded, NUL-terminated; may hold NULs: see slen) */
    size_t slen;
    size_t n;           /* array elements / object members */
    char **keys;        /* objects: member names, in order */
    struct jv **vals;
};

/* Parses text (len bytes, trailing whitespace allowed). NULL if it is not exactly one JSON value. */
struct jv *jv_parse(const char *text, size_t len);
void jv_free(struct jv *v);

/* Object member by name, or NULL. */
const struct jv *jv_get(const struct jv *obj, const char *key);
/* Member by a path of names ("alpha", "s1", "requests", NULL), or NULL. */
const struct jv *jv_path(const struct jv *v, ...);

#endif
