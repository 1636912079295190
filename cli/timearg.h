/*
 * timearg.h - a time given by a user (library larkmanifest, shared by
 * larkctl and lark-gateway).
 */
#ifndef LARK_TIMEARG_H
#define LARK_TIMEARG_H

#include <stdint.h>

/*
 * RFC 3339 ("2026-11-29T10:00:00Z", a date alone is midnight UTC), a unix
 * time in seconds, or a duration back from now ("5m", "2h", "30s", "1d").
 * Returns 0 and unix nanoseconds in *ns (at least 1: 0 means "no time"
 * to callers), or -1.
 */
int lark_time_parse(const char *s, int64_t *ns);

#endif
