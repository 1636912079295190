/*
 * schemagen.c - turns schema/schema.yaml into libbus's validator tables,
 * the generated event types and into docs/events.md.
 *
 *   schemagen SCHEMA.yaml [--tables OUT.c] [--header OUT.h] [--docs OUT.md]
 *                         [--types-h OUT.h] [--types-c OUT.c]
 *
 * model.c reads and checks the YAML; tables.c writes the validator's
 * tables, docs.c the documentation, ctypes.c and cfuncs.c the C types of
 * every event (docs/design.md section 4). Output is deterministic (sorted
 * tables, no timestamps), so the committed docs can be compared byte for
 * byte.
 */
#include <stdio.h>
#include <string.h>

#include "model.h"

static const struct {
  const char *flag;
  void (*write)(const char *path);
} outputs[] = {{"--tables", write_tables},
               {"--header", write_header},
               {"--docs", write_docs},
               {"--types-h", write_types_h},
               {"--types-c", write_types_c}};

#define NOUT (sizeof outputs / sizeof outputs[0])

int
main(int argc, char **argv) {
  const char *paths[NOUT] = {0};
  size_t k;
  int i;
  if (argc < 2) {
    fprintf(stderr, "usage: schemagen SCHEMA.yaml [--tables OUT.c] "
                    "[--header OUT.h] [--docs OUT.md] [--types-h OUT.h] "
                    "[--types-c OUT.c]\n");
    return 2;
  }
  schema_path = argv[1];
  for (i = 2; i + 1 < argc; i += 2) {
    for (k = 0; k < NOUT && strcmp(argv[i], outputs[k].flag) != 0; k++)
      ;
    if (k == NOUT)
      die(NULL, "unknown option %s", argv[i]);
    paths[k] = argv[i + 1];
  }
  if (i != argc)
    die(NULL, "option %s needs a value", argv[i]);
  load(schema_path);
  for (k = 0; k < NOUT; k++)
    if (paths[k])
      outputs[k].write(paths[k]);
  unload();
  return 0;
}
