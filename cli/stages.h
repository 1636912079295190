/*
 * stages.h - lark-engine's queries in larkctl: `get stages [JOB]`,
 * `get peers JOB` (cmd_stages.c), the Stages section of `describe job`,
 * and how their answers print (stages_print.c).
 *
 * The command kinds are lark-engine's: stages (get, list) and peers
 * (get), lark.cmd.<user>.<kind>.<verb>; --at replays the view "engine".
 */
#ifndef LARK_CLI_STAGES_H
#define LARK_CLI_STAGES_H

#include "kinds.h"

/* Whether a kind typed after `get` is one of lark-engine's (stage,
 * stages, peer, peers). */
int cli_engine_kind(const char *typed);

/* larkctl get stages [JOB] | get peers JOB, with get's options. */
int cli_get_engine(lark_cli *cli, const char *typed, const char *job,
                   int64_t at, int watch, uint64_t limit);

/* stages.get of job (at at_ns when set) into zone; quiet: print no
 * error (describe job shows the section only when the engine answers). */
int cli_stages_get(lark_cli *cli, const char *job, uint64_t limit,
                   int64_t at_ns, int quiet, msgpack_zone *zone,
                   msgpack_object *out);

/* ms as people read a stage's duration: 850ms, 1.25s, 2m05s, 1h02m. */
void cli_stages_duration(int64_t ms, char *out, size_t cap);
/* The line above the table: job, mode, maxStaleness (pipeline), phase,
 * current weights, syncs, peers. */
void cli_stages_header(const msgpack_object *r);
/* The table's column names; wide adds METRICS. */
void cli_stages_columns(int wide);
/* One step (an item of steps): STAGE STEP WEIGHTS STARTED DURATION DONE
 * LAST [METRICS]; a step still running says so. */
void cli_stages_row(const msgpack_object *step, int wide);
/* Header, columns and every step, oldest first (newest at the bottom). */
void cli_stages_print(const msgpack_object *r, int wide);
/* describe job's "Stages:" section: per stage its latest step, its mean
 * duration and who was last most often; the weights versions. */
void cli_stages_section(const msgpack_object *r);

#endif
