/*
 * manage_conn.c - manage port connection handling (see manage_conn.h).
 *
 * A client is in one of three states: READING (lines are read and run one by one, manage_input.h),
 * WRITING (a reply is pending; nothing is read) and LINGERING (its side is shut down; input is
 * drained and dropped until EOF, a byte limit or a timer). One timer per client serves the
 * silent-client wait, the idle timeout and the linger limit.
 *
 * Threads: the stats thread only.
 */
#include "config.h"
#include "manage/manage_conn.h"

#include <errno.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/accept_pause.h"
#include "common/log.h"
#include "common/sock.h"
#include "manage/manage_input.h"
#include "net/transport.h"

#define MANAGE_ACCEPTS_PER_EVENT 32
#define MANAGE_KEEP_BUF (64u << 10) /* reply buffer kept between replies */

enum manage_state { MC_READING, MC_WRITING, MC_LINGERING };

struct manage_client {
    TAILQ_ENTRY(manage_client) link;
    struct manage_server *ms;
    struct transport tr;    /* its socket (the plain transport: net/transport.h) */
    struct event *rev, *wev, *tev;
    struct event *pev;      /* "more lines are waiting": run the next one on the next loop turn */
    enum manage_state state;
    struct manage_input input; /* its line buffer, session and HTTP state (manage_input.h) */
    char peer[96];          /* its address, for the log */
    struct textbuf out;
    size_t out_off;
    size_t drained;
};

struct manage_server {
    struct event_base *base;
    struct transport ltr;   /* the listening socket */
    struct event *lev;
    struct accept_pause pause; /* out of fds: lev rests a while (common/accept_pause.h) */
    struct manage_ctx *ctx;
    TAILQ_HEAD(, manage_client) clients;
    uint32_t nclients;
};

static void manage_client_close(struct manage_client *c)
{
    struct manage_server *ms = c->ms;
    TAILQ_REMOVE(&ms->clients, c, link);
    ms->nclients--;
    if (c->rev) event_free(c->rev);
    if (c->wev) event_free(c->wev);
    if (c->tev) event_free(c->tev);
    if (c->pev) event_free(c->pev);
    transport_close(&c->tr);
    textbuf_deinit(&c->out);
    free(c);
}

static void manage_timer(struct manage_client *c, long msec)
{
    struct timeval tv = { .tv_sec = msec / 1000, .tv_usec = (msec % 1000) * 1000 };
    evtimer_add(c->tev, &tv);
}

static void manage_linger(struct manage_client *c)
{
    c->state = MC_LINGERING;
    transport_shutdown(&c->tr);
    event_del(c->wev);
    event_add(c->rev, NULL);
    manage_timer(c, MANAGE_LINGER_MSEC);
}

/* Writes what is pending; when all is written, lingers (close_after) or reads again. Returns false
 * when the client was closed. */
static bool manage_flush(struct manage_client *c)
{
    while (c->out_off < c->out.len) {
        ssize_t n = transport_write(&c->tr, c->out.data + c->out_off, c->out.len - c->out_off);
        if (n > 0) {
            c->out_off += (size_t)n;
            manage_timer(c, MANAGE_IDLE_SEC * 1000L);
            continue;
        }
        if (n == 0) { /* the socket is full */
            c->state = MC_WRITING;
            event_del(c->rev);
            event_add(c->wev, NULL);
            return true;
        }
        manage_client_close(c);
        return false;
    }
    if (c->out.cap > MANAGE_KEEP_BUF) { /* a big reply went out: give its memory back */
        textbuf_deinit(&c->out);
        textbuf_init(&c->out, MANAGE_OUT_MAX);
    } else {
        textbuf_reset(&c->out);
    }
    c->out_off = 0;
    event_del(c->wev);
    if (c->input.close_after) {
        manage_linger(c);
        return true;
    }
    c->state = MC_READING;
    event_add(c->rev, NULL);
    return true;
}

/* The reply is ready in c->out: send it (an error instead if rendering failed). Returns false
 * when the client was closed. */
static bool manage_reply(struct manage_client *c)
{
    if (textbuf_failed(&c->out)) {
        textbuf_reset(&c->out);
        textbuf_adds(&c->out, "ERR: the reply is too large or out of memory\r\n");
        c->input.close_after = true;
    }
    if (c->out.len == 0 && !c->input.close_after) return true;
    return manage_flush(c);
}

/* Runs the complete lines held in the input until one produces a reply; if more lines wait, the
 * next one runs on the next turn of the event loop, so every client gets its turn (one reply each). */
static void manage_process(struct manage_client *c)
{
    while (c->state == MC_READING && !c->input.close_after) {
        if (!manage_input_step(c->ms->ctx, &c->input, &c->out)) return;
        if (c->out.len > 0 || c->input.close_after) {
            if (manage_reply(c) && c->state == MC_READING && manage_input_has_line(&c->input))
                event_active(c->pev, EV_TIMEOUT, 1);
            return;
        }
    }
}

static void manage_on_pending(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    manage_process(arg);
}

/* The client closed its side: run a last unterminated line, or give a silent client the JSON. */
static void manage_on_eof(struct manage_client *c)
{
    manage_input_eof(c->ms->ctx, &c->input, &c->out);
    if (c->out.len == 0) {
        manage_client_close(c);
        return;
    }
    manage_reply(c);
}

static void manage_on_read(evutil_socket_t fd, short what, void *arg)
{
    struct manage_client *c = arg;
    (void)fd;
    (void)what;
    if (c->state == MC_LINGERING) {
        char sink[16384];
        ssize_t n = transport_read(&c->tr, sink, sizeof(sink));
        if (n > 0) {
            c->drained += (size_t)n;
            if (c->drained > MANAGE_LINGER_BYTES) manage_client_close(c);
        } else if (n != -EAGAIN) {
            manage_client_close(c);
        }
        return;
    }
    if (c->state != MC_READING) return;
    size_t room;
    char *at = manage_input_room(&c->input, &room);
    if (room == 0) { /* full of lines still to run: run them first */
        manage_process(c);
        return;
    }
    ssize_t n = transport_read(&c->tr, at, room);
    if (n < 0) {
        if (n != -EAGAIN) manage_client_close(c);
        return;
    }
    if (n == 0) {
        manage_on_eof(c);
        return;
    }
    manage_input_received(&c->input, (size_t)n);
    manage_timer(c, MANAGE_IDLE_SEC * 1000L);
    manage_process(c);
}

static void manage_on_write(evutil_socket_t fd, short what, void *arg)
{
    struct manage_client *c = arg;
    (void)fd;
    (void)what;
    if (manage_flush(c) && c->state == MC_READING) manage_process(c);
}

static void manage_on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct manage_client *c = arg;
    (void)fd;
    (void)what;
    if (c->state == MC_READING && !c->input.got_input) {
        manage_input_silent(c->ms->ctx, &c->input, &c->out);
        manage_reply(c);
        return;
    }
    manage_client_close(c); /* idle, stuck writing, or lingering too long */
}

static void manage_refuse(int fd)
{
    static const char msg[] = "ERR: too many manage clients\r\n";
    struct transport t;
    if (transport_open(&t, &transport_plain_ctx, fd, NULL) < 0) return;
    ssize_t n = transport_write(&t, msg, sizeof(msg) - 1); /* what the socket takes at once */
    (void)n;
    transport_close(&t);
}

static void manage_accept_one(struct manage_server *ms, int fd, const struct sockaddr *sa, socklen_t salen)
{
    if (ms->nclients >= MANAGE_MAX_CLIENTS) {
        manage_refuse(fd);
        return;
    }
    struct manage_client *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        close(fd);
        return;
    }
    c->ms = ms;
    if (transport_open(&c->tr, &transport_plain_ctx, fd, NULL) < 0) {
        free(c);
        return;
    }
    c->input.sess.trusted = ms->ctx->auth == NULL || manage_auth_trusted(ms->ctx->auth, sa, salen);
    sock_addr_text(fd, true, c->peer, sizeof(c->peer));
    c->input.sess.peer = c->peer;
    /* a small send buffer: a client that does not read holds little of our work */
    int sndbuf = MANAGE_SNDBUF;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
    textbuf_init(&c->out, MANAGE_OUT_MAX);
    TAILQ_INSERT_TAIL(&ms->clients, c, link);
    ms->nclients++;
    c->rev = event_new(ms->base, fd, EV_READ | EV_PERSIST, manage_on_read, c);
    c->wev = event_new(ms->base, fd, EV_WRITE | EV_PERSIST, manage_on_write, c);
    c->tev = evtimer_new(ms->base, manage_on_timer, c);
    c->pev = event_new(ms->base, -1, 0, manage_on_pending, c);
    if (c->rev == NULL || c->wev == NULL || c->tev == NULL || c->pev == NULL || event_add(c->rev, NULL) < 0) {
        manage_client_close(c);
        return;
    }
    manage_timer(c, MANAGE_SILENT_MSEC);
}

static void manage_on_accept(evutil_socket_t lfd, short what, void *arg)
{
    struct manage_server *ms = arg;
    (void)lfd;
    (void)what;
    for (int i = 0; i < MANAGE_ACCEPTS_PER_EVENT; i++) {
        struct sockaddr_storage ss;
        socklen_t salen = sizeof(ss);
        int fd = transport_accept(&ms->ltr, (struct sockaddr *)&ss, &salen);
        if (fd < 0) {
            if (fd == -ECONNABORTED) continue;
            if (accept_short_of(-fd))
                accept_pause(&ms->pause, ms->base, ms->lev, "manage port", -fd);
            else if (fd != -EAGAIN)
                log_warn("manage port: accept failed: %s", strerror(-fd));
            return;
        }
        accept_resumed(&ms->pause, "manage port");
        manage_accept_one(ms, fd, (const struct sockaddr *)&ss, salen);
    }
}

struct manage_server *manage_server_create(struct event_base *base, int lfd, struct manage_ctx *ctx)
{
    struct manage_server *ms = calloc(1, sizeof(*ms));
    if (ms == NULL) {
        close(lfd);
        return NULL;
    }
    ms->base = base;
    transport_open(&ms->ltr, &transport_plain_ctx, lfd, NULL); /* (the plain one cannot fail) */
    ms->ctx = ctx;
    TAILQ_INIT(&ms->clients);
    ms->lev = event_new(base, lfd, EV_READ | EV_PERSIST, manage_on_accept, ms);
    if (ms->lev == NULL || event_add(ms->lev, NULL) < 0) {
        manage_server_destroy(ms);
        return NULL;
    }
    return ms;
}

void manage_server_destroy(struct manage_server *ms)
{
    if (ms == NULL) return;
    struct manage_client *c;
    while ((c = TAILQ_FIRST(&ms->clients)) != NULL) manage_client_close(c);
    if (ms->lev) event_free(ms->lev);
    accept_pause_deinit(&ms->pause);
    transport_close(&ms->ltr);
    free(ms);
}
