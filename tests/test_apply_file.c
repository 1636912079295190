/*
 * test_apply_file.c - what `larkctl apply` refuses about a set of files as
 * a whole, before sending anything: one name twice (same spec or not),
 * and two Jobs whose derived Task or Pod names meet. Then larkctl's own
 * --dry-run refusing such a file with exit 1, naming both documents.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manifest.h"
#include "natsd.h"
#include "proc.h"

#define JOB(name, task)                                                        \
  "apiVersion: rlinf.io/v1alpha1\nkind: Job\nmetadata: {name: " name "}\n"     \
  "spec:\n  tasks:\n  - name: " task "\n    role: Actor\n"                     \
  "    resources: {cpu: 1, memory: 128}\n"                                     \
  "    runtime: {raw: {entrypoint: [\"true\"]}}\n"

typedef struct lines {
  char text[4096];
  int n;
} lines;

static void
collect(const char *line, void *ud) {
  lines *l = ud;
  size_t at = strlen(l->text);
  snprintf(l->text + at, sizeof l->text - at, "%s\n", line);
  l->n++;
}

static int
clashes(const char *yaml, lines *l) {
  lark_manifest m;
  memset(&m, 0, sizeof m);
  memset(l, 0, sizeof *l);
  char err[512];
  cr_assert_eq(
      lark_manifest_parse(&m, "f.yaml", yaml, strlen(yaml), err, sizeof err), 0,
      "%s", err);
  int n = lark_manifests_clashes(&m, 1, collect, l);
  lark_manifest_free(&m);
  return n;
}

Test(apply_file, jobs_whose_derived_names_meet) {
  lines l;
  int n = clashes(JOB("col-a", "b-c") "---\n" JOB("col-a-b", "c"), &l);
  cr_expect_eq(n, 1, "%s", l.text);
  cr_expect(strstr(l.text, "doc 2") && strstr(l.text, "doc 1"), "%s", l.text);
  cr_expect(strstr(l.text, "job col-a-b, task c") != NULL, "%s", l.text);
  cr_expect(strstr(l.text, "job col-a, task b-c") != NULL, "%s", l.text);
  cr_expect(strstr(l.text, "task col-a-b-c") != NULL, "%s", l.text);
}

Test(apply_file, a_job_deriving_one_task_twice) {
  lines l;
  int n =
      clashes(JOB("x", "a") "  - name: a\n    role: Actor\n"
                            "    runtime: {raw: {entrypoint: [\"true\"]}}\n",
              &l);
  cr_expect_eq(n, 1, "%s", l.text);
  cr_expect(strstr(l.text, "task x-a") != NULL, "%s", l.text);
}

Test(apply_file, same_name_twice_with_different_specs) {
  lines l;
  int n = clashes(JOB("train", "a") "---\n" JOB("train", "b"), &l);
  cr_expect_eq(n, 1, "%s", l.text);
  cr_expect(strstr(l.text, "another Job train") != NULL, "%s", l.text);
  cr_expect(strstr(l.text, "doc 1") && strstr(l.text, "doc 2"), "%s", l.text);
}

Test(apply_file, same_document_twice_is_refused_too) {
  lines l;
  int n = clashes(JOB("train", "a") "---\n" JOB("train", "a"), &l);
  cr_expect_eq(n, 1, "%s", l.text);
  cr_expect(strstr(l.text, "given twice") != NULL, "%s", l.text);
}

Test(apply_file, distinct_names_pass) {
  lines l;
  int n = clashes(
      JOB("col-a", "b") "---\n" JOB(
          "col-b", "b") "---\n"
                        "apiVersion: rlinf.io/v1alpha1\nkind: Node\n"
                        "metadata: {name: col-a}\nspec: {cluster: c1}\n",
      &l);
  cr_expect_eq(n, 0, "%s", l.text);
}

Test(apply_file, larkctl_refuses_the_whole_file) {
  char dir[256], path[512], bin[512], out[8192], err[8192];
  lt_tmpdir(dir, sizeof dir, "applyfile");
  snprintf(path, sizeof path, "%s/jobs.yaml", dir);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs(JOB("col-a", "b-c") "---\n" JOB("col-a-b", "c"), f);
  fclose(f);
  lt_bin("larkctl", bin, sizeof bin);
  char *argv[] = {bin,  (char *)"apply",     (char *)"-f",
                  path, (char *)"--dry-run", NULL};
  int rc = lt_run(argv, out, sizeof out, err, sizeof err);
  cr_expect_eq(rc, 1, "exit %d: %s%s", rc, out, err);
  cr_expect(strstr(out, "valid") == NULL, "%s", out);
  cr_expect(strstr(err, "nothing applied") != NULL, "%s", err);
  cr_expect(strstr(err, "job col-a, task b-c") != NULL, "%s", err);
  lt_rmtree(dir);
}
