/*
 * reload_req.h - a reload asked for by the manage port: the stats thread pushes one to the
 * master's inbox (INBOX_RELOAD_REQ) and waits for the master's one-line answer. Both sides hold a
 * reference; the last one frees it, so a request the asker gave up on (timeout, shutdown) is
 * still safe for the master to answer.
 *
 * Threads: created and waited on by the stats thread, answered by the master.
 */
#ifndef NC_RELOAD_REQ_H
#define NC_RELOAD_REQ_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#define RELOAD_ANSWER_MAX 4096

struct reload_req;

/* A new request with two references (the asker's and the master's). NULL when out of memory. */
struct reload_req *reload_req_create(void);
void reload_req_put(struct reload_req *r);
/* Master: the answer (one line, no line end; truncated to RELOAD_ANSWER_MAX - 1). */
void reload_req_answer(struct reload_req *r, const char *text);
/* Asker: waits up to timeout_ms for the answer, giving up early when *stop becomes true. Copies
 * the answer into out and returns true, or returns false (no answer). */
bool reload_req_wait(struct reload_req *r, unsigned timeout_ms, const atomic_bool *stop, char *out, size_t cap);

#endif
