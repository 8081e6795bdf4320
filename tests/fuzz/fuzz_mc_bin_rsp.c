/*
 * fuzz_mc_bin_rsp.c - libFuzzer target: the memcached reply parser (memcache_proto) on the replies
 * of binary requests (MC_RSP_BIN), fed as the core feeds it, with the checks of fuzz_feed.h and
 * fuzz_bin.c. The input is fuzz_mc_rsp's (a 4-byte header, then the stream; see
 * notes/fuzzing.md) with h[0] bit 7 set: the header's bits 5-6 then choose a binary request's
 * reply or a quiet one's (MC_RSP_TERM), and any seed of either target means the same in both.
 *
 * Threads: the fuzzer's only.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "fuzz_feed.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size ? size : 1); /* its own size: ASan sees any overread */
    FZ_CHECK(copy != NULL);
    if (size > 0) memcpy(copy, data, size);
    if (size > 0) copy[0] |= 0x80;
    int rc = fz_run_proto(&memcache_proto, true, copy, size);
    free(copy);
    return rc;
}
