/*
 * manifest.h - manifests a user applies: YAML or JSON files holding
 * resources in the reference platform's shape
 *
 *   apiVersion: rlinf.io/v1alpha1
 *   kind: Job | Workflow | Node | Domain
 *   metadata: {name: ...}
 *   spec: {...}
 *
 * turned into msgpack resources that bus_schema_check and the services
 * read. A task's runtime written directly in the task, as the reference
 * platform writes it (`raw: {...}`), is stored as larkbus's `runtime:
 * {raw: {...}}` (see task_runtime in manifest_tasks.c and docs/scheduler.md).
 *
 * Formats. A file whose first non-blank character is '{' or '[' is JSON:
 * one object, an array of objects, or several top-level objects one after
 * the other. Anything else is YAML: several documents separated by `---`;
 * a document that is a sequence gives one resource per item, and an empty
 * document (only comments) is skipped.
 *
 * YAML scalars follow the YAML 1.2 core schema, as most tools now do:
 * plain `true`/`false`, `null`/`~`/nothing, decimal, 0x and 0o integers,
 * decimal floats (and .inf/.nan, which the schema then refuses) take
 * their type; everything else, and every quoted or block scalar, is a
 * string. So `yes`, `on` and `1.0.2` stay strings; write `"8"` for a
 * string of digits. The tags !!str, !!int, !!float, !!bool, !!null, !!map
 * and !!seq are honoured; other tags are refused. Mapping keys are always
 * strings (their text); duplicate keys are refused.
 *
 * Hostile input: files larger than LARK_MANIFEST_MAX_BYTES, nesting deeper
 * than LARK_MANIFEST_MAX_DEPTH, more than LARK_MANIFEST_MAX_NODES values,
 * more than LARK_MANIFEST_MAX_DOCS documents or LARK_MANIFEST_MAX_KEYS keys
 * in one mapping are refused, and so are YAML anchors and aliases (an
 * alias can expand a small file into billions of values). Parsing never
 * crashes and its memory is bounded by the limits.
 *
 * Errors name the file, the document (1-based, in file order) and the
 * line: "rl.yaml doc 2 line 14: found a tab character ...".
 */
#ifndef LARK_CLI_MANIFEST_H
#define LARK_CLI_MANIFEST_H

#include <stddef.h>

#include "bus.h"

#define LARK_MANIFEST_MAX_BYTES (8 * 1024 * 1024)
/* The deepest resource the schema allows is 12 levels; commands and events
 * wrap a resource in one or two more, and libbus refuses msgpack deeper
 * than 24 (msgpack-c's own unpacker stops at 32). */
#define LARK_MANIFEST_MAX_DEPTH 20
#define LARK_MANIFEST_MAX_NODES 262144
#define LARK_MANIFEST_MAX_DOCS 1024
#define LARK_MANIFEST_MAX_KEYS 4096
/* A packed resource must leave room for the command around it. */
#define LARK_MANIFEST_MAX_PACKED (BUS_MAX_PAYLOAD - 4096)

/* A JSON value (jansson's) as msgpack: objects, arrays, scalars. */
struct json_t;
void lark_json_pack(const struct json_t *j, msgpack_packer *pk);

typedef struct lark_mnode lark_mnode; /* a parsed value; see manifest-int.h */
typedef struct lark_arena lark_arena;

/*
 * One resource of a manifest. kind, api_version and name are copied from
 * the document when they are strings ("" otherwise: the check reports
 * them). mp is the whole resource as one msgpack map. Everything points
 * into the manifest's arena and lives until lark_manifest_free.
 */
typedef struct lark_doc {
  int index; /* 1-based position in the file (an array item counts) */
  int line;  /* 1-based line where the resource starts */
  char kind[32];
  char api_version[64];
  char name[BUS_DERIVED_NAME_MAX + 1];
  const void *mp;
  size_t mp_len;
  const lark_mnode *root;
} lark_doc;

typedef struct lark_manifest {
  char file[256]; /* as given, "<stdin>" for "-" */
  lark_doc *docs;
  size_t ndocs;
  lark_arena *arena;
} lark_manifest;

/*
 * Parse buf (len bytes, need not be NUL-terminated) named file into m,
 * which must be zeroed or freed. Returns 0, or BUS_EMALFORMED (syntax,
 * structure, a refused tag or alias), BUS_ETOO_BIG (a limit) or -ENOMEM,
 * with the message in err (may be NULL): "FILE doc N line L: what".
 * On error m holds no documents and needs no free (it may be freed).
 */
int lark_manifest_parse(lark_manifest *m, const char *file, const void *buf,
                        size_t len, char *err, size_t errcap);

/* Read path ("-" is stdin) and parse it as above; -errno when it cannot
 * be read. */
int lark_manifest_load(lark_manifest *m, const char *path, char *err,
                       size_t errcap);

void lark_manifest_free(lark_manifest *m);

/*
 * Check one document: kind one of the resource kinds (else one error at
 * path "kind"), then bus_schema_check(kind, resource). Fills errs[0..max)
 * and *n as bus_schema_check does; returns 0 when valid.
 */
int lark_doc_check(const lark_doc *d, bus_field_err *errs, int max, int *n);

/*
 * The line of the value a check path names ("spec.tasks[0].replicas"),
 * or of the deepest value on the way that exists (a missing field: its
 * parent); the document's line when nothing matches. JSON documents have
 * one line each.
 */
int lark_doc_line(const lark_doc *d, const char *path);

/*
 * Names that would meet if the documents of ms[0..nfiles) were applied
 * together: the same kind and name twice (identical or not), or two Jobs
 * deriving the same Task or Pod name (Job `a` with task `b-c` and Job
 * `a-b` with task `c` both make Task `a-b-c` and Pod `a-b-c-0`).
 * report gets one line per clash, naming both documents: "f.yaml doc 2
 * line 9 (job a-b, task c): makes task a-b-c, as f.yaml doc 1 line 1 (job
 * a, task b-c) does". Returns the number of clashes, or -ENOMEM.
 */
typedef void (*lark_clash_fn)(const char *line, void *ud);
int lark_manifests_clashes(const lark_manifest *ms, int nfiles,
                           lark_clash_fn report, void *ud);

/*
 * The resource kinds larkctl applies, and who serves them. lark_kind_find
 * takes "Job", "job", "jobs" (or "wf" for workflows) and returns NULL for
 * anything else.
 */
typedef struct lark_kind {
  const char *kind;    /* "Job": the manifest's kind */
  const char *cmd;     /* "job": lark.cmd.<user>.job.<verb> */
  const char *plural;  /* "jobs" */
  const char *short_;  /* "wf"; may be NULL */
  const char *service; /* "lark-scheduler": who answers */
} lark_kind;

const lark_kind *lark_kind_find(const char *name);

#endif
