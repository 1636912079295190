/*
 * artifact.h - what a task needs to run on a node: its raw.artifact's
 * form, and something to run (an entrypoint or a runScript).
 *
 * An artifact is a file://, http:// or https:// URL naming one file (the
 * URL's last path segment, percent-decoded, is the file made in the
 * pod's working directory), with an optional checksum written as pip
 * writes one, a fragment `#sha256=<64 hex digits>`. An empty artifact is
 * none. Checked by lark-scheduler (job.apply) and lark-dag
 * (workflow.apply) before a Job is stored, and by the edge again before
 * it fetches (a Job stored by an earlier version may hold anything). The
 * schema does not check the form: events already in a log keep
 * replaying whatever their artifact says.
 */
#ifndef LARK_ARTIFACT_H
#define LARK_ARTIFACT_H

#include <stddef.h>

#include "bus.h"

#define LARK_ARTIFACT_MAX 4096 /* RawRuntime.artifact's max_len */

typedef struct lark_artifact {
  char url[LARK_ARTIFACT_MAX + 1]; /* without its fragment */
  char name[256];                  /* the file it makes */
  char sha256[65];                 /* lowercase hex; "" when not given */
} lark_artifact;

/* Parse s (len bytes, not empty). 0, or BUS_EFIELD with the reason in why
 * (cap bytes). */
int lark_artifact_parse(const char *s, size_t len, lark_artifact *a, char *why,
                        size_t cap);

/*
 * Check that task (one of a Job's, decoded) can run on a node: its raw
 * runtime's artifact, when given, has the form above, and it has an entrypoint
 * or a runScript (its own, or spec's: the Job's spec, may be NULL). A task with
 * another runtime passes (the runtime check refuses it). 0, or BUS_EFIELD with
 * the field's path under the task in field ("runtime.raw.artifact", ...) and
 * the reason in why.
 */
int lark_task_can_run(const bus_task *task, const bus_job_spec *spec,
                      char *field, size_t fcap, char *why, size_t cap);
/* The same check of a Task map (spec a JobSpec map, may be NULL), for a
 * caller that has not decoded its Job into the generated types. */
int lark_task_runnable(const msgpack_object *task, const msgpack_object *spec,
                       char *field, size_t fcap, char *why, size_t cap);

#endif
