/*
 * fuzz_map.h - for the harnesses whose parser hands on packed msgpack
 * (fuzz_manifest.c, fuzz_sockline.c): what it packed must be one map.
 */
#ifndef LARK_FUZZ_MAP_H
#define LARK_FUZZ_MAP_H

#include <stdlib.h>

#include <msgpack.h>

/* len bytes at mp unpacked into z as *o, which must be a map: abort (the
 * fuzzer's crash) when they are anything else. */
static inline void
fuzz_unpack_map(const void *mp, size_t len, msgpack_zone *z,
                msgpack_object *o) {
  if (msgpack_unpack(mp, len, NULL, z, o) != MSGPACK_UNPACK_SUCCESS ||
      o->type != MSGPACK_OBJECT_MAP)
    abort();
}

#endif
