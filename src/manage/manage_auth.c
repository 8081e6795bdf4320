/*
 * manage_auth.c - trusted networks and the manage password (see manage_auth.h).
 *
 * Threads: parsing and loading on the master before the stats thread starts; the checks on the
 * stats thread; a reload's password file is read on the master (into its own manage_password).
 */
#include "config.h"
#include "manage/manage_auth.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/secret.h"

/* One entry, "addr" or "addr/prefix", copied into a NUL-terminated buffer. */
static int manage_net_parse(struct manage_net *n, const char *s, size_t len, char *err, size_t errlen)
{
    char buf[INET6_ADDRSTRLEN + 8];
    if (len == 0 || len >= sizeof(buf)) {
        snprintf(err, errlen, "'%.*s' is not a network", (int)len, s);
        return -EINVAL;
    }
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *slash = strchr(buf, '/');
    if (slash != NULL) *slash = '\0';
    memset(n, 0, sizeof(*n));
    unsigned max;
    if (inet_pton(AF_INET, buf, n->addr) == 1) {
        n->family = AF_INET;
        max = 32;
    } else if (inet_pton(AF_INET6, buf, n->addr) == 1) {
        n->family = AF_INET6;
        max = 128;
    } else {
        snprintf(err, errlen, "'%.*s' is not an IPv4 or IPv6 address (with an optional /prefix)",
                 (int)len, s);
        return -EINVAL;
    }
    n->prefix = max;
    if (slash != NULL) {
        const char *p = slash + 1;
        unsigned v = 0;
        bool ok = *p != '\0' && strlen(p) <= 3;
        for (; ok && *p != '\0'; p++) {
            if (*p < '0' || *p > '9') ok = false;
            else v = v * 10u + (unsigned)(*p - '0');
        }
        if (!ok || v > max) {
            snprintf(err, errlen, "'%.*s': the prefix length must be 0..%u", (int)len, s, max);
            return -EINVAL;
        }
        n->prefix = v;
    }
    return 0;
}

int manage_auth_set_trust(struct manage_auth *a, const char *text, char *err, size_t errlen)
{
    if (errlen > 0) err[0] = '\0';
    a->nnets = 0;
    snprintf(a->trust_text, sizeof(a->trust_text), "%s", text);
    if (strcmp(text, "none") == 0) return 0;
    const char *p = text;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma != NULL ? (size_t)(comma - p) : strlen(p);
        if (a->nnets == MANAGE_TRUST_MAX) {
            snprintf(err, errlen, "at most %d networks", MANAGE_TRUST_MAX);
            return -EINVAL;
        }
        int rc = manage_net_parse(&a->nets[a->nnets], p, len, err, errlen);
        if (rc < 0) return rc;
        a->nnets++;
        if (comma == NULL) return 0;
        p = comma + 1;
    }
}

int manage_password_read(struct manage_password *pw, const char *path, bool *loose, char *err, size_t errlen)
{
    if (errlen > 0) err[0] = '\0';
    *loose = false;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot open '%s': %s", path, strerror(e));
        return -e;
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && (st.st_mode & (S_IRWXG | S_IRWXO)) != 0) *loose = true;
    char buf[MANAGE_PASSWORD_MAX + 2];
    size_t n = 0;
    int rc = 0;
    while (n < sizeof(buf)) {
        ssize_t r = read(fd, buf + n, sizeof(buf) - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            rc = -errno;
            snprintf(err, errlen, "cannot read '%s': %s", path, strerror(-rc));
            break;
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    size_t len = 0;
    while (rc == 0 && len < n && buf[len] != '\n' && buf[len] != '\r') len++;
    if (rc == 0 && (len == 0 || len > MANAGE_PASSWORD_MAX)) {
        snprintf(err, errlen, "'%s': the password (its first line) must be 1..%d bytes", path,
                 MANAGE_PASSWORD_MAX);
        rc = -EINVAL;
    }
    for (size_t i = 0; rc == 0 && i < len; i++) {
        unsigned char c = (unsigned char)buf[i];
        if (c <= ' ' || c == 0x7f) {
            snprintf(err, errlen, "'%s': the password has a blank or a control character", path);
            rc = -EINVAL;
        }
    }
    if (rc == 0) {
        memcpy(pw->text, buf, len);
        pw->text[len] = '\0';
        pw->len = len;
    }
    explicit_bzero(buf, sizeof(buf));
    return rc;
}

void manage_password_wipe(struct manage_password *pw)
{
    explicit_bzero(pw, sizeof(*pw));
}

static bool manage_net_has(const struct manage_net *n, sa_family_t family, const uint8_t *addr)
{
    if (n->family != family) return false;
    unsigned bits = n->prefix;
    size_t i = 0;
    for (; bits >= 8; bits -= 8, i++) {
        if (n->addr[i] != addr[i]) return false;
    }
    if (bits == 0) return true;
    uint8_t mask = (uint8_t)(0xffu << (8u - bits));
    return (n->addr[i] & mask) == (addr[i] & mask);
}

bool manage_auth_trusted(const struct manage_auth *a, const struct sockaddr *sa, socklen_t len)
{
    uint8_t addr[16];
    sa_family_t family = sa->sa_family;
    if (family == AF_UNIX) return true;
    if (family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        memcpy(addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    } else if (family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        const struct in6_addr *in6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(in6)) {
            family = AF_INET;
            memcpy(addr, in6->s6_addr + 12, 4);
        } else {
            memcpy(addr, in6->s6_addr, 16);
        }
    } else {
        return false;
    }
    for (size_t i = 0; i < a->nnets; i++) {
        if (manage_net_has(&a->nets[i], family, addr)) return true;
    }
    return false;
}

bool manage_auth_check(const struct manage_auth *a, const char *pw, size_t len)
{
    return nc_secret_equal(pw, len, a->pw.text, a->pw.len);
}
