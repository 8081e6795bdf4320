/*
 * secret.c - constant-time password comparison (see secret.h).
 *
 * Threads: any.
 */
#include "config.h"
#include "common/secret.h"

#include <stdint.h>

bool nc_secret_equal(const void *given, size_t given_len, const void *secret, size_t secret_len)
{
    if (secret_len == 0) return false;
    const volatile unsigned char *g = given;
    const volatile unsigned char *s = secret;
    volatile unsigned diff = given_len != secret_len;
    size_t j = 0;
    for (size_t i = 0; i < given_len; i++) {
        diff |= (unsigned)(g[i] ^ s[j]);
        j = j + 1 == secret_len ? 0 : j + 1; /* (a compare, not a division: no data-dependent time) */
    }
    return diff == 0;
}
