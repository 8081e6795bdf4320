/*
 * conf_tls.c - the pool's TLS keys (notes/tls.md): the values of tls_auth_clients and
 * tls_protocols, and what the keys must agree on once a pool is parsed (a certificate with its
 * key, a CA for client certificates, files that can be read, no TLS on a unix-socket listener).
 * What needs OpenSSL (files that parse, a key that matches its certificate) is checked where the
 * TLS contexts are built (net/tls_ctx.c).
 *
 * Threads: whoever loads a config. Nothing is kept.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/util.h"
#include "conf/conf_int.h"

static const struct {
    const char *name;
    int value;
} conf_tls_auths[] = {
    { "no", CONF_TLS_AUTH_NO }, { "yes", CONF_TLS_AUTH_YES }, { "optional", CONF_TLS_AUTH_OPTIONAL },
};

static const struct {
    const char *name;
    unsigned bit;
} conf_tls_protos[] = {
    { "TLSv1", CONF_TLS_V1_0 }, { "TLSv1.1", CONF_TLS_V1_1 },
    { "TLSv1.2", CONF_TLS_V1_2 }, { "TLSv1.3", CONF_TLS_V1_3 },
};

int conf_tls_auth_parse(const char *s, int *out)
{
    for (size_t i = 0; i < NC_ARRAY_LEN(conf_tls_auths); i++) {
        if (strcasecmp(s, conf_tls_auths[i].name) == 0) {
            *out = conf_tls_auths[i].value;
            return 0;
        }
    }
    return -EINVAL;
}

/* The bit of the protocol named s[0..len), or 0. */
static unsigned conf_tls_proto_bit(const char *s, size_t len)
{
    for (size_t i = 0; i < NC_ARRAY_LEN(conf_tls_protos); i++) {
        const char *name = conf_tls_protos[i].name;
        if (strlen(name) == len && strncasecmp(s, name, len) == 0) return conf_tls_protos[i].bit;
    }
    return 0;
}

int conf_tls_protocols_parse(const char *s, unsigned *mask, char *err, size_t errlen)
{
    unsigned bits = 0;
    const char *p = s;
    for (;;) {
        p += strspn(p, " \t,");
        if (*p == '\0') break;
        size_t len = strcspn(p, " \t,");
        unsigned bit = conf_tls_proto_bit(p, len);
        if (bit == 0) {
            snprintf(err, errlen, "unknown protocol '%.*s' (valid: TLSv1, TLSv1.1, TLSv1.2, TLSv1.3)",
                     (int)(len > 64 ? 64 : len), p);
            return -EINVAL;
        }
        bits |= bit;
        p += len;
    }
    if (bits == 0) {
        snprintf(err, errlen, "no protocol (valid: TLSv1, TLSv1.1, TLSv1.2, TLSv1.3)");
        return -EINVAL;
    }
    *mask = bits;
    return 0;
}

/* A file the side needs: reports it when it cannot be opened for reading. */
static void conf_tls_file(const struct conf_pool *p, const char *key, const char *path,
                          struct conf_report *r)
{
    if (path == NULL) return;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        conf_report(r, conf_pool_key_line(p, key), 0, p->name, key, "cannot read '%s': %s", path,
                    strerror(errno));
        return;
    }
    close(fd);
}

/* A key that must be set when another is (the line: the other's; why: "is true", "is set"). */
static void conf_tls_need(const struct conf_pool *p, const char *key, const char *value,
                          const char *because, const char *why, struct conf_report *r)
{
    if (value == NULL)
        conf_report(r, conf_pool_key_line(p, because), 0, p->name, key, "required when %s %s",
                    because, why);
}

static void conf_tls_check_clients(const struct conf_pool *p, struct conf_report *r)
{
    if (p->listen.is_unix && p->listen.text != NULL)
        conf_report(r, conf_pool_key_line(p, "tls"), 0, p->name, "tls",
                    "TLS on a unix-socket listener ('%s') is not supported", p->listen.text);
    conf_tls_need(p, "tls_cert_file", p->tls_cert_file, "tls", "is true", r);
    conf_tls_need(p, "tls_key_file", p->tls_key_file, "tls", "is true", r);
    if (p->tls_auth_clients != CONF_TLS_AUTH_NO && p->tls_ca_cert_file == NULL)
        conf_report(r, conf_pool_key_line(p, "tls_auth_clients"), 0, p->name, "tls_ca_cert_file",
                    "required when tls_auth_clients is %s",
                    p->tls_auth_clients == CONF_TLS_AUTH_YES ? "yes" : "optional");
    conf_tls_file(p, "tls_cert_file", p->tls_cert_file, r);
    conf_tls_file(p, "tls_key_file", p->tls_key_file, r);
    conf_tls_file(p, "tls_ca_cert_file", p->tls_ca_cert_file, r);
}

static void conf_tls_check_servers(const struct conf_pool *p, struct conf_report *r)
{
    if (p->server_tls_cert_file != NULL)
        conf_tls_need(p, "server_tls_key_file", p->server_tls_key_file, "server_tls_cert_file", "is set", r);
    if (p->server_tls_key_file != NULL)
        conf_tls_need(p, "server_tls_cert_file", p->server_tls_cert_file, "server_tls_key_file", "is set", r);
    conf_tls_file(p, "server_tls_ca_cert_file", p->server_tls_ca_cert_file, r);
    conf_tls_file(p, "server_tls_cert_file", p->server_tls_cert_file, r);
    conf_tls_file(p, "server_tls_key_file", p->server_tls_key_file, r);
}

unsigned conf_tls_check(const struct conf_pool *p, struct conf_report *r)
{
    unsigned before = r->nerrors;
    if (p->tls) conf_tls_check_clients(p, r);
    if (p->server_tls) conf_tls_check_servers(p, r);
    return r->nerrors - before;
}
