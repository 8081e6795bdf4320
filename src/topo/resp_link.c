/*
 * resp_link.c - a RESP client connection of the master's loop (see resp_link.h).
 *
 * Threads: the thread of its event base.
 */
#include "config.h"
#include "topo/resp_link.h"

#include <errno.h>
#include <event2/event.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/sock.h"
#include "common/textbuf.h"

#define RESP_LINK_READ 16384
#define RESP_LINK_IN_MAX (4u << 20)  /* a reply past this is not one the link expects */

struct resp_pending {
    resp_reply_fn fn;
    void *arg;
};

struct resp_link {
    struct event_base *base;
    int fd;
    bool connected, failed;
    struct event *rev, *wev, *timer, *reap;
    uint32_t timeout_ms;
    struct resp_link_cbs cbs;
    void *arg;
    struct textbuf out;
    size_t out_off;
    char *in;
    size_t in_len, in_cap;
    struct resp_pending *pend;
    size_t npend, pend_cap, pend_head;
};

static void resp_link_arm(struct resp_link *k);

/* Fails the link: every pending callback gets NULL, then on_close. */
static void resp_link_fail(struct resp_link *k, const char *why)
{
    if (k->failed) return;
    k->failed = true;
    event_del(k->rev);
    event_del(k->wev);
    evtimer_del(k->timer);
    while (k->pend_head < k->npend) {
        struct resp_pending p = k->pend[k->pend_head++];
        p.fn(p.arg, k, NULL);
    }
    if (k->cbs.on_close != NULL) k->cbs.on_close(k->arg, k, why);
}

static int resp_link_grow_pending(struct resp_link *k)
{
    if (k->pend_head > 0 && k->pend_head == k->npend) k->pend_head = k->npend = 0;
    if (k->npend < k->pend_cap) return 0;
    size_t cap = k->pend_cap ? k->pend_cap * 2 : 16;
    struct resp_pending *p = realloc(k->pend, cap * sizeof(*p));
    if (p == NULL) return -ENOMEM;
    k->pend = p;
    k->pend_cap = cap;
    return 0;
}

int resp_link_send(struct resp_link *k, int argc, const char *const *argv, resp_reply_fn fn, void *fnarg)
{
    if (k->failed) return -EPIPE;
    textbuf_addf(&k->out, "*%d\r\n", argc);
    for (int i = 0; i < argc; i++) {
        size_t n = strlen(argv[i]);
        textbuf_addf(&k->out, "$%zu\r\n", n);
        textbuf_add(&k->out, argv[i], n);
        textbuf_add(&k->out, "\r\n", 2);
    }
    if (textbuf_failed(&k->out) || resp_link_grow_pending(k) < 0) {
        resp_link_fail(k, "out of memory");
        return -ENOMEM;
    }
    k->pend[k->npend++] = (struct resp_pending){ fn, fnarg };
    resp_link_arm(k);
    return 0;
}

/* Hands every whole reply in the input to its callback (or on_push). */
static void resp_link_dispatch(struct resp_link *k)
{
    size_t off = 0;
    while (!k->failed && off < k->in_len) {
        struct resp_value v;
        ssize_t r = resp_value_parse(k->in + off, k->in_len - off, &v);
        if (r == 0) break;
        if (r < 0) {
            resp_link_fail(k, "a reply that is not RESP");
            return;
        }
        off += (size_t)r;
        evtimer_del(k->timer); /* the next reply due has a timeout of its own */
        if (k->pend_head < k->npend) {
            struct resp_pending p = k->pend[k->pend_head++];
            p.fn(p.arg, k, &v);
        } else if (k->cbs.on_push != NULL) {
            k->cbs.on_push(k->arg, k, &v);
        }
        resp_value_free(&v);
    }
    memmove(k->in, k->in + off, k->in_len - off);
    k->in_len -= off;
}

static void resp_link_read(struct resp_link *k)
{
    if (k->in_cap - k->in_len < RESP_LINK_READ) {
        size_t cap = k->in_cap ? k->in_cap * 2 : 2 * RESP_LINK_READ;
        char *in = cap <= RESP_LINK_IN_MAX ? realloc(k->in, cap) : NULL;
        if (in == NULL) {
            resp_link_fail(k, "a reply too large");
            return;
        }
        k->in = in;
        k->in_cap = cap;
    }
    ssize_t n = read(k->fd, k->in + k->in_len, k->in_cap - k->in_len);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        resp_link_fail(k, n == 0 ? "closed by the peer" : strerror(errno));
        return;
    }
    if (n < 0) return;
    k->in_len += (size_t)n;
    resp_link_dispatch(k);
}

static void resp_link_write(struct resp_link *k)
{
    while (k->out_off < k->out.len) {
        ssize_t n = send(k->fd, k->out.data + k->out_off, k->out.len - k->out_off, MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
        if (n < 0) {
            resp_link_fail(k, strerror(errno));
            return;
        }
        k->out_off += (size_t)n;
    }
    textbuf_reset(&k->out);
    k->out_off = 0;
}

static void resp_link_on_event(int fd, short what, void *arg)
{
    struct resp_link *k = arg;
    (void)fd;
    if (!k->connected) {
        int rc = sock_connect_result(k->fd);
        if (rc < 0) {
            resp_link_fail(k, strerror(-rc));
            return;
        }
        k->connected = true;
        if (k->cbs.on_ready != NULL) k->cbs.on_ready(k->arg, k);
    }
    if (!k->failed && (what & EV_WRITE)) resp_link_write(k);
    if (!k->failed && (what & EV_READ)) resp_link_read(k);
    if (!k->failed) resp_link_arm(k);
}

static void resp_link_on_timeout(int fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct resp_link *k = arg;
    resp_link_fail(k, k->connected ? "no reply in time" : "connect timed out");
}

/* Waits for what the link needs: writable while connecting or with output, readable once
 * connected; the timer runs while connecting or while a reply is due. */
static void resp_link_arm(struct resp_link *k)
{
    if (k->failed) return;
    if (!k->connected || k->out_off < k->out.len) event_add(k->wev, NULL);
    else event_del(k->wev);
    if (k->connected) event_add(k->rev, NULL);
    bool due = !k->connected || k->pend_head < k->npend;
    if (due && !evtimer_pending(k->timer, NULL)) {
        struct timeval tv = { .tv_sec = k->timeout_ms / 1000u, .tv_usec = (k->timeout_ms % 1000u) * 1000u };
        evtimer_add(k->timer, &tv);
    } else if (!due) {
        evtimer_del(k->timer);
    }
}

static void resp_link_on_reap(int fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    resp_link_free(arg);
}

struct resp_link *resp_link_open(struct event_base *base, const char *host, uint16_t port, uint32_t timeout_ms,
                                 const struct resp_link_cbs *cbs, void *arg, char *why, size_t whylen)
{
    struct resp_link *k = calloc(1, sizeof(*k));
    if (k == NULL) {
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    k->base = base;
    k->timeout_ms = timeout_ms ? timeout_ms : 1000u;
    k->cbs = *cbs;
    k->arg = arg;
    bool in_progress = false;
    k->fd = sock_connect_tcp(host, port, &in_progress);
    if (k->fd < 0) {
        snprintf(why, whylen, "%s", strerror(-k->fd));
        free(k);
        return NULL;
    }
    k->rev = event_new(base, k->fd, EV_READ | EV_PERSIST, resp_link_on_event, k);
    k->wev = event_new(base, k->fd, EV_WRITE, resp_link_on_event, k);
    k->timer = evtimer_new(base, resp_link_on_timeout, k);
    k->reap = evtimer_new(base, resp_link_on_reap, k);
    if (k->rev == NULL || k->wev == NULL || k->timer == NULL || k->reap == NULL) {
        snprintf(why, whylen, "out of memory");
        resp_link_free(k);
        return NULL;
    }
    resp_link_arm(k);
    return k;
}

void resp_link_free(struct resp_link *k)
{
    if (k == NULL) return;
    struct event *evs[] = { k->rev, k->wev, k->timer, k->reap };
    for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++) {
        if (evs[i] != NULL) event_free(evs[i]);
    }
    if (k->fd >= 0) close(k->fd);
    textbuf_deinit(&k->out);
    free(k->in);
    free(k->pend);
    free(k);
}

void resp_link_free_later(struct resp_link *k)
{
    k->failed = true; /* nothing more is called */
    event_del(k->rev);
    event_del(k->wev);
    evtimer_del(k->timer);
    event_active(k->reap, EV_TIMEOUT, 1);
}

#define RESP_LINK_REAP_BATCH 64

struct resp_link_reap_list {
    struct resp_link *k[RESP_LINK_REAP_BATCH];
    size_t n;
};

/* event_base_foreach_event: collects links whose reap is pending (the base must not change
 * during the walk); stops when the list is full. */
static int resp_link_collect_reap(const struct event_base *base, const struct event *ev, void *arg)
{
    (void)base;
    struct resp_link_reap_list *l = arg;
    if (event_get_callback(ev) != resp_link_on_reap) return 0;
    l->k[l->n++] = event_get_callback_arg(ev);
    return l->n == RESP_LINK_REAP_BATCH ? 1 : 0;
}

size_t resp_link_reap_pending(struct event_base *base)
{
    size_t freed = 0;
    for (;;) { /* bounded: each round frees what it found, and nothing makes more */
        struct resp_link_reap_list l = { .n = 0 };
        (void)event_base_foreach_event(base, resp_link_collect_reap, &l);
        for (size_t i = 0; i < l.n; i++) resp_link_free(l.k[i]);
        freed += l.n;
        if (l.n < RESP_LINK_REAP_BATCH) return freed;
    }
}
