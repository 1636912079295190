/*
 * timearg.c - a time as a user gives it (timearg.h): RFC 3339, Unix
 * seconds, or a duration back from now. larkctl's --at and --since and
 * lark-gateway's ?at= and ?since= read times with this one parser.
 */
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bus.h"
#include "timearg.h"

/* Whole nanoseconds from seconds, saturated: a time past 2262 is "after
 * every event", not an overflow; one at or before the epoch is "before
 * every event", kept at 1 ns because 0 means "no time given" to callers. */
static int64_t
clamp_ns(long double secs) {
  if (secs >= (long double)INT64_MAX / 1e9L)
    return INT64_MAX;
  if (secs * 1e9L < 1.0L)
    return 1;
  return (int64_t)(secs * 1e9L);
}

static int
parse_duration(const char *s, int64_t *ns) {
  char *end;
  double v = strtod(s, &end);
  if (end == s || !isfinite(v) || v < 0 || !isdigit((unsigned char)*s))
    return -1;
  double unit;
  if (!strcmp(end, "ms"))
    unit = 1e-3;
  else if (!strcmp(end, "s"))
    unit = 1;
  else if (!strcmp(end, "m"))
    unit = 60;
  else if (!strcmp(end, "h"))
    unit = 3600;
  else if (!strcmp(end, "d"))
    unit = 86400;
  else
    return -1;
  *ns = clamp_ns((long double)v * unit);
  return 0;
}

/* n digits at s into *v; 0 when they are all digits. */
static int
digits(const char *s, int n, int *v) {
  *v = 0;
  for (int i = 0; i < n; i++) {
    if (!isdigit((unsigned char)s[i]))
      return -1;
    *v = *v * 10 + (s[i] - '0');
  }
  return 0;
}

/* YYYY-MM-DD, a real day of a year from 1 to 9999. */
static int
parse_date(const char *s, struct tm *tm) {
  static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  int y, m, d;
  if (digits(s, 4, &y) || s[4] != '-' || digits(s + 5, 2, &m) || s[7] != '-' ||
      digits(s + 8, 2, &d))
    return -1;
  int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (y < 1 || m < 1 || m > 12 || d < 1 || d > mdays[m - 1] ||
      (m == 2 && d == 29 && !leap))
    return -1;
  tm->tm_year = y - 1900;
  tm->tm_mon = m - 1;
  tm->tm_mday = d;
  return 0;
}

/* [.fff]? then Z, z, +hh:mm, -hh:mm or nothing (UTC). */
static int
parse_zone(const char *p, long double *frac, int64_t *off) {
  *frac = 0;
  *off = 0;
  if (*p == '.') {
    long double scale = 0.1L;
    if (!isdigit((unsigned char)p[1]))
      return -1;
    for (p++; isdigit((unsigned char)*p); p++, scale /= 10)
      *frac += (*p - '0') * scale;
  }
  int hh, mm;
  if (*p == 'Z' || *p == 'z')
    p++;
  else if (*p == '+' || *p == '-') {
    if (digits(p + 1, 2, &hh) || p[3] != ':' || digits(p + 4, 2, &mm) ||
        hh > 23 || mm > 59)
      return -1;
    *off = (int64_t)(hh * 3600 + mm * 60) * (*p == '-' ? -1 : 1);
    p += 6;
  }
  return *p ? -1 : 0;
}

/* RFC 3339: 2026-11-29T10:00:00[.fff][Z|+hh:mm], or a date alone
 * (midnight UTC). Every field is checked: 2026-02-30 is no day. */
static int
parse_rfc3339(const char *s, int64_t *ns) {
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  if (parse_date(s, &tm))
    return -1;
  const char *p = s + 10;
  long double frac = 0;
  int64_t off = 0;
  if (*p) {
    if (*p != 'T' && *p != 't' && *p != ' ')
      return -1;
    if (digits(p + 1, 2, &tm.tm_hour) || p[3] != ':' ||
        digits(p + 4, 2, &tm.tm_min) || p[6] != ':' ||
        digits(p + 7, 2, &tm.tm_sec) || tm.tm_hour > 23 || tm.tm_min > 59 ||
        tm.tm_sec > 59 || parse_zone(p + 9, &frac, &off))
      return -1;
  }
  *ns = clamp_ns((long double)timegm(&tm) - off + frac);
  return 0;
}

int
lark_time_parse(const char *s, int64_t *ns) {
  int64_t d;
  if (!s || !*s)
    return -1;
  if (parse_duration(s, &d) == 0) {
    *ns = clamp_ns(((long double)bus_wall_ns() - (long double)d) / 1e9L);
    return 0;
  }
  if (parse_rfc3339(s, ns) == 0)
    return 0;
  char *end;
  double secs = strtod(s, &end);
  if (end != s && !*end && isfinite(secs) && secs >= 0 &&
      isdigit((unsigned char)*s)) {
    *ns = clamp_ns(secs);
    return 0;
  }
  return -1;
}
