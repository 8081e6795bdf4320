/*
 * ncload.c - the benchmark's own load generator (bench/ only; not part of the proxy). Speaks the
 * memcached ASCII and redis protocols over epoll, on 127.0.0.1 only.
 *
 *   ncload load  --proto mc|redis -p PORT [-c conns] [-P pipeline] [-n requests] [-r keyspace]
 *                [-d value bytes] [--op get|set|mix] [--seq] [--seconds S] [--timeout s]
 *       Every connection sends a batch of P requests, waits for the P replies, sends the next
 *       batch (as redis-benchmark does) until n requests have been answered. Prints one line:
 *       requests=N errors=N elapsed_s=F rps=F avg_ms=F p50_ms=F p99_ms=F p999_ms=F max_ms=F
 *       (latency of a request: from the write of its batch to the read of its reply).
 *       --seconds S: no new batch after S seconds (n requests at most).
 *       --seq sets keys 0..n-1 in order (to preload a keyspace); --op mix is 9 gets : 1 set.
 *
 *   ncload idle  --proto mc|redis -p PORT -c conns [--pid PROXY_PID] [-d bytes] [-r keyspace]
 *       Opens conns connections in batches of 256 (with --pid, waits after each batch until the
 *       proxy holds the new sockets, so no SYN is dropped), prints "open N", then obeys lines on
 *       standard input: "burst K" (every connection writes K pipelined GETs, then every reply is
 *       read; prints "burst done N") and "quit". Ends on EOF too.
 *
 *   ncload storm --proto mc|redis -p PORT [-c conns] [--rate R [--burst K]] [--timeout s]
 *       A connection storm: up to conns connections at a time, each connects, sends one PING
 *       (memcached: version), reads the reply and closes; the next starts as soon as one ends,
 *       or with --rate R no sooner than R per second on average (connects due are started
 *       together, at most one millisecond late; --burst K: K at once every K/R seconds, with
 *       conns >= K). Runs until "quit" or EOF on standard input
 *       (or --timeout), lets the connections in flight end, then prints one line:
 *       connects=N errors=N elapsed_s=F rate=F p50_ms=F p99_ms=F max_ms=F
 *       (connects: the ones that got their reply; errors: a connect that failed, a close before
 *       the reply, an error reply; latency: from the connect to the reply).
 *
 * Threads: single-threaded.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define LAT_SLOTS 2000000 /* 1 us each: up to 2 s (a bystander beside a crowd of 1 MB replies
                           * waits hundreds of ms); slower ones land in the last slot */
#define RBUF_SIZE (256 * 1024)
#define MAX_DEPTH 8

enum proto { P_MC, P_REDIS };
enum op { OP_GET, OP_SET, OP_MIX };

struct opts {
    enum proto proto;
    int port;
    int conns;
    int pipeline;
    uint64_t requests;
    uint32_t keyspace;
    uint32_t value_len;
    enum op op;
    bool seq;
    int timeout_s;
    int pid;
    double rate;     /* storm: connects per second, 0: as fast as they go */
    uint32_t burst;  /* storm: connects started together */
    int seconds;     /* load: no new batch after that many seconds (0: -n alone) */
};

struct client {
    int fd;
    char *rbuf;
    size_t rlen;
    int outstanding;      /* replies still expected for the current batch */
    uint64_t batch_t0;    /* ns */
    bool connected;
};

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t next_seq;
static uint32_t lat_hist[LAT_SLOTS];
static uint64_t lat_sum_us, lat_max_us, lat_n;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t rng_next(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    rng_state = x;
    return x;
}

static void die(const char *what)
{
    fprintf(stderr, "ncload: %s: %s\n", what, strerror(errno));
    exit(2);
}

static void lat_record(uint64_t us)
{
    lat_hist[us < LAT_SLOTS ? us : LAT_SLOTS - 1]++;
    lat_sum_us += us;
    if (us > lat_max_us) lat_max_us = us;
    lat_n++;
}

static double lat_pct(double p)
{
    uint64_t want = (uint64_t)((double)lat_n * p);
    if (want >= lat_n) want = lat_n ? lat_n - 1 : 0;
    uint64_t seen = 0;
    for (uint32_t i = 0; i < LAT_SLOTS; i++) {
        seen += lat_hist[i];
        if (seen > want) return (double)i / 1000.0;
    }
    return (double)(LAT_SLOTS - 1) / 1000.0;
}

/* Appends one request to out; returns its length. */
static size_t build_request(const struct opts *o, char *out, size_t cap, const char *value)
{
    uint64_t k = o->seq ? next_seq++ : rng_next() % o->keyspace;
    char key[32];
    int kl = snprintf(key, sizeof(key), "key:%012llu", (unsigned long long)k);
    bool set = o->op == OP_SET || (o->op == OP_MIX && rng_next() % 10 == 0);
    int n;
    if (o->proto == P_MC) {
        if (set) {
            n = snprintf(out, cap, "set %s 0 0 %u\r\n", key, o->value_len);
            memcpy(out + n, value, o->value_len);
            n += (int)o->value_len;
            memcpy(out + n, "\r\n", 2);
            n += 2;
        } else {
            n = snprintf(out, cap, "get %s\r\n", key);
        }
    } else {
        if (set) {
            n = snprintf(out, cap, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%u\r\n", kl, key, o->value_len);
            memcpy(out + n, value, o->value_len);
            n += (int)o->value_len;
            memcpy(out + n, "\r\n", 2);
            n += 2;
        } else {
            n = snprintf(out, cap, "*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n", kl, key);
        }
    }
    return (size_t)n;
}

static const char *find_crlf(const char *p, const char *end)
{
    for (; p + 1 < end; p++)
        if (p[0] == '\r' && p[1] == '\n') return p;
    return NULL;
}

/* One complete reply at p: its length, 0 if incomplete, -1 if malformed. *err: an error reply. */
static long parse_redis(const char *p, const char *end, int depth, bool *err)
{
    if (p >= end) return 0;
    if (depth > MAX_DEPTH) return -1;
    const char *eol = find_crlf(p, end);
    if (eol == NULL) return 0;
    long line = eol + 2 - p;
    switch (p[0]) {
    case '+':
    case ':':
        return line;
    case '-':
        *err = true;
        return line;
    case '$': {
        long len = strtol(p + 1, NULL, 10);
        if (len < 0) return line;
        if (end - p < line + len + 2) return 0;
        return line + len + 2;
    }
    case '*': {
        long cnt = strtol(p + 1, NULL, 10);
        long total = line;
        for (long i = 0; i < cnt; i++) {
            long r = parse_redis(p + total, end, depth + 1, err);
            if (r <= 0) return r;
            total += r;
        }
        return total;
    }
    default:
        return -1;
    }
}

static bool starts_with(const char *p, const char *end, const char *word)
{
    size_t n = strlen(word);
    return (size_t)(end - p) >= n && memcmp(p, word, n) == 0;
}

static long parse_mc(const char *p, const char *end, bool *err)
{
    const char *q = p;
    for (int guard = 0; guard < 1024; guard++) {
        const char *eol = find_crlf(q, end);
        if (eol == NULL) return 0;
        if (eol - q >= 6 && memcmp(q, "VALUE ", 6) == 0) {
            /* VALUE <key> <flags> <bytes> [<cas>] */
            const char *s = q + 6;
            int field = 0;
            long bytes = -1;
            while (s < eol && field < 3) {
                while (s < eol && *s == ' ') s++;
                if (field == 2) bytes = strtol(s, NULL, 10);
                while (s < eol && *s != ' ') s++;
                field++;
            }
            if (bytes < 0) return -1;
            const char *next = eol + 2 + bytes + 2;
            if (next > end) return 0;
            q = next;
            continue;
        }
        if (starts_with(q, eol, "ERROR") || starts_with(q, eol, "CLIENT_ERROR") ||
            starts_with(q, eol, "SERVER_ERROR"))
            *err = true;
        return eol + 2 - p;
    }
    return -1;
}

static long parse_reply(const struct opts *o, const char *p, const char *end, bool *err)
{
    return o->proto == P_MC ? parse_mc(p, end, err) : parse_redis(p, end, 0, err);
}

static int connect_one(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) die("socket");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS) die("connect");
    return fd;
}

static void write_all(int fd, const char *buf, size_t len, uint64_t deadline)
{
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, buf + off, len - off);
        if (w > 0) {
            off += (size_t)w;
            continue;
        }
        if (w < 0 && errno != EAGAIN && errno != EINTR) die("write");
        if (now_ns() > deadline) {
            fprintf(stderr, "ncload: timed out writing\n");
            exit(3);
        }
        struct timespec ts = { 0, 100000 };
        nanosleep(&ts, NULL);
    }
}

static char *value_bytes(uint32_t len)
{
    char *v = malloc(len + 1);
    if (v == NULL) die("malloc");
    for (uint32_t i = 0; i < len; i++) v[i] = (char)('a' + i % 26);
    return v;
}

/* Reads what c has; counts complete replies. Returns replies completed, -1 on EOF/error. */
static int client_read(const struct opts *o, struct client *c, uint64_t *errors)
{
    int done = 0;
    for (int loop = 0; loop < 64; loop++) {
        if (c->rlen == RBUF_SIZE) {
            fprintf(stderr, "ncload: a reply larger than the read buffer\n");
            exit(3);
        }
        ssize_t n = read(c->fd, c->rbuf + c->rlen, RBUF_SIZE - c->rlen);
        if (n == 0) return -1;
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR) break;
            return -1;
        }
        c->rlen += (size_t)n;
        size_t pos = 0;
        for (;;) {
            bool err = false;
            long r = parse_reply(o, c->rbuf + pos, c->rbuf + c->rlen, &err);
            if (r < 0) {
                fprintf(stderr, "ncload: malformed reply\n");
                exit(3);
            }
            if (r == 0) break;
            pos += (size_t)r;
            if (err) (*errors)++;
            done++;
        }
        memmove(c->rbuf, c->rbuf + pos, c->rlen - pos);
        c->rlen -= pos;
        if ((size_t)n < RBUF_SIZE) break;
    }
    return done;
}

static void raise_nofile(rlim_t want)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0) return;
    if (rl.rlim_cur >= want) return;
    rl.rlim_cur = want < rl.rlim_max ? want : rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
}

static int run_load(const struct opts *o)
{
    raise_nofile((rlim_t)o->conns + 64);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) die("epoll_create1");
    struct client *cs = calloc((size_t)o->conns, sizeof(*cs));
    size_t req_cap = (size_t)o->pipeline * (o->value_len + 128);
    char *req = malloc(req_cap);
    char *value = value_bytes(o->value_len);
    if (cs == NULL || req == NULL) die("malloc");
    for (int i = 0; i < o->conns; i++) {
        cs[i].fd = connect_one(o->port);
        cs[i].rbuf = malloc(RBUF_SIZE);
        if (cs[i].rbuf == NULL) die("malloc");
        struct epoll_event ev = { .events = EPOLLIN, .data.u32 = (uint32_t)i };
        if (epoll_ctl(ep, EPOLL_CTL_ADD, cs[i].fd, &ev) < 0) die("epoll_ctl");
    }
    uint64_t sent = 0, answered = 0, errors = 0, limit = o->requests;
    uint64_t t0 = now_ns();
    uint64_t deadline = t0 + (uint64_t)o->timeout_s * 1000000000ull;
    /* first batches; a write to a connecting socket waits (briefly) in write_all */
    for (int i = 0; i < o->conns && sent < limit; i++) {
        size_t len = 0;
        int k = 0;
        for (; k < o->pipeline && sent < limit; k++, sent++)
            len += build_request(o, req + len, req_cap - len, value);
        cs[i].outstanding = k;
        cs[i].batch_t0 = now_ns();
        write_all(cs[i].fd, req, len, deadline);
    }
    struct epoll_event evs[256];
    while (answered < limit) {
        if (now_ns() > deadline) {
            fprintf(stderr, "ncload: timed out after %llu of %llu replies\n", (unsigned long long)answered,
                    (unsigned long long)limit);
            return 3;
        }
        int n = epoll_wait(ep, evs, 256, 1000);
        if (n < 0 && errno != EINTR) die("epoll_wait");
        uint64_t now = now_ns();
        if (o->seconds > 0 && now > t0 + (uint64_t)o->seconds * 1000000000ull)
            limit = sent; /* the time is up: the replies outstanding, then stop */
        for (int e = 0; e < n; e++) {
            struct client *c = &cs[evs[e].data.u32];
            int got = client_read(o, c, &errors);
            if (got < 0) {
                fprintf(stderr, "ncload: connection closed by the server\n");
                return 3;
            }
            for (int g = 0; g < got; g++) lat_record((now - c->batch_t0) / 1000u);
            answered += (uint64_t)got;
            c->outstanding -= got;
            if (c->outstanding > 0 || sent >= limit) continue;
            size_t len = 0;
            int k = 0;
            for (; k < o->pipeline && sent < limit; k++, sent++)
                len += build_request(o, req + len, req_cap - len, value);
            c->outstanding = k;
            c->batch_t0 = now_ns();
            write_all(c->fd, req, len, deadline);
        }
    }
    double el = (double)(now_ns() - t0) / 1e9;
    printf("requests=%llu errors=%llu elapsed_s=%.3f rps=%.1f avg_ms=%.3f p50_ms=%.3f p99_ms=%.3f p999_ms=%.3f "
           "max_ms=%.3f\n",
           (unsigned long long)answered, (unsigned long long)errors, el, (double)answered / el,
           lat_n ? (double)lat_sum_us / (double)lat_n / 1000.0 : 0.0, lat_pct(0.50), lat_pct(0.99), lat_pct(0.999),
           (double)lat_max_us / 1000.0);
    for (int i = 0; i < o->conns; i++) {
        close(cs[i].fd);
        free(cs[i].rbuf);
    }
    free(cs);
    free(req);
    free(value);
    close(ep);
    return errors ? 1 : 0;
}

static long count_fds(int pid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd", pid);
    DIR *d = opendir(path);
    if (d == NULL) return -1;
    long n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) n++;
    closedir(d);
    return n;
}

static int run_idle(const struct opts *o)
{
    raise_nofile((rlim_t)o->conns + 64);
    int *fds = calloc((size_t)o->conns, sizeof(int));
    if (fds == NULL) die("calloc");
    long base = o->pid > 0 ? count_fds(o->pid) : 0;
    uint64_t deadline = now_ns() + (uint64_t)o->timeout_s * 1000000000ull;
    for (int i = 0; i < o->conns;) {
        int batch = o->conns - i < 256 ? o->conns - i : 256;
        for (int b = 0; b < batch; b++, i++) fds[i] = connect_one(o->port);
        if (o->pid <= 0) continue;
        while (count_fds(o->pid) < base + i) {
            if (now_ns() > deadline) {
                fprintf(stderr, "ncload: the proxy did not accept %d connections in time\n", i);
                return 3;
            }
            struct timespec ts = { 0, 2000000 };
            nanosleep(&ts, NULL);
        }
    }
    printf("open %d\n", o->conns);
    fflush(stdout);
    char line[128];
    char *value = value_bytes(o->value_len);
    while (fgets(line, sizeof(line), stdin) != NULL) {
        if (strncmp(line, "quit", 4) == 0) break;
        int k = 0;
        if (sscanf(line, "burst %d", &k) != 1 || k <= 0 || k > 1024) {
            fprintf(stderr, "ncload: unknown command: %s", line);
            continue;
        }
        struct opts go = *o;
        go.op = OP_GET;
        go.seq = false;
        size_t cap = (size_t)k * 128;
        char *req = malloc(cap);
        if (req == NULL) die("malloc");
        uint64_t bdl = now_ns() + (uint64_t)o->timeout_s * 1000000000ull;
        for (int i = 0; i < o->conns; i++) {
            size_t len = 0;
            for (int j = 0; j < k; j++) len += build_request(&go, req + len, cap - len, value);
            write_all(fds[i], req, len, bdl);
        }
        uint64_t errors = 0, total = 0;
        int ep = epoll_create1(EPOLL_CLOEXEC);
        struct client *cs = calloc((size_t)o->conns, sizeof(*cs));
        if (ep < 0 || cs == NULL) die("epoll/calloc");
        int pending = o->conns;
        for (int i = 0; i < o->conns; i++) {
            cs[i].fd = fds[i];
            cs[i].outstanding = k;
            cs[i].rbuf = NULL;
            struct epoll_event ev = { .events = EPOLLIN, .data.u32 = (uint32_t)i };
            if (epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev) < 0) die("epoll_ctl");
        }
        struct epoll_event evs[256];
        while (pending > 0) {
            if (now_ns() > bdl) {
                fprintf(stderr, "ncload: burst timed out with %d connections unanswered\n", pending);
                return 3;
            }
            int n = epoll_wait(ep, evs, 256, 1000);
            for (int e = 0; e < n; e++) {
                struct client *c = &cs[evs[e].data.u32];
                if (c->rbuf == NULL) {
                    c->rbuf = malloc(RBUF_SIZE);
                    if (c->rbuf == NULL) die("malloc");
                }
                int got = client_read(o, c, &errors);
                if (got < 0) {
                    fprintf(stderr, "ncload: connection closed during the burst\n");
                    return 3;
                }
                total += (uint64_t)got;
                c->outstanding -= got;
                if (c->outstanding <= 0) {
                    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                    free(c->rbuf);
                    c->rbuf = NULL;
                    pending--;
                }
            }
        }
        close(ep);
        free(cs);
        free(req);
        printf("burst done %llu errors %llu\n", (unsigned long long)total, (unsigned long long)errors);
        fflush(stdout);
    }
    free(value);
    for (int i = 0; i < o->conns; i++) close(fds[i]);
    free(fds);
    return 0;
}

/* One connection of a storm. */
struct churn {
    int fd;
    bool sent;           /* its PING written: now waiting for the reply */
    uint64_t t0;         /* ns, its connect */
    size_t rlen;
    char rbuf[256];
};

/* Whether standard input (readable) says stop: "quit", EOF or an error. */
static bool storm_told_to_stop(void)
{
    char buf[256];
    ssize_t n = read(0, buf, sizeof(buf));
    if (n < 0) return errno != EAGAIN && errno != EINTR;
    return n == 0 || memmem(buf, (size_t)n, "quit", 4) != NULL;
}

/* Starts one storm connection in c: 0, or -errno when it failed at once. */
static int storm_connect(int ep, struct churn *c, uint32_t slot, int port)
{
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) return -errno;
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    c->t0 = now_ns();
    c->sent = false;
    c->rlen = 0;
    struct epoll_event ev = { .events = EPOLLOUT, .data.u32 = slot };
    if ((connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS) ||
        epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) < 0) {
        int err = errno;
        close(c->fd);
        c->fd = -1;
        return -err;
    }
    return 0;
}

/* Progress of storm connection c on an event: 1 when it got its reply (closed), -1 when it
 * failed (closed), 0 when it goes on. */
static int storm_step(const struct opts *o, int ep, struct churn *c, uint32_t slot)
{
    if (!c->sent) {
        int err = 0;
        socklen_t len = sizeof(err);
        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err != 0) return -1;
        const char *ping = o->proto == P_MC ? "version\r\n" : "*1\r\n$4\r\nPING\r\n";
        if (write(c->fd, ping, strlen(ping)) != (ssize_t)strlen(ping)) return -1;
        c->sent = true;
        struct epoll_event ev = { .events = EPOLLIN, .data.u32 = slot };
        return epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev) < 0 ? -1 : 0;
    }
    ssize_t n = read(c->fd, c->rbuf + c->rlen, sizeof(c->rbuf) - c->rlen);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
    if (n <= 0) return -1;
    c->rlen += (size_t)n;
    bool err = false;
    long r = parse_reply(o, c->rbuf, c->rbuf + c->rlen, &err);
    if (r < 0 || err || (r == 0 && c->rlen == sizeof(c->rbuf))) return -1;
    return r > 0 ? 1 : 0;
}

static int run_storm(const struct opts *o)
{
    raise_nofile((rlim_t)o->conns + 64);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) die("epoll_create1");
    struct churn *cs = calloc((size_t)o->conns, sizeof(*cs));
    uint32_t *free_slots = calloc((size_t)o->conns, sizeof(*free_slots));
    if (cs == NULL || free_slots == NULL) die("calloc");
    uint32_t nfree = 0;
    for (int i = o->conns - 1; i >= 0; i--) {
        cs[i].fd = -1;
        free_slots[nfree++] = (uint32_t)i;
    }
    struct epoll_event in = { .events = EPOLLIN, .data.u32 = UINT32_MAX };
    if (epoll_ctl(ep, EPOLL_CTL_ADD, 0, &in) < 0 && errno != EPERM) die("epoll_ctl"); /* EPERM: stdin
                                   * is a file (/dev/null), so only --timeout ends the storm */
    uint64_t started = 0, connects = 0, errors = 0;
    uint64_t t0 = now_ns(), stop_at = 0, grace_end = 0;
    uint64_t deadline = t0 + (uint64_t)o->timeout_s * 1000000000ull;
    struct epoll_event evs[256];
    while (stop_at == 0 || nfree < (uint32_t)o->conns) {
        uint64_t now = now_ns();
        if (stop_at == 0 && now > deadline) stop_at = now;
        if (stop_at != 0 && grace_end == 0) grace_end = stop_at + 5000000000ull;
        if (stop_at != 0 && now > grace_end) break; /* the ones still in flight count as errors */
        int wait_ms = stop_at != 0 ? 100 : 1000;
        while (stop_at == 0 && nfree > 0) {
            if (o->rate > 0) {
                uint64_t group = started / o->burst * o->burst;
                uint64_t due = t0 + (uint64_t)((double)group * 1e9 / o->rate);
                if (due > now) {
                    uint64_t ms = (due - now + 999999) / 1000000;
                    if (ms < (uint64_t)wait_ms) wait_ms = (int)ms;
                    break;
                }
            }
            uint32_t slot = free_slots[--nfree];
            started++;
            if (storm_connect(ep, &cs[slot], slot, o->port) < 0) {
                errors++;
                free_slots[nfree++] = slot;
            }
        }
        int n = epoll_wait(ep, evs, 256, wait_ms);
        if (n < 0 && errno != EINTR) die("epoll_wait");
        for (int e = 0; e < n; e++) {
            uint32_t slot = evs[e].data.u32;
            if (slot == UINT32_MAX) {
                if (storm_told_to_stop()) {
                    if (stop_at == 0) stop_at = now_ns();
                    epoll_ctl(ep, EPOLL_CTL_DEL, 0, NULL);
                }
                continue;
            }
            struct churn *c = &cs[slot];
            int r = storm_step(o, ep, c, slot);
            if (r == 0) continue;
            if (r > 0) {
                connects++;
                lat_record((now_ns() - c->t0) / 1000u);
            } else {
                errors++;
            }
            close(c->fd);
            c->fd = -1;
            free_slots[nfree++] = slot;
        }
    }
    for (int i = 0; i < o->conns; i++) {
        if (cs[i].fd < 0) continue;
        errors++;
        close(cs[i].fd);
    }
    if (stop_at == 0) stop_at = now_ns();
    double el = (double)(stop_at - t0) / 1e9;
    printf("connects=%llu errors=%llu elapsed_s=%.3f rate=%.1f p50_ms=%.3f p99_ms=%.3f max_ms=%.3f\n",
           (unsigned long long)connects, (unsigned long long)errors, el, (double)connects / el, lat_pct(0.50),
           lat_pct(0.99), (double)lat_max_us / 1000.0);
    free(cs);
    free(free_slots);
    close(ep);
    return errors ? 1 : 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: ncload load|idle|storm --proto mc|redis -p PORT [-c N] [-P N] [-n N] [-r N] [-d N]\n"
                    "              [--op get|set|mix] [--seq] [--pid PID] [--seconds S] [--rate R]\n"
                    "              [--burst K] [--timeout S]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    struct opts o = { .proto = P_REDIS, .port = 0, .conns = 50, .pipeline = 1, .requests = 100000,
                      .keyspace = 10000, .value_len = 16, .op = OP_GET, .timeout_s = 120, .burst = 1 };
    if (argc < 2) usage();
    const char *mode = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--seq") == 0) {
            o.seq = true;
            continue;
        }
        if (v == NULL) usage();
        i++;
        if (strcmp(a, "--proto") == 0) o.proto = strcmp(v, "mc") == 0 ? P_MC : P_REDIS;
        else if (strcmp(a, "-p") == 0) o.port = atoi(v);
        else if (strcmp(a, "-c") == 0) o.conns = atoi(v);
        else if (strcmp(a, "-P") == 0) o.pipeline = atoi(v);
        else if (strcmp(a, "-n") == 0) o.requests = strtoull(v, NULL, 10);
        else if (strcmp(a, "-r") == 0) o.keyspace = (uint32_t)strtoul(v, NULL, 10);
        else if (strcmp(a, "-d") == 0) o.value_len = (uint32_t)strtoul(v, NULL, 10);
        else if (strcmp(a, "--pid") == 0) o.pid = atoi(v);
        else if (strcmp(a, "--timeout") == 0) o.timeout_s = atoi(v);
        else if (strcmp(a, "--rate") == 0) o.rate = atof(v);
        else if (strcmp(a, "--seconds") == 0) o.seconds = atoi(v);
        else if (strcmp(a, "--burst") == 0) o.burst = (uint32_t)strtoul(v, NULL, 10);
        else if (strcmp(a, "--op") == 0) o.op = strcmp(v, "set") == 0 ? OP_SET : strcmp(v, "mix") == 0 ? OP_MIX : OP_GET;
        else usage();
    }
    if (o.port <= 0 || o.port > 65535 || o.conns <= 0 || o.conns > 100000 || o.pipeline <= 0 ||
        o.pipeline > 1024 || o.keyspace == 0 || o.value_len > 1000000 || o.timeout_s <= 0 || o.rate < 0 || o.seconds < 0 ||
        o.burst == 0 || o.burst > (uint32_t)o.conns)
        usage();
    if (o.seq && o.requests > o.keyspace) o.requests = o.keyspace;
    if (strcmp(mode, "load") == 0) return run_load(&o);
    if (strcmp(mode, "idle") == 0) return run_idle(&o);
    if (strcmp(mode, "storm") == 0) return run_storm(&o);
    usage();
    return 2;
}
