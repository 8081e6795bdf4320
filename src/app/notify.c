/*
 * notify.c - the service-manager notifications (see notify.h). The only file that calls
 * sd_notify; compiled to no-ops when configure found no libsystemd (HAVE_LIBSYSTEMD unset).
 *
 * Threads: the master thread only (send_failed is its state).
 */
#include "config.h"
#include "app/notify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"

#ifdef HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>
#endif

/* A STATUS= reason is cut here: the whole message stays one small datagram. */
#define NOTIFY_REASON_MAX 1024

#ifdef HAVE_LIBSYSTEMD
static bool send_failed; /* logged once */

static void notify_send(const char *msg)
{
    int rc = sd_notify(0, msg);
    if (rc < 0 && !send_failed) {
        send_failed = true;
        log_warn("cannot notify the service manager (NOTIFY_SOCKET): %s", strerror(-rc));
    }
}
#else
static void notify_send(const char *msg)
{
    (void)msg;
}
#endif

bool notify_supported(void)
{
#ifdef HAVE_LIBSYSTEMD
    return true;
#else
    return false;
#endif
}

void notify_start(void)
{
    const char *sock = getenv("NOTIFY_SOCKET");
    if (sock != NULL && sock[0] != '\0' && !notify_supported())
        log_warn("NOTIFY_SOCKET is set but this build has no libsystemd: the service manager is not "
                 "told of readiness or reloads (use Type=exec, or build with libsystemd)");
}

void notify_ready(unsigned long generation, size_t npools)
{
    char msg[160];
    snprintf(msg, sizeof(msg), "READY=1\nSTATUS=serving configuration generation %lu (%zu pools)",
             generation, npools);
    notify_send(msg);
}

void notify_reloading(void)
{
    char msg[96];
    snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading the configuration",
             (unsigned long long)nc_usec_now());
    notify_send(msg);
}

void notify_reload_failed(unsigned long generation, const char *reason)
{
    char msg[NOTIFY_REASON_MAX + 128];
    int n = snprintf(msg, sizeof(msg), "READY=1\nSTATUS=reload failed (still serving generation %lu): ",
                     generation);
    if (n < 0 || (size_t)n >= sizeof(msg)) return;
    size_t at = (size_t)n;
    for (const char *p = reason; *p != '\0' && at < (size_t)n + NOTIFY_REASON_MAX; p++)
        msg[at++] = (*p == '\n' || *p == '\r') ? ' ' : *p;
    msg[at] = '\0';
    notify_send(msg);
}

void notify_stopping(void)
{
    notify_send("STOPPING=1\nSTATUS=stopping");
}
