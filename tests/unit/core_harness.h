/*
 * core_harness.h - an in-process proxy for the unit tests of core/, driven black-box at the loop
 * level: a config built from YAML (one redis pool, "alpha", whose servers are s1, s2, ...), its
 * runtime, an event base and one struct loop (core/loop.h) with its counter block, as a worker has.
 *
 * - The pool's servers are fake redis servers of the test: sockets listening on 127.0.0.1 (a port
 *   the kernel picks); the harness accepts the proxy's connections (numbered per server in the
 *   order they are accepted) and keeps what each one received; the test reads it
 *   (ch_srv_expect...) and answers byte by byte (ch_srv_send).
 * - A client is one end of a socketpair handed to the loop (loop_take_client); the test writes
 *   requests on the other end and reads the replies there.
 * - Waits step the event loop until a condition holds, bounded by CH_WAIT_MS (a timeout fails the
 *   test, showing what every connection holds); ch_settle runs it until nothing moves, before an
 *   assertion that something did not happen.
 *
 * Only the loop's entry points are used (loop_init, loop_take_client, loop_deinit), so the tests
 * do not depend on how core/ is built inside.
 *
 * Threads: the test's only (the loop runs on it).
 */
#ifndef NC_TEST_CORE_HARNESS_H
#define NC_TEST_CORE_HARNESS_H

#include <stdbool.h>
#include <stddef.h>

#define CH_SERVERS_MAX 4
#define CH_CONNS_MAX 8       /* connections accepted per fake server */
#define CH_CLIENTS_MAX 4
#define CH_WAIT_MS 20000     /* the bound of every wait: room for a sanitizer build on a loaded machine */

struct harness;
struct transport_ctx;
struct stats_pool_block;

/* A proxy with one redis pool of nservers fake servers; pool_keys: more YAML lines of the pool
 * ("  timeout: 5000\n"), or NULL. Fails the test on error. */
struct harness *ch_new(size_t nservers, const char *pool_keys);
/* ch_new whose pool moves its clients' bytes through client_tp and its servers' through server_tp
 * (net/transport.h; NULL: the config's), put in the runtime before any connection exists. The
 * contexts are the test's: they must outlive the harness. */
struct harness *ch_new_with_transports(size_t nservers, const char *pool_keys, const struct transport_ctx *client_tp,
                                       const struct transport_ctx *server_tp);
/* Tears the loop down, closes every socket, frees everything. */
void ch_free(struct harness *h);
/* cmocka fixtures: *state is a harness of two servers, no more pool keys. */
int ch_setup(void **state);
int ch_teardown(void **state);

/* The pool's counter block of the loop (stats/stats.h: client_err, server_err ...). */
const struct stats_pool_block *ch_pool_stats(struct harness *h);
/* The loop's own counter block (stats/stats.h: batch_waits, reply_holds ...). */
const struct stats_worker *ch_worker_stats(struct harness *h);
/* Sets the loop's -W (core/batch_wait.h; a worker's is set before its loop runs; 0 here). */
void ch_batch_wait(struct harness *h, unsigned usec);

/* The index of the server key maps to (the pool's routing). */
size_t ch_route(struct harness *h, const char *key);
/* Writes to out a key that maps to server s: prefix followed by a number. */
void ch_key_on(struct harness *h, size_t s, const char *prefix, char *out, size_t size);
/* Two keys, k0 on server s1 (index 0) and k1 on s2. */
void ch_keys_apart(struct harness *h, char *k0, char *k1, size_t size);

/* RESP requests from words: commands separated by ';', words by ' ', after printf formatting
 * ("MULTI;SET %s v;EXEC"). The text lives in the harness until 8 more calls. */
const char *ch_resp(struct harness *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* printf's text, kept the same way. */
const char *ch_text(struct harness *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A new client of the pool; returns its index. */
int ch_client(struct harness *h);
/* The client writes bytes (all of them, at once). */
void ch_send(struct harness *h, int c, const char *bytes);
/* The client closes its end. */
void ch_close(struct harness *h, int c);
/* Waits until the client has received strlen(bytes) more bytes; they must be these. */
void ch_expect(struct harness *h, int c, const char *bytes);
/* Waits for n more bytes of the client and copies them to out (n + 1 bytes, NUL-terminated). */
void ch_take(struct harness *h, int c, size_t n, char *out);
/* Waits until the proxy has closed the client (EOF on its end). */
void ch_wait_closed(struct harness *h, int c);

/* Waits until some connection of server s has received bytes (next, after what the test read
 * of it); returns that connection's index. */
size_t ch_srv_expect(struct harness *h, size_t s, const char *bytes);
/* The same on connection k of server s. */
void ch_srv_expect_on(struct harness *h, size_t s, size_t k, const char *bytes);
/* Connection k of server s writes bytes to the proxy. */
void ch_srv_send(struct harness *h, size_t s, size_t k, const char *bytes);
/* A round trip: client c sends request, server s receives it (on the connection returned) and
 * answers reply, which the client receives. */
size_t ch_relay(struct harness *h, int c, size_t s, const char *request, const char *reply);
/* Server s closes its connection k. */
void ch_srv_close(struct harness *h, size_t s, size_t k);
/* Waits until the proxy has closed connection k of server s (EOF). */
void ch_srv_wait_closed(struct harness *h, size_t s, size_t k);
/* How many connections server s has accepted (call ch_settle first to count every connect). */
size_t ch_srv_nconns(struct harness *h, size_t s);
/* How many bytes connection k of server s has received that the test has not read yet. */
size_t ch_srv_unread(struct harness *h, size_t s, size_t k);
/* Whether the proxy has closed connection k of server s (as far as the harness has read). */
bool ch_srv_closed(struct harness *h, size_t s, size_t k);

typedef bool (*ch_pred)(struct harness *h, void *arg);
/* Steps the loop until pred holds; fails the test after CH_WAIT_MS. */
void ch_wait(struct harness *h, ch_pred pred, void *arg, const char *what);

/* Runs the loop until nothing moves: every byte written by anyone read by its peer, every
 * connection accepted, no event active, for several rounds in a row. */
void ch_settle(struct harness *h);
/* Settles, then fails unless every byte every client and fake server received was read by the
 * test: nothing unexpected reached anyone; and unless no socket of the proxy is armed for writing
 * (with nothing on its way, its event would fire in every round of the loop). */
void ch_assert_quiet(struct harness *h);

#endif
