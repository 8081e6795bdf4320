/*
 * fuzz_manage_http.c - libFuzzer target: HTTP request heads (a request line, then header lines)
 * as the manage port parses and answers them (src/manage/manage_http.c). The first line goes to
 * manage_http_request_line directly and is compared with a reference reading of the request line
 * (fuzz_check_text.h: is it one, which status must its response have); a line that is not one
 * leaves the request untouched. For a request, manage_http_respond's response must be whole and
 * well formed (status line, headers, Content-Length that is the body's, the body of its type: the
 * status JSON, Prometheus text, the health lines; none for HEAD) with the reference's status.
 * Then the whole head goes through the port's line code as one client (fuzz_manage.h, without a
 * password): the response comes once, at the blank line or the close, and is 431 past
 * MANAGE_HTTP_MAX_HEADERS header lines or a line longer than MANAGE_LINE_MAX.
 *
 * Threads: the fuzzer's only.
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "fuzz_check.h"
#include "fuzz_check_text.h"
#include "fuzz_manage.h"
#include "manage/manage_conn.h" /* MANAGE_OUT_MAX */
#include "manage/manage_http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* manage_http_request_line and manage_http_respond on the first line */
static void fz_http_direct(struct manage_ctx *ctx, const char *line, size_t len)
{
    struct manage_http_req req, before;
    memset(&req, 0x5a, sizeof(req));
    before = req;
    bool head = false;
    int want = fz_http_ref_status(line, len, &head);
    bool is = manage_http_request_line(line, len, &req);
    FZ_CHECK(is == (want != 0));
    if (!is) {
        FZ_CHECK(memcmp(&req, &before, sizeof(req)) == 0);
        return;
    }
    FZ_CHECK(memchr(req.method, '\0', sizeof(req.method)) != NULL);
    FZ_CHECK(memchr(req.path, '\0', sizeof(req.path)) != NULL);
    struct textbuf out;
    textbuf_init(&out, MANAGE_OUT_MAX);
    manage_http_respond(ctx, &req, &out);
    FZ_CHECK(!textbuf_failed(&out));
    FZ_CHECK(fz_check_http_response(out.data, out.len, head) == want);
    textbuf_deinit(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fz_manage *m = fz_manage_get();
    const char *text = (const char *)data;
    const char *lf = memchr(text, '\n', size);
    size_t len = lf != NULL ? (size_t)(lf - text) : size;
    if (len > 0 && text[len - 1] == '\r') len--;
    fz_http_direct(fz_manage_ctx(m), text, len);
    struct fz_run run;
    fz_manage_feed(m, data, size, NULL, 0, false, &run);
    fz_run_free(&run);
    return 0;
}
