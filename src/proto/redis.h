/*
 * redis.h - internals shared by the redis protocol files: limits, the functions behind
 * redis_proto (redis_req.c, redis_rsp.c, redis_frag.c, redis_local.c, redis_proto.c) and small
 * token helpers.
 * The core uses only redis_proto (proto.h).
 *
 * Threads: no state; any worker.
 */
#ifndef NC_REDIS_H
#define NC_REDIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/proto.h"

/*
 * Limits. A request beyond them is a protocol error (the client is answered and closed), as it
 * would be for redis itself: bytes are forwarded as they came, so anything redis would refuse as
 * a protocol error must never reach a server connection shared with other clients.
 */
#define REDIS_MAX_BULK      (512LL * 1024 * 1024)  /* request bulk: redis' proto-max-bulk-len */
#define REDIS_MAX_ARGS      2147483647LL           /* request "*N": INT_MAX, as redis 7 */
#define REDIS_MAX_INLINE    (64 * 1024)            /* inline line, as redis' PROTO_INLINE_MAX_SIZE */
#define REDIS_MAX_EMPTY     (64 * 1024)            /* bytes of ignored "*0" / blank lines in a row */
#define REDIS_MAX_HDR       32                     /* "*N\r\n", "$N\r\n", ":N\r\n" with CRLF */
#define REDIS_NAME_PREFIX   64                     /* longer names: only this much is kept */
#define REDIS_MAX_NUMKEYS_LEN 20                   /* a numkeys arg longer than this is not a count */
#define REDIS_MAX_DEPTH     65536                  /* nesting of reply arrays */
#define REDIS_ERR_PREFIX    48                     /* bytes of an error reply needed to classify it */

/*
 * A parser is a table of steps, one per state: a step consumes what it can from buf[*pp, len)
 * and returns REDIS_CONT (go on with ps->state), PARSE_AGAIN, PARSE_DONE or PARSE_ERROR.
 * redis_run() runs the steps from ps->state until one does not return REDIS_CONT.
 */
#define REDIS_CONT 2
typedef int (*redis_step_fn)(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                             size_t *pp);
int redis_run(const redis_step_fn *steps, size_t nsteps, struct parse_state *ps, struct msg *m,
              const uint8_t *buf, size_t len, size_t *consumed);

int redis_parse_req(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                    size_t *consumed);
int redis_parse_rsp(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                    size_t *consumed);
int redis_fragment(struct msg *req, const uint32_t *server_of_key, struct msg_pool *pool);
int redis_coalesce(struct msg *req, struct msg *rsp);
/* proto_ops.probe_alive (redis_rsp.c): a status reply, or an error other than "up but not
 * serving yet" (-LOADING, -BUSY, -MASTERDOWN). */
bool redis_probe_alive(const uint8_t *reply, size_t len);

/* The requests and the per-client session the proxy handles itself (redis_local.c). */
void redis_session_init(struct proto_session *s, const struct conf_pool *cp, const struct conf_pool *old);
int redis_local(struct proto_session *s, const struct conf_pool *cp, const struct msg *req, struct msg *rsp);
int redis_server_setup(const struct conf_pool *cp, struct msg_pool *pool, struct msg **out, uint32_t max);
size_t redis_reject_reply(const struct msg *req, char *buf, size_t size);
/* Writes pre + mid + post into buf (no NUL), cutting mid so it fits; control bytes of mid become
 * spaces, and with lower its letters are lowercased. Returns the length, or 0 when even pre +
 * post do not fit. */
size_t redis_reply_line(char *buf, size_t size, const char *pre, const uint8_t *mid, size_t mid_len,
                        const char *post, bool lower);

/* What redis_line() found at the start of buf. */
#define REDIS_LINE_AGAIN (-1)  /* no CRLF yet, and there is still room for one */
#define REDIS_LINE_BAD   (-2)  /* no CRLF within max bytes, or a CR not followed by LF */

/* The length (CRLF excluded) of the CRLF-terminated line at buf, looking at no more than max
 * bytes (CRLF included); or REDIS_LINE_AGAIN / REDIS_LINE_BAD. */
long redis_line(const uint8_t *buf, size_t len, size_t max);

/* Consumes what is there of *left data bytes at buf[*pp, len); true when none is left. */
static inline bool redis_take(uint64_t *left, size_t len, size_t *pp)
{
    size_t avail = len - *pp;
    size_t take = *left < avail ? (size_t)*left : avail;
    *pp += take;
    *left -= take;
    return *left == 0;
}

/* The CRLF that must follow data, at buf[p]: 1 there, 0 not all there yet, -1 something else. */
static inline int redis_crlf(const uint8_t *buf, size_t len, size_t p)
{
    if (len - p < 2) return 0;
    return buf[p] == '\r' && buf[p + 1] == '\n' ? 1 : -1;
}

/* Strict decimal, as redis' string2ll: optional '-', no '+', no leading zeros, no "-0", fits
 * int64. Returns false when p[0..n) is not such a number. */
bool redis_parse_int(const uint8_t *p, size_t n, int64_t *out);

#endif
