/*
 * resp_value.h - RESP replies read whole into a small tree: what the proxy's own clients of
 * redis-speaking control services (the Redis Sentinels, topo_sentinel.c) read. Not the request
 * path: the proxy's forwarding never builds trees (proto/ parses in place).
 *
 * Threads: a value belongs to the thread that parsed it.
 */
#ifndef NC_RESP_VALUE_H
#define NC_RESP_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum resp_type { RESP_STATUS, RESP_ERROR, RESP_INT, RESP_BULK, RESP_NIL, RESP_ARRAY };

struct resp_value {
    enum resp_type type;
    int64_t num;                  /* RESP_INT */
    char *str;                    /* STATUS, ERROR, BULK: NUL-terminated (a bulk may hold NULs) */
    size_t len;
    struct resp_value *elems;     /* RESP_ARRAY (also RESP3 maps and sets, flattened) */
    size_t n;
};

#define RESP_VALUE_MAX_DEPTH 8
#define RESP_VALUE_MAX_BULK (1u << 20)
#define RESP_VALUE_MAX_ELEMS 65536u

/* Parses one reply from buf[0..len): the bytes it took (> 0) with *out filled, 0 when more bytes
 * are needed, -1 when it is not RESP (or past the limits above). */
ssize_t resp_value_parse(const char *buf, size_t len, struct resp_value *out);
void resp_value_free(struct resp_value *v);

/* Element i of an array as a string (a bulk or a status), or NULL. */
const char *resp_value_str(const struct resp_value *v, size_t i);
/* The value after the element equal to key in a flat key-value array, or NULL. */
const char *resp_value_field(const struct resp_value *v, const char *key);

#endif
