/*
 * local_client.h - a redis client for the unit tests of the requests the proxy answers itself
 * (proto_ops.local: test_redis_hello.c, test_redis_cluster.c): its session over a pool of its
 * own, the requests it sends parsed by the protocol's parser (proto_drv.c) and handed to
 * local(), and local()'s verdict and reply text.
 *
 * Threads: the test's only.
 */
#ifndef NC_TEST_LOCAL_CLIENT_H
#define NC_TEST_LOCAL_CLIENT_H

#include <stddef.h>

#include "conf/conf.h"
#include "proto/proto.h"
#include "proto_drv.h"

/* A client: its session over a pool, and the requests it sent (parsed). */
struct client {
    struct tenv e;
    struct drv d;
    struct conf_pool cp;
    struct proto_session s;
    size_t next;   /* the next parsed request local() has not seen */
};

/* A client of a redis pool with redis_auth auth (NULL: none) and redis_db db; the pool's other
 * keys (c->cp) and the parser's options (c->d.opts) may be set before its first request. */
void client_open(struct client *c, const char *auth, int db);
void client_close(struct client *c);
/* Sends the request in[0..len) and runs local() on it: returns its verdict, the reply text in
 * text (NUL-terminated). */
int client_send(struct client *c, const char *in, size_t len, char *text, size_t size);
/* Sends the words of line (RESP). */
int client_say(struct client *c, const char *line, char *text, size_t size);
/* local() answers line with want. */
void expect(struct client *c, const char *line, const char *want);
/* local() leaves line to the fan-out or the servers (PROTO_FORWARD, no reply text). */
void expect_forward(struct client *c, const char *line);

#endif
