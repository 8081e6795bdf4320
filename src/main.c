/*
 * main.c - command line, process set-up (log, signals, daemon, pid file), then the master.
 * Threads: the main thread only.
 */
#include "config.h"
#include <stdio.h>

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("This is nutcrackers-%s\n", PACKAGE_VERSION);
    return 0;
}
