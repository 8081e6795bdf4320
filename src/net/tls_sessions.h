/*
 * tls_sessions.h - the TLS sessions the servers' side keeps to resume its next connections
 * (notes/tls.md, "Sessions"): one SSL_SESSION per peer id ("host:port", a unix socket's path) in
 * a small store hung on a connecting SSL_CTX, filled by OpenSSL's new-session callback (a TLS 1.3
 * ticket arrives after the handshake, on a later read) and offered by the next connection to the
 * same peer with the same context. At most TLS_SESSIONS_MAX ids per store (one per server of the
 * pool; past that, ids take over slots in turn).
 *
 * Threads: a store belongs to its SSL_CTX, and a connecting SSL_CTX is one worker's own
 * (tls_ctx_for_thread; the prober has its own too): only that thread reads or changes it. It is
 * freed with its SSL_CTX, by whichever thread drops the context's last reference (its config
 * generation, or the last connection still open on it); a lock nobody contends orders the two.
 */
#ifndef NC_TLS_SESSIONS_H
#define NC_TLS_SESSIONS_H

#include <openssl/ssl.h>

#define TLS_SESSIONS_MAX 1024

/* Makes s (a TLS client's context) keep sessions: its cache mode, the new-session callback and
 * an empty store. Returns 0, or -1 (out of memory, or OpenSSL's error queue says why). */
int tls_sessions_attach(SSL_CTX *s);
/* Before ssl's handshake with the peer known as id: records id on ssl (for the sessions it will
 * get) and offers the session kept for id, if any and resumable. Returns 0 or -ENOMEM. */
int tls_sessions_offer(SSL *ssl, const char *id);
/* ssl's handshake failed: the session kept for its peer, if any, is dropped. */
void tls_sessions_forget(SSL *ssl);

#endif
