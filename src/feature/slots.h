/*
 * slots.h - the state slots each feature takes (core/feature.h): per client (conn.feat) and per
 * loop (loop.feat). Apart from features.h so that a feature does not include the table that
 * includes it.
 *
 * Threads: constants.
 */
#ifndef NC_FEATURE_SLOTS_H
#define NC_FEATURE_SLOTS_H

#define FEATURE_SLOT_TXN 0
#define FEATURE_SLOT_PUBSUB 1
#define FEATURE_LOOP_SLOT_CLIENTLIST 0

#endif
