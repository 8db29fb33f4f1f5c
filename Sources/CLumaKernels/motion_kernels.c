#include "motion_kernels.h"

// Plain C on purpose: the same loops in Swift run about ten times slower in a debug build, which is what the test
// suite runs (every recording there analyses motion); in a release build both are equally fast.

static inline uint8_t max_u8(uint8_t a, uint8_t b) { return a > b ? a : b; }
static inline uint8_t min_u8(uint8_t a, uint8_t b) { return a < b ? a : b; }

// Whether a light (a gain in [lo, hi] that varies slowly across the picture) takes the background's contrast
// between two pixels to the frame's: the frame's contrast lies between lo and hi times the background's, widened by
// the tolerance.
static inline int lit(int frame_a, int frame_b, int model_a, int model_b, float tolerance, float lo, float hi) {
    float contrast = (float)(frame_a - frame_b), before = (float)(model_a - model_b);
    float low = before * lo, high = before * hi;
    if (low > high) { float t = low; low = high; high = t; }
    return contrast >= low - tolerance && contrast <= high + tolerance;
}

// The strength of the end of the change across the pair (a, b) — `high` − `low` where the change falls to under a
// third — into *edge where a light does not explain it against the background and the reference picture, and into
// *strict where it does not explain it against the background even with `strict_tolerance`. A strict edge is always
// an edge too: the wider tolerance only explains more.
static inline void classify_end(uint8_t high, uint8_t low, int frame_a, int frame_b, int model_a, int model_b,
                                int reference_a, int reference_b, float tolerance, float strict_tolerance, float lo,
                                float hi, uint8_t *edge, uint8_t *strict) {
    *edge = 0;
    *strict = 0;
    if (!(low < high / 3)) return;
    uint8_t strength = (uint8_t)(high - low);
    if (!lit(frame_a, frame_b, model_a, model_b, strict_tolerance, lo, hi)) {
        *edge = strength;
        *strict = strength;
    } else if (!(lit(frame_a, frame_b, model_a, model_b, tolerance, lo, hi)
                 && lit(frame_a, frame_b, reference_a, reference_b, tolerance, lo, hi))) {
        *edge = strength;
    }
}

void pushav_motion_edge_strength(const uint8_t *change, const uint8_t *frame, const uint8_t *model, const uint8_t *reference,
                                 float tolerance, float strict_tolerance, float min_gain, float max_gain, int width,
                                 int height, uint8_t *edges, uint8_t *strict_edges) {
    for (int i = 0; i < width * height; i++) edges[i] = strict_edges[i] = 0;
    for (int y = 1; y < height - 1; y++) {
        int i = y * width;
        const uint8_t *row = change + i, *above = row - width, *below = row + width;
        const uint8_t *f = frame + i, *m = model + i, *p = reference + i;
        uint8_t *out = edges + i, *strict_out = strict_edges + i;
        for (int x = 1; x < width - 1; x++) {
            uint8_t l = row[x - 1], r = row[x + 1], a = above[x], b = below[x];
            uint8_t horizontal, horizontal_strict, vertical, vertical_strict;
            classify_end(max_u8(l, r), min_u8(l, r), f[x - 1], f[x + 1], m[x - 1], m[x + 1], p[x - 1], p[x + 1],
                         tolerance, strict_tolerance, min_gain, max_gain, &horizontal, &horizontal_strict);
            classify_end(max_u8(a, b), min_u8(a, b), f[x - width], f[x + width], m[x - width], m[x + width], p[x - width],
                         p[x + width], tolerance, strict_tolerance, min_gain, max_gain, &vertical, &vertical_strict);
            out[x] = max_u8(horizontal, vertical);
            strict_out[x] = max_u8(horizontal_strict, vertical_strict);
        }
    }
}

void pushav_motion_dilate(const uint8_t *input, int width, int height, int radius, uint8_t *rows, uint8_t *output) {
    for (int y = 0; y < height; y++) {
        const uint8_t *row = input + y * width;
        uint8_t *out = rows + y * width;
        for (int x = 0; x < width; x++) {
            int from = x - radius < 0 ? 0 : x - radius, to = x + radius >= width ? width - 1 : x + radius;
            uint8_t strongest = 0;
            for (int k = from; k <= to; k++) strongest = max_u8(strongest, row[k]);
            out[x] = strongest;
        }
    }
    for (int y = 0; y < height; y++) {
        int from = y - radius < 0 ? 0 : y - radius, to = y + radius >= height ? height - 1 : y + radius;
        uint8_t *out = output + y * width;
        for (int x = 0; x < width; x++) out[x] = 0;
        for (int k = from; k <= to; k++) {
            const uint8_t *row = rows + k * width;
            for (int x = 0; x < width; x++) out[x] = max_u8(out[x], row[x]);
        }
    }
}

void pushav_motion_select(const uint8_t *change, const uint8_t *edge_near, const float *activity, float factor,
                          int count, uint8_t *counted) {
    for (int i = 0; i < count; i++) {
        counted[i] = (float)change[i] > factor * activity[i] ? min_u8(change[i], edge_near[i]) : 0;
    }
}

void pushav_motion_follow_flicker(const uint8_t *pixels, const uint8_t *previous, float offset, float rise, float fall,
                                  int count, float *activity) {
    for (int i = 0; i < count; i++) {
        float value = (float)pixels[i] - (float)previous[i] - offset;
        if (value < 0) value = -value;
        activity[i] += (value - activity[i]) * (value > activity[i] ? rise : fall);
    }
}

void pushav_motion_persistent(const uint8_t *counted, const uint8_t *edge_near, const uint8_t *previous_edge_near, int count,
                              uint8_t *persistent) {
    for (int i = 0; i < count; i++) persistent[i] = min_u8(counted[i], min_u8(edge_near[i], previous_edge_near[i]));
}
