/*
 * fuzz_manage_line.c - libFuzzer target: the bytes a manage port client sends, through the code
 * the port runs on them (src/manage/manage_input.c: the bounded line buffer, then manage_exec for
 * a command, or manage_http.c for an HTTP request line and its headers), read as a socket would
 * deliver them, then the client's close. The checks of every step are fuzz_manage.h's (line
 * bounds, reply format, JSON, HTTP responses, error count, restricted commands refused to the
 * untrusted client, auth only by the password).
 *
 * Input: h[0] bit 0: a manage password is set (FZM_PASSWORD); h[1..3]: read sizes, used in turn
 * (0: as much as the line buffer takes); then the stream. The same stream read whole (every read
 * as large as the buffer takes) must get the same replies (those that depend on the clock, JSON
 * documents and HTTP responses, compared by their kind and status) and close at the same byte.
 *
 * Threads: the fuzzer's only.
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "fuzz_check.h"
#include "fuzz_manage.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4) return 0;
    struct fz_manage *m = fz_manage_get();
    bool password = data[0] & 1;
    struct fz_run split, whole;
    fz_manage_feed(m, data + 4, size - 4, data + 1, 3, password, &split);
    fz_manage_feed(m, data + 4, size - 4, NULL, 0, password, &whole);
    FZ_CHECK(split.consumed == whole.consumed && split.closed == whole.closed);
    FZ_CHECK(split.replies == whole.replies && split.http_responses == whole.http_responses);
    FZ_CHECK(split.norm.len == whole.norm.len);
    FZ_CHECK(split.norm.len == 0 || memcmp(split.norm.data, whole.norm.data, split.norm.len) == 0);
    fz_run_free(&split);
    fz_run_free(&whole);
    return 0;
}
