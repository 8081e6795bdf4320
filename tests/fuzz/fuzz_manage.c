/*
 * fuzz_manage.c - the manage fuzz targets' world and client driver (see fuzz_manage.h).
 *
 * Threads: the fuzzer's only.
 */
#include "config.h"
#include "fuzz_manage.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/log.h"
#include "conf/conf.h"
#include "core/runtime.h"
#include "core/runtime_stats.h"
#include "fuzz_check.h"
#include "fuzz_check_text.h"
#include "manage/manage_conn.h" /* MANAGE_OUT_MAX */
#include "manage/manage_input.h"
#include "stats/stats.h"

#define FZM_WORKERS 2

struct fz_manage {
    struct conf *conf;
    struct runtime *rt;
    struct stats_worker *blocks[FZM_WORKERS];
    struct stats_source src;
    struct manage_ctx ctx;
    struct manage_auth auth;   /* loopback trusted (the client is not); the password per feed */
    unsigned reloads;          /* reload calls in this feed */
    size_t slow_len;           /* slow requests held once seeded */
    struct textbuf out;        /* one step's reply */
};

/* Two pools; the second one's name and a server name need escaping in JSON and Prometheus. */
static const char fzm_yaml[] =
    "alpha:\n"
    "  listen: 127.0.0.1:22121\n"
    "  redis: true\n"
    "  hash: fnv1a_64\n"
    "  hash_tag: \"{}\"\n"
    "  servers:\n"
    "   - 127.0.0.1:6379:1 s1\n"
    "   - 127.0.0.1:6380:1 s2\n"
    "   - 127.0.0.1:6381:2 s3\n"
    "\"b\\u00e9ta\\\"q\\\\\":\n"
    "  listen: 127.0.0.1:22122\n"
    "  distribution: modula\n"
    "  servers:\n"
    "   - 127.0.0.1:11211:1\n"
    "   - \"127.0.0.1:11212:1 odd\\\"name\"\n";

/* the manage ctx's reload: only an authenticated session may get here */
static void fzm_reload(void *arg, struct textbuf *out)
{
    struct fz_manage *m = arg;
    FZ_CHECK(m->ctx.session != NULL && !m->ctx.session->trusted && m->ctx.session->authed);
    FZ_CHECK(m->auth.pw.len > 0);
    m->reloads++;
    if (m->reloads % 2 == 1) textbuf_addf(out, "OK generation %u\r\n", m->reloads + 1);
    else textbuf_adds(out, "ERR: reload failed (still serving generation 1): fuzz\r\n");
}

/* Slow requests in every worker's ring: keys with the mark, odd bytes, a key longer than kept. */
static void fzm_seed_slowlogs(struct fz_manage *m)
{
    static char long_key[200];
    memset(long_key, 'k', sizeof(long_key));
    memcpy(long_key, FZM_KEY_MARK, strlen(FZM_KEY_MARK));
    static const char k1[] = FZM_KEY_MARK ":1", k2[] = FZM_KEY_MARK "\0\"\\\xff\xc3\xa9\r\n";
    const struct stats_slow_req rows[] = {
        { 1500, "alpha", "s1", (const uint8_t *)"GET", 3, (const uint8_t *)k1, sizeof(k1) - 1 },
        { 20000, "alpha", STATS_SLOW_MANY, (const uint8_t *)"MGET", 4, (const uint8_t *)k2, sizeof(k2) - 1 },
        { 999, "alpha", STATS_SLOW_NONE, (const uint8_t *)"PING", 4, NULL, 0 },
        { 7, NULL, NULL, (const uint8_t *)"x\r\n\"y\\", 6, (const uint8_t *)long_key, sizeof(long_key) },
    };
    for (size_t w = 0; w < FZM_WORKERS; w++) { /* afresh: ids from 1 again, as every feed sees them */
        struct stats_slowlog *sl = &m->blocks[w]->slowlog;
        stats_slowlog_deinit(sl);
        FZ_CHECK(stats_slowlog_init(sl) == 0);
        stats_slowlog_configure(sl, (uint32_t)w, 1000);
        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
            stats_slowlog_record(&m->blocks[w]->slowlog, &rows[i], 1700000000000000ull + w * 10 + i);
    }
    m->slow_len = stats_slowlog_len(m->ctx.logs, m->ctx.nlogs);
    FZ_CHECK(m->slow_len == FZM_WORKERS * sizeof(rows) / sizeof(rows[0]));
}

struct fz_manage *fz_manage_get(void)
{
    static struct fz_manage *m;
    if (m != NULL) return m;
    log_level_set(LOG_EMERG); /* the wrong-password warnings */
    m = calloc(1, sizeof(*m));
    FZ_CHECK(m != NULL);
    m->conf = conf_load_string(fzm_yaml, strlen(fzm_yaml), "fuzz.yml", NULL, NULL);
    FZ_CHECK(m->conf != NULL);
    m->rt = runtime_create(m->conf, NULL, FZM_WORKERS);
    FZ_CHECK(m->rt != NULL);
    for (size_t i = 0; i < FZM_WORKERS; i++) {
        m->blocks[i] = stats_worker_create();
        FZ_CHECK(m->blocks[i] != NULL);
    }
    FZ_CHECK(stats_bind(m->rt, m->blocks, FZM_WORKERS) == 0);
    m->src.rt = m->rt;
    m->src.blocks = m->blocks;
    m->src.nblocks = FZM_WORKERS;
    strcpy(m->src.host, "fuzz-host");
    FZ_CHECK(manage_ctx_init(&m->ctx, &m->src) == 0);
    char err[128];
    FZ_CHECK(manage_auth_set_trust(&m->auth, MANAGE_TRUST_DEFAULT, err, sizeof(err)) == 0);
    m->ctx.auth = &m->auth;
    m->ctx.reload = fzm_reload;
    m->ctx.reload_arg = m;
    textbuf_init(&m->out, MANAGE_OUT_MAX);
    fzm_seed_slowlogs(m);
    return m;
}

struct manage_ctx *fz_manage_ctx(struct fz_manage *m)
{
    m->auth.pw.len = 0;
    return &m->ctx;
}

/* One client being played. */
struct fzm_client {
    struct fz_manage *m;
    const uint8_t *data;
    size_t size, fed;
    struct manage_input *in;
    struct fz_run *run;
    int http_status;   /* what the pending HTTP request's response must be */
    bool http_head;
};

/* The state before a step. */
struct fzm_before {
    size_t pos;        /* stream offset of the next line */
    bool http, authed;
    unsigned errors, reloads;
    size_t slow;       /* slow requests held */
};

static void fzm_before(const struct fzm_client *c, struct fzm_before *b)
{
    b->pos = c->fed - c->in->inlen;
    b->http = c->in->http;
    b->authed = c->in->sess.authed;
    b->errors = c->in->errors;
    b->reloads = c->m->reloads;
    b->slow = stats_slowlog_len(c->m->ctx.logs, c->m->ctx.nlogs);
}

/* "auth <password>": two words (spaces or tabs around them), the first "auth" in any case. */
static bool fzm_is_auth(const char *line, size_t len)
{
    const char *w[3];
    size_t wl[3], n = 0, i = 0;
    while (i < len && n < 3) {
        while (i < len && (line[i] == ' ' || line[i] == '\t')) i++;
        if (i == len) break;
        w[n] = line + i;
        while (i < len && line[i] != ' ' && line[i] != '\t') i++;
        wl[n] = (size_t)(line + i - w[n]);
        n++;
    }
    return n == 2 && wl[0] == 4 && strncasecmp(w[0], "auth", 4) == 0 && wl[1] == strlen(FZM_PASSWORD) &&
           memcmp(w[1], FZM_PASSWORD, wl[1]) == 0;
}

/* The line that ran (its line end removed): who may authenticate, what starts HTTP. */
static void fzm_check_line(struct fzm_client *c, const struct fzm_before *b, const char *line, size_t len)
{
    struct manage_input *in = c->in;
    FZ_CHECK(len < MANAGE_LINE_MAX);
    if (!b->authed && in->sess.authed) FZ_CHECK(c->m->auth.pw.len > 0 && fzm_is_auth(line, len));
    if (b->http) return;
    if (c->m->auth.pw.len > 0 && fzm_is_auth(line, len)) FZ_CHECK(in->sess.authed); /* and it does */
    bool head = false;
    int status = fz_http_ref_status(line, len, &head);
    FZ_CHECK(in->http == (status != 0));
    if (status == 0) return;
    c->http_status = status;
    c->http_head = head;
    FZ_CHECK(memchr(in->http_req.method, '\0', sizeof(in->http_req.method)) != NULL);
    FZ_CHECK(memchr(in->http_req.path, '\0', sizeof(in->http_req.path)) != NULL);
}

/* Appends the reply, reduced to what does not depend on the clock, to the run's transcript. */
static void fzm_note(struct fz_run *run, const char *reply, size_t len, bool http)
{
    if (http) textbuf_add(&run->norm, reply, (size_t)((const char *)memchr(reply, '\r', len) - reply));
    else if (reply[0] == '{') textbuf_adds(&run->norm, "{}");
    else textbuf_add(&run->norm, reply, len);
    textbuf_addc(&run->norm, '\x01');
    run->replies++;
}

/* The reply of a step, and what the step may change. */
static void fzm_check_reply(struct fzm_client *c, const struct fzm_before *b, bool too_long)
{
    struct manage_input *in = c->in;
    struct fz_manage *m = c->m;
    const char *reply = m->out.data;
    size_t rlen = m->out.len;
    FZ_CHECK(!textbuf_failed(&m->out) && !in->sess.trusted);
    if (!b->authed) { /* (a line cannot both authenticate and run a restricted command) */
        FZ_CHECK(m->reloads == b->reloads);
        FZ_CHECK(stats_slowlog_len(m->ctx.logs, m->ctx.nlogs) == b->slow);
        FZ_CHECK(rlen == 0 || memmem(reply, rlen, FZM_KEY_MARK, strlen(FZM_KEY_MARK)) == NULL);
    }
    FZ_CHECK(in->errors <= MANAGE_MAX_ERRORS && in->errors - b->errors <= 1);
    if (in->errors > b->errors) {
        FZ_CHECK(rlen > 5 && memcmp(reply, "ERR: ", 5) == 0);
        static const char last[] = "ERR: too many errors, closing\r\n";
        if (in->errors == MANAGE_MAX_ERRORS)
            FZ_CHECK(in->close_after && rlen >= sizeof(last) - 1 &&
                     memcmp(reply + rlen - (sizeof(last) - 1), last, sizeof(last) - 1) == 0);
    }
    if (rlen == 0) return;
    if (!in->http) {
        fz_check_cmd_reply(reply, rlen);
        fzm_note(c->run, reply, rlen, false);
        return;
    }
    /* an HTTP response closes the connection; 431 is for too many or too long header lines */
    bool e431 = too_long || in->http_headers > MANAGE_HTTP_MAX_HEADERS;
    int status = fz_check_http_response(reply, rlen, c->http_head);
    FZ_CHECK(status == (e431 ? 431 : c->http_status) && in->close_after);
    FZ_CHECK(++c->run->http_responses == 1);
    fzm_note(c->run, reply, rlen, true);
}

/* Runs the next complete line (or the too-long reply); false when more bytes are needed. */
static bool fzm_step(struct fzm_client *c)
{
    struct fzm_before b;
    fzm_before(c, &b);
    textbuf_reset(&c->m->out);
    if (!manage_input_step(&c->m->ctx, c->in, &c->m->out)) {
        FZ_CHECK(c->m->out.len == 0 && c->in->inlen < MANAGE_LINE_MAX && !manage_input_has_line(c->in));
        return false;
    }
    const uint8_t *start = c->data + b.pos;
    const uint8_t *lf = memchr(start, '\n', c->fed - b.pos);
    if (lf == NULL) { /* a line longer than the buffer */
        FZ_CHECK(c->fed - b.pos == MANAGE_LINE_MAX && c->in->inlen == 0 && c->in->close_after);
        static const char too_long[] = "ERR: line too long (the limit is 4096 bytes)\r\n";
        if (!b.http)
            FZ_CHECK(c->m->out.len == sizeof(too_long) - 1 && memcmp(c->m->out.data, too_long, c->m->out.len) == 0);
        fzm_check_reply(c, &b, true);
        return true;
    }
    FZ_CHECK(c->fed - c->in->inlen == (size_t)(lf - c->data) + 1);
    size_t len = (size_t)(lf - start);
    if (len > 0 && start[len - 1] == '\r') len--;
    fzm_check_line(c, &b, (const char *)start, len);
    fzm_check_reply(c, &b, false);
    return true;
}

/* The client closes its side after the last byte. */
static void fzm_eof(struct fzm_client *c)
{
    struct fzm_before b;
    fzm_before(c, &b);
    size_t len = c->size - b.pos;
    textbuf_reset(&c->m->out);
    manage_input_eof(&c->m->ctx, c->in, &c->m->out);
    FZ_CHECK(c->in->close_after && c->in->inlen == 0);
    if (len > 0) {
        const char *line = (const char *)c->data + b.pos;
        if (line[len - 1] == '\r') len--;
        fzm_check_line(c, &b, line, len);
    }
    if (c->size == 0) FZ_CHECK(c->m->out.len > 0 && c->m->out.data[0] == '{'); /* the silent client's */
    fzm_check_reply(c, &b, false);
}

void fz_manage_feed(struct fz_manage *m, const uint8_t *data, size_t size, const uint8_t *reads,
                    size_t nreads, bool password, struct fz_run *run)
{
    if (stats_slowlog_len(m->ctx.logs, m->ctx.nlogs) != m->slow_len) fzm_seed_slowlogs(m);
    m->reloads = 0;
    m->auth.pw.len = password ? strlen(FZM_PASSWORD) : 0;
    memcpy(m->auth.pw.text, FZM_PASSWORD, sizeof(FZM_PASSWORD));
    memset(run, 0, sizeof(*run));
    textbuf_init(&run->norm, 0);
    struct fzm_client c = { .m = m, .data = data, .size = size, .run = run };
    c.in = calloc(1, sizeof(*c.in));
    FZ_CHECK(c.in != NULL);
    c.in->sess.peer = "fuzz";
    for (size_t k = 0;;) {
        while (!c.in->close_after && fzm_step(&c)) continue;
        if (c.in->close_after) {
            run->closed = true;
            break;
        }
        if (c.fed == size) {
            fzm_eof(&c);
            break;
        }
        size_t room;
        char *at = manage_input_room(c.in, &room);
        FZ_CHECK(room > 0); /* a full buffer without a line end was answered */
        size_t n = nreads > 0 ? reads[k++ % nreads] : 0;
        if (n == 0 || n > room) n = room;
        if (n > size - c.fed) n = size - c.fed;
        memcpy(at, data + c.fed, n);
        manage_input_received(c.in, n);
        c.fed += n;
    }
    run->consumed = c.fed - c.in->inlen;
    free(c.in);
}

void fz_run_free(struct fz_run *run)
{
    textbuf_deinit(&run->norm);
}
