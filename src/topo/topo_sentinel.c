/*
 * topo_sentinel.c - the Redis Sentinel topology source (notes/sentinel.md): a pool with
 * `sentinels:` follows its masters. Each server's name is a sentinel master name; its ketama
 * points come from that name, so a failover never moves a key to another shard. The source
 * keeps two links to every sentinel: one for questions (SENTINEL MASTER <name> for every
 * server, at start, every second, and at once when a link comes up), one subscribed to
 * +switch-master. A poll round takes, for each master, the answer with the highest config epoch
 * (a sentinel cut off from the others answers an older epoch and is not followed); a
 * +switch-master message moves the master at once and raises the epoch it expects. A pool that
 * reads from replicas asks SENTINEL REPLICAS too, and its replica slots follow the replicas up
 * (topo_sentinel_replicas.c); the replica events on the subscribed link start a round at once.
 * Each change publishes a new set (the same names, new addresses) through the pool's sink: the
 * workers close their connections to the old addresses and connect to the new ones. When the
 * sentinel leading a failover starts promoting a replica, the master's writes are held
 * (topo_server.hold) until +switch-master, 3 s at most.
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
#include "topo/topo_sentinel_int.h"

#define SENTINEL_TICK_MS 1000u
#define SENTINEL_TIMEOUT_MS 1000u
#define SENTINEL_BACKOFF_MIN_MS 100u
#define SENTINEL_BACKOFF_MAX_MS 5000u
#define SENTINEL_RECHECK_MIN_MS 100u
#define SENTINEL_HOLD_MS 3000u     /* a failover's promotion to its +switch-master, at most */

struct sentinel_peer {
    struct topo_source *src;
    uint32_t idx;
    struct resp_link *cmd, *sub;
    bool cmd_ready;
    uint64_t retry_at;            /* usec: no new link before */
    uint32_t backoff_ms;          /* doubles with each failure, back to 0 when it answers */
    bool down_logged;             /* its failure was logged; again only after it answered */
};

/* A question of one round to one sentinel about one master (its callbacks' argument) and the
 * replicas it reported up. */
struct sentinel_query {
    struct sentinel_peer *peer;
    uint32_t server;
    uint64_t round;
    struct sentinel_replica_list replicas;
};

/* The best answer of the round about one master. */
struct sentinel_answer {
    bool have;
    uint64_t epoch;
    uint16_t port;
    uint32_t peer;
    char host[SENTINEL_HOST_MAX];
};

struct topo_source {
    const struct conf_pool *cp;
    struct event_base *base;
    struct topo_sink sink;
    struct topo_set *cur;         /* the set the pool routes by (a reference) */
    uint64_t *epoch;              /* per server: the config epoch its address is from */
    struct sentinel_peer *peers;  /* cp->nsentinels */
    uint32_t nshards;             /* the masters: servers[0..nshards); the rest replica slots */
    struct sentinel_query *queries; /* nsentinels * nshards */
    struct sentinel_answer *best; /* nshards */
    struct sentinel_change *changes; /* a round's, room for every server */
    uint32_t *best_peer;          /* nshards: the sentinel whose answer the round took (or none) */
    uint64_t *hold_until;         /* nshards: usec until which a master's writes wait (0: none) */
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

/* ---- publishing changes ---- */

static void sentinel_addr_text(char *out, size_t n, const char *host, uint16_t port)
{
    if (port == 0) snprintf(out, n, "(none)");
    else snprintf(out, n, strchr(host, ':') != NULL ? "[%s]:%u" : "%s:%u", host, (unsigned)port);
}

/* Logs one change: a master that moved (how it was learned), a replica slot that changed. */
static void sentinel_log_change(const struct topo_source *s, const struct sentinel_change *c, const char *text,
                                const char *how)
{
    const struct topo_server *was = &s->cur->servers[c->idx];
    const char *from = was->addr.text[0] != '\0' ? was->addr.text : "(none)";
    if (c->idx < s->nshards)
        log_notice("pool '%s': server %s: master moved from %s to %s (%s)", s->cp->name, was->name, from, text, how);
    else
        log_notice("pool '%s': server %s: replica %s, was %s (%s)", s->cp->name, was->name, text, from, how);
}

/* Makes servers (cur's, changed) the source's set and publishes it. False when out of memory
 * (logged: the pool keeps its set). */
static bool sentinel_publish(struct topo_source *s, const struct topo_server *servers)
{
    struct topo_set *set = topo_set_create(servers, s->cur->nservers);
    if (set == NULL) {
        log_error("pool '%s': out of memory: its servers stay where they are", s->cp->name);
        return false;
    }
    topo_set_put(s->cur);
    s->cur = topo_set_ref(set);
    s->sink.publish(s->sink.arg, set);
    return true;
}

/* Publishes cur with the n changes (their hosts are copied by topo_set_create). */
static void sentinel_apply(struct topo_source *s, const struct sentinel_change *ch, uint32_t n, const char *how)
{
    const struct topo_set *cur = s->cur;
    struct topo_server *servers = calloc(cur->nservers, sizeof(*servers));
    char(*texts)[SENTINEL_HOST_MAX + 16] = calloc(n ? n : 1, sizeof(*texts));
    if (servers == NULL || texts == NULL) {
        free(servers);
        free(texts);
        log_error("pool '%s': out of memory: its servers stay where they are", s->cp->name);
        return;
    }
    memcpy(servers, cur->servers, cur->nservers * sizeof(*servers));
    for (uint32_t i = 0; i < n; i++) {
        const struct sentinel_change *c = &ch[i];
        sentinel_addr_text(texts[i], sizeof(texts[i]), c->host, c->port);
        servers[c->idx].addr = (struct conf_addr){
            .text = c->port != 0 ? texts[i] : "", .host = (char *)c->host, .port = c->port, .perm = -1 };
        servers[c->idx].hold = false; /* moved: its held writes go to the new address */
        if (c->idx < s->nshards) s->hold_until[c->idx] = 0;
        sentinel_log_change(s, c, texts[i], how);
    }
    (void)sentinel_publish(s, servers);
    free(servers);
    free(texts);
}

static bool sentinel_same(const struct topo_set *set, uint32_t i, const char *host, uint16_t port)
{
    const struct conf_addr *a = &set->servers[i].addr;
    return !a->is_unix && a->port == port && strcmp(a->host, host) == 0;
}

static int sentinel_server(const struct topo_source *s, const char *name, size_t len)
{
    for (uint32_t i = 0; i < s->nshards; i++) {
        const char *n = s->cur->servers[i].name;
        if (strlen(n) == len && memcmp(n, name, len) == 0) return (int)i;
    }
    return -1;
}

/* ---- poll rounds: SENTINEL MASTER <name> to every sentinel ---- */

/* The masters' changes of the round: the newest epoch of each master wins. */
static uint32_t sentinel_round_masters(struct topo_source *s, struct sentinel_change *ch, uint32_t *best_peer)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->nshards; i++) {
        struct sentinel_answer *a = &s->best[i];
        best_peer[i] = UINT32_MAX;
        if (!a->have || a->epoch < s->epoch[i]) continue;
        s->epoch[i] = a->epoch;
        best_peer[i] = a->peer;
        if (sentinel_same(s->cur, i, a->host, a->port)) continue;
        ch[n] = (struct sentinel_change){ .idx = i, .port = a->port };
        memcpy(ch[n].host, a->host, strlen(a->host) + 1);
        n++;
    }
    return n;
}

/* The round is over (every answer in, or the next tick): masters move to the newest epoch's
 * answer, replica slots follow the replicas that the same sentinel reports up. */
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
    uint32_t *best_peer = s->best_peer;
    uint32_t n = sentinel_round_masters(s, s->changes, best_peer);
    if (n > 0) { /* the masters first: the replica slots are planned on where they are now */
        uint32_t peer = s->best[s->changes[0].idx].peer;
        char how[160];
        snprintf(how, sizeof(how), "asked sentinel %s, config epoch %llu", s->cp->sentinels[peer].text,
                 (unsigned long long)s->best[s->changes[0].idx].epoch);
        sentinel_apply(s, s->changes, n, how);
    }
    n = 0;
    for (uint32_t m = 0; m < s->nshards && s->cur->nservers > s->nshards; m++) {
        if (best_peer[m] == UINT32_MAX) continue;
        const struct sentinel_replica_list *list = &s->queries[(size_t)best_peer[m] * s->nshards + m].replicas;
        if (list->have) n += sentinel_replicas_plan(s->cur, s->nshards, CONF_REPLICA_SLOTS, m, list, s->changes + n);
    }
    if (n > 0) sentinel_apply(s, s->changes, n, "the sentinels' replicas up");
    memset(s->best, 0, s->nshards * sizeof(*s->best));
    s->round_answers = 0;
    s->round_due = 0;
}

/* One answer of the round came (or its link failed): the round ends with the last one. */
static void sentinel_answered(struct topo_source *s)
{
    if (s->round_due > 0 && --s->round_due == 0) sentinel_round_end(s);
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
    const char *flags = v != NULL ? resp_value_field(v, "flags") : NULL;
    if (ip != NULL && sentinel_port(resp_value_field(v, "port"), &port) && strlen(ip) < sizeof(s->best->host)) {
        s->round_answers++;
        q->peer->backoff_ms = 0; /* it answers: a later failure starts its backoff again, logged */
        q->peer->down_logged = false;
        /* the leader of a failover under way has the new epoch and still the old address: the
         * others, once the switch is done, have both new */
        if (flags != NULL && sentinel_has_flag(flags, "failover_in_progress")) goto done;
        struct sentinel_answer *a = &s->best[q->server];
        uint64_t e = epoch != NULL ? strtoull(epoch, NULL, 10) : 0;
        /* a tie keeps the master where it is: answers of one epoch that differ never flip it */
        bool here = sentinel_same(s->cur, q->server, ip, port);
        if (!a->have || e > a->epoch || (e == a->epoch && here)) {
            *a = (struct sentinel_answer){ .have = true, .epoch = e, .port = port, .peer = q->peer->idx };
            memcpy(a->host, ip, strlen(ip) + 1);
        }
    } else if (v != NULL && v->type == RESP_ERROR) {
        log_warn("pool '%s': sentinel %s about master %s: %s", s->cp->name, s->cp->sentinels[q->peer->idx].text,
                 s->cur->servers[q->server].name, v->str);
    }
done:
    sentinel_answered(s);
}

/* An answer to SENTINEL REPLICAS: the replicas up, kept with the question. */
static void sentinel_on_replicas(void *arg, struct resp_link *k, const struct resp_value *v)
{
    struct sentinel_query *q = arg;
    struct topo_source *s = q->peer->src;
    (void)k;
    if (q->round != s->round || !s->round_open) return;
    sentinel_replicas_read(v, &q->replicas);
    sentinel_answered(s);
}

/* Asks one sentinel about every master (and its replicas, for a pool that reads from them), for
 * the current round. */
static void sentinel_ask(struct sentinel_peer *p)
{
    struct topo_source *s = p->src;
    bool replicas = s->cur->nservers > s->nshards;
    for (uint32_t i = 0; i < s->nshards && p->cmd_ready && s->round_open; i++) {
        struct sentinel_query *q = &s->queries[(size_t)p->idx * s->nshards + i];
        *q = (struct sentinel_query){ .peer = p, .server = i, .round = s->round };
        const char *argv[] = { "SENTINEL", "MASTER", s->cur->servers[i].name };
        if (resp_link_send(p->cmd, 3, argv, sentinel_on_master, q) == 0) s->round_due++;
        argv[1] = "REPLICAS";
        if (replicas && resp_link_send(p->cmd, 3, argv, sentinel_on_replicas, q) == 0) s->round_due++;
    }
}

/* ---- +switch-master ---- */

static void sentinel_round_now(struct topo_source *s);

/* "<name> <old ip> <old port> <new ip> <new port>": the master moves now (and a replica slot
 * that held the new master is emptied); a round follows for the replicas. */
static void sentinel_on_switch(struct topo_source *s, struct sentinel_peer *p, const char *msg)
{
    char name[256], oip[256], nip[SENTINEL_HOST_MAX];
    unsigned oport, nport;
    if (sscanf(msg, "%255s %255s %u %255s %u", name, oip, &oport, nip, &nport) != 5 || nport == 0 || nport > 65535)
        return;
    int i = sentinel_server(s, name, strlen(name));
    if (i < 0) return; /* a master of another pool */
    if (sentinel_same(s->cur, (uint32_t)i, nip, (uint16_t)nport)) return; /* told already */
    s->epoch[i]++;     /* a switch comes with a newer epoch: an answer of the older one is stale */
    uint32_t n = 0;
    s->changes[n] = (struct sentinel_change){ .idx = (uint32_t)i, .port = (uint16_t)nport };
    memcpy(s->changes[n++].host, nip, strlen(nip) + 1);
    for (uint32_t k = 0; s->cur->nservers > s->nshards && k < CONF_REPLICA_SLOTS; k++) {
        uint32_t slot = s->nshards + (uint32_t)i * CONF_REPLICA_SLOTS + k;
        if (sentinel_same(s->cur, slot, nip, (uint16_t)nport))
            s->changes[n++] = (struct sentinel_change){ .idx = slot, .port = 0, .host = "" };
    }
    char how[160];
    snprintf(how, sizeof(how), "+switch-master from sentinel %s", s->cp->sentinels[p->idx].text);
    sentinel_apply(s, s->changes, n, how);
    sentinel_round_now(s);
}

/* The events a subscribed link gets: +switch-master moves a master, the leader of a failover
 * promoting a replica holds the master's writes; the replica events of a pool that reads from
 * replicas start a round now. */
#define SENTINEL_PROMOTING "+failover-state-send-slaveof-noone"
static const char *const sentinel_channels[] = { "+switch-master", SENTINEL_PROMOTING, "+sdown", "-sdown", "+slave",
                                                 "+convert-to-slave", "+reboot" };
#define SENTINEL_MASTER_CHANNELS 2 /* the first ones: every pool takes them */

/* Publishes cur with master i's writes held (until: usec) or no longer held (until 0). */
static void sentinel_hold(struct topo_source *s, uint32_t i, uint64_t until, const char *why)
{
    const struct topo_set *cur = s->cur;
    struct topo_server *servers = calloc(cur->nservers, sizeof(*servers));
    if (servers == NULL) return;
    memcpy(servers, cur->servers, cur->nservers * sizeof(*servers));
    servers[i].hold = until != 0;
    log_notice("pool '%s': server %s (%s): %s", s->cp->name, cur->servers[i].name, cur->servers[i].addr.text, why);
    if (sentinel_publish(s, servers)) s->hold_until[i] = until;
    free(servers);
}

/* "slave <ip:port> <ip> <port> @ <name> <master ip> <master port>": the leader of a failover is
 * about to promote a replica of master <name>. Its writes wait (SENTINEL_HOLD_MS at most) for the
 * +switch-master that follows: a write the old master took now would be lost at the switch. */
static void sentinel_on_promoting(struct topo_source *s, struct sentinel_peer *p, const char *msg)
{
    const char *at = strstr(msg, " @ ");
    char name[256], mip[SENTINEL_HOST_MAX];
    unsigned mport;
    if (at == NULL || sscanf(at + 3, "%255s %255s %u", name, mip, &mport) != 3 || mport == 0 || mport > 65535)
        return;
    int i = sentinel_server(s, name, strlen(name));
    if (i < 0 || !sentinel_same(s->cur, (uint32_t)i, mip, (uint16_t)mport) || s->hold_until[i] != 0) return;
    char why[200];
    snprintf(why, sizeof(why), "sentinel %s promotes a replica: writes wait for the switch", s->cp->sentinels[p->idx].text);
    sentinel_hold(s, (uint32_t)i, nc_usec_now() + (uint64_t)SENTINEL_HOLD_MS * 1000u, why);
}

static void sentinel_on_push(void *arg, struct resp_link *k, const struct resp_value *v)
{
    struct sentinel_peer *p = arg;
    (void)k;
    const char *kind = resp_value_str(v, 0), *channel = resp_value_str(v, 1), *msg = resp_value_str(v, 2);
    if (kind == NULL || channel == NULL || msg == NULL || strcmp(kind, "message") != 0) return;
    if (strcmp(channel, "+switch-master") == 0) sentinel_on_switch(p->src, p, msg);
    else if (strcmp(channel, SENTINEL_PROMOTING) == 0) sentinel_on_promoting(p->src, p, msg);
    else if (p->src->cur->nservers > p->src->nshards) sentinel_round_now(p->src);
}

/* ---- the links ---- */

/* A link of p failed: no new one before the backoff, which doubles up to its cap. */
static void sentinel_backoff(struct sentinel_peer *p)
{
    p->backoff_ms = p->backoff_ms == 0 ? SENTINEL_BACKOFF_MIN_MS : p->backoff_ms * 2;
    if (p->backoff_ms > SENTINEL_BACKOFF_MAX_MS) p->backoff_ms = SENTINEL_BACKOFF_MAX_MS;
    p->retry_at = nc_usec_now() + (uint64_t)p->backoff_ms * 1000u;
}

static void sentinel_on_auth(void *arg, struct resp_link *k, const struct resp_value *v)
{
    struct sentinel_peer *p = arg;
    if (v == NULL || v->type != RESP_ERROR) return;
    if (!p->down_logged) /* once until it answers (both links are refused) */
        log_warn("pool '%s': sentinel %s refuses sentinel_auth: %s", p->src->cp->name,
                 p->src->cp->sentinels[p->idx].text, v->str);
    p->down_logged = true;
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
    p->cmd_ready = true; /* (its backoff ends when it answers: a stopped process still accepts) */
    sentinel_ask(p); /* a sentinel that comes up answers the round under way */
}

static void sentinel_sub_ready(void *arg, struct resp_link *k)
{
    struct sentinel_peer *p = arg;
    sentinel_auth(p, k);
    const char *argv[1 + sizeof(sentinel_channels) / sizeof(sentinel_channels[0])] = { "SUBSCRIBE" };
    int argc = 1;
    size_t nch = p->src->cur->nservers > p->src->nshards ? sizeof(sentinel_channels) / sizeof(sentinel_channels[0])
                                                         : SENTINEL_MASTER_CHANNELS;
    for (size_t i = 0; i < nch; i++) argv[argc++] = sentinel_channels[i];
    resp_link_send(k, argc, argv, sentinel_on_subscribed, p);
}

/* A link failed (or was refused): freed after this callback, opened again after a backoff. */
static void sentinel_link_closed(void *arg, struct resp_link *k, const char *why)
{
    struct sentinel_peer *p = arg;
    struct topo_source *s = p->src;
    if (k == p->cmd) {
        p->cmd = NULL;
        p->cmd_ready = false;
    } else if (k == p->sub) {
        p->sub = NULL;
    } else {
        return;
    }
    resp_link_free_later(k);
    sentinel_backoff(p);
    if (!p->down_logged)
        log_warn("pool '%s': sentinel %s: %s (tried again with a backoff)", s->cp->name,
                 s->cp->sentinels[p->idx].text, why);
    p->down_logged = true;
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
    if (k == NULL) sentinel_backoff(p);
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
    for (uint32_t i = 0; i < s->nshards; i++) {
        if (s->hold_until[i] != 0 && now >= s->hold_until[i])
            sentinel_hold(s, i, 0, "no switch after the promotion began: writes go here again");
    }
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
    (void)what;
    topo_recheck_taken(fd);
    sentinel_round_now(s);
}

/* A round now, unless one started less than SENTINEL_RECHECK_MIN_MS ago. */
static void sentinel_round_now(struct topo_source *s)
{
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
    free(s->changes);
    free(s->best_peer);
    free(s->hold_until);
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
    s->nshards = (uint32_t)(cp->nshards != 0 ? cp->nshards : cp->nservers);
    size_t n = s->nshards ? s->nshards : 1;
    s->peers = calloc(cp->nsentinels, sizeof(*s->peers));
    s->queries = calloc(cp->nsentinels * n, sizeof(*s->queries));
    s->best = calloc(n, sizeof(*s->best));
    s->epoch = calloc(n, sizeof(*s->epoch));
    s->changes = calloc(first->nservers ? first->nservers : 1, sizeof(*s->changes));
    s->best_peer = calloc(n, sizeof(*s->best_peer));
    s->hold_until = calloc(n, sizeof(*s->hold_until));
    s->tick = event_new(base, -1, EV_PERSIST, sentinel_on_tick, s);
    s->recheck = sink->recheck_fd >= 0 ? event_new(base, sink->recheck_fd, EV_READ | EV_PERSIST, sentinel_on_recheck, s)
                                       : NULL;
    if (s->peers == NULL || s->queries == NULL || s->best == NULL || s->epoch == NULL || s->changes == NULL ||
        s->best_peer == NULL || s->hold_until == NULL || s->tick == NULL ||
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
