/*
 * camera_src.c - a camera's source (camera_src.h).
 *
 *   pattern    colour bars, a white block that moves with each frame and
 *              the frame's number in the top left corner: every frame
 *              differs, so a test sees frames advance.
 *   files:DIR  the folder's *.jpg / *.jpeg files (listed when opened, in
 *              name order), played in a loop. A file already at the
 *              camera's size goes out as it is; another is decoded,
 *              resized (nearest pixel) and encoded again.
 *   v4l2:DEV   camera_v4l2.c: MJPEG frames at the camera's size go out as
 *              they are, YUYV frames are encoded (as YCbCr, without a
 *              colour conversion), anything else is resized first.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bus.h"
#include "camera_src.h"

enum { FILE_MAX = 64 << 20, V4L2_WAIT_MS = 2000 };

/* ------------------------------------------------------------ pattern */

static const uint8_t bar_rgb[8][3] = {
    {235, 235, 235}, {235, 235, 16}, {16, 235, 235}, {16, 235, 16},
    {235, 16, 235},  {235, 16, 16},  {16, 16, 235},  {16, 16, 16}};

/* 3x5 digits, a row a nibble (bit 2 leftmost). */
static const uint8_t digit_rows[10][5] = {
    {7, 5, 5, 5, 7}, {2, 6, 2, 2, 7}, {7, 1, 7, 4, 7}, {7, 1, 7, 1, 7},
    {5, 5, 7, 1, 1}, {7, 4, 7, 1, 7}, {7, 4, 7, 5, 7}, {7, 1, 1, 1, 1},
    {7, 5, 7, 5, 7}, {7, 5, 7, 1, 7}};

static void
bars_draw(uint8_t *bars, unsigned w, unsigned h) {
  for (unsigned x = 0; x < w; x++)
    memcpy(bars + x * 3, bar_rgb[(uint64_t)x * 8 / w], 3);
  for (unsigned y = 1; y < h; y++)
    memcpy(bars + (size_t)y * w * 3, bars, (size_t)w * 3);
}

static void
fill(uint8_t *px, unsigned w, unsigned h, unsigned x0, unsigned y0, unsigned bw,
     unsigned bh, uint8_t v) {
  for (unsigned y = y0; y < y0 + bh && y < h; y++)
    for (unsigned x = x0; x < x0 + bw && x < w; x++)
      memset(px + ((size_t)y * w + x) * 3, v, 3);
}

static void
pattern_draw(uint8_t *px, const uint8_t *bars, unsigned w, unsigned h,
             uint64_t n) {
  memcpy(px, bars, (size_t)w * h * 3);
  unsigned side = h / 6 ? h / 6 : 1, span = w > side ? w - side : 1;
  unsigned step = (unsigned)(n * 8 % (2 * (uint64_t)span));
  unsigned x = step < span ? step : 2 * span - step; /* there and back */
  fill(px, w, h, x, h - side - h / 12, side, side, 255);
  char num[24];
  int len = snprintf(num, sizeof num, "%llu", (unsigned long long)n);
  unsigned s = h / 60 ? h / 60 : 1; /* a font pixel */
  fill(px, w, h, 0, 0, (unsigned)len * 4 * s + 2 * s, 7 * s, 0);
  for (int i = 0; i < len; i++)
    for (unsigned r = 0; r < 5; r++)
      for (unsigned c = 0; c < 3; c++)
        if (digit_rows[num[i] - '0'][r] & (4 >> c))
          fill(px, w, h, s + ((unsigned)i * 4 + c) * s, s + r * s, s, s, 255);
}

/* -------------------------------------------------------------- files */

static int
is_jpeg_name(const char *n) {
  const char *dot = strrchr(n, '.');
  return dot && (!strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg"));
}

static int
name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int
files_list(edge_cam_src *s, char *err, size_t errlen) {
  DIR *d = opendir(s->path);
  if (!d) {
    snprintf(err, errlen, "files:%s: %s", s->path, strerror(errno));
    return -1;
  }
  size_t cap = 0;
  struct dirent *e;
  int rc = 0;
  while (!rc && (e = readdir(d)))
    if (e->d_name[0] != '.' && is_jpeg_name(e->d_name)) {
      char *n = strdup(e->d_name);
      if (!n || bus_grow(&s->files, s->nfiles, &cap, sizeof *s->files, 64))
        rc = -1, free(n);
      else
        s->files[s->nfiles++] = n;
    }
  closedir(d);
  if (rc)
    snprintf(err, errlen, "out of memory");
  else if (!s->nfiles)
    snprintf(err, errlen, "files:%s: no .jpg or .jpeg files", s->path), rc = -1;
  if (!rc)
    qsort(s->files, s->nfiles, sizeof *s->files, name_cmp);
  return rc;
}

static int
file_read(edge_cam_src *s, const char *name, char *err, size_t errlen) {
  char path[EDGE_DEV_PATH_SZ + 260];
  snprintf(path, sizeof path, "%s/%s", s->path, name);
  FILE *f = fopen(path, "rb");
  struct stat st;
  int rc = -1;
  if (!f || fstat(fileno(f), &st))
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
  else if (st.st_size > FILE_MAX)
    snprintf(err, errlen, "%s: larger than %d MiB", path, FILE_MAX >> 20);
  else if (edge_buf_reserve(&s->file, (size_t)st.st_size + 1))
    snprintf(err, errlen, "out of memory");
  else if ((s->file.len = fread(s->file.data, 1, (size_t)st.st_size, f)) !=
           (size_t)st.st_size)
    snprintf(err, errlen, "%s: short read", path);
  else
    rc = 0;
  if (f)
    fclose(f);
  return rc;
}

/* JPEG bytes out as they are when already w x h, else decoded, resized
 * and encoded again. */
static int
jpeg_fit(edge_cam_src *s, edge_jpeg *j, const uint8_t *data, size_t len,
         edge_buf *out, char *err, size_t errlen) {
  unsigned fw, fh;
  if (!edge_jpeg_size(j, data, len, &fw, &fh) && fw == s->w && fh == s->h) {
    if (edge_buf_reserve(out, len)) {
      snprintf(err, errlen, "out of memory");
      return -1;
    }
    memcpy(out->data, data, len);
    out->len = len;
    return 0;
  }
  if (edge_jpeg_decode(j, data, len, s->w, s->h, s->px, err, errlen))
    return -1;
  return edge_jpeg_encode(j, s->px, EDGE_PIX_RGB, s->w, s->h, out, err, errlen);
}

static int
files_next(edge_cam_src *s, edge_jpeg *j, edge_buf *out, char *err,
           size_t errlen) {
  const char *name = s->files[s->next];
  s->next = (s->next + 1) % s->nfiles;
  char why[400];
  if (file_read(s, name, err, errlen))
    return -1;
  if (jpeg_fit(s, j, s->file.data, s->file.len, out, why, sizeof why)) {
    snprintf(err, errlen, "files:%s/%s: %s", s->path, name, why);
    return -1;
  }
  return 0;
}

/* --------------------------------------------------------------- v4l2 */

/* YUYV (w x h as the driver gave) into YCbCr triples at s->w x s->h. */
static void
yuyv_to_ycc(edge_cam_src *s, const uint8_t *in, unsigned iw, unsigned ih) {
  for (unsigned y = 0; y < s->h; y++) {
    const uint8_t *row = in + (size_t)((uint64_t)y * ih / s->h) * iw * 2;
    uint8_t *o = s->px + (size_t)y * s->w * 3;
    for (unsigned x = 0; x < s->w; x++, o += 3) {
      unsigned sx = (unsigned)((uint64_t)x * iw / s->w);
      const uint8_t *pair = row + (sx & ~1u) * 2;
      o[0] = pair[(sx & 1) * 2];
      o[1] = pair[1];
      o[2] = pair[3];
    }
  }
}

static int
v4l2_next(edge_cam_src *s, edge_jpeg *j, edge_buf *out, char *err,
          size_t errlen) {
  const uint8_t *data;
  size_t len;
  edge_v4l2_fmt fmt;
  unsigned iw, ih;
  if (edge_v4l2_grab(s->v, V4L2_WAIT_MS, &data, &len, err, errlen))
    return -1;
  edge_v4l2_format(s->v, &fmt, &iw, &ih);
  int rc;
  if (fmt == EDGE_V4L2_MJPEG)
    rc = jpeg_fit(s, j, data, len, out, err, errlen);
  else if (len < (size_t)iw * ih * 2) {
    snprintf(err, errlen, "%s: a short YUYV frame", s->path);
    rc = -1;
  } else {
    yuyv_to_ycc(s, data, iw, ih);
    rc = edge_jpeg_encode(j, s->px, EDGE_PIX_YCC, s->w, s->h, out, err, errlen);
  }
  edge_v4l2_release(s->v);
  return rc;
}

/* --------------------------------------------------------------- all */

int
edge_cam_src_open(edge_cam_src *s, const edge_device *d, char *err,
                  size_t errlen) {
  memset(s, 0, sizeof *s);
  s->kind = d->source;
  s->path = d->path;
  s->w = d->width;
  s->h = d->height;
  if (!s->w || !s->h || !(s->px = malloc((size_t)s->w * s->h * 3))) {
    snprintf(err, errlen, "cannot hold a %ux%u frame", s->w, s->h);
    return -1;
  }
  int rc = 0;
  if (s->kind == EDGE_CAM_PATTERN) {
    if ((s->bars = malloc((size_t)s->w * s->h * 3)))
      bars_draw(s->bars, s->w, s->h);
    else
      rc = -1, snprintf(err, errlen, "out of memory");
  } else if (s->kind == EDGE_CAM_FILES)
    rc = files_list(s, err, errlen);
  else
    rc = edge_v4l2_open(&s->v, s->path, s->w, s->h, err, errlen);
  if (rc)
    edge_cam_src_close(s);
  return rc;
}

void
edge_cam_src_close(edge_cam_src *s) {
  for (size_t i = 0; i < s->nfiles; i++)
    free(s->files[i]);
  free(s->files);
  edge_buf_free(&s->file);
  edge_v4l2_close(s->v);
  free(s->bars);
  free(s->px);
  memset(s, 0, sizeof *s);
}

int
edge_cam_src_next(edge_cam_src *s, edge_jpeg *j, edge_buf *out, char *err,
                  size_t errlen) {
  int rc;
  if (s->kind == EDGE_CAM_PATTERN) {
    pattern_draw(s->px, s->bars, s->w, s->h, s->n);
    rc = edge_jpeg_encode(j, s->px, EDGE_PIX_RGB, s->w, s->h, out, err, errlen);
  } else if (s->kind == EDGE_CAM_FILES)
    rc = files_next(s, j, out, err, errlen);
  else
    rc = v4l2_next(s, j, out, err, errlen);
  if (!rc)
    s->n++;
  return rc;
}
