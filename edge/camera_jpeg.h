/*
 * camera_jpeg.h - private to edge/: JPEG in and out for the cameras
 * (camera_jpeg.c), through libjpeg-turbo's libjpeg API. Pure: no loop, no
 * agent. An edge_jpeg keeps one compress and one decompress struct for
 * its whole life, so a frame costs no set-up; it is used by one thread at
 * a time (the camera's lock).
 */
#ifndef LARK_EDGE_CAMERA_JPEG_H
#define LARK_EDGE_CAMERA_JPEG_H

#include <stddef.h>
#include <stdint.h>

/* A growable byte buffer: a frame's JPEG bytes. */
typedef struct edge_buf {
  uint8_t *data;
  size_t len, cap;
} edge_buf;

void edge_buf_free(edge_buf *b);
/* Make b hold len bytes of room; -1 when memory ran out. */
int edge_buf_reserve(edge_buf *b, size_t len);

/* Pixels handed to the encoder: 3 bytes a pixel, rows packed. */
typedef enum edge_pix { EDGE_PIX_RGB, EDGE_PIX_YCC } edge_pix;

typedef struct edge_jpeg edge_jpeg;

/* NULL when memory ran out. */
edge_jpeg *edge_jpeg_new(int quality);
void edge_jpeg_free(edge_jpeg *j);

/* Encode w x h pixels into out (replacing what it held). -1 with the
 * reason in err. */
int edge_jpeg_encode(edge_jpeg *j, const uint8_t *px, edge_pix pix, unsigned w,
                     unsigned h, edge_buf *out, char *err, size_t errlen);

/* Decode a JPEG into RGB pixels in rgb (w x h x 3), resized (nearest
 * pixel) to w x h when that is not its own size. -1 with the reason in
 * err (not a JPEG, truncated, ...). */
int edge_jpeg_decode(edge_jpeg *j, const void *data, size_t len, unsigned w,
                     unsigned h, uint8_t *rgb, char *err, size_t errlen);

/* A JPEG's own size from its header; -1 when it is not one. */
int edge_jpeg_size(edge_jpeg *j, const void *data, size_t len, unsigned *w,
                   unsigned *h);

#endif
