/*
 * daemon.c - detaching from the terminal for `-d` (see daemon.h).
 *
 * The launcher (the original process) waits on a pipe for one status byte from the daemon, sent
 * by daemon_started() once every listener and the manage port are up; a daemon that dies first
 * closes the pipe instead. The wait is bounded (DAEMON_START_TIMEOUT_MS).
 *
 * Threads: the main thread: daemon_detach before any other thread exists, daemon_started from
 * the master (the main thread too).
 */
#include "config.h"
#include "app/daemon.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"

#define DAEMON_READY_BYTE 'R'
/* How long the launcher waits for the daemon's word: a start takes milliseconds (the config is
 * already loaded); this only keeps a hung daemon from hanging its launcher too. */
#define DAEMON_START_TIMEOUT_MS 30000

/* The daemon's end of the launcher's pipe until daemon_started(); -1 otherwise. */
static int daemon_ready_fd = -1;

/* The original process: wait for the daemon's word, then leave without running atexit handlers. */
static void daemon_launcher_wait(int rfd, pid_t child)
{
    char c = 0;
    ssize_t n = -1;
    struct pollfd pfd = { .fd = rfd, .events = POLLIN };
    int rc;
    do {
        rc = poll(&pfd, 1, DAEMON_START_TIMEOUT_MS); /* EINTR restarts the full wait: bounded still */
    } while (rc < 0 && errno == EINTR);
    if (rc > 0) {
        do {
            n = read(rfd, &c, 1);
        } while (n < 0 && errno == EINTR);
    }
    while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {
    }
    if (n == 1 && c == DAEMON_READY_BYTE) _exit(0);
    if (rc == 0)
        fprintf(stderr, "nutcrackers: the daemon did not report its start within %d s (see its log)\n",
                DAEMON_START_TIMEOUT_MS / 1000);
    else
        fprintf(stderr, "nutcrackers: the daemon did not start (see its log)\n");
    _exit(1);
}

static int daemon_redirect(int fd, int devnull)
{
    while (dup2(devnull, fd) < 0) {
        if (errno != EINTR) return -errno;
    }
    return 0;
}

/*
 * Closes the descriptors the launcher let us inherit (a terminal, a pipe of a shell or a test
 * runner). Everything this process opened itself is close-on-exec, which is how it is told apart.
 */
static void daemon_close_inherited(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL) return;
    int dfd = dirfd(d);
    int fds[256];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < NC_ARRAY_LEN(fds)) {
        char *end = NULL;
        long fd = strtol(e->d_name, &end, 10);
        if (end == e->d_name || *end != '\0' || fd <= STDERR_FILENO || fd == dfd) continue;
        int flags = fcntl((int)fd, F_GETFD);
        if (flags >= 0 && (flags & FD_CLOEXEC) == 0) fds[n++] = (int)fd;
    }
    closedir(d);
    for (size_t i = 0; i < n; i++) close(fds[i]);
}

/* In the daemon: a clean process state and standard streams on /dev/null. */
static int daemon_setup(bool keep_stderr)
{
    daemon_close_inherited();
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    umask(0);
    if (chdir("/") < 0) return -errno;
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (devnull < 0) return -errno;
    int rc = daemon_redirect(STDIN_FILENO, devnull);
    if (rc == 0) rc = daemon_redirect(STDOUT_FILENO, devnull);
    if (rc == 0 && !keep_stderr) rc = daemon_redirect(STDERR_FILENO, devnull);
    if (devnull > STDERR_FILENO) close(devnull);
    return rc;
}

int daemon_detach(bool keep_stderr)
{
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) < 0) return -errno;
    fflush(NULL); /* nothing buffered may be written twice */
    pid_t pid = fork();
    if (pid < 0) {
        int err = -errno;
        close(pfd[0]);
        close(pfd[1]);
        return err;
    }
    if (pid > 0) {
        close(pfd[1]);
        daemon_launcher_wait(pfd[0], pid);
    }
    /* first child: leave the launcher's session and terminal */
    close(pfd[0]);
    if (setsid() < 0) _exit(1);
    /* the session leader's exit may send SIGHUP to the new session; the master installs its own
     * handler later */
    signal(SIGHUP, SIG_IGN);
    pid = fork();
    if (pid < 0) _exit(1);
    if (pid > 0) _exit(0); /* the launcher reaps this one; the daemon is re-parented to init */
    /* the daemon: not a session leader, so it can never acquire a controlling terminal */
    if (daemon_setup(keep_stderr) < 0) _exit(1);
    daemon_ready_fd = pfd[1];
    return 0;
}

void daemon_started(void)
{
    if (daemon_ready_fd < 0) return;
    const char c = DAEMON_READY_BYTE;
    while (write(daemon_ready_fd, &c, 1) < 0 && errno == EINTR) {
    }
    close(daemon_ready_fd);
    daemon_ready_fd = -1;
}

char *daemon_abspath(const char *path)
{
    if (path[0] == '/') return strdup(path);
    char *cwd = getcwd(NULL, 0);
    if (cwd == NULL) return NULL;
    size_t len = strlen(cwd) + 1 + strlen(path) + 1;
    char *abs = malloc(len);
    if (abs != NULL) snprintf(abs, len, "%s/%s", cwd, path);
    free(cwd);
    return abs;
}
