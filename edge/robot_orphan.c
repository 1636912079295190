/*
 * robot_orphan.c - a robot's launch that runs without a record (robot.h).
 *
 * The run record names a launch's pid only once it is spawned, so an
 * agent killed between the spawn and that record leaves a launch nobody
 * recorded. The next agent looks for it before it launches anything:
 * the shim's command line names the robot's status file
 * (`lark-edge pod-shim <data>/robots/<robot>/exit-<n> [--user U] --
 * LAUNCH... MODE...`), and what follows "--" tells the mode. Found, it is
 * adopted like any recorded launch, so a robot is never started twice.
 */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"
#include "robot.h"

enum { CMDLINE_MAX = 65536, ARGS_MAX = 1024 };

/* /proc/<pid>/cmdline split into argv (pointing into buf); argc. */
static int
cmdline(const char *pid, char *buf, size_t cap, char **argv) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%s/cmdline", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  ssize_t n = read(fd, buf, cap - 1);
  close(fd);
  if (n <= 0)
    return 0;
  buf[n] = 0;
  int argc = 0;
  for (char *s = buf; s < buf + n && argc < ARGS_MAX - 1; s += strlen(s) + 1)
    argv[argc++] = s;
  argv[argc] = NULL;
  return argc;
}

/* The mode whose launch line argv (after "--") is, or NULL. */
static const edge_dev_mode *
mode_of(const edge_device *d, char **argv, int argc) {
  if (argc < d->nlaunch)
    return NULL;
  for (int i = 0; i < d->nlaunch; i++)
    if (strcmp(argv[i], d->launch[i]))
      return NULL;
  for (int m = 0; m < d->nmodes; m++) {
    const edge_dev_mode *mode = &d->modes[m];
    int ok = argc == d->nlaunch + mode->argc;
    for (int i = 0; ok && i < mode->argc; i++)
      ok = !strcmp(argv[d->nlaunch + i], mode->argv[i]);
    if (ok)
      return mode;
  }
  return NULL;
}

/* Whether the process pid's command line is a shim of r's launch n > after;
 * then its attempt, mode and start time into run. */
static int
is_launch(const edge_robot *r, const char *pid, uint32_t after,
          edge_robot_run *run) {
  static char buf[CMDLINE_MAX];
  char *argv[ARGS_MAX], prefix[4300];
  int argc = cmdline(pid, buf, sizeof buf, argv);
  int n = snprintf(prefix, sizeof prefix, "%s/exit-", r->dir);
  if (argc < 4 || strcmp(argv[1], "pod-shim") ||
      strncmp(argv[2], prefix, (size_t)n))
    return 0;
  char *end;
  unsigned long attempt = strtoul(argv[2] + n, &end, 10);
  int dash = 3;
  while (dash < argc && strcmp(argv[dash], "--"))
    dash++;
  const edge_dev_mode *m =
      dash < argc ? mode_of(r->dev, argv + dash + 1, argc - dash - 1) : NULL;
  if (*end || attempt <= after || attempt > UINT32_MAX || !m)
    return 0;
  run->attempt = (uint32_t)attempt;
  run->pid = atoi(pid);
  run->start_ticks = edge_proc_start_ticks(run->pid);
  snprintf(run->mode, sizeof run->mode, "%s", m->name);
  return run->start_ticks != 0;
}

int
edge_robot_find_launch(const edge_robot *r, uint32_t after,
                       edge_robot_run *run) {
  DIR *d = opendir("/proc");
  struct dirent *e;
  int found = 0;
  while (d && !found && (e = readdir(d)))
    found = isdigit((unsigned char)e->d_name[0]) &&
            is_launch(r, e->d_name, after, run);
  if (d)
    closedir(d);
  return found;
}
