/*
 * features.h - the features a worker's loop serves (core/feature.h): transactions and blocking
 * commands (txn.c), Pub/Sub (pubsub*.c), CLIENT LIST (clientlist.c). Their table, in the order the
 * core walks it (transactions decide a request's turn before Pub/Sub serves it); the state
 * slots each takes are in slots.h.
 *
 * Threads: the table is const; the thread layer installs it in every loop before it serves.
 */
#ifndef NC_FEATURES_H
#define NC_FEATURES_H

#include "core/feature.h"
#include "feature/slots.h"

extern const struct feature_table features_all;

#endif
