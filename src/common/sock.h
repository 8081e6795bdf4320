/*
 * sock.h - socket helpers: non-blocking, TCP options, listen, connect, address resolution.
 * Threads: any (no state). Functions return 0 / an fd, or -errno.
 */
#ifndef NC_SOCK_H
#define NC_SOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

int sock_set_nonblocking(int fd);
int sock_set_nodelay(int fd);
/* enable keepalive; idle/cnt/intvl < 0 keep the kernel defaults */
int sock_set_keepalive(int fd, int idle, int cnt, int intvl);

/* Listens on host:port (TCP) or a unix socket path (perm >= 0: chmod). Returns the fd or -errno. */
int sock_listen_tcp(const char *host, uint16_t port, int backlog, bool reuseport);
int sock_listen_unix(const char *path, int perm, int backlog);

/* Starts a non-blocking connect. *in_progress is set when the connect has not finished yet.
 * Host names are resolved here (each time: DNS changes are followed). Returns the fd or -errno. */
int sock_connect_tcp(const char *host, uint16_t port, bool *in_progress);
int sock_connect_unix(const char *path, bool *in_progress);
/* After a non-blocking connect became writable: 0 or -errno (SO_ERROR). */
int sock_connect_result(int fd);

/* The address of fd's peer (peer) or its own, as redis writes it in CLIENT LIST: "ip:port",
 * "[ip6]:port", or a unix socket's path then ":0" (an accepted unix socket's peer has no path:
 * its own is given). Written NUL-terminated into buf; "?" when it cannot be had. */
void sock_addr_text(int fd, bool peer, char *buf, size_t size);
/* The numeric host (IPv6 without brackets) and the port of fd's peer (peer) or its own, into
 * host[0..size) and *port. Returns 0, or -errno (-EAFNOSUPPORT: not an IP socket). */
int sock_addr_ip(int fd, bool peer, char *host, size_t size, uint16_t *port);

#endif
