/*
 * utf8.h - private to edge/: text from pods made fit for events (valid
 * UTF-8, no NUL, cut at a character boundary). Used by the agent and the
 * shim; depends on nothing here.
 */
#ifndef LARK_EDGE_UTF8_H
#define LARK_EDGE_UTF8_H

#include <stddef.h>

/* Make s valid UTF-8 without NUL in place (bad bytes become '?'). */
void edge_utf8_fix(char *s, size_t len);
/* Length of the longest prefix of s (at most max) not ending inside a
 * UTF-8 sequence. */
size_t edge_utf8_cut(const char *s, size_t len, size_t max);

#endif
