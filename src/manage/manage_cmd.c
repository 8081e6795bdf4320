/*
 * manage_cmd.c - the manage port's command table and commands (see manage_cmd.h).
 *
 * Threads: the stats thread only.
 */
#include "config.h"
#include "manage/manage_cmd.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/clock.h"
#include "common/log.h"
#include "core/route.h"
#include "core/runtime.h"
#include "manage/hotkeys_json.h"
#include "manage/stats_json.h"
#include "manage/stats_prom.h"

#define MANAGE_MAX_ARGS 1024

struct manage_arg {
    const char *p;
    size_t len;
};

struct manage_cmd {
    const char *name;
    const char *sub;      /* a required first argument ("workers", "get", ...), or NULL */
    size_t min_args;      /* arguments after name (and sub) */
    size_t max_args;
    enum manage_rc (*run)(struct manage_ctx *ctx, const struct manage_arg *args, size_t nargs,
                          struct textbuf *out);
    const char *usage;
    const char *help;
    bool restricted;      /* changes state or shows key names: trusted or authenticated only */
};

int manage_ctx_init(struct manage_ctx *ctx, const struct stats_source *src)
{
    memset(ctx, 0, sizeof(*ctx));
    ctx->src = src;
    ctx->nlogs = src->nblocks;
    ctx->logs = calloc(src->nblocks ? src->nblocks : 1, sizeof(*ctx->logs));
    ctx->fresh = stats_snapshot_create(src);
    ctx->cached = stats_snapshot_create(src);
    if (ctx->logs == NULL || ctx->fresh == NULL || ctx->cached == NULL) {
        manage_ctx_deinit(ctx);
        return -ENOMEM;
    }
    for (size_t i = 0; i < src->nblocks; i++) ctx->logs[i] = &src->blocks[i]->slowlog;
    nc_ratelimit_init(&ctx->auth_fail_log, 0, 1);
    manage_ctx_refresh(ctx);
    return 0;
}

void manage_ctx_deinit(struct manage_ctx *ctx)
{
    free(ctx->logs);
    stats_snapshot_destroy(ctx->fresh);
    stats_snapshot_destroy(ctx->cached);
    memset(ctx, 0, sizeof(*ctx));
}

int manage_ctx_reshape(struct manage_ctx *ctx)
{
    struct stats_snapshot *fresh = stats_snapshot_create(ctx->src);
    struct stats_snapshot *cached = stats_snapshot_create(ctx->src);
    if (fresh == NULL || cached == NULL) {
        stats_snapshot_destroy(fresh);
        stats_snapshot_destroy(cached);
        return -ENOMEM;
    }
    stats_snapshot_destroy(ctx->fresh);
    stats_snapshot_destroy(ctx->cached);
    ctx->fresh = fresh;
    ctx->cached = cached;
    manage_ctx_refresh(ctx);
    return 0;
}

void manage_ctx_refresh(struct manage_ctx *ctx)
{
    stats_snapshot_take(ctx->cached, -1);
}

void manage_render_status(struct manage_ctx *ctx, struct textbuf *out, bool fresh)
{
    if (fresh) stats_snapshot_take(ctx->fresh, -1);
    stats_json_render(out, fresh ? ctx->fresh : ctx->cached);
}

void manage_render_latency(struct manage_ctx *ctx, struct textbuf *out)
{
    stats_snapshot_take(ctx->fresh, -1);
    stats_json_render_latency(out, ctx->fresh);
}

void manage_render_metrics(struct manage_ctx *ctx, struct textbuf *out)
{
    stats_snapshot_take(ctx->fresh, -1);
    stats_prom_render(out, ctx->fresh);
}

static enum manage_rc manage_error(struct textbuf *out, const char *msg)
{
    textbuf_addf(out, "ERR: %s\r\n", msg);
    return MANAGE_ERROR;
}

static enum manage_rc manage_status(struct manage_ctx *ctx, const struct manage_arg *args, size_t nargs,
                                    struct textbuf *out)
{
    (void)args;
    (void)nargs;
    manage_render_status(ctx, out, true);
    textbuf_adds(out, "\r\n");
    return MANAGE_OK;
}

static enum manage_rc manage_status_workers(struct manage_ctx *ctx, const struct manage_arg *args,
                                            size_t nargs, struct textbuf *out)
{
    (void)args;
    (void)nargs;
    textbuf_adds(out, "{\"workers\":[");
    for (size_t i = 0; i < ctx->src->nblocks; i++) {
        if (i > 0) textbuf_addc(out, ',');
        stats_snapshot_take(ctx->fresh, (long)i);
        stats_json_render(out, ctx->fresh);
    }
    textbuf_adds(out, "]}\r\n");
    return MANAGE_OK;
}

static enum manage_rc manage_status_latency(struct manage_ctx *ctx, const struct manage_arg *args,
                                            size_t nargs, struct textbuf *out)
{
    (void)args;
    (void)nargs;
    manage_render_latency(ctx, out);
    textbuf_adds(out, "\r\n");
    return MANAGE_OK;
}

static struct pool_shared *manage_find_pool(const struct manage_ctx *ctx, const struct manage_arg *a)
{
    const struct runtime *rt = ctx->src->rt;
    for (size_t i = 0; i < rt->npools; i++) {
        const char *name = rt->pools[i].cp->name;
        if (strlen(name) == a->len && memcmp(name, a->p, a->len) == 0) return &rt->pools[i];
    }
    return NULL;
}

static enum manage_rc manage_find_keys(struct manage_ctx *ctx, const struct manage_arg *args, size_t nargs,
                                       struct textbuf *out)
{
    struct pool_shared *p = manage_find_pool(ctx, &args[0]);
    if (p == NULL) {
        textbuf_adds(out, "ERR: pool doesn't exist!\r\n");
        return MANAGE_ERROR;
    }
    for (size_t i = 1; i < nargs; i++) {
        uint32_t s = pool_route(p, (const uint8_t *)args[i].p, args[i].len);
        if (s == DIST_NONE || s >= p->cp->nservers) {
            textbuf_adds(out, "ERR: no live server for the key\r\n");
            continue;
        }
        const struct conf_server *cs = &p->cp->servers[s];
        if (p->source_ops->start == NULL) {
            textbuf_addf(out, "%s %s\r\n", cs->pname, cs->stats_name);
            continue;
        }
        struct route *r = pool_route_get(p); /* a source moves servers: where it is now */
        const struct topo_server *ts = s < r->set->nservers ? &r->set->servers[s] : NULL;
        if (ts != NULL && ts->addr.port != 0) textbuf_addf(out, "%s:%u %s\r\n", ts->addr.text, ts->weight, cs->stats_name);
        else textbuf_addf(out, "%s %s\r\n", cs->pname, cs->stats_name);
        route_put(r);
    }
    return MANAGE_OK;
}

/* Whether a is a count: decimal digits, > 0 (*v then). */
static bool manage_count(const struct manage_arg *a, unsigned long long *v)
{
    char num[24];
    char *end;
    if (a->len == 0 || a->len >= sizeof(num)) return false;
    memcpy(num, a->p, a->len);
    num[a->len] = '\0';
    errno = 0;
    *v = strtoull(num, &end, 10);
    return *end == '\0' && errno == 0 && *v != 0 && num[0] != '-';
}

/* "slowlog get [n]": n > 0, at most every entry the rings can hold */
static enum manage_rc manage_slowlog_get(struct manage_ctx *ctx, const struct manage_arg *args, size_t nargs,
                                         struct textbuf *out)
{
    size_t cap = ctx->nlogs * STATS_SLOWLOG_CAP;
    size_t want = MANAGE_SLOWLOG_GET_DEFAULT;
    if (nargs == 1) {
        unsigned long long v;
        if (!manage_count(&args[0], &v)) return manage_error(out, "usage: slowlog get [n]");
        want = v < cap ? (size_t)v : cap;
    }
    if (want > cap) want = cap;
    struct stats_slow_entry *e = malloc((want ? want : 1) * sizeof(*e));
    if (e == NULL) return manage_error(out, "out of memory");
    size_t n = stats_slowlog_collect(ctx->logs, ctx->nlogs, e, want);
    for (size_t i = 0; i < n; i++) {
        const char *server = e[i].server != NULL ? e[i].server : "?";
        const char *pool = e[i].pool != NULL ? e[i].pool : "?";
        textbuf_addf(out, "%zu) id=%lu worker=%u time=%lu.%06lu duration_us=%lu pool=\"", i + 1,
                       (unsigned long)e[i].id, e[i].worker, (unsigned long)(e[i].start_usec / 1000000u),
                       (unsigned long)(e[i].start_usec % 1000000u), (unsigned long)e[i].duration_usec);
        textbuf_add_quoted(out, (const uint8_t *)pool, strlen(pool));
        textbuf_adds(out, "\" server=\"");
        textbuf_add_quoted(out, (const uint8_t *)server, strlen(server));
        textbuf_adds(out, "\" command=\"");
        textbuf_add_quoted(out, (const uint8_t *)e[i].cmd, e[i].cmd_len);
        textbuf_addc(out, '"');
        if (e[i].has_key) {
            size_t kl = e[i].key_len < STATS_SLOWLOG_KEY_MAX ? e[i].key_len : STATS_SLOWLOG_KEY_MAX;
            textbuf_adds(out, " key=\"");
            textbuf_add_quoted(out, e[i].key, kl);
            textbuf_addf(out, "\" key_len=%u", e[i].key_len);
        }
        textbuf_adds(out, "\r\n");
    }
    free(e);
    textbuf_adds(out, "END\r\n");
    return MANAGE_OK;
}

/* "hotkeys [pool [n]]": every pool's (or one pool's) hottest keys, n (default 10) at most */
static enum manage_rc manage_hotkeys(struct manage_ctx *ctx, const struct manage_arg *args, size_t nargs,
                                     struct textbuf *out)
{
    const struct pool_shared *only = NULL;
    size_t want = HOTKEYS_SHOW_DEFAULT;
    if (nargs >= 1 && (only = manage_find_pool(ctx, &args[0])) == NULL) {
        textbuf_adds(out, "ERR: pool doesn't exist!\r\n");
        return MANAGE_ERROR;
    }
    if (nargs == 2) {
        unsigned long long v;
        if (!manage_count(&args[1], &v)) return manage_error(out, "usage: hotkeys [<pool> [n]]");
        want = v < HOTKEYS_TOP ? (size_t)v : HOTKEYS_TOP;
    }
    if (hotkeys_json_render(out, ctx->src->rt, only, want, ctx->src->hotkeys_every, nc_usec_now()) < 0)
        return manage_error(out, "out of memory");
    textbuf_adds(out, "\r\n");
    return MANAGE_OK;
}

static enum manage_rc manage_slowlog_len(struct manage_ctx *ctx, const struct manage_arg *args, size_t nargs,
                                         struct textbuf *out)
{
    (void)args;
    (void)nargs;
    textbuf_addf(out, "%zu\r\n", stats_slowlog_len(ctx->logs, ctx->nlogs));
    return MANAGE_OK;
}

static enum manage_rc manage_slowlog_reset(struct manage_ctx *ctx, const struct manage_arg *args,
                                           size_t nargs, struct textbuf *out)
{
    (void)args;
    (void)nargs;
    stats_slowlog_reset(ctx->logs, ctx->nlogs);
    textbuf_adds(out, "OK\r\n");
    return MANAGE_OK;
}

static enum manage_rc manage_help(struct manage_ctx *ctx, const struct manage_arg *args, size_t nargs,
                                  struct textbuf *out);

static enum manage_rc manage_reload(struct manage_ctx *ctx, const struct manage_arg *args, size_t nargs,
                                    struct textbuf *out)
{
    (void)args;
    (void)nargs;
    if (ctx->reload == NULL) return manage_error(out, "reload is not available");
    size_t before = out->len;
    ctx->reload(ctx->reload_arg, out);
    return out->len > before && out->data[before] == 'E' ? MANAGE_ERROR : MANAGE_OK;
}

static enum manage_rc manage_auth_cmd(struct manage_ctx *ctx, const struct manage_arg *args, size_t nargs,
                                      struct textbuf *out)
{
    (void)nargs;
    struct manage_session *sess = ctx->session;
    if (ctx->auth == NULL || ctx->auth->pw.len == 0)
        return manage_error(out, "no manage password is set (--manage-auth-file)");
    if (!manage_auth_check(ctx->auth, args[0].p, args[0].len)) {
        sess->authed = false;
        uint64_t sup;
        /* a client trying passwords in a loop: one line per -L interval, counting the others */
        if (nc_ratelimit_allow(&ctx->auth_fail_log, nc_usec_now(), &sup))
            log_warn("manage port: a wrong password from %s%s", sess->peer != NULL ? sess->peer : "?",
                     NC_RATELIMIT_NOTE(sup));
        return manage_error(out, "invalid password");
    }
    sess->authed = true;
    textbuf_adds(out, "OK\r\n");
    return MANAGE_OK;
}

/* A restricted command from a session that may not run it: say why and what would do. */
static enum manage_rc manage_refuse(struct manage_ctx *ctx, const struct manage_cmd *c, struct textbuf *out)
{
    const char *trust = ctx->auth != NULL ? ctx->auth->trust_text : "none";
    textbuf_addf(out, "ERR: '%s%s%s' is refused: it needs a trusted client (a unix socket, or an address in "
                        "--manage-trust: %s)", c->name, c->sub != NULL ? " " : "", c->sub != NULL ? c->sub : "", trust);
    if (ctx->auth != NULL && ctx->auth->pw.len > 0) textbuf_adds(out, " or 'auth <password>' first\r\n");
    else textbuf_adds(out, ", and no manage password is set (--manage-auth-file)\r\n");
    return MANAGE_ERROR;
}

static enum manage_rc manage_quit(struct manage_ctx *ctx, const struct manage_arg *args, size_t nargs,
                                  struct textbuf *out)
{
    (void)ctx;
    (void)args;
    (void)nargs;
    (void)out;
    return MANAGE_QUIT;
}

/* the order of `help`; a form with a subcommand is matched only when the subcommand is there */
static const struct manage_cmd manage_cmds[] = {
    { "status", NULL, 0, 0, manage_status, "status",
      "stats of every pool and server, summed over the workers (JSON)", false },
    { "status", "workers", 0, 0, manage_status_workers, "status workers",
      "the same for each worker: {\"workers\":[...]}", false },
    { "status", "latency", 0, 0, manage_status_latency, "status latency",
      "latency histograms of every pool and server (JSON)", false },
    { "find_key", NULL, 2, 2, manage_find_keys, "find_key <pool> <key>",
      "the server owning key: host:port:weight name", false },
    { "find_keys", NULL, 2, MANAGE_MAX_ARGS, manage_find_keys, "find_keys <pool> <key>...",
      "one such line per key", false },
    { "slowlog", "get", 0, 1, manage_slowlog_get, "slowlog get [n]",
      "the n (default 10) newest slow requests, newest first, then END", true },
    { "slowlog", "len", 0, 0, manage_slowlog_len, "slowlog len", "how many slow requests are held", false },
    { "slowlog", "reset", 0, 0, manage_slowlog_reset, "slowlog reset", "forget them", true },
    { "hotkeys", NULL, 0, 2, manage_hotkeys, "hotkeys [<pool> [n]]",
      "the n (default 10) hottest keys of every pool or of one, requests/s over 3 s (JSON)", true },
    { "reload", NULL, 0, 0, manage_reload, "reload",
      "re-read the config file and apply it: OK generation N, or ERR: why", true },
    { "auth", NULL, 1, 1, manage_auth_cmd, "auth <password>",
      "allow the * commands on this connection (--manage-auth-file)", false },
    { "help", NULL, 0, 0, manage_help, "help", "this list", false },
    { "quit", NULL, 0, 0, manage_quit, "quit", "close the connection", false },
};

static enum manage_rc manage_help(struct manage_ctx *ctx, const struct manage_arg *args, size_t nargs,
                                  struct textbuf *out)
{
    (void)ctx;
    (void)args;
    (void)nargs;
    textbuf_adds(out, "*****\r\n");
    for (size_t i = 0; i < sizeof(manage_cmds) / sizeof(manage_cmds[0]); i++)
        textbuf_addf(out, "%-26s %s%s\r\n", manage_cmds[i].usage, manage_cmds[i].restricted ? "* " : "",
                       manage_cmds[i].help);
    textbuf_addf(out, "%-26s %s\r\n", "GET /metrics HTTP/1.1", "Prometheus text format");
    textbuf_addf(out, "%-26s %s\r\n", "GET / HTTP/1.1", "the status JSON over HTTP");
    textbuf_addf(out, "%-26s %s\r\n", "GET /latency HTTP/1.1", "the status latency JSON over HTTP");
    textbuf_addf(out, "%-26s %s\r\n", "GET /healthz HTTP/1.1", "200 when every pool has a live server, else 503");
    textbuf_adds(out, "(a client that sends nothing gets the JSON of the last -i interval)\r\n");
    textbuf_adds(out, "(* changes state or shows keys: only from a unix socket or a --manage-trust address\r\n"
                        " (loopback by default), or after 'auth <password>' (--manage-auth-file))\r\n");
    textbuf_adds(out, "*****\r\n");
    return MANAGE_OK;
}

static bool manage_word_is(const struct manage_arg *a, const char *w)
{
    return strlen(w) == a->len && strncasecmp(a->p, w, a->len) == 0;
}

static size_t manage_split(const char *line, size_t len, struct manage_arg *args, size_t max)
{
    size_t n = 0, i = 0;
    while (i < len) {
        while (i < len && (line[i] == ' ' || line[i] == '\t')) i++;
        if (i == len) break;
        size_t start = i;
        while (i < len && line[i] != ' ' && line[i] != '\t') i++;
        if (n == max) return max + 1;
        args[n].p = line + start;
        args[n].len = i - start;
        n++;
    }
    return n;
}

enum manage_rc manage_exec(struct manage_ctx *ctx, struct manage_session *sess, const char *line, size_t len,
                           struct textbuf *out)
{
    struct manage_arg args[MANAGE_MAX_ARGS + 2];
    size_t n = manage_split(line, len, args, MANAGE_MAX_ARGS + 2);
    enum manage_rc rc;
    if (n == 0) {
        rc = MANAGE_OK; /* an empty line: nothing to do */
        goto out;
    }
    if (n > MANAGE_MAX_ARGS + 1) {
        rc = manage_error(out, "too many arguments");
        goto out;
    }
    const struct manage_cmd *known = NULL;
    for (size_t i = 0; i < sizeof(manage_cmds) / sizeof(manage_cmds[0]); i++) {
        const struct manage_cmd *c = &manage_cmds[i];
        if (!manage_word_is(&args[0], c->name)) continue;
        known = c;
        size_t skip = 1;
        if (c->sub != NULL) {
            if (n < 2 || !manage_word_is(&args[1], c->sub)) continue;
            skip = 2;
        }
        size_t nargs = n - skip;
        if (nargs < c->min_args || nargs > c->max_args) {
            if (c->sub == NULL && c->max_args == 0 && nargs > 0) continue; /* "status foo" */
            textbuf_addf(out, "ERR: usage: %s\r\n", c->usage);
            rc = MANAGE_ERROR;
            goto out;
        }
        if (c->restricted && !sess->trusted && !sess->authed) {
            rc = manage_refuse(ctx, c, out);
            goto out;
        }
        ctx->session = sess;
        rc = c->run(ctx, args + skip, nargs, out);
        ctx->session = NULL;
        goto out;
    }
    if (known != NULL) {
        /* a known word with a bad subcommand: show the forms of that command */
        textbuf_adds(out, "ERR: usage:");
        for (size_t i = 0; i < sizeof(manage_cmds) / sizeof(manage_cmds[0]); i++) {
            if (manage_word_is(&args[0], manage_cmds[i].name)) textbuf_addf(out, " '%s'", manage_cmds[i].usage);
        }
        textbuf_adds(out, "\r\n");
        rc = MANAGE_ERROR;
        goto out;
    }
    rc = manage_error(out, "unknown command, try 'help'");
out:
    return rc;
}
