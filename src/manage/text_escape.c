/*
 * text_escape.c - the escaping appenders of the manage port's texts (see text_escape.h).
 *
 * Threads: the buffer's owner only.
 */
#include "config.h"
#include "manage/text_escape.h"

/* Length of the valid UTF-8 sequence at s (at most n bytes), or 0 if it is not one. */
static size_t text_utf8_seq(const uint8_t *s, size_t n)
{
    uint8_t c = s[0];
    size_t len;
    uint32_t min;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) len = 2, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef) len = 3, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4) len = 4, min = 0x10000;
    else return 0;
    if (len > n) return 0;
    uint32_t cp = c & (0x3fu >> (len - 1));
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3fu);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return len;
}

void textbuf_add_json_str(struct textbuf *b, const char *str, size_t len)
{
    const uint8_t *s = (const uint8_t *)str;
    textbuf_addc(b, '"');
    size_t i = 0;
    while (i < len) {
        uint8_t c = s[i];
        if (c == '"' || c == '\\') {
            textbuf_addc(b, '\\');
            textbuf_addc(b, (char)c);
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            textbuf_addf(b, "\\u%04x", (unsigned)c);
            i++;
        } else {
            size_t n = text_utf8_seq(s + i, len - i);
            if (n == 0) {
                textbuf_adds(b, "\\ufffd");
                i++;
            } else {
                textbuf_add(b, s + i, n);
                i += n;
            }
        }
    }
    textbuf_addc(b, '"');
}

void textbuf_add_quoted(struct textbuf *b, const uint8_t *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        uint8_t c = s[i];
        if (c == '"' || c == '\\') {
            textbuf_addc(b, '\\');
            textbuf_addc(b, (char)c);
        } else if (c >= 0x20 && c < 0x7f) {
            textbuf_addc(b, (char)c);
        } else {
            textbuf_addf(b, "\\x%02x", (unsigned)c);
        }
    }
}
