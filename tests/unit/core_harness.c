/*
 * core_harness.c - the in-process proxy of the core/ unit tests (see core_harness.h): the loop, the
 * fake servers and clients on its event base, requests written from words. The waits and the
 * settling: core_harness_wait.c.
 *
 * Threads: the test's only.
 */
#include "config.h" /* (_GNU_SOURCE: accept4) */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "core_harness_int.h"

#include "conf/conf.h"
#include "core/route.h"
#include "feature/features.h"
#include "core/runtime.h"
#include "core/runtime_stats.h"
#include "msg/mbuf.h"
#include "stats/stats.h"

/* --- peers ------------------------------------------------------------------------------------ */

static void ch_peer_on_read(evutil_socket_t fd, short what, void *arg)
{
    struct ch_peer *p = arg;
    (void)what;
    for (;;) {
        if (p->cap - p->len < 4096) {
            size_t ncap = p->cap ? p->cap * 2 : 16384;
            char *nb = realloc(p->buf, ncap);
            if (nb == NULL) abort(); /* (no cmocka assertion inside libevent's callback) */
            p->buf = nb;
            p->cap = ncap;
        }
        ssize_t n = recv(fd, p->buf + p->len, p->cap - p->len, 0);
        if (n > 0) {
            p->len += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        p->eof = true; /* end of stream, or reset */
        event_del(p->ev);
        return;
    }
}

static void ch_peer_open(struct harness *h, struct ch_peer *p, int fd, uint16_t srv_port, const char *name)
{
    memset(p, 0, sizeof(*p));
    p->h = h;
    p->fd = fd;
    p->proxy_fd = -1;
    p->srv_port = srv_port;
    snprintf(p->name, sizeof(p->name), "%s", name);
    assert_int_equal(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
    p->ev = event_new(h->base, fd, EV_READ | EV_PERSIST, ch_peer_on_read, p);
    assert_non_null(p->ev);
    assert_int_equal(event_add(p->ev, NULL), 0);
}

/* The test closes its end (the harness keeps what was received). */
static void ch_peer_close(struct ch_peer *p)
{
    if (p->ev != NULL) event_free(p->ev);
    p->ev = NULL;
    if (p->fd >= 0) close(p->fd);
    p->fd = -1;
}

static void ch_peer_free(struct ch_peer *p)
{
    ch_peer_close(p);
    free(p->buf);
    p->buf = NULL;
}

void ch_peer_write(struct harness *h, struct ch_peer *p, const char *bytes)
{
    size_t n = strlen(bytes), done = 0;
    uint64_t deadline = ch_ms() + CH_WAIT_MS;
    assert_true(p->fd >= 0);
    while (done < n) {
        ssize_t w = send(p->fd, bytes + done, n - done, MSG_NOSIGNAL);
        if (w > 0) {
            done += (size_t)w;
            continue;
        }
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            fail_msg("%s: write failed: %s", p->name, strerror(errno));
        if (ch_ms() > deadline) fail_msg("%s: the proxy does not read", p->name);
        loop_pass(&h->loop, false);
    }
}

/* --- fake servers ----------------------------------------------------------------------------- */

static void ch_srv_on_accept(evutil_socket_t fd, short what, void *arg)
{
    struct ch_server *s = arg;
    (void)what;
    for (;;) {
        int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd < 0) return;
        if (s->nconns == CH_CONNS_MAX) { /* ch_assert_quiet reports it */
            s->overflow = true;
            close(cfd);
            continue;
        }
        char name[32];
        size_t idx = (size_t)(s - s->h->srv);
        snprintf(name, sizeof(name), "s%zu conn %zu", idx + 1, s->nconns);
        ch_peer_open(s->h, &s->conns[s->nconns], cfd, htons(s->port), name);
        s->nconns++;
    }
}

static void ch_srv_listen(struct harness *h, struct ch_server *s)
{
    s->h = h;
    s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    assert_true(s->lfd >= 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = 0, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(s->lfd, 64), 0);
    socklen_t len = sizeof(a);
    assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&a, &len), 0);
    s->port = ntohs(a.sin_port);
    s->lev = event_new(h->base, s->lfd, EV_READ | EV_PERSIST, ch_srv_on_accept, s);
    assert_non_null(s->lev);
    assert_int_equal(event_add(s->lev, NULL), 0);
}

struct ch_peer *ch_srv_conn(struct harness *h, size_t s, size_t k)
{
    assert_true(s < h->nservers);
    if (k >= h->srv[s].nconns) fail_msg("server s%zu has no connection %zu (%zu accepted)", s + 1, k, h->srv[s].nconns);
    return &h->srv[s].conns[k];
}

/* --- set-up ----------------------------------------------------------------------------------- */

static void ch_on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
}

static struct runtime *ch_runtime(struct harness *h, const char *pool_keys)
{
    char yaml[2048];
    int n = snprintf(yaml, sizeof(yaml), "alpha:\n  listen: 127.0.0.1:22121\n  redis: true\n%s  servers:\n",
                     pool_keys != NULL ? pool_keys : "");
    for (size_t i = 0; i < h->nservers; i++)
        n += snprintf(yaml + n, sizeof(yaml) - (size_t)n, "   - 127.0.0.1:%u:1 s%zu\n", h->srv[i].port, i + 1);
    assert_true(n > 0 && (size_t)n < sizeof(yaml));
    struct conf *c = conf_load_string(yaml, (size_t)n, "test.yml", NULL, NULL);
    assert_non_null(c);
    struct runtime *rt = runtime_create(c, NULL, 1);
    conf_unref(c); /* the runtime holds its own */
    assert_non_null(rt);
    return rt;
}

struct harness *ch_new_with_transports(size_t nservers, const char *pool_keys, const struct transport_ctx *client_tp,
                                       const struct transport_ctx *server_tp)
{
    signal(SIGPIPE, SIG_IGN); /* as the daemon: a write to a closed socket is an error, not a signal */
    assert_true(nservers > 0 && nservers <= CH_SERVERS_MAX);
    struct harness *h = calloc(1, sizeof(*h));
    assert_non_null(h);
    h->base = event_base_new();
    assert_non_null(h->base);
    h->tick = event_new(h->base, -1, EV_PERSIST, ch_on_tick, NULL);
    struct timeval tv = { .tv_sec = 0, .tv_usec = CH_TICK_MS * 1000 };
    assert_non_null(h->tick);
    assert_int_equal(event_add(h->tick, &tv), 0);
    for (size_t i = 0; i < CH_SERVERS_MAX; i++) h->srv[i].lfd = -1;
    h->nservers = nservers;
    for (size_t i = 0; i < nservers; i++) ch_srv_listen(h, &h->srv[i]);
    h->rt = ch_runtime(h, pool_keys);
    struct pool_shared *ps = &h->rt->pools[0];
    h->cfg_tp[0] = ps->client_tp;
    h->cfg_tp[1] = ps->server_tp;
    if (client_tp != NULL) ps->client_tp = client_tp;
    if (server_tp != NULL) ps->server_tp = server_tp;
    h->stats = stats_worker_create();
    assert_non_null(h->stats);
    assert_int_equal(stats_bind(h->rt, &h->stats, 1), 0);
    h->loop_ok = true; /* loop_deinit cleans up after a failed loop_init too */
    assert_int_equal(loop_init(&h->loop, 0, h->base, runtime_get(h->rt), h->stats, MBUF_DEFAULT_SIZE), 0);
    feature_install(&h->loop, &features_all); /* as a worker does (thread/worker.c) */
    loop_start(&h->loop);
    return h;
}

struct harness *ch_new(size_t nservers, const char *pool_keys)
{
    return ch_new_with_transports(nservers, pool_keys, NULL, NULL);
}

void ch_free(struct harness *h)
{
    if (h == NULL) return;
    if (h->loop_ok) loop_deinit(&h->loop); /* closes the proxy's sockets */
    for (size_t i = 0; i < h->nclients; i++) ch_peer_free(&h->cli[i]);
    for (size_t s = 0; s < h->nservers; s++) {
        struct ch_server *sv = &h->srv[s];
        for (size_t k = 0; k < sv->nconns; k++) ch_peer_free(&sv->conns[k]);
        if (sv->lev != NULL) event_free(sv->lev);
        if (sv->lfd >= 0) close(sv->lfd);
    }
    if (h->tick != NULL) event_free(h->tick);
    event_base_free(h->base);
    if (h->rt != NULL) { /* the runtime frees its own contexts, not the test's */
        h->rt->pools[0].client_tp = h->cfg_tp[0];
        h->rt->pools[0].server_tp = h->cfg_tp[1];
        runtime_put(h->rt);
    }
    if (h->stats != NULL) stats_worker_destroy(h->stats);
    free(h);
}

int ch_setup(void **state)
{
    *state = ch_new(2, NULL);
    return 0;
}

int ch_teardown(void **state)
{
    ch_free(*state);
    return 0;
}

const struct stats_pool_block *ch_pool_stats(struct harness *h)
{
    return h->rt->pools[0].wstats[0];
}

const struct stats_worker *ch_worker_stats(struct harness *h)
{
    return h->stats;
}

void ch_batch_wait(struct harness *h, unsigned usec)
{
    h->loop.batch_wait_usec = usec;
}

/* --- routing, requests -------------------------------------------------------------------------- */

size_t ch_route(struct harness *h, const char *key)
{
    uint32_t s = pool_route(&h->rt->pools[0], (const uint8_t *)key, strlen(key));
    assert_true(s < h->nservers);
    return s;
}

void ch_key_on(struct harness *h, size_t s, const char *prefix, char *out, size_t size)
{
    for (int i = 0; i < 10000; i++) {
        int n = snprintf(out, size, "%s%d", prefix, i);
        assert_true(n > 0 && (size_t)n < size);
        if (ch_route(h, out) == s) return;
    }
    fail_msg("no key '%s<n>' maps to server s%zu", prefix, s + 1);
}

void ch_keys_apart(struct harness *h, char *k0, char *k1, size_t size)
{
    ch_key_on(h, 0, "a", k0, size);
    ch_key_on(h, 1, "b", k1, size);
}

/* Appends the RESP array of the words of cmd (split at spaces) to out. */
static size_t ch_resp_cmd(char *cmd, char *out, size_t len)
{
    char *words[32], *save = NULL;
    size_t n = 0;
    for (char *w = strtok_r(cmd, " ", &save); w != NULL; w = strtok_r(NULL, " ", &save)) {
        assert_true(n < sizeof(words) / sizeof(words[0]));
        words[n++] = w;
    }
    int k = snprintf(out + len, CH_RESP_MAX - len, "*%zu\r\n", n);
    assert_true(k > 0 && (size_t)k < CH_RESP_MAX - len);
    len += (size_t)k;
    for (size_t i = 0; i < n; i++) {
        k = snprintf(out + len, CH_RESP_MAX - len, "$%zu\r\n%s\r\n", strlen(words[i]), words[i]);
        assert_true(k > 0 && (size_t)k < CH_RESP_MAX - len);
        len += (size_t)k;
    }
    return len;
}

/* The next slot of the harness's ring of texts, formatted with fmt. */
static char *ch_vtext(struct harness *h, const char *fmt, va_list ap)
{
    char *out = h->resp[h->resp_next++ % CH_RESP_SLOTS];
    int n = vsnprintf(out, CH_RESP_MAX, fmt, ap);
    assert_true(n >= 0 && n < CH_RESP_MAX);
    return out;
}

const char *ch_text(struct harness *h, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const char *out = ch_vtext(h, fmt, ap);
    va_end(ap);
    return out;
}

const char *ch_resp(struct harness *h, const char *fmt, ...)
{
    char text[CH_RESP_MAX / 2], *save = NULL;
    va_list ap;
    va_start(ap, fmt);
    const char *words = ch_vtext(h, fmt, ap);
    va_end(ap);
    assert_true(strlen(words) < sizeof(text));
    strcpy(text, words);
    char *out = h->resp[h->resp_next++ % CH_RESP_SLOTS];
    size_t len = 0;
    out[0] = '\0';
    for (char *cmd = strtok_r(text, ";", &save); cmd != NULL; cmd = strtok_r(NULL, ";", &save))
        len = ch_resp_cmd(cmd, out, len);
    return out;
}

/* --- clients ---------------------------------------------------------------------------------- */

static struct ch_peer *ch_cli(struct harness *h, int c)
{
    assert_true(c >= 0 && (size_t)c < h->nclients);
    return &h->cli[c];
}

int ch_client(struct harness *h)
{
    assert_true(h->nclients < CH_CLIENTS_MAX);
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    assert_int_equal(fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK), 0);
    atomic_fetch_add(pool_nclients(&h->rt->pools[0]), 1); /* the master's count, as it hands one over */
    assert_int_equal(loop_take_client(&h->loop, h->rt->generation, 0, sv[0]), 0);
    int c = (int)h->nclients++;
    char name[32];
    snprintf(name, sizeof(name), "client %d", c);
    ch_peer_open(h, &h->cli[c], sv[1], 0, name);
    return c;
}

void ch_send(struct harness *h, int c, const char *bytes)
{
    ch_peer_write(h, ch_cli(h, c), bytes);
}

void ch_close(struct harness *h, int c)
{
    ch_peer_close(ch_cli(h, c));
}

void ch_expect(struct harness *h, int c, const char *bytes)
{
    ch_peer_expect(h, ch_cli(h, c), bytes, strlen(bytes));
}

void ch_take(struct harness *h, int c, size_t n, char *out)
{
    struct ch_peer *p = ch_cli(h, c);
    ch_peer_expect(h, p, NULL, n);
    memcpy(out, p->buf + p->off - n, n);
    out[n] = '\0';
}

void ch_wait_closed(struct harness *h, int c)
{
    ch_peer_wait_eof(h, ch_cli(h, c));
}

/* --- fake servers' side ------------------------------------------------------------------------- */

void ch_srv_expect_on(struct harness *h, size_t s, size_t k, const char *bytes)
{
    ch_peer_expect(h, ch_srv_conn(h, s, k), bytes, strlen(bytes));
}

void ch_srv_send(struct harness *h, size_t s, size_t k, const char *bytes)
{
    ch_peer_write(h, ch_srv_conn(h, s, k), bytes);
}

size_t ch_relay(struct harness *h, int c, size_t s, const char *request, const char *reply)
{
    ch_send(h, c, request);
    size_t k = ch_srv_expect(h, s, request);
    ch_srv_send(h, s, k, reply);
    ch_expect(h, c, reply);
    return k;
}

void ch_srv_close(struct harness *h, size_t s, size_t k)
{
    ch_peer_close(ch_srv_conn(h, s, k));
}

void ch_srv_wait_closed(struct harness *h, size_t s, size_t k)
{
    ch_peer_wait_eof(h, ch_srv_conn(h, s, k));
}

size_t ch_srv_nconns(struct harness *h, size_t s)
{
    assert_true(s < h->nservers);
    return h->srv[s].nconns;
}

size_t ch_srv_unread(struct harness *h, size_t s, size_t k)
{
    const struct ch_peer *p = ch_srv_conn(h, s, k);
    return p->len - p->off;
}

bool ch_srv_closed(struct harness *h, size_t s, size_t k)
{
    return ch_srv_conn(h, s, k)->eof;
}

