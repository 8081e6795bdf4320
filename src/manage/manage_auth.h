/*
 * manage_auth.h - who may run the manage port's restricted commands (those that change state or
 * show key names: reload, slowlog get, slowlog reset, hotkeys). A client may when it is trusted
 * (a unix socket client, or a TCP client whose address is in the trusted networks,
 * --manage-trust, loopback by default) or when it sent `auth <password>` with the manage password
 * (--manage-auth-file). Everything else the port serves stays open, as in twemproxy.
 *
 *   - the trusted networks: a comma-separated list of IPv4 or IPv6 networks ("127.0.0.0/8,::1";
 *     an address without a prefix length is one host), or "none"; an IPv4-mapped IPv6 peer
 *     (::ffff:a.b.c.d, a dual-stack listener) is matched as its IPv4 address;
 *   - the password file: its first line (a CR or LF ends it), 1..MANAGE_PASSWORD_MAX printable
 *     bytes without blanks; read at start and again at every reload (a file that cannot be read
 *     or is invalid then keeps the password in force).
 *
 * Threads: built by the master before the stats thread starts; afterwards the stats thread's
 * alone (it checks peers and passwords against it). A reload's password is read by the master
 * into a struct manage_password of its own and handed over through the stats thread's inbox.
 */
#ifndef NC_MANAGE_AUTH_H
#define NC_MANAGE_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define MANAGE_TRUST_MAX 32
#define MANAGE_PASSWORD_MAX 256
#define MANAGE_TRUST_DEFAULT "127.0.0.0/8,::1"

struct manage_net {
    sa_family_t family;   /* AF_INET or AF_INET6 */
    uint8_t addr[16];     /* network byte order; 4 bytes used for AF_INET */
    unsigned prefix;      /* bits */
};

struct manage_password {
    char text[MANAGE_PASSWORD_MAX + 1];
    size_t len;                           /* 0: no password is set */
};

struct manage_auth {
    struct manage_net nets[MANAGE_TRUST_MAX];
    size_t nnets;
    char trust_text[256];                 /* the list as given, for the refusal message */
    struct manage_password pw;
};

/* Parses the trusted networks (text) into a. On an error writes why to err and returns -EINVAL. */
int manage_auth_set_trust(struct manage_auth *a, const char *text, char *err, size_t errlen);

/* Reads the password from path into pw. Returns 0, or -errno / -EINVAL with why written to err
 * (which names the file, never the password) and pw left as it was. A file other users may read
 * is accepted; *loose is set so the caller can warn. */
int manage_password_read(struct manage_password *pw, const char *path, bool *loose, char *err, size_t errlen);

/* Overwrites pw's bytes (a copy that is no longer needed), so no freed memory keeps them. */
void manage_password_wipe(struct manage_password *pw);

/* Whether a client at this peer address is trusted (AF_UNIX always is). */
bool manage_auth_trusted(const struct manage_auth *a, const struct sockaddr *sa, socklen_t len);

/* Whether pw (len bytes) is the password (false when none is set); its time does not depend on
 * where pw first differs. */
bool manage_auth_check(const struct manage_auth *a, const char *pw, size_t len);

#endif
