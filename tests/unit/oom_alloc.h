/*
 * oom_alloc.h - allocation failures for the unit tests linked with NC_UNIT_OOM_WRAP
 * (-Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc, Makefile.am): every malloc, calloc and realloc
 * of the test and of the library goes through oom_alloc.c, which fails the k-th one when asked
 * (and, if asked, every later one too). Also the pools and the one-message parses those tests
 * share (test_memcache_oom, test_redis_oom).
 *
 * Threads: the test's only.
 */
#ifndef NC_TEST_OOM_ALLOC_H
#define NC_TEST_OOM_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "msg/mbuf.h"
#include "msg/msg.h"
#include "proto/proto.h"

/* From now on, allocations number k, k + 1, ... fail (k == 0: the next one already); k < 0: none.
 * Code that goes on after a failure then meets more of them. */
void oom_fail_after(long k);
/* From now on, allocation number k alone fails: code that goes on after a failure finds memory
 * again (a result it then builds without the part that failed is a bug). */
void oom_fail_once(long k);
/* No allocation fails any more. */
void oom_stop(void);
/* Whether an allocation failed since the last oom_fail_after or oom_fail_once (false: k was past
 * the allocations made). */
bool oom_failed(void);

/* The pools of one case. The msg pool keeps no free msg: every msg_get allocates. */
struct oom_pools {
    struct mbuf_pool mp;
    struct msg_pool pp;
};
void oom_pools_init(struct oom_pools *c, size_t chunk_size);
/* Checks that every mbuf and msg went back, then frees the pools. */
void oom_pools_deinit(struct oom_pools *c);

/* Parses the whole message s (rsp: a reply, its top-level elements recorded) into a new msg of
 * c's pools, with no failure; the msg holds its bytes. */
struct msg *oom_parse(struct oom_pools *c, const struct proto_ops *ops, const char *s, size_t n, bool rsp);
/* The same with the parse state's opts (a reply: its request's rsp_opts). */
struct msg *oom_parse_opts(struct oom_pools *c, const struct proto_ops *ops, const char *s, size_t n, bool rsp,
                           uint8_t opts);

/* Parses the whole message text with allocations failing from the k-th on (rsp: a reply, its
 * top-level elements recorded). The parser must finish (PARSE_DONE, every byte consumed) or stop
 * with PARSE_ERROR "out of memory", leaving nothing allocated. Returns its rc, and in *count (unless
 * NULL) the keys (a request) or elements (a reply) it recorded. */
int oom_parse_at(const struct proto_ops *ops, const char *text, bool rsp, long k, uint32_t *count);
/* The same with text[0..n), which may hold NUL bytes (a binary protocol's). */
int oom_parse_bytes_at(const struct proto_ops *ops, const char *text, size_t n, bool rsp, long k, uint32_t *count);

#endif
