/*
 * manage_cmd.h - the manage port's commands: one text line in, a reply appended to a buffer.
 *
 *   status                  the stats JSON (twemproxy's document, "service":"nutcrackers"), fresh
 *   status workers          {"workers":[...]}: the same document for each worker
 *   status latency          the latency histograms (stats_json.h), fresh
 *   find_key <pool> <key>   "host:port:weight name" of the server owning key
 *   find_keys <pool> <k...> one such line per key
 *   slowlog get [n]         the n (default 10) newest slow requests of all workers, newest first
 *   slowlog len | reset     how many are held | forget them
 *   hotkeys [<pool> [n]]    the hottest keys of every pool (or of one), n each (hotkeys_json.h)
 *   reload                  re-read the config file: "OK generation N" or "ERR: reload failed ..."
 *   auth <password>         lets this connection run the restricted commands (manage_auth.h)
 *   help | quit
 *
 * Restricted (they change state or show key names): slowlog get, slowlog reset, hotkeys, reload.
 * They run only for a session that is trusted or authenticated; others get "ERR: '<cmd>' is
 * refused: ..." naming why and what to do.
 *
 * Commands are matched case-insensitively; arguments are separated by spaces or tabs. Every
 * reply line ends with CRLF; errors are one line starting with "ERR:".
 *
 * Threads: the stats thread (it owns the context and its snapshots); reads the shared immutable
 * runtime and the worker blocks.
 */
#ifndef NC_MANAGE_CMD_H
#define NC_MANAGE_CMD_H

#include <stddef.h>

#include "common/ratelimit.h"
#include "manage/manage_auth.h"
#include "manage/text_escape.h"
#include "manage/stats_snapshot.h"
#include "stats/stats_slowlog.h"

#define MANAGE_SLOWLOG_GET_DEFAULT 10

/* One connection's standing (manage_auth.h). */
struct manage_session {
    bool trusted;        /* a unix socket, or a TCP peer in the trusted networks */
    bool authed;         /* sent the right `auth <password>` */
    const char *peer;    /* its address, for the log (may be NULL) */
};

struct manage_ctx {
    const struct stats_source *src;
    struct stats_slowlog **logs;     /* every worker's ring */
    size_t nlogs;
    struct stats_snapshot *fresh;    /* taken for each status / metrics request */
    struct stats_snapshot *cached;   /* taken every -i ms (what a silent client gets) */
    /* `reload`: asks the master and appends its answer line (NULL: not available) */
    void (*reload)(void *arg, struct textbuf *out);
    void *reload_arg;
    const struct manage_auth *auth;  /* trusted networks and password (NULL: none set) */
    struct nc_ratelimit auth_fail_log; /* the wrong-password lines (one per -L interval) */
    struct manage_session *session;  /* the session of the command running (manage_exec) */
};


enum manage_rc {
    MANAGE_OK,
    MANAGE_ERROR,   /* the reply is an error line */
    MANAGE_QUIT,    /* close the connection (after the reply, if any) */
};

/* Prepares a context over src (which must outlive it); takes the first cached snapshot. */
int manage_ctx_init(struct manage_ctx *ctx, const struct stats_source *src);
void manage_ctx_deinit(struct manage_ctx *ctx);
/* src->rt changed (a reload): new snapshots of its shape. Returns 0, or -ENOMEM (the old ones are
 * kept; the caller restores src->rt). */
int manage_ctx_reshape(struct manage_ctx *ctx);
/* The -i tick: refreshes the cached snapshot. */
void manage_ctx_refresh(struct manage_ctx *ctx);

/* Runs one command line (its line end already removed) for sess and appends the reply. */
enum manage_rc manage_exec(struct manage_ctx *ctx, struct manage_session *sess, const char *line, size_t len,
                           struct textbuf *out);

/* Body renderers shared with the HTTP side (no line end appended). */
void manage_render_status(struct manage_ctx *ctx, struct textbuf *out, bool fresh);
void manage_render_latency(struct manage_ctx *ctx, struct textbuf *out);
void manage_render_metrics(struct manage_ctx *ctx, struct textbuf *out);

#endif
