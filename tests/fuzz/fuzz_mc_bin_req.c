/*
 * fuzz_mc_bin_req.c - libFuzzer target: the memcached request parser (memcache_proto) on binary
 * connections only, fed as the core feeds it, with the checks of fuzz_feed.h and fuzz_bin.c.
 * The input is fuzz_mc_req's (a 4-byte header, then the stream; see notes/fuzzing.md) with the
 * stream's first byte made 0x80, the binary magic, so that the connection always speaks the
 * binary protocol (a seed of fuzz_mc_req whose stream starts with 0x80 means the same here).
 *
 * Threads: the fuzzer's only.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "fuzz_feed.h"
#include "proto/memcache_bin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size ? size : 1); /* its own size: ASan sees any overread */
    FZ_CHECK(copy != NULL);
    if (size > 0) memcpy(copy, data, size);
    if (size > 4) copy[4] = MC_BIN_REQ_MAGIC;
    int rc = fz_run_proto(&memcache_proto, false, copy, size);
    free(copy);
    return rc;
}
