/*
 * redis_redirect.c - the redis side of a pool that fronts a Redis Cluster (notes/cluster.md):
 * where a -MOVED or -ASK reply points, and the ASKING request sent before a request redirected
 * by -ASK.
 *
 * Threads: the loop that owns the msgs.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "proto/proto.h"
#include "proto/redis.h"

#define REDIS_REDIRECT_MAX 320 /* "-MOVED <slot> <host>:<port>\r\n" with the longest host kept */

int redis_redirect_target(const struct msg *rsp, char *host, size_t hostlen, uint16_t *port)
{
    char line[REDIS_REDIRECT_MAX + 1];
    size_t n = msg_copy_out(rsp, 0, line, REDIS_REDIRECT_MAX);
    line[n] = '\0';
    char *end = strpbrk(line, "\r\n");
    if (end == NULL) return -1;
    *end = '\0';
    char *sp = strchr(line, ' '); /* after the code: the slot */
    char *addr = sp != NULL ? strchr(sp + 1, ' ') : NULL;
    if (addr == NULL) return -1;
    addr++;
    char *colon = strrchr(addr, ':');
    if (colon == NULL || colon == addr) return -1;
    char *stop;
    long p = strtol(colon + 1, &stop, 10);
    if (*stop != '\0' || p <= 0 || p > 65535) return -1;
    *colon = '\0';
    if (addr[0] == '[' && colon[-1] == ']') { /* an IPv6 address */
        addr++;
        colon[-1] = '\0';
    }
    size_t hl = strlen(addr);
    if (hl == 0 || hl >= hostlen) return -1;
    memcpy(host, addr, hl + 1);
    *port = (uint16_t)p;
    return 0;
}

struct msg *redis_asking(struct msg_pool *pool)
{
    static const char asking[] = "*1\r\n$6\r\nASKING\r\n";
    struct msg *m = msg_get(pool);
    if (m == NULL) return NULL;
    if (msg_append_literal(m, asking, sizeof(asking) - 1) < 0) {
        msg_put(pool, m);
        return NULL;
    }
    m->swallow = true;
    return m;
}
