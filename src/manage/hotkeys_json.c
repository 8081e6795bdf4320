/*
 * hotkeys_json.c - the workers' hot keys merged and rendered (see hotkeys_json.h).
 *
 * Threads: the stats thread.
 */
#include "config.h"
#include "manage/hotkeys_json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/runtime.h"
#include "manage/text_escape.h"
#include "stats/stats.h"

long hotkeys_collect(const struct pool_shared *p, size_t nworkers, uint64_t now_usec, struct hotkey *out,
                     size_t max, double *total_rate)
{
    const struct hotkeys_list **lists = calloc(nworkers ? nworkers : 1, sizeof(*lists));
    if (lists == NULL) return -ENOMEM;
    for (size_t w = 0; w < nworkers; w++) {
        struct stats_pool_block *pb = p->wstats != NULL ? p->wstats[w] : NULL;
        struct stats_hotkeys *h = pb != NULL ? stats_pool_hotkeys_get(pb) : NULL;
        lists[w] = h != NULL ? stats_hotkeys_take(h) : NULL;
    }
    long n = stats_hotkeys_merge(lists, nworkers, now_usec, out, max, total_rate);
    free(lists);
    return n;
}

double hotkeys_top_share(const struct pool_shared *p, size_t nworkers, uint64_t now_usec)
{
    struct hotkey top;
    double total = 0;
    long n = hotkeys_collect(p, nworkers, now_usec, &top, 1, &total);
    if (n <= 0 || total <= 0) return 0;
    double share = top.rate / total;
    return share < 1 ? share : 1;
}

/* Whether every kept byte of k is printable ASCII (its JSON string is then the key itself). */
static bool hotkeys_printable(const struct hotkey *k, size_t kept)
{
    for (size_t i = 0; i < kept; i++) {
        if (k->key[i] < 0x20 || k->key[i] > 0x7e) return false;
    }
    return true;
}

void hotkeys_json_key(struct textbuf *b, const struct hotkey *k)
{
    size_t kept = k->len < HOTKEYS_KEY_MAX ? k->len : HOTKEYS_KEY_MAX;
    textbuf_adds(b, "{\"key\":");
    textbuf_add_json_str(b, (const char *)k->key, kept);
    if (!hotkeys_printable(k, kept)) {
        textbuf_adds(b, ",\"key_hex\":\"");
        for (size_t i = 0; i < kept; i++) textbuf_addf(b, "%02x", (unsigned)k->key[i]);
        textbuf_addc(b, '"');
    }
    if (k->len > HOTKEYS_KEY_MAX) textbuf_adds(b, ",\"truncated\":true");
    textbuf_addf(b, ",\"len\":%u,\"rate\":%.1f}", k->len, k->rate);
}

/* "<pool>":{"rate":..,"keys":[...]} */
static int hotkeys_json_pool(struct textbuf *b, const struct pool_shared *p, size_t nworkers, struct hotkey *keys,
                             size_t max, uint64_t now_usec)
{
    double total = 0;
    long n = hotkeys_collect(p, nworkers, now_usec, keys, max, &total);
    if (n < 0) return (int)n;
    textbuf_add_json_str(b, p->cp->name, strlen(p->cp->name));
    textbuf_addf(b, ":{\"rate\":%.1f,\"keys\":[", total);
    for (long i = 0; i < n; i++) {
        if (i > 0) textbuf_addc(b, ',');
        hotkeys_json_key(b, &keys[i]);
    }
    textbuf_adds(b, "]}");
    return 0;
}

int hotkeys_json_render(struct textbuf *b, const struct runtime *rt, const struct pool_shared *only, size_t max,
                        uint32_t every, uint64_t now_usec)
{
    struct hotkey *keys = malloc((max ? max : 1) * sizeof(*keys));
    if (keys == NULL) return -ENOMEM;
    textbuf_addf(b, "{\"window_seconds\":%u,\"sample_every\":%u,\"pools\":{",
                 (unsigned)(HOTKEYS_EPOCHS * (HOTKEYS_EPOCH_USEC / 1000000u)), every);
    int rc = 0;
    bool first = true;
    for (size_t i = 0; i < rt->npools && rc == 0; i++) {
        if (only != NULL && &rt->pools[i] != only) continue;
        if (!first) textbuf_addc(b, ',');
        first = false;
        rc = hotkeys_json_pool(b, &rt->pools[i], rt->nworkers, keys, max, now_usec);
    }
    textbuf_adds(b, "}}");
    free(keys);
    return rc;
}
