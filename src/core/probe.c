/*
 * probe.c - the liveness prober (see probe.h).
 *
 * Threads: the master's event loop only.
 */
#include "config.h"
#include "core/probe.h"

#include <errno.h>
#include <event2/event.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/sock.h"
#include "core/route.h"
#include "core/runtime.h"
#include "net/transport.h"

#define PROBE_TICK_USEC 100000
#define PROBE_DEFAULT_TIMEOUT_MS 1000

struct probe {
    LIST_ENTRY(probe) link;
    struct prober *pr;
    struct pool_shared *pool;
    uint32_t server;
    struct transport tr;    /* the pool's server transport: a probe connects as a server
                             * connection does, handshake included */
    bool connecting;
    bool handshaking;
    short waiting;          /* the EV_* the event waits for now */
    struct event *ev;       /* read or write, as needed */
    struct event *timer;
    const char *req;
    size_t req_len, req_off;
    char reply[64];
    size_t reply_len;
};

struct prober {
    struct event_base *base;
    struct runtime *rt;
    struct event *tick;
    LIST_HEAD(, probe) active;
};

static void probe_end(struct probe *pb, bool alive)
{
    struct pool_shared *p = pb->pool;
    if (alive) {
        pool_server_readmit(p, pb->server);
    } else {
        uint64_t sup;
        if (server_log_allowed(&p->health[pb->server].state_log, &sup))
            log_notice("pool '%s': server %s still does not answer: ejected for another %ld ms%s",
                       p->cp->name, p->cp->servers[pb->server].stats_name,
                       (long)p->cp->server_retry_timeout, NC_RATELIMIT_NOTE(sup));
        pool_server_reeject(p, pb->server, nc_usec_now());
    }
    atomic_store(&p->health[pb->server].probing, false);
    LIST_REMOVE(pb, link);
    if (pb->ev) event_free(pb->ev);
    if (pb->timer) event_free(pb->timer);
    transport_close(&pb->tr);
    free(pb);
}

static void probe_on_io(int fd, short what, void *arg);

/* The event waits for what (EV_READ or EV_WRITE). */
static int probe_wait(struct probe *pb, short what)
{
    if (pb->ev != NULL && pb->waiting == what) return 0;
    if (pb->ev) event_free(pb->ev);
    pb->waiting = what;
    pb->ev = event_new(pb->pr->base, pb->tr.fd, what | EV_PERSIST, probe_on_io, pb);
    return pb->ev != NULL && event_add(pb->ev, NULL) == 0 ? 0 : -ENOMEM;
}

/* Waits for what the transport's last call said it waits for. */
static int probe_wait_transport(struct probe *pb)
{
    return probe_wait(pb, (pb->tr.want & TRANSPORT_WANT_WRITE) ? EV_WRITE : EV_READ);
}

/* One step of the probe: connect, handshake, the request, the reply. Returns 0 (it waits), 1
 * (the reply is in) or -1 (the server failed). */
static int probe_step(struct probe *pb)
{
    if (pb->connecting) {
        if (sock_connect_result(pb->tr.fd) < 0) return -1;
        pb->connecting = false;
        pb->handshaking = transport_has_handshake(&pb->tr);
    }
    if (pb->handshaking) {
        int rc = pb->tr.ops->handshake(&pb->tr);
        if (rc == -EAGAIN) return probe_wait_transport(pb) < 0 ? -1 : 0;
        if (rc < 0) return -1;
        pb->handshaking = false;
    }
    if (pb->req_off < pb->req_len) {
        ssize_t n = transport_write(&pb->tr, pb->req + pb->req_off, pb->req_len - pb->req_off);
        if (n < 0) return -1;
        pb->req_off += (size_t)n;
        if (pb->req_off < pb->req_len) return probe_wait_transport(pb) < 0 ? -1 : 0;
    }
    ssize_t n = transport_read(&pb->tr, pb->reply + pb->reply_len, sizeof(pb->reply) - 1 - pb->reply_len);
    if (n == -EAGAIN) return probe_wait_transport(pb) < 0 ? -1 : 0;
    if (n <= 0) return -1;
    pb->reply_len += (size_t)n;
    if (memchr(pb->reply, '\n', pb->reply_len) != NULL || pb->reply_len == sizeof(pb->reply) - 1) return 1;
    return probe_wait(pb, EV_READ) < 0 ? -1 : 0;
}

static void probe_on_io(int fd, short what, void *arg)
{
    struct probe *pb = arg;
    (void)fd;
    (void)what;
    int rc = probe_step(pb);
    if (rc < 0) probe_end(pb, false);
    else if (rc > 0) probe_end(pb, pb->pool->proto->probe_alive((const uint8_t *)pb->reply, pb->reply_len));
}

static void probe_on_timeout(int fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    probe_end(arg, false);
}

static void probe_start(struct prober *pr, struct pool_shared *p, uint32_t s)
{
    const struct conf_pool *cp = p->cp;
    bool expected = false;
    if (!atomic_compare_exchange_strong(&p->health[s].probing, &expected, true)) return;
    struct probe *pb = calloc(1, sizeof(*pb));
    if (pb == NULL) {
        atomic_store(&p->health[s].probing, false);
        return;
    }
    pb->pr = pr;
    pb->pool = p;
    pb->server = s;
    pb->req = p->proto->probe_request;
    pb->req_len = strlen(pb->req);
    transport_init_closed(&pb->tr);
    LIST_INSERT_HEAD(&pr->active, pb, link);
    struct route *r = pool_route_get(p); /* where the server is now */
    const struct conf_addr *addr = &r->set->servers[s].addr;
    bool in_progress = false;
    int fd = addr->is_unix ? sock_connect_unix(addr->host, &in_progress)
                           : sock_connect_tcp(addr->host, addr->port, &in_progress);
    const struct transport_peer peer = { .name = addr->host, .id = addr->text };
    int rc = fd < 0 ? fd : transport_open(&pb->tr, p->server_tp, fd, &peer);
    route_put(r);
    if (rc < 0) {
        probe_end(pb, false);
        return;
    }
    pb->connecting = true; /* (a connect done at once is seen done at the first write event) */
    int64_t ms = cp->timeout > 0 ? cp->timeout : PROBE_DEFAULT_TIMEOUT_MS;
    struct timeval tv = { .tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)(ms % 1000) * 1000 };
    pb->timer = evtimer_new(pr->base, probe_on_timeout, pb);
    if (pb->timer == NULL || evtimer_add(pb->timer, &tv) < 0 || probe_wait(pb, EV_WRITE) < 0)
        probe_end(pb, false);
}

static void prober_on_tick(int fd, short what, void *arg)
{
    struct prober *pr = arg;
    (void)fd;
    (void)what;
    uint64_t now = nc_usec_now();
    for (size_t i = 0; i < pr->rt->npools; i++) {
        struct pool_shared *p = &pr->rt->pools[i];
        if (!p->cp->auto_eject_hosts) continue;
        for (uint32_t s = 0; s < p->cp->nservers; s++) {
            uint64_t until = atomic_load(&p->health[s].ejected_until);
            if (until != 0 && now >= until) probe_start(pr, p, s);
        }
    }
}

struct prober *prober_create(struct event_base *base, struct runtime *rt)
{
    struct prober *pr = calloc(1, sizeof(*pr));
    if (pr == NULL) return NULL;
    pr->base = base;
    pr->rt = rt;
    LIST_INIT(&pr->active);
    pr->tick = event_new(base, -1, EV_PERSIST, prober_on_tick, pr);
    struct timeval tv = { .tv_sec = 0, .tv_usec = PROBE_TICK_USEC };
    if (pr->tick == NULL || event_add(pr->tick, &tv) < 0) {
        prober_destroy(pr);
        return NULL;
    }
    return pr;
}

void prober_destroy(struct prober *pr)
{
    if (pr == NULL) return;
    while (!LIST_EMPTY(&pr->active)) {
        struct probe *pb = LIST_FIRST(&pr->active);
        LIST_REMOVE(pb, link);
        if (pb->ev) event_free(pb->ev);
        if (pb->timer) event_free(pb->timer);
        transport_close(&pb->tr);
        free(pb);
    }
    if (pr->tick) event_free(pr->tick);
    free(pr);
}
