/*
 * stats_hotkeys.c - the hot key sampler of one worker and pool, its published window, and the
 * merge of every worker's windows (see stats_hotkeys.h, notes/hotkeys.md).
 *
 * Threads: create, add, gap and rotate on the owning worker; take and merge on the stats thread.
 */
#include "config.h"
#include "stats/stats_hotkeys.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

#define HOTKEYS_FRESH ((uintptr_t)1)

_Static_assert((HOTKEYS_CMS_WIDTH & (HOTKEYS_CMS_WIDTH - 1)) == 0, "the sketch's width is a power of two");
_Static_assert(HOTKEYS_CMS_DEPTH * 16 <= 64, "each row takes 16 bits of the key's hash");

uint64_t stats_hotkeys_hash(const uint8_t *key, size_t len)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ ((uint64_t)len * 0xff51afd7ed558ccdull);
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, key + i, 8);
        h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
        h ^= h >> 31;
    }
    uint64_t w = 0;
    for (size_t j = len; j > i; j--) w = (w << 8) | key[j - 1]; /* the last 0..7 bytes */
    h = (h ^ w) * 0x94d049bb133111ebull;
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 31;
    return h;
}

struct stats_hotkeys *stats_hotkeys_create(uint32_t every, uint32_t seed)
{
    /* its worker writes it, the stats thread reads its published lists: lines of its own */
    size_t size = NC_ROUND_UP(sizeof(struct stats_hotkeys), NC_SHARING_SPAN);
    struct stats_hotkeys *h = aligned_alloc(NC_SHARING_SPAN, size);
    if (h == NULL) return NULL;
    memset(h, 0, size);
    h->every = every != 0 ? every : 1;
    h->rng = seed != 0 ? seed : 0x2545f491u;
    h->ring[0].every = h->every;
    h->back = &h->bufs[0];
    atomic_init(&h->middle, (uintptr_t)&h->bufs[1]);
    h->front = &h->bufs[2];
    return h;
}

void stats_hotkeys_destroy(struct stats_hotkeys *h)
{
    free(h);
}

uint32_t stats_hotkeys_gap(struct stats_hotkeys *h)
{
    uint32_t x = h->rng; /* xorshift32 */
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    h->rng = x;
    uint32_t half = h->every / 2;
    uint32_t gap = h->every - half + (uint32_t)(((uint64_t)x * (2 * half + 1)) >> 32); /* no division */
    return gap != 0 ? gap : 1;
}

/* The sketch's estimate of the key of hash k after counting it once more (conservative update:
 * only the rows at the minimum grow). */
static uint32_t hotkeys_cms_count(struct stats_hotkeys *h, uint64_t k)
{
    uint32_t *cell[HOTKEYS_CMS_DEPTH];
    uint32_t min = UINT32_MAX;
    for (int r = 0; r < HOTKEYS_CMS_DEPTH; r++) {
        cell[r] = &h->cms[r][(k >> (16 * r)) & (HOTKEYS_CMS_WIDTH - 1)];
        if (*cell[r] < min) min = *cell[r];
    }
    uint32_t est = min + 1;
    for (int r = 0; r < HOTKEYS_CMS_DEPTH; r++) {
        if (*cell[r] < est) *cell[r] = est;
    }
    return est;
}

static void hotkeys_cand_set(struct stats_hotkeys *h, uint32_t i, uint64_t k, const uint8_t *key, size_t len,
                             uint32_t est)
{
    struct hotkeys_entry *e = &h->ring[h->cur].e[i];
    h->cand_hash[i] = k;
    h->cand_count[i] = est;
    e->hash = k;
    e->len = len < UINT32_MAX ? (uint32_t)len : UINT32_MAX;
    memcpy(e->key, key, len < HOTKEYS_KEY_MAX ? len : HOTKEYS_KEY_MAX);
}

/* The lowest candidate of a full table, found again (its count grew, or it was replaced). */
static void hotkeys_find_min(struct stats_hotkeys *h)
{
    uint32_t at = 0;
    for (uint32_t i = 1; i < HOTKEYS_TOP; i++) {
        if (h->cand_count[i] < h->cand_count[at]) at = i;
    }
    h->min_at = at;
    h->min_count = h->cand_count[at];
}

/*
 * The candidates keep the sketch's estimate at each key's last sample, and an estimate grows by at
 * least one at each sample of its key (conservative update raises the minimum cell). So a key
 * whose new estimate is not above the lowest candidate of a full table is not a candidate, and
 * does not become one: no lookup (most samples of a flat load end there).
 */
void stats_hotkeys_add(struct stats_hotkeys *h, const uint8_t *key, size_t len, uint64_t now_usec)
{
    struct hotkeys_list *l = &h->ring[h->cur];
    if (l->start_usec == 0) l->start_usec = now_usec;
    else if (now_usec > l->start_usec && now_usec - l->start_usec >= HOTKEYS_EPOCH_USEC) {
        stats_hotkeys_rotate(h, now_usec);
        l = &h->ring[h->cur];
    }
    uint64_t k = stats_hotkeys_hash(key, len);
    uint32_t est = hotkeys_cms_count(h, k);
    l->total++;
    if (l->n == HOTKEYS_TOP && est <= h->min_count) return;
    for (uint32_t i = 0; i < l->n; i++) {
        if (h->cand_hash[i] == k) {
            h->cand_count[i] = est;
            if (l->n == HOTKEYS_TOP && i == h->min_at) hotkeys_find_min(h);
            return;
        }
    }
    if (l->n < HOTKEYS_TOP) {
        hotkeys_cand_set(h, l->n++, k, key, len, est);
        if (l->n == HOTKEYS_TOP) hotkeys_find_min(h);
        return;
    }
    hotkeys_cand_set(h, h->min_at, k, key, len, est); /* est > the lowest: it takes its place */
    hotkeys_find_min(h);
}

/* Ends the current epoch (its candidates' counts into its list); the next one starts empty. */
static void hotkeys_close_epoch(struct stats_hotkeys *h, uint64_t now_usec)
{
    struct hotkeys_list *l = &h->ring[h->cur];
    if (l->start_usec == 0) l->start_usec = now_usec;
    l->end_usec = now_usec;
    for (uint32_t i = 0; i < l->n; i++) l->e[i].count = h->cand_count[i];
    h->cur = (h->cur + 1) % (HOTKEYS_EPOCHS + 1);
    if (h->nclosed < HOTKEYS_EPOCHS) h->nclosed++;
    struct hotkeys_list *next = &h->ring[h->cur];
    next->start_usec = now_usec;
    next->end_usec = 0;
    next->total = 0;
    next->every = h->every;
    next->n = 0;
    memset(h->cms, 0, sizeof(h->cms));
}

/* A key of the window being built: where its bytes are, and its counts summed. */
struct hotkeys_ref {
    uint64_t hash;
    uint32_t len;
    uint32_t count;
    const struct hotkeys_entry *e;
};

static int hotkeys_ref_by_count(const void *a, const void *b)
{
    const struct hotkeys_ref *x = a, *y = b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    return x->hash < y->hash ? -1 : x->hash > y->hash;
}

/* Adds list l's keys to refs[0..*n) (a key of an earlier list: its count grows). */
static void hotkeys_refs_add(struct hotkeys_ref *refs, uint32_t *n, const struct hotkeys_list *l)
{
    uint32_t before = *n; /* a list holds a key once: only the earlier lists' are looked at */
    for (uint32_t i = 0; i < l->n; i++) {
        const struct hotkeys_entry *e = &l->e[i];
        uint32_t j = 0;
        while (j < before && (refs[j].hash != e->hash || refs[j].len != e->len)) j++;
        if (j < before) refs[j].count += e->count;
        else refs[(*n)++] = (struct hotkeys_ref){ .hash = e->hash, .len = e->len, .count = e->count, .e = e };
    }
}

void stats_hotkeys_rotate(struct stats_hotkeys *h, uint64_t now_usec)
{
    hotkeys_close_epoch(h, now_usec);
    struct hotkeys_ref refs[HOTKEYS_TOP * HOTKEYS_EPOCHS];
    uint32_t n = 0;
    struct hotkeys_list *out = h->back;
    out->start_usec = now_usec;
    out->end_usec = now_usec;
    out->total = 0;
    out->every = h->every;
    for (uint32_t j = 1; j <= h->nclosed; j++) { /* the closed epochs, newest first */
        const struct hotkeys_list *l = &h->ring[(h->cur + HOTKEYS_EPOCHS + 1 - j) % (HOTKEYS_EPOCHS + 1)];
        if (now_usec - l->end_usec > HOTKEYS_STALE_USEC) break; /* before a long pause */
        if (l->start_usec < out->start_usec) out->start_usec = l->start_usec;
        out->total += l->total;
        hotkeys_refs_add(refs, &n, l);
    }
    qsort(refs, n, sizeof(refs[0]), hotkeys_ref_by_count);
    out->n = n < HOTKEYS_TOP ? n : HOTKEYS_TOP;
    for (uint32_t i = 0; i < out->n; i++) {
        struct hotkeys_entry *e = &out->e[i];
        e->hash = refs[i].hash;
        e->len = refs[i].len;
        e->count = refs[i].count;
        memcpy(e->key, refs[i].e->key, e->len < HOTKEYS_KEY_MAX ? e->len : HOTKEYS_KEY_MAX);
    }
    uintptr_t old = atomic_exchange_explicit(&h->middle, (uintptr_t)out | HOTKEYS_FRESH, memory_order_acq_rel);
    h->back = (struct hotkeys_list *)(old & ~HOTKEYS_FRESH);
}

const struct hotkeys_list *stats_hotkeys_take(struct stats_hotkeys *h)
{
    if (atomic_load_explicit(&h->middle, memory_order_relaxed) & HOTKEYS_FRESH) {
        uintptr_t old = atomic_exchange_explicit(&h->middle, (uintptr_t)h->front, memory_order_acq_rel);
        h->front = (struct hotkeys_list *)(old & ~HOTKEYS_FRESH);
    }
    return h->front;
}

/* The seconds a window's counts are spread over as seen at now: its own span, or the time since
 * it started less an epoch when its worker has not published for longer (no sample since).
 * 0: it counts for nothing. */
static double hotkeys_span_sec(const struct hotkeys_list *l, uint64_t now_usec)
{
    if (l == NULL || l->end_usec == 0 || l->total == 0) return 0;
    if (now_usec > l->end_usec && now_usec - l->end_usec > HOTKEYS_STALE_USEC) return 0;
    uint64_t span = l->end_usec - l->start_usec;
    if (now_usec > l->start_usec + HOTKEYS_EPOCH_USEC && now_usec - l->start_usec - HOTKEYS_EPOCH_USEC > span)
        span = now_usec - l->start_usec - HOTKEYS_EPOCH_USEC;
    return span > 0 ? (double)span / 1e6 : 0;
}

static int hotkey_by_id(const void *a, const void *b)
{
    const struct hotkey *x = a, *y = b;
    if (x->hash != y->hash) return x->hash < y->hash ? -1 : 1;
    return x->len < y->len ? -1 : x->len > y->len;
}

static int hotkey_by_rate(const void *a, const void *b)
{
    const struct hotkey *x = a, *y = b;
    if (x->rate != y->rate) return x->rate > y->rate ? -1 : 1;
    return hotkey_by_id(a, b);
}

long stats_hotkeys_merge(const struct hotkeys_list *const *lists, size_t n, uint64_t now_usec,
                         struct hotkey *out, size_t max, double *total_rate)
{
    struct hotkey *all = malloc((n ? n : 1) * HOTKEYS_TOP * sizeof(*all));
    if (all == NULL) return -ENOMEM;
    size_t m = 0;
    *total_rate = 0;
    for (size_t w = 0; w < n; w++) {
        double sec = hotkeys_span_sec(lists[w], now_usec);
        if (sec <= 0) continue;
        double scale = (double)lists[w]->every / sec;
        *total_rate += (double)lists[w]->total * scale;
        for (uint32_t i = 0; i < lists[w]->n && i < HOTKEYS_TOP; i++) {
            const struct hotkeys_entry *e = &lists[w]->e[i];
            struct hotkey *k = &all[m++];
            k->hash = e->hash;
            k->len = e->len;
            k->rate = (double)e->count * scale;
            memcpy(k->key, e->key, e->len < HOTKEYS_KEY_MAX ? e->len : HOTKEYS_KEY_MAX);
        }
    }
    qsort(all, m, sizeof(*all), hotkey_by_id); /* the same key of several workers: one entry */
    size_t u = 0;
    for (size_t i = 0; i < m; i++) {
        if (u > 0 && hotkey_by_id(&all[u - 1], &all[i]) == 0) all[u - 1].rate += all[i].rate;
        else all[u++] = all[i];
    }
    qsort(all, u, sizeof(*all), hotkey_by_rate);
    size_t keep = u < max ? u : max;
    memcpy(out, all, keep * sizeof(*all));
    free(all);
    return (long)keep;
}
