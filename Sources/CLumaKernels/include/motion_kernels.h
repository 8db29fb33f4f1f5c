// The motion detector's structural tests (Motion.MotionDetector): per-pixel loops kept in C so that debug builds,
// which the test suite runs, stay fast. Each function is a plain loop; the Swift side documents why it exists.
#ifndef PUSHAV_MOTION_KERNELS_H
#define PUSHAV_MOTION_KERNELS_H

#include <stdint.h>

/// edges[i] = how far `change` falls across pixel i (left to right or above to below) where it falls to less than a
/// third and a light does not explain it, else 0; the border is 0. Across the pair (l, r) a light explains the
/// fall when the frame's contrast frame[l] − frame[r] is both the background's (model[l] − model[r]) and the
/// reference picture's (reference[l] − reference[r]) times a gain in [min_gain, max_gain], give or take `tolerance`.
/// strict_edges[i] likewise where the background's contrast does not explain it even give or take `strict_tolerance`
/// (≥ `tolerance`): every strict edge is an edge.
void pushav_motion_edge_strength(const uint8_t *change, const uint8_t *frame, const uint8_t *model, const uint8_t *reference,
                                 float tolerance, float strict_tolerance, float min_gain, float max_gain, int width,
                                 int height, uint8_t *edges, uint8_t *strict_edges);

/// Grey-level dilation by a (2 radius + 1)² square: output[i] = the largest input value within `radius` in x and y.
/// `rows` is scratch of width × height bytes.
void pushav_motion_dilate(const uint8_t *input, int width, int height, int radius, uint8_t *rows, uint8_t *output);

/// counted[i] = min(change[i], edge_near[i]) where change[i] > factor × activity[i], else 0.
void pushav_motion_select(const uint8_t *change, const uint8_t *edge_near, const float *activity, float factor,
                          int count, uint8_t *counted);

/// activity[i] moves towards |pixels[i] − previous[i] − offset| by `rise` when that is larger, else by `fall`.
void pushav_motion_follow_flicker(const uint8_t *pixels, const uint8_t *previous, float offset, float rise, float fall,
                                  int count, float *activity);

/// persistent[i] = min(counted[i], edge_near[i], previous_edge_near[i]).
void pushav_motion_persistent(const uint8_t *counted, const uint8_t *edge_near, const uint8_t *previous_edge_near, int count,
                              uint8_t *persistent);

#endif
