/*
 * fuzz_manage.h - what the manage fuzz targets share: the manage port's world, built once (a
 * config of two pools, its runtime, two workers' counter blocks with slow requests in their
 * slowlogs, the stats source, a manage_ctx whose reload is a stub that records its calls), and a
 * driver that plays one client's bytes through src/manage/manage_input.c as manage_conn.c does:
 * reads of chosen sizes into the line buffer, every complete line run, each reply checked (and
 * taken as written), the client's close at the end of the input.
 *
 * The client is never trusted (a TCP peer outside --manage-trust). Either no manage password is
 * set, or FZM_PASSWORD is, and then `auth FZM_PASSWORD` lets the session run the restricted
 * commands. What the driver checks at every step:
 *   - a line that ran is the stream's bytes up to the next LF, at most MANAGE_LINE_MAX bytes with
 *     it; a line that does not fit gets the too-long reply (431 in HTTP) and the connection closes;
 *   - command replies are CRLF lines of UTF-8 text, JSON documents parse (fuzz_check_text.h);
 *     HTTP responses are whole, with the status the reference reading of the request line gives,
 *     or 431 past MANAGE_HTTP_MAX_HEADERS headers;
 *   - an error reply counts, and the MANAGE_MAX_ERRORS-th closes the connection;
 *   - restricted commands are refused to a session that has not authenticated: reload is never
 *     called, the slowlogs keep their entries, no reply shows the slow requests' keys; a session
 *     becomes authenticated only by the line `auth <the password>`.
 *
 * Threads: the fuzzer's only.
 */
#ifndef NC_FUZZ_MANAGE_H
#define NC_FUZZ_MANAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/textbuf.h"

#define FZM_PASSWORD "fz-Pa55-w0rd"
#define FZM_KEY_MARK "fz-slow-key"  /* in every slow request's key: only a trusted reply shows it */

struct fz_manage;

struct manage_ctx;

/* The world, built on the first call. */
struct fz_manage *fz_manage_get(void);
/* Its manage context (no password set, between feeds). */
struct manage_ctx *fz_manage_ctx(struct fz_manage *m);

/* What one client got: its replies in order, each reduced to what does not depend on the clock
 * (a JSON document to "{}", an HTTP response to its status line), for comparing two runs of the
 * same bytes read differently. */
struct fz_run {
    struct textbuf norm;
    size_t consumed;   /* stream bytes taken when the connection closed (all of them: the input) */
    unsigned replies;
    unsigned http_responses;
    bool closed;       /* closed before the end of the input */
};

/* Plays data as one client: reads of reads[0], reads[1], ... bytes in turn (0: as much as the
 * line buffer takes), then the close. password: whether FZM_PASSWORD is set. */
void fz_manage_feed(struct fz_manage *m, const uint8_t *data, size_t size, const uint8_t *reads,
                    size_t nreads, bool password, struct fz_run *run);

void fz_run_free(struct fz_run *run);

#endif
