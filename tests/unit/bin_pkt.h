/*
 * bin_pkt.h - memcached binary-protocol packets for the unit tests (test_memcache_bin,
 * test_memcache_bin_rsp, test_memcache_oom): a growable byte string to which headers, requests
 * and reply packets are appended, big-endian as on the wire.
 *
 * Threads: the test's only.
 */
#ifndef NC_TEST_BIN_PKT_H
#define NC_TEST_BIN_PKT_H

#include <stddef.h>
#include <stdint.h>

struct bpk {
    uint8_t *p;
    size_t n, cap;
};

/* Appends n bytes of d, or n bytes c. */
void bpk_put(struct bpk *b, const void *d, size_t n);
void bpk_fill(struct bpk *b, uint8_t c, size_t n);
/* A 24-byte header: magic, opcode, key length, extras length, data type 0, status (a request's
 * vbucket: 0), body length, opaque, cas 0. */
void bpk_hdr(struct bpk *b, uint8_t magic, uint8_t op, uint16_t keylen, uint8_t extlen,
             uint16_t status, uint32_t body, uint32_t opaque);
/* A whole request: its header, extlen bytes 'e', the key (NUL-terminated), vlen bytes 'v'. */
void bpk_req(struct bpk *b, uint8_t op, const char *key, uint8_t extlen, uint32_t vlen, uint32_t opaque);
/* A whole reply packet: its header, extras, key and value (NUL-terminated strings, NULL: none). */
void bpk_rsp(struct bpk *b, uint8_t op, uint16_t status, const char *ext, const char *key,
             const char *value, uint32_t opaque);
/* Empty again (its memory kept); bpk_free gives the memory back. */
void bpk_reset(struct bpk *b);
void bpk_free(struct bpk *b);

/* Big-endian fields. */
uint32_t bpk_u16(const uint8_t *p);
uint32_t bpk_u32(const uint8_t *p);

#endif
