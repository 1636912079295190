/*
 * replay.c - runs a fuzz harness over every file of the corpus
 * directories given, without libFuzzer: how ctest replays the corpus in
 * every build (plain and sanitised). A crash or abort fails the test.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  uint8_t *buf;
  long n;
  if (!f)
    return -1;
  if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
      fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return -1;
  }
  buf = malloc((size_t)n + 1);
  if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    fclose(f);
    return -1;
  }
  fclose(f);
  LLVMFuzzerTestOneInput(buf, (size_t)n);
  free(buf);
  return 0;
}

static int
run_dir(const char *dir, int *count) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char path[4096];
  int bad = 0;
  if (!d) {
    fprintf(stderr, "replay: cannot open %s\n", dir);
    return 1;
  }
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (run_file(path) < 0) {
      fprintf(stderr, "replay: cannot read %s\n", path);
      bad = 1;
    }
    (*count)++;
  }
  closedir(d);
  return bad;
}

int
main(int argc, char **argv) {
  int i, bad = 0, count = 0;
  if (argc < 2) {
    fprintf(stderr, "usage: %s CORPUS_DIR...\n", argv[0]);
    return 2;
  }
  for (i = 1; i < argc; i++)
    bad |= run_dir(argv[i], &count);
  printf("replayed %d inputs\n", count);
  if (count == 0) {
    fprintf(stderr, "replay: empty corpus\n");
    return 1;
  }
  return bad;
}
