/*
 * transport_plain.c - the plain-socket transport (see transport.h): read, writev and accept4 on
 * the non-blocking socket itself, no handshake, nothing held back. The generic helpers of
 * transport.h live here too.
 *
 * read and writev are made as raw system calls (syscall(2)): libc's wrappers are cancellation
 * points, which costs two calls around every system call in a threaded process (~40 instructions
 * each, 4 to 5 calls per proxied request); the proxy never cancels a thread.
 *
 * Threads: the ops are const; a struct transport belongs to its connection's thread.
 */
#include "config.h"
#include "net/transport.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static ssize_t plain_read(struct transport *t, void *buf, size_t len)
{
    for (;;) {
        ssize_t n = syscall(SYS_read, t->fd, buf, len);
        if (n >= 0) return n;
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            t->want = TRANSPORT_WANT_READ;
            return -EAGAIN;
        }
        return -errno;
    }
}

static ssize_t plain_writev(struct transport *t, const struct iovec *iov, int n)
{
    for (;;) {
        ssize_t w = syscall(SYS_writev, t->fd, iov, n);
        if (w >= 0) return w;
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            t->want = TRANSPORT_WANT_WRITE;
            return 0;
        }
        return -errno;
    }
}

static int plain_accept(struct transport *t, struct sockaddr *sa, socklen_t *salen)
{
    for (;;) {
        int fd = accept4(t->fd, sa, salen, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) return fd;
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            t->want = TRANSPORT_WANT_READ;
            return -EAGAIN;
        }
        return -errno;
    }
}

static void plain_shutdown(struct transport *t)
{
    shutdown(t->fd, SHUT_WR);
}

static void plain_close(struct transport *t)
{
    close(t->fd);
}

const struct transport_ops transport_plain_ops = {
    .name = "plain",
    .open = NULL,
    .handshake = NULL,
    .read = plain_read,
    .writev = plain_writev,
    .pending = NULL,
    .accept = plain_accept,
    .shutdown = plain_shutdown,
    .close = plain_close,
    .why = NULL,
    .resumed = NULL,
};

const struct transport_ctx transport_plain_ctx = {
    .ops = &transport_plain_ops,
    .impl = NULL,
};

void transport_init_closed(struct transport *t)
{
    t->ops = &transport_plain_ops;
    t->state = NULL;
    t->fd = -1;
    t->want = 0;
}

int transport_open(struct transport *t, const struct transport_ctx *ctx, int fd,
                   const struct transport_peer *peer)
{
    transport_init_closed(t);
    t->ops = ctx->ops;
    t->fd = fd;
    int rc = ctx->ops->open != NULL ? ctx->ops->open(t, ctx, peer) : 0;
    if (rc < 0) {
        close(fd);
        transport_init_closed(t);
    }
    return rc;
}

void transport_close(struct transport *t)
{
    if (t->fd >= 0) t->ops->close(t);
    t->fd = -1;
    t->state = NULL;
    t->want = 0;
}

ssize_t transport_write(struct transport *t, const void *buf, size_t len)
{
    struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
    return transport_writev(t, &iov, 1);
}

bool transport_peer_gone(const struct transport *t)
{
    if (t->fd < 0) return true;
    int err = 0;
    socklen_t len = sizeof(err);
    if (getsockopt(t->fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err != 0) return true;
    char b;
    ssize_t n = recv(t->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

const char *transport_strerror(const struct transport *t, int err)
{
    const char *why = t->ops->why != NULL ? t->ops->why(t) : NULL;
    return why != NULL ? why : strerror(err);
}
