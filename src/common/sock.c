/*
 * sock.c - socket helpers (see sock.h).
 * Threads: any (no state).
 */
#include "config.h"
#include "common/sock.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define NC_SOCK_MIN(a, b) ((a) < (b) ? (a) : (b))

int sock_set_nonblocking(int fd)
{
    int flags = fcntl(fd, F_GETFL, 0);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) return -errno;
    return 0;
}

int sock_set_nodelay(int fd)
{
    int one = 1;
    return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0 ? -errno : 0;
}

int sock_set_keepalive(int fd, int idle, int cnt, int intvl)
{
    int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) < 0) return -errno;
    if (idle > 0 && setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle)) < 0) return -errno;
    if (cnt > 0 && setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt)) < 0) return -errno;
    if (intvl > 0 && setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl)) < 0)
        return -errno;
    return 0;
}

static int resolve(const char *host, uint16_t port, bool passive, struct addrinfo **res)
{
    char portstr[8];
    snprintf(portstr, sizeof(portstr), "%u", (unsigned)port);
    struct addrinfo hints;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = passive ? AI_PASSIVE : 0;
    int rc = getaddrinfo(host, portstr, &hints, res);
    if (rc != 0) return rc == EAI_SYSTEM ? -errno : -EHOSTDOWN;
    return 0;
}

int sock_listen_tcp(const char *host, uint16_t port, int backlog, bool reuseport)
{
    struct addrinfo *res;
    int rc = resolve(host, port, true, &res);
    if (rc < 0) return rc;
    int fd = -1;
    rc = -EADDRNOTAVAIL;
    for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
            rc = -errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (reuseport) setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, backlog) == 0) {
            rc = 0;
            break;
        }
        rc = -errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return rc < 0 ? rc : fd;
}

static int unix_addr(const char *path, struct sockaddr_un *sa)
{
    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(sa->sun_path)) return -ENAMETOOLONG;
    strcpy(sa->sun_path, path);
    return 0;
}

int sock_listen_unix(const char *path, int perm, int backlog)
{
    struct sockaddr_un sa;
    int rc = unix_addr(path, &sa);
    if (rc < 0) return rc;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -errno;
    unlink(path); /* a stale socket file from an earlier run */
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, backlog) < 0 ||
        (perm >= 0 && chmod(path, (mode_t)perm) < 0)) {
        rc = -errno;
        close(fd);
        return rc;
    }
    return fd;
}

static int connect_addr(int family, const struct sockaddr *sa, socklen_t len, bool *in_progress)
{
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -errno;
    *in_progress = false;
    if (connect(fd, sa, len) < 0) {
        if (errno != EINPROGRESS) {
            int rc = -errno;
            close(fd);
            return rc;
        }
        *in_progress = true;
    }
    return fd;
}

int sock_connect_tcp(const char *host, uint16_t port, bool *in_progress)
{
    struct addrinfo *res;
    int rc = resolve(host, port, false, &res);
    if (rc < 0) return rc;
    rc = -EHOSTDOWN;
    for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
        rc = connect_addr(ai->ai_family, ai->ai_addr, ai->ai_addrlen, in_progress);
        if (rc >= 0) break;
    }
    freeaddrinfo(res);
    if (rc >= 0) sock_set_nodelay(rc);
    return rc;
}

int sock_connect_unix(const char *path, bool *in_progress)
{
    struct sockaddr_un sa;
    int rc = unix_addr(path, &sa);
    if (rc < 0) return rc;
    return connect_addr(AF_UNIX, (struct sockaddr *)&sa, sizeof(sa), in_progress);
}

int sock_connect_result(int fd)
{
    int err = 0;
    socklen_t len = sizeof(err);
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) return -errno;
    return -err;
}

/* The numeric host and the port of an IP socket address; -EAFNOSUPPORT for another family. */
static int sock_ip_of(const struct sockaddr_storage *ss, socklen_t len, char *host, size_t size, uint16_t *port)
{
    if (ss->ss_family != AF_INET && ss->ss_family != AF_INET6) return -EAFNOSUPPORT;
    if (getnameinfo((const struct sockaddr *)ss, len, host, (socklen_t)size, NULL, 0, NI_NUMERICHOST) != 0)
        return -EINVAL;
    *port = ntohs(ss->ss_family == AF_INET ? ((const struct sockaddr_in *)ss)->sin_port
                                           : ((const struct sockaddr_in6 *)ss)->sin6_port);
    return 0;
}

int sock_addr_ip(int fd, bool peer, char *host, size_t size, uint16_t *port)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    memset(&ss, 0, sizeof(ss));
    int rc = peer ? getpeername(fd, (struct sockaddr *)&ss, &len) : getsockname(fd, (struct sockaddr *)&ss, &len);
    if (rc < 0) return -errno;
    return sock_ip_of(&ss, len, host, size, port);
}

void sock_addr_text(int fd, bool peer, char *buf, size_t size)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (size == 0) return;
    snprintf(buf, size, "?");
    memset(&ss, 0, sizeof(ss));
    int rc = peer ? getpeername(fd, (struct sockaddr *)&ss, &len) : getsockname(fd, (struct sockaddr *)&ss, &len);
    if (rc < 0) return;
    if (ss.ss_family == AF_UNIX) {
        const struct sockaddr_un *un = (const struct sockaddr_un *)&ss;
        if (peer && (len <= offsetof(struct sockaddr_un, sun_path) || un->sun_path[0] == '\0')) {
            sock_addr_text(fd, false, buf, size);
            return;
        }
        size_t n = len > offsetof(struct sockaddr_un, sun_path) ? len - offsetof(struct sockaddr_un, sun_path) : 0;
        n = strnlen(un->sun_path, NC_SOCK_MIN(n, sizeof(un->sun_path)));
        snprintf(buf, size, "%.*s:0", (int)n, un->sun_path);
        return;
    }
    char host[NI_MAXHOST];
    uint16_t port;
    if (sock_ip_of(&ss, len, host, sizeof(host), &port) != 0) return;
    snprintf(buf, size, ss.ss_family == AF_INET6 ? "[%s]:%u" : "%s:%u", host, port);
}
