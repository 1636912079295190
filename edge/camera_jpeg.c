/*
 * camera_jpeg.c - JPEG through libjpeg-turbo's libjpeg API for the
 * cameras (camera_jpeg.h).
 *
 * libjpeg reports errors by calling error_exit, which by default exits
 * the process: here it longjmps back to the call that started the work,
 * with the library's message kept for the caller. The compress struct is
 * made once and reused (jpeg_finish_compress leaves it ready for the next
 * image); the encoded bytes go straight into the caller's edge_buf
 * through a destination manager of our own, which grows that buffer, so
 * there is no copy and nothing libjpeg allocated to free afterwards.
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h>

#include "camera_jpeg.h"

typedef struct jpeg_err {
  struct jpeg_error_mgr pub;
  jmp_buf jb;
  char msg[JMSG_LENGTH_MAX];
} jpeg_err;

typedef struct jpeg_dst {
  struct jpeg_destination_mgr pub;
  edge_buf *out;
} jpeg_dst;

struct edge_jpeg {
  struct jpeg_compress_struct c;
  struct jpeg_decompress_struct d;
  jpeg_err cerr, derr;
  jpeg_dst dst;
  uint8_t *row; /* one decoded row, for resizing */
  size_t rowcap;
  int quality;
};

void
edge_buf_free(edge_buf *b) {
  free(b->data);
  memset(b, 0, sizeof *b);
}

int
edge_buf_reserve(edge_buf *b, size_t len) {
  if (len <= b->cap)
    return 0;
  size_t cap = b->cap ? b->cap : 65536;
  while (cap < len)
    cap *= 2;
  uint8_t *g = realloc(b->data, cap);
  if (!g)
    return -1;
  b->data = g;
  b->cap = cap;
  return 0;
}

static void
on_error(j_common_ptr cinfo) {
  jpeg_err *e = (jpeg_err *)cinfo->err;
  (*cinfo->err->format_message)(cinfo, e->msg);
  longjmp(e->jb, 1);
}

static void
on_message(j_common_ptr cinfo) {
  (void)cinfo; /* warnings (a corrupt but readable file) are not ours */
}

static void
dst_init(j_compress_ptr c) {
  jpeg_dst *d = (jpeg_dst *)c->dest;
  d->out->len = 0;
  d->pub.next_output_byte = d->out->data;
  d->pub.free_in_buffer = d->out->cap;
}

static boolean
dst_empty(j_compress_ptr c) {
  jpeg_dst *d = (jpeg_dst *)c->dest;
  size_t used = d->out->cap; /* libjpeg asks only when all is used */
  if (edge_buf_reserve(d->out, used * 2)) {
    c->err->msg_code = JERR_OUT_OF_MEMORY;
    (*c->err->error_exit)((j_common_ptr)c);
  }
  d->pub.next_output_byte = d->out->data + used;
  d->pub.free_in_buffer = d->out->cap - used;
  return TRUE;
}

static void
dst_term(j_compress_ptr c) {
  jpeg_dst *d = (jpeg_dst *)c->dest;
  d->out->len = d->out->cap - d->pub.free_in_buffer;
}

/* Make j's structs: -1 when memory ran out. */
static int
create(edge_jpeg *j) {
  j->d.err = &j->cerr.pub; /* one jump target while both are made */
  if (setjmp(j->cerr.jb))
    return -1;
  jpeg_create_compress(&j->c);
  jpeg_create_decompress(&j->d);
  j->d.err = &j->derr.pub;
  return 0;
}

edge_jpeg *
edge_jpeg_new(int quality) {
  edge_jpeg *j = calloc(1, sizeof *j);
  if (!j)
    return NULL;
  j->quality = quality;
  j->c.err = jpeg_std_error(&j->cerr.pub);
  j->d.err = jpeg_std_error(&j->derr.pub);
  j->cerr.pub.error_exit = j->derr.pub.error_exit = on_error;
  j->cerr.pub.output_message = j->derr.pub.output_message = on_message;
  if (create(j)) {
    free(j);
    return NULL;
  }
  j->dst.pub.init_destination = dst_init;
  j->dst.pub.empty_output_buffer = dst_empty;
  j->dst.pub.term_destination = dst_term;
  j->c.dest = &j->dst.pub;
  return j;
}

void
edge_jpeg_free(edge_jpeg *j) {
  if (!j)
    return;
  j->c.dest = NULL; /* ours, not libjpeg's pool's */
  jpeg_destroy_compress(&j->c);
  jpeg_destroy_decompress(&j->d);
  free(j->row);
  free(j);
}

int
edge_jpeg_encode(edge_jpeg *j, const uint8_t *px, edge_pix pix, unsigned w,
                 unsigned h, edge_buf *out, char *err, size_t errlen) {
  struct jpeg_compress_struct *c = &j->c;
  if (edge_buf_reserve(out, (size_t)w * h / 4 + 4096)) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  if (setjmp(j->cerr.jb)) {
    jpeg_abort_compress(c);
    snprintf(err, errlen, "cannot encode JPEG: %s", j->cerr.msg);
    return -1;
  }
  j->dst.out = out;
  c->image_width = w;
  c->image_height = h;
  c->input_components = 3;
  c->in_color_space = pix == EDGE_PIX_YCC ? JCS_YCbCr : JCS_RGB;
  jpeg_set_defaults(c);
  jpeg_set_quality(c, j->quality, TRUE);
  c->dct_method = JDCT_ISLOW;
  jpeg_start_compress(c, TRUE);
  size_t stride = (size_t)w * 3;
  while (c->next_scanline < h) {
    JSAMPROW rows[16];
    unsigned n = 0;
    while (n < 16 && c->next_scanline + n < h) {
      rows[n] = (JSAMPROW)(px + (c->next_scanline + n) * stride);
      n++;
    }
    jpeg_write_scanlines(c, rows, n);
  }
  jpeg_finish_compress(c);
  return 0;
}

/* Start decoding data (header read, output RGB); -1 with the reason. */
static int
decode_start(edge_jpeg *j, const void *data, size_t len, char *err,
             size_t errlen) {
  struct jpeg_decompress_struct *d = &j->d;
  jpeg_mem_src(d, (const unsigned char *)data, (unsigned long)len);
  if (jpeg_read_header(d, TRUE) != JPEG_HEADER_OK) {
    snprintf(err, errlen, "not a JPEG image");
    return -1;
  }
  d->out_color_space = JCS_RGB;
  jpeg_start_decompress(d);
  return 0;
}

int
edge_jpeg_decode(edge_jpeg *j, const void *data, size_t len, unsigned w,
                 unsigned h, uint8_t *rgb, char *err, size_t errlen) {
  struct jpeg_decompress_struct *d = &j->d;
  if (setjmp(j->derr.jb)) {
    jpeg_abort_decompress(d);
    snprintf(err, errlen, "cannot decode JPEG: %s", j->derr.msg);
    return -1;
  }
  if (decode_start(j, data, len, err, errlen))
    return -1;
  unsigned sw = d->output_width, sh = d->output_height;
  size_t srow = (size_t)sw * 3;
  if (j->rowcap < srow) {
    free(j->row);
    j->rowcap = 0;
    if (!(j->row = malloc(srow))) {
      jpeg_abort_decompress(d);
      snprintf(err, errlen, "out of memory");
      return -1;
    }
    j->rowcap = srow;
  }
  /* nearest pixel: source row y*sh/h goes to row y; rows come in order */
  unsigned y = 0;
  while (d->output_scanline < sh) {
    unsigned sy = d->output_scanline;
    JSAMPROW r = j->row;
    jpeg_read_scanlines(d, &r, 1);
    for (; y < h && (uint64_t)y * sh / h == sy; y++) {
      uint8_t *o = rgb + (size_t)y * w * 3;
      if (sw == w)
        memcpy(o, j->row, srow);
      else
        for (unsigned x = 0; x < w; x++)
          memcpy(o + x * 3, j->row + (size_t)((uint64_t)x * sw / w) * 3, 3);
    }
  }
  jpeg_finish_decompress(d);
  return 0;
}

int
edge_jpeg_size(edge_jpeg *j, const void *data, size_t len, unsigned *w,
               unsigned *h) {
  struct jpeg_decompress_struct *d = &j->d;
  if (setjmp(j->derr.jb)) {
    jpeg_abort_decompress(d);
    return -1;
  }
  jpeg_mem_src(d, (const unsigned char *)data, (unsigned long)len);
  if (jpeg_read_header(d, TRUE) != JPEG_HEADER_OK) {
    jpeg_abort_decompress(d);
    return -1;
  }
  *w = d->image_width;
  *h = d->image_height;
  jpeg_abort_decompress(d);
  return 0;
}
