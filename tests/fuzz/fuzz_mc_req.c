/*
 * fuzz_mc_req.c - libFuzzer target: the memcached request parser (memcache_proto), fed as the core feeds it, with the checks
 * of fuzz_feed.h (input: a 4-byte header, then the stream; see notes/fuzzing.md).
 *
 * Threads: the fuzzer's only.
 */
#include "config.h"

#include "fuzz_feed.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fz_run_proto(&memcache_proto, false, data, size);
}
