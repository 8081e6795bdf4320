/*
 * conf_addr.c - parses the address strings of a config: a pool's listen value ("host:port" or
 * "/path [octal perm]") and its servers entries ("host:port:weight [name]" or "/path:weight [name]",
 * split from the right so that IPv6 hosts and ':' in paths work). Host names are kept as written;
 * nothing is resolved here.
 *
 * Threads: whoever loads a config. Pure string work, no state.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/un.h>

#include "conf/conf_int.h"

#define CONF_PORT_MAX 65535
#define CONF_WEIGHT_MAX INT32_MAX
#define CONF_PERM_MAX 0777
#define CONF_UNIX_PATH_MAX (sizeof(((struct sockaddr_un *)0)->sun_path) - 1)
#define CONF_PORT_KETAMA_BARE 11211 /* ketama names a server on this port by its host alone */

#define CONF_LISTEN_FORM "host:port or an absolute unix socket path"
#define CONF_SERVER_FORM "host:port:weight [name] or /path:weight [name]"

static const char conf_blanks[] = " \t";

static size_t conf_skip_blanks(const char *s)
{
    return strspn(s, conf_blanks);
}

/* A unix socket path: absolute, and short enough for sockaddr_un. */
static int conf_unix_path_check(size_t len, char *err, size_t errlen)
{
    if (len <= CONF_UNIX_PATH_MAX) return 0;
    snprintf(err, errlen, "unix socket path is too long (%zu bytes, at most %zu)", len,
             (size_t)CONF_UNIX_PATH_MAX);
    return -EINVAL;
}

/*
 * Splits s[0..len) at its last ':' and parses the number after it, which must be 1..max, into
 * *value; *headlen is the length before the ':'. what names the number ("port", "weight") and
 * form the expected syntax in messages.
 */
static int conf_split_number(const char *s, size_t len, const char *what, int64_t max,
                             const char *form, size_t *headlen, int64_t *value, char *err,
                             size_t errlen)
{
    const char *colon = memrchr(s, ':', len);
    if (colon == NULL) {
        snprintf(err, errlen, "missing ':%s' (expected %s)", what, form);
        return -EINVAL;
    }
    const char *num = colon + 1;
    size_t nlen = len - (size_t)(num - s);
    if (conf_parse_int(num, nlen, 10, 1, max, value) != 0) {
        snprintf(err, errlen, "bad %s '%.*s' (must be a number between 1 and %lld)", what,
                 (int)nlen, num, (long long)max);
        return -EINVAL;
    }
    *headlen = (size_t)(colon - s);
    return 0;
}

/*
 * Splits s[0..len) = "host:port". The host (*host, *hostlen) is without IPv6 brackets; *port is
 * 1..65535. form names the expected syntax in messages.
 */
static int conf_host_port_split(const char *s, size_t len, const char *form, const char **host,
                                size_t *hostlen, uint16_t *port, char *err, size_t errlen)
{
    int64_t p;
    if (conf_split_number(s, len, "port", CONF_PORT_MAX, form, hostlen, &p, err, errlen) != 0) {
        return -EINVAL;
    }
    *host = s;
    if (*hostlen > 2 && s[0] == '[' && s[*hostlen - 1] == ']') {
        *host = s + 1;
        *hostlen -= 2;
    }
    if (*hostlen == 0) {
        snprintf(err, errlen, "missing host before '%.*s'", (int)len, s);
        return -EINVAL;
    }
    *port = (uint16_t)p;
    return 0;
}

void conf_addr_deinit(struct conf_addr *a)
{
    free(a->text);
    free(a->host);
    a->text = NULL;
    a->host = NULL;
}

/* Fills a from the written address text[0..len) and its host; -ENOMEM leaves nothing to free. */
static int conf_addr_fill(struct conf_addr *a, const char *text, size_t len, const char *host,
                          size_t hostlen)
{
    a->text = strndup(text, len);
    a->host = strndup(host, hostlen);
    if (a->text == NULL || a->host == NULL) {
        conf_addr_deinit(a);
        return -ENOMEM;
    }
    return 0;
}

int conf_listen_parse(const char *s, struct conf_addr *a, char *err, size_t errlen)
{
    memset(a, 0, sizeof(*a));
    a->perm = -1;
    size_t alen = strcspn(s, conf_blanks);
    const char *rest = s + alen + conf_skip_blanks(s + alen);

    if (alen == 0) {
        snprintf(err, errlen, "expected %s", CONF_LISTEN_FORM);
        return -EINVAL;
    }
    if (s[0] != '/') {
        const char *host;
        size_t hostlen;
        if (*rest != '\0') {
            snprintf(err, errlen, "unexpected '%s' after host:port", rest);
            return -EINVAL;
        }
        if (conf_host_port_split(s, alen, CONF_LISTEN_FORM, &host, &hostlen, &a->port, err,
                                 errlen) != 0) {
            return -EINVAL;
        }
        return conf_addr_fill(a, s, alen, host, hostlen);
    }

    a->is_unix = true;
    if (conf_unix_path_check(alen, err, errlen) != 0) return -EINVAL;
    if (*rest != '\0') {
        int64_t perm;
        if (conf_parse_int(rest, strlen(rest), 8, 0, CONF_PERM_MAX, &perm) != 0) {
            snprintf(err, errlen, "bad permissions '%s' (must be an octal number between 0 and %04o)",
                     rest, CONF_PERM_MAX);
            return -EINVAL;
        }
        a->perm = (int)perm;
    }
    return conf_addr_fill(a, s, alen, s, alen);
}

void conf_server_deinit(struct conf_server *srv)
{
    conf_addr_deinit(&srv->addr);
    free(srv->name);
    free(srv->pname);
    free(srv->stats_name);
    free(srv->ketama_name);
    srv->name = srv->pname = srv->stats_name = srv->ketama_name = NULL;
}

/* The names of a parsed server: pname = addr[0..alen) as written; the rest follow the name. */
static int conf_server_names(struct conf_server *srv, const char *addr, size_t alen,
                             const char *name, size_t namelen, size_t ketama_len)
{
    srv->pname = strndup(addr, alen);
    if (namelen > 0) {
        srv->name = strndup(name, namelen);
        srv->stats_name = strndup(name, namelen);
        srv->ketama_name = strndup(name, namelen);
    } else {
        srv->stats_name = strndup(addr, alen);
        srv->ketama_name = strndup(addr, ketama_len);
    }
    if (srv->pname == NULL || srv->stats_name == NULL || srv->ketama_name == NULL ||
        (namelen > 0 && srv->name == NULL)) {
        return -ENOMEM;
    }
    return 0;
}

int conf_server_parse(const char *s, struct conf_server *srv, char *err, size_t errlen)
{
    memset(srv, 0, sizeof(*srv));
    srv->addr.perm = -1;

    size_t alen = strcspn(s, conf_blanks);
    const char *name = s + alen + conf_skip_blanks(s + alen);
    size_t namelen = strcspn(name, conf_blanks);
    const char *extra = name + namelen + conf_skip_blanks(name + namelen);
    if (*extra != '\0') {
        snprintf(err, errlen, "unexpected '%s' after the server name", extra);
        return -EINVAL;
    }

    /* weight: after the last ':'; the address before it */
    size_t hplen;
    int64_t weight;
    if (conf_split_number(s, alen, "weight", CONF_WEIGHT_MAX, CONF_SERVER_FORM, &hplen, &weight,
                          err, errlen) != 0) {
        return -EINVAL;
    }
    srv->weight = (uint32_t)weight;

    const char *host = s;
    size_t hostlen = hplen;
    size_t ketama_len = hplen;
    if (s[0] == '/') {
        srv->addr.is_unix = true;
        if (conf_unix_path_check(hplen, err, errlen) != 0) return -EINVAL;
    } else {
        if (conf_host_port_split(s, hplen, CONF_SERVER_FORM, &host, &hostlen, &srv->addr.port,
                                 err, errlen) != 0) {
            return -EINVAL;
        }
        if (srv->addr.port == CONF_PORT_KETAMA_BARE) {
            ketama_len = (size_t)((const char *)memrchr(s, ':', hplen) - s);
        }
    }
    if (conf_addr_fill(&srv->addr, s, hplen, host, hostlen) != 0 ||
        conf_server_names(srv, s, alen, name, namelen, ketama_len) != 0) {
        conf_server_deinit(srv);
        return -ENOMEM;
    }
    return 0;
}

bool conf_addr_same(const struct conf_addr *a, const struct conf_addr *b)
{
    if (a->host == NULL || b->host == NULL) return false;
    if (a->is_unix != b->is_unix || a->port != b->port) return false;
    return a->is_unix ? strcmp(a->host, b->host) == 0 : strcasecmp(a->host, b->host) == 0;
}
