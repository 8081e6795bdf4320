/*
 * topo_sentinel.c - the Redis Sentinel topology source (notes/sentinel.md): a pool with
 * `sentinels:` follows its masters. Each server's name is a sentinel master name; its ketama
 * points come from that name, so a failover never moves a key to another shard. The source
 * keeps two links to every sentinel: one for questions (SENTINEL MASTER <name> for every
 * server, at start, every second, and at once when a link comes up), one subscribed to
 * +switch-master. A poll round takes, for each master, the answer with the highest config epoch
 * (a sentinel cut off from the others answers an older epoch and is not followed); a
 * +switch-master message moves the master at once and raises the epoch it expects. Each move
 * publishes a new set (the same names, a new address) through the pool's sink: the workers
 * close their connections to the old address and connect to the new one.
 *
 * With no sentinel reachable the pool keeps its last known masters (logged once, and again when
 * a sentinel answers). Links that fail reconnect with a backoff (100 ms doubling to 5 s).
 *
 * Threads: the master's event loop only (start, the links' callbacks, the tick, stop).
 */
#include "config.h"
#include "topo/topo_sentinel.h"

#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "topo/resp_link.h"

#define SENTINEL_TICK_MS 1000u
#define SENTINEL_TIMEOUT_MS 1000u
#define SENTINEL_BACKOFF_MIN_MS 100u
#define SENTINEL_BACKOFF_MAX_MS 5000u
#define SENTINEL_RECHECK_MIN_MS 100u

struct sentinel_peer {
    struct topo_source *src;
    uint32_t idx;
    struct resp_link *cmd, *sub;
    bool cmd_ready;
    uint64_t retry_at;            /* usec: no new link before */
    uint32_t backoff_ms;
};

/* A question of one round to one sentinel about one master (its callback's argument). */
struct sentinel_query {
    struct sentinel_peer *peer;
    uint32_t server;
    uint64_t round;
};

/* The best answer of the round about one master. */
struct sentinel_answer {
    bool have;
    uint64_t epoch;
    uint16_t port;
    uint32_t peer;
    char host[256];
};

struct topo_source {
    const struct conf_pool *cp;
    struct event_base *base;
    struct topo_sink sink;
    struct topo_set *cur;         /* the set the pool routes by (a reference) */
    uint64_t *epoch;              /* per server: the config epoch its address is from */
    struct sentinel_peer *peers;  /* cp->nsentinels */
    struct sentinel_query *queries; /* nsentinels * nservers */
    struct sentinel_answer *best; /* nservers */
    uint64_t round;
    bool round_open;              /* the round takes answers (until all came, or the next tick) */
    uint32_t round_due;           /* answers of the round still awaited */
    uint32_t round_answers;       /* answers the round had */
    bool unreachable;             /* no sentinel answered the last round (logged) */
    uint64_t round_at;            /* usec: when the round started */
    struct event *tick;
    struct event *recheck;        /* on the sink's recheck_fd */
};

static void sentinel_link_closed(void *arg, struct resp_link *k, const char *why);

/* ---- moving a master ---- */

/* Publishes cur with server i at host:port. */
static void sentinel_move(struct topo_source *s, uint32_t i, const char *host, uint16_t port, const char *how)
{
    const struct topo_set *cur = s->cur;
    struct topo_server *servers = calloc(cur->nservers, sizeof(*servers));
    char text[300];
    if (servers == NULL) goto oom;
    memcpy(servers, cur->servers, cur->nservers * sizeof(*servers));
    snprintf(text, sizeof(text), strchr(host, ':') != NULL ? "[%s]:%u" : "%s:%u", host, (unsigned)port);
    servers[i].addr = (struct conf_addr){ .text = text, .host = (char *)host, .port = port, .perm = -1 };
    servers[i].role = TOPO_ROLE_MASTER;
    struct topo_set *set = topo_set_create(servers, cur->nservers);
    free(servers);
    if (set == NULL) goto oom;
    log_notice("pool '%s': server %s: master moved from %s to %s (%s)", s->cp->name, cur->servers[i].name,
               cur->servers[i].addr.text, text, how);
    topo_set_put(s->cur);
    s->cur = topo_set_ref(set);
    s->sink.publish(s->sink.arg, set);
    return;
oom:
    free(servers);
    log_error("pool '%s': out of memory: server %s stays at %s", s->cp->name, cur->servers[i].name,
              cur->servers[i].addr.text);
}

static bool sentinel_same(const struct topo_set *set, uint32_t i, const char *host, uint16_t port)
{
    const struct conf_addr *a = &set->servers[i].addr;
    return !a->is_unix && a->port == port && strcmp(a->host, host) == 0;
}

static int sentinel_server(const struct topo_source *s, const char *name, size_t len)
{
    for (uint32_t i = 0; i < s->cur->nservers; i++) {
        const char *n = s->cur->servers[i].name;
        if (strlen(n) == len && memcmp(n, name, len) == 0) return (int)i;
    }
    return -1;
}

static bool sentinel_port(const char *text, uint16_t *port)
{
    char *end;
    unsigned long v = text != NULL ? strtoul(text, &end, 10) : 0;
    if (text == NULL || *end != '\0' || v == 0 || v > 65535) return false;
    *port = (uint16_t)v;
    return true;
}

/* ---- poll rounds: SENTINEL MASTER <name> to every sentinel ---- */

/* The round is over (every answer in, or the next tick): the newest epoch of each master wins. */
static void sentinel_round_end(struct topo_source *s)
{
    s->round_open = false;
    unsigned up = 0;
    for (uint32_t i = 0; i < s->cp->nsentinels; i++) up += s->peers[i].cmd_ready;
    if (s->sink.up != NULL) atomic_store(s->sink.up, up);
    if (s->round_answers == 0 && s->cp->nsentinels > 0) {
        if (!s->unreachable)
            log_warn("pool '%s': no sentinel answers: the servers stay where they were last known", s->cp->name);
        s->unreachable = true;
    } else if (s->unreachable) {
        log_notice("pool '%s': a sentinel answers again", s->cp->name);
        s->unreachable = false;
    }
    for (uint32_t i = 0; i < s->cur->nservers; i++) {
        struct sentinel_answer *a = &s->best[i];
        if (!a->have || a->epoch < s->epoch[i]) continue;
        s->epoch[i] = a->epoch;
        if (sentinel_same(s->cur, i, a->host, a->port)) continue;
        char how[160];
        snprintf(how, sizeof(how), "asked sentinel %s, config epoch %llu", s->cp->sentinels[a->peer].text,
                 (unsigned long long)a->epoch);
        sentinel_move(s, i, a->host, a->port, how);
    }
    memset(s->best, 0, s->cur->nservers * sizeof(*s->best));
    s->round_answers = 0;
    s->round_due = 0;
}

/* An answer to SENTINEL MASTER: ip, port and config-epoch of a flat field list. */
static void sentinel_on_master(void *arg, struct resp_link *k, const struct resp_value *v)
{
    struct sentinel_query *q = arg;
    struct topo_source *s = q->peer->src;
    (void)k;
    if (q->round != s->round || !s->round_open) return; /* a late answer of an earlier round */
    uint16_t port;
    const char *ip = v != NULL ? resp_value_field(v, "ip") : NULL;
    const char *epoch = v != NULL ? resp_value_field(v, "config-epoch") : NULL;
    if (ip != NULL && sentinel_port(resp_value_field(v, "port"), &port) && strlen(ip) < sizeof(s->best->host)) {
        struct sentinel_answer *a = &s->best[q->server];
        uint64_t e = epoch != NULL ? strtoull(epoch, NULL, 10) : 0;
        if (!a->have || e > a->epoch) {
            *a = (struct sentinel_answer){ .have = true, .epoch = e, .port = port, .peer = q->peer->idx };
            memcpy(a->host, ip, strlen(ip) + 1);
        }
        s->round_answers++;
    } else if (v != NULL && v->type == RESP_ERROR) {
        log_warn("pool '%s': sentinel %s about master %s: %s", s->cp->name, s->cp->sentinels[q->peer->idx].text,
                 s->cur->servers[q->server].name, v->str);
    }
    if (s->round_due > 0 && --s->round_due == 0) sentinel_round_end(s);
}

/* Asks one sentinel about every master, for the current round. */
static void sentinel_ask(struct sentinel_peer *p)
{
    struct topo_source *s = p->src;
    for (uint32_t i = 0; i < s->cur->nservers && p->cmd_ready && s->round_open; i++) {
        struct sentinel_query *q = &s->queries[(size_t)p->idx * s->cur->nservers + i];
        *q = (struct sentinel_query){ .peer = p, .server = i, .round = s->round };
        const char *argv[] = { "SENTINEL", "MASTER", s->cur->servers[i].name };
        if (resp_link_send(p->cmd, 3, argv, sentinel_on_master, q) == 0) s->round_due++;
    }
}

/* ---- +switch-master ---- */

/* "<name> <old ip> <old port> <new ip> <new port>" */
static void sentinel_on_switch(struct topo_source *s, struct sentinel_peer *p, const char *msg)
{
    char name[256], oip[256], nip[256];
    unsigned oport, nport;
    if (sscanf(msg, "%255s %255s %u %255s %u", name, oip, &oport, nip, &nport) != 5 || nport == 0 || nport > 65535)
        return;
    int i = sentinel_server(s, name, strlen(name));
    if (i < 0) return; /* a master of another pool */
    if (sentinel_same(s->cur, (uint32_t)i, nip, (uint16_t)nport)) return; /* told already */
    s->epoch[i]++;     /* a switch comes with a newer epoch: an answer of the older one is stale */
    char how[160];
    snprintf(how, sizeof(how), "+switch-master from sentinel %s", s->cp->sentinels[p->idx].text);
    sentinel_move(s, (uint32_t)i, nip, (uint16_t)nport, how);
}

static void sentinel_on_push(void *arg, struct resp_link *k, const struct resp_value *v)
{
    struct sentinel_peer *p = arg;
    (void)k;
    const char *kind = resp_value_str(v, 0), *channel = resp_value_str(v, 1), *msg = resp_value_str(v, 2);
    if (kind == NULL || channel == NULL || msg == NULL || strcmp(kind, "message") != 0) return;
    if (strcmp(channel, "+switch-master") == 0) sentinel_on_switch(p->src, p, msg);
}

/* ---- the links ---- */

static void sentinel_on_auth(void *arg, struct resp_link *k, const struct resp_value *v)
{
    struct sentinel_peer *p = arg;
    if (v == NULL || v->type != RESP_ERROR) return;
    log_warn("pool '%s': sentinel %s refuses sentinel_auth: %s", p->src->cp->name,
             p->src->cp->sentinels[p->idx].text, v->str);
    sentinel_link_closed(p, k, "authentication refused");
}

static void sentinel_on_subscribed(void *arg, struct resp_link *k, const struct resp_value *v)
{
    (void)arg;
    (void)k;
    (void)v; /* ["subscribe", "+switch-master", 1]; an error closes nothing: the polls go on */
}

static void sentinel_auth(struct sentinel_peer *p, struct resp_link *k)
{
    const char *pass = p->src->cp->sentinel_auth;
    if (pass == NULL) return;
    const char *argv[] = { "AUTH", pass };
    resp_link_send(k, 2, argv, sentinel_on_auth, p);
}

static void sentinel_cmd_ready(void *arg, struct resp_link *k)
{
    struct sentinel_peer *p = arg;
    sentinel_auth(p, k);
    p->cmd_ready = true;
    p->backoff_ms = 0;
    sentinel_ask(p); /* a sentinel that comes up answers the round under way */
}

static void sentinel_sub_ready(void *arg, struct resp_link *k)
{
    struct sentinel_peer *p = arg;
    sentinel_auth(p, k);
    const char *argv[] = { "SUBSCRIBE", "+switch-master" };
    resp_link_send(k, 2, argv, sentinel_on_subscribed, p);
}

/* A link failed (or was refused): freed after this callback, opened again after a backoff. */
static void sentinel_link_closed(void *arg, struct resp_link *k, const char *why)
{
    struct sentinel_peer *p = arg;
    struct topo_source *s = p->src;
    bool was_up = p->cmd_ready;
    if (k == p->cmd) {
        p->cmd = NULL;
        p->cmd_ready = false;
    } else if (k == p->sub) {
        p->sub = NULL;
    } else {
        return;
    }
    resp_link_free_later(k);
    p->backoff_ms = p->backoff_ms == 0 ? SENTINEL_BACKOFF_MIN_MS : p->backoff_ms * 2;
    if (p->backoff_ms > SENTINEL_BACKOFF_MAX_MS) p->backoff_ms = SENTINEL_BACKOFF_MAX_MS;
    p->retry_at = nc_usec_now() + (uint64_t)p->backoff_ms * 1000u;
    if (was_up) log_warn("pool '%s': sentinel %s: %s", s->cp->name, s->cp->sentinels[p->idx].text, why);
}

static const struct resp_link_cbs sentinel_cmd_cbs = {
    .on_ready = sentinel_cmd_ready, .on_push = NULL, .on_close = sentinel_link_closed,
};
static const struct resp_link_cbs sentinel_sub_cbs = {
    .on_ready = sentinel_sub_ready, .on_push = sentinel_on_push, .on_close = sentinel_link_closed,
};

static struct resp_link *sentinel_open(struct sentinel_peer *p, const struct resp_link_cbs *cbs)
{
    const struct conf_addr *a = &p->src->cp->sentinels[p->idx];
    char why[128];
    struct resp_link *k = resp_link_open(p->src->base, a->host, a->port, SENTINEL_TIMEOUT_MS, cbs, p, why, sizeof(why));
    if (k == NULL) {
        p->backoff_ms = p->backoff_ms == 0 ? SENTINEL_BACKOFF_MIN_MS : p->backoff_ms * 2;
        if (p->backoff_ms > SENTINEL_BACKOFF_MAX_MS) p->backoff_ms = SENTINEL_BACKOFF_MAX_MS;
        p->retry_at = nc_usec_now() + (uint64_t)p->backoff_ms * 1000u;
    }
    return k;
}

/* Every second: links that are down and due are opened again; the round under way ends and
 * the next one starts. */
static void sentinel_on_tick(int fd, short what, void *arg)
{
    struct topo_source *s = arg;
    (void)fd;
    (void)what;
    uint64_t now = nc_usec_now();
    if (s->round_open) sentinel_round_end(s);
    s->round++;
    s->round_open = true;
    s->round_at = now;
    for (uint32_t i = 0; i < s->cp->nsentinels; i++) {
        struct sentinel_peer *p = &s->peers[i];
        if (p->cmd == NULL && now >= p->retry_at) p->cmd = sentinel_open(p, &sentinel_cmd_cbs);
        if (p->sub == NULL && now >= p->retry_at) p->sub = sentinel_open(p, &sentinel_sub_cbs);
        sentinel_ask(p);
    }
}

/* A worker asks for a look now (a write refused by a demoted master): a round starts at once,
 * unless one started less than SENTINEL_RECHECK_MIN_MS ago (a storm of refusals makes one). */
static void sentinel_on_recheck(int fd, short what, void *arg)
{
    struct topo_source *s = arg;
    uint64_t n;
    (void)what;
    if (read(fd, &n, sizeof(n)) < 0) {
        /* EAGAIN: read by an earlier call */
    }
    if (nc_usec_now() - s->round_at < (uint64_t)SENTINEL_RECHECK_MIN_MS * 1000u) return;
    sentinel_on_tick(-1, 0, s);
}

/* ---- the source ---- */

static void sentinel_free(struct topo_source *s)
{
    for (uint32_t i = 0; s->peers != NULL && i < s->cp->nsentinels; i++) {
        resp_link_free(s->peers[i].cmd);
        resp_link_free(s->peers[i].sub);
    }
    if (s->tick != NULL) event_free(s->tick);
    if (s->recheck != NULL) event_free(s->recheck);
    topo_set_put(s->cur);
    free(s->peers);
    free(s->queries);
    free(s->best);
    free(s->epoch);
    free(s);
}

static struct topo_source *sentinel_start(const struct conf_pool *cp, struct topo_set *first,
                                          struct event_base *base, const struct topo_sink *sink)
{
    struct topo_source *s = calloc(1, sizeof(*s));
    if (s == NULL) return NULL;
    s->cp = cp;
    s->base = base;
    s->sink = *sink;
    s->cur = topo_set_ref(first);
    size_t n = first->nservers ? first->nservers : 1;
    s->peers = calloc(cp->nsentinels, sizeof(*s->peers));
    s->queries = calloc(cp->nsentinels * n, sizeof(*s->queries));
    s->best = calloc(n, sizeof(*s->best));
    s->epoch = calloc(n, sizeof(*s->epoch));
    s->tick = event_new(base, -1, EV_PERSIST, sentinel_on_tick, s);
    s->recheck = sink->recheck_fd >= 0 ? event_new(base, sink->recheck_fd, EV_READ | EV_PERSIST, sentinel_on_recheck, s)
                                       : NULL;
    if (s->peers == NULL || s->queries == NULL || s->best == NULL || s->epoch == NULL || s->tick == NULL ||
        (sink->recheck_fd >= 0 && s->recheck == NULL)) {
        sentinel_free(s);
        return NULL;
    }
    for (uint32_t i = 0; i < cp->nsentinels; i++) s->peers[i] = (struct sentinel_peer){ .src = s, .idx = i };
    struct timeval every = { .tv_sec = SENTINEL_TICK_MS / 1000u, .tv_usec = (SENTINEL_TICK_MS % 1000u) * 1000u };
    event_add(s->tick, &every);
    if (s->recheck != NULL) event_add(s->recheck, NULL);
    event_active(s->tick, EV_TIMEOUT, 1); /* the first round now */
    return s;
}

static void sentinel_stop(struct topo_source *s)
{
    if (s != NULL) sentinel_free(s);
}

const struct topo_source_ops topo_sentinel_ops = {
    .name = "sentinel",
    .first = topo_static_servers,
    .start = sentinel_start,
    .stop = sentinel_stop,
    .build_dist = NULL,
};
