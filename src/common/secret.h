/*
 * secret.h - comparing a password a peer sent with the one configured, in time that tells the peer
 * nothing about the configured one: not where they first differ, not its length.
 *
 * Threads: any (pure function).
 */
#ifndef NC_SECRET_H
#define NC_SECRET_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Whether given[0..given_len) equals secret[0..secret_len). Every byte given is compared (with
 * the secret's bytes over again when the given one is longer), and nothing else: the time depends
 * on given_len alone. An empty secret equals nothing (a password is then not asked for).
 */
bool nc_secret_equal(const void *given, size_t given_len, const void *secret, size_t secret_len);

#endif
