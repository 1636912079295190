/*
 * wait.c - sleeping and polling with deadlines.
 */
#include "wait.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

void
lt_sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

int64_t
lt_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Whether file contains what now. */
static int
file_has(const char *file, const char *what) {
  FILE *f = fopen(file, "r");
  if (!f)
    return 0;
  size_t cap = 1 << 16, n = 0, wn = strlen(what);
  char *buf = malloc(cap + 1);
  int found = 0;
  while (buf && !found) {
    size_t r = fread(buf + n, 1, cap - n, f);
    if (r == 0)
      break;
    n += r;
    buf[n] = 0;
    found = memmem(buf, n, what, wn) != NULL;
    if (n > wn) { /* keep a tail that a match could straddle */
      memmove(buf, buf + n - wn, wn);
      n = wn;
    }
  }
  free(buf);
  fclose(f);
  return found;
}

int
lt_file_says(const char *file, const char *what, int seconds) {
  for (int i = 0; i < seconds * 10; i++) {
    if (file_has(file, what))
      return 1;
    lt_sleep_ms(100);
  }
  return 0;
}

int
lt_wait_file(const char *path, int seconds) {
  struct stat st;
  for (int i = 0; i < seconds * 10; i++, lt_sleep_ms(100))
    if (stat(path, &st) == 0)
      return 1;
  return 0;
}
