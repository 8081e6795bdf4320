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
 * A parser is a set of steps, one per state: a step consumes what it can from buf[*pp, len)
 * and returns REDIS_CONT (go on with ps->state), PARSE_AGAIN, PARSE_DONE or PARSE_ERROR. The
 * parser runs the steps from ps->state, in a switch, until one does not return REDIS_CONT.
 */
#define REDIS_CONT 2

int redis_parse_req(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                    size_t *consumed);
int redis_parse_rsp(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                    size_t *consumed);
int redis_fragment(struct msg *req, const uint32_t *where, uint32_t n, struct msg_pool *pool);
int redis_coalesce(const struct proto_view *v, struct msg *req, struct msg *rsp);
/* proto_ops.probe_alive (redis_rsp.c): a status reply, or an error other than "up but not
 * serving yet" (-LOADING, -BUSY, -MASTERDOWN). */
bool redis_probe_alive(const uint8_t *reply, size_t len);

/* The per-client session (proto.h struct proto_session): variant 0 is RESP2, 1 RESP3. */
#define REDIS_RESP2 0
#define REDIS_RESP3 1
#define REDIS_SESS_NO_EVICT 0x1u   /* proto_session.flags: CLIENT NO-EVICT on */
#define REDIS_SESS_NO_TOUCH 0x2u   /* CLIENT NO-TOUCH on */
/* parse_state.opts of a pool's clients (proto_ops.parse_opts, redis_cluster.c) */
#define REDIS_OPT_CLUSTER 0x1u     /* client_cluster_mode: CLUSTER, READONLY, READWRITE are served */

/* The client's strings (proto_session.ext): NUL-terminated, NULL when unset. */
enum redis_sess_text {
    REDIS_TEXT_NAME,        /* CLIENT SETNAME, HELLO SETNAME */
    REDIS_TEXT_LIB_NAME,    /* CLIENT SETINFO LIB-NAME */
    REDIS_TEXT_LIB_VER,     /* CLIENT SETINFO LIB-VER */
    REDIS_NTEXT
};
struct proto_session_ext {
    char *text[REDIS_NTEXT];
};

/* The requests and the per-client session the proxy handles itself (redis_local.c). */
void redis_session_init(struct proto_session *s, const struct conf_pool *cp, const struct conf_pool *old);
void redis_session_free(struct proto_session *s);
int redis_local(struct proto_session *s, const struct conf_pool *cp, const struct msg *req, struct msg *rsp);
/* proto_ops.redirect_target and asking (redis_redirect.c) */
int redis_redirect_target(const struct msg *rsp, char *host, size_t hostlen, uint16_t *port);
struct msg *redis_asking(struct msg_pool *pool);

/* local()'s replies (redis_local.c): text as it is; an error naming what the client sent, pre + k
 * (control bytes as spaces, lowercased with lower, cut to fit) + post; a text built (freed). Each
 * returns verdict (PROTO_ANSWERED for the last two), or -ENOMEM. */
int redis_answer(struct msg *rsp, const char *text, int verdict);
int redis_answer_named(struct msg *rsp, const char *pre, const struct msg_key *k, const char *post, bool lower);
int redis_answer_text(struct textbuf *t, struct msg *rsp);
/* redis's error for a subcommand sub of cmd ("CLIENT") that it does not have. */
int redis_answer_unknown_sub(const struct msg_key *sub, const char *cmd, struct msg *rsp);
/* What cluster-mode clients are answered (a pool with client_cluster_mode, redis_cluster.c):
 * CLUSTER's subcommands, READONLY, READWRITE. */
int redis_cluster_local(const struct proto_session *s, const struct conf_pool *cp, const struct msg *req,
                        struct msg *rsp);
/* proto_ops.parse_opts (redis_cluster.c): REDIS_OPT_CLUSTER for a pool with client_cluster_mode. */
uint8_t redis_parse_opts(const struct conf_pool *cp);
/* proto_ops.setup_check: ROLE's reply says master (slave for a replica's connection). */
int redis_setup_check(const struct msg *req, const struct msg *rsp, bool replica);
int redis_server_setup(const struct conf_pool *cp, uint8_t variant, bool replica, struct msg_pool *pool, struct msg **out,
                       uint32_t max);
/* CLIENT LIST (proto_ops.list_filter, client_line, list_reply; CLIENT INFO's line too). */
int redis_list_filter(const struct msg *req, struct proto_list_filter *f, struct msg *rsp);
void redis_client_line(struct textbuf *t, const struct proto_session *s, const struct conf_pool *cp,
                       const struct proto_client_state *st);
int redis_list_reply(uint8_t variant, const char *text, size_t len, struct msg *rsp);
/* Sets one of the client's strings to a copy of k's bytes (unset when k is empty or NULL).
 * Returns 0 or -ENOMEM (then it is unchanged). */
int redis_sess_set(struct proto_session *s, enum redis_sess_text which, const struct msg_key *k);
/* One of the client's strings, "" when unset. */
const char *redis_sess_get(const struct proto_session *s, enum redis_sess_text which);
/* Whether k is a valid client name or SETINFO value: printable ASCII without spaces ('!'..'~'). */
bool redis_valid_name(const struct msg_key *k);
/* Whether k is word (any case). */
bool redis_key_is(const struct msg_key *k, const char *word);

/* HELLO and INFO, answered from every server's INFO (redis_info.c). */
/* local()'s part of HELLO: its checks and what it changes in the session (protocol, AUTH, name);
 * PROTO_FORWARD when the fan-out is to build the reply, else the error is in rsp. */
int redis_hello(struct proto_session *s, const struct conf_pool *cp, const struct msg *req, struct msg *rsp);
/* fragment() of a CMD_F_FRAG_ALL request: one INFO per server where[0..n). */
int redis_fragment_all(struct msg *req, const uint32_t *where, uint32_t n, struct msg_pool *pool);
/* coalesce() of a CMD_F_FRAG_ALL request: HELLO's reply, or the merged INFO. */
int redis_coalesce_all(const struct proto_view *v, struct msg *req, struct msg *rsp);

/* The pieces of a fragment (redis_frag.c): "*<nargs>\r\n$<len>\r\n<name>\r\n", then an argument
 * group of req (k: its bytes as a RESP bulk, with its value after it when with_value), recorded as
 * a key of frag. Return 0 or -ENOMEM. */
int redis_frag_header(struct msg *frag, const char *name, uint64_t nargs);
int redis_frag_add_group(struct msg *frag, const struct msg *req, const struct msg_key *k, bool with_value);
/* The reply of req: the sum of its fragments' integers (-EINVAL when one is not an integer). */
int redis_coalesce_sum(struct msg *req, struct msg *rsp);
/* Whether r is "+OK" (after an attribute, in RESP3). */
bool redis_reply_is_ok(const struct msg *r);

/* The commands sent to every server other than HELLO and INFO, and keys of XREAD on several
 * servers (redis_fanout.c). */
/* local()'s part of SCAN (the cursor), SCRIPT (its subcommand), FLUSHDB/FLUSHALL (redis_flush). */
int redis_fan_local(const struct conf_pool *cp, const struct msg *req, struct msg *rsp);
int redis_fragment_fan(struct msg *req, const uint32_t *where, uint32_t n, struct msg_pool *pool);
int redis_coalesce_fan(const struct proto_view *v, struct msg *req, struct msg *rsp);

/* FUNCTION, CONFIG, ROLE and MEMORY (redis_admin.c). */
/* local()'s part: ROLE's answer, a refused or unknown subcommand's error, else PROTO_FORWARD. */
int redis_admin_local(const struct msg *req, struct msg *rsp);
/* Whether a FUNCTION or CONFIG request goes to the first live server only (LIST, DUMP, GET, ...). */
bool redis_admin_first_only(const struct msg *req);
/* coalesce() of FUNCTION and CONFIG, once no fragment's reply is an error. */
int redis_coalesce_admin(struct msg *req, struct msg *rsp);

/* The RESP pieces of a reply text (struct textbuf, proto.h). */
/* "$<n>\r\n<data>\r\n" */
void resp_add_bulk(struct textbuf *t, const void *data, size_t n);
/* A text reply the way redis sends INFO and CLIENT INFO: a bulk string in RESP2, a verbatim
 * string ("=<n+4>\r\ntxt:<data>\r\n") in RESP3. */
void resp_add_text(struct textbuf *t, uint8_t variant, const void *data, size_t n);
/* The null reply: "$-1" in RESP2, "_" in RESP3. */
void resp_add_null(struct textbuf *t, uint8_t variant);
size_t redis_reject_reply(const struct msg *req, char *buf, size_t size);
/* Pub/Sub: redis_pubsub.c */
extern const struct proto_pubsub redis_pubsub;
size_t redis_txn_reply(enum proto_txn_reply what, const char *a, const char *b, char *buf, size_t size);
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

/*
 * The usual header line at buf ("*2\r\n", "$3\r\n": a type byte, then a count of at most 18
 * digits without a leading zero, then CRLF, all within len), read in one pass: the line's length
 * without its CRLF (as redis_line) and the count in *v. -1 for any other line, complete or not:
 * the caller then reads it with redis_line and redis_parse_int, which give the same result for
 * every line read here (this only saves their calls on the hot path).
 */
static inline long redis_header_fast(const uint8_t *buf, size_t len, int64_t *v)
{
    size_t lim = len < 19 ? len : 19, i = 1;
    uint64_t n = 0;
    while (i < lim && (uint8_t)(buf[i] - '0') <= 9) n = n * 10 + (uint64_t)(buf[i++] - '0');
    if (i == 1 || i + 1 >= len || buf[i] != '\r' || buf[i + 1] != '\n' || (buf[1] == '0' && i > 2)) return -1;
    *v = (int64_t)n;
    return (long)i;
}

/* A blocking command's timeout argument longer than this is not read (msg.block_ms stays
 * MSG_BLOCK_FOREVER). */
#define REDIS_MAX_TIMEOUT_LEN 32
/* A blocking command's timeout p[0..n): a decimal number (a fraction and an exponent allowed) of
 * unit_ms (BLPOP's seconds: 1000; XREAD BLOCK's milliseconds: 1). *ms: the timeout in ms, rounded
 * up; 0, or one past 49 days (a uint32_t of ms), is MSG_BLOCK_FOREVER. Returns false (and leaves
 * *ms) when it is not such a number, or is negative: redis answers its error at once. */
bool redis_parse_timeout(const uint8_t *p, size_t n, uint32_t unit_ms, uint32_t *ms);

#endif
