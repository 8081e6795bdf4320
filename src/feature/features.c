/*
 * features.c - the table of every feature (see features.h).
 *
 * Threads: const, read by every loop.
 */
#include "config.h"
#include "feature/features.h"

#include "feature/clientlist.h"
#include "feature/pubsub.h"
#include "feature/txn.h"

_Static_assert(FEATURE_SLOT_TXN < FEATURE_SLOTS && FEATURE_SLOT_PUBSUB < FEATURE_SLOTS,
               "core/feature.h has a slot for each feature's client state");
_Static_assert(FEATURE_LOOP_SLOT_CLIENTLIST < FEATURE_LOOP_SLOTS, "and for each feature's loop state");

static const struct feature_ops *const features_list[] = {
    &txn_feature,        /* first: it decides when a request runs */
    &pubsub_feature,
    &clientlist_feature,
};

const struct feature_table features_all = {
    .ops = features_list,
    .n = sizeof(features_list) / sizeof(features_list[0]),
};
