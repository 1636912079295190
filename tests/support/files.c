/*
 * files.c - files a test writes for the tools it runs.
 */
#include "files.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "wait.h"

char *
lt_read_file(const char *path, char *buf, size_t cap) {
  FILE *f = fopen(path, "re");
  size_t n = f ? fread(buf, 1, cap - 1, f) : 0;
  buf[n] = 0;
  if (!f)
    return NULL;
  fclose(f);
  return buf;
}

int
lt_lines_of(const char *path) {
  FILE *f = fopen(path, "re");
  int n = 0, c;
  while (f && (c = getc(f)) != EOF)
    n += c == '\n';
  if (f)
    fclose(f);
  return n;
}

int
lt_pid_in(const char *path, int seconds) {
  char buf[32];
  for (int w = 0; w <= seconds * 10; w++, lt_sleep_ms(100)) {
    char *s = lt_read_file(path, buf, sizeof buf);
    if (s && atoi(s) > 0)
      return atoi(s);
  }
  return 0;
}

int
lt_write_file(const char *path, const char *fmt, ...) {
  FILE *f = fopen(path, "w");
  if (!f)
    return -1;
  va_list ap;
  va_start(ap, fmt);
  int n = vfprintf(f, fmt, ap);
  va_end(ap);
  return fclose(f) == 0 && n >= 0 ? 0 : -1;
}

int
lt_flip_byte(const char *path, long off, int mask) {
  if (chmod(path, 0644))
    return -1;
  FILE *f = fopen(path, "r+b");
  if (!f)
    return -1;
  int c = fseek(f, off, SEEK_SET) ? EOF : fgetc(f);
  int rc = c == EOF || fseek(f, off, SEEK_SET) || fputc(c ^ mask, f) == EOF;
  return fclose(f) || rc ? -1 : 0;
}
