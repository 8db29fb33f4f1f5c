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

void pushav_motion_edge_strength(const uint8_t *change, const uint8_t *frame, const uint8_t *model, const uint8_t *reference,
                                 float tolerance, float min_gain, float max_gain, int width, int height, uint8_t *edges) {
    for (int i = 0; i < width * height; i++) edges[i] = 0;
    for (int y = 1; y < height - 1; y++) {
        int i = y * width;
        const uint8_t *row = change + i, *above = row - width, *below = row + width;
        const uint8_t *f = frame + i, *m = model + i, *p = reference + i;
        uint8_t *out = edges + i;
        for (int x = 1; x < width - 1; x++) {
            uint8_t l = row[x - 1], r = row[x + 1], a = above[x], b = below[x];
            uint8_t hl = max_u8(l, r), ll = min_u8(l, r), hv = max_u8(a, b), lv = min_u8(a, b);
            uint8_t horizontal = ll < hl / 3 && !(lit(f[x - 1], f[x + 1], m[x - 1], m[x + 1], tolerance, min_gain, max_gain)
                                      && lit(f[x - 1], f[x + 1], p[x - 1], p[x + 1], tolerance, min_gain, max_gain))
                ? (uint8_t)(hl - ll) : 0;
            uint8_t vertical = lv < hv / 3 && !(lit(f[x - width], f[x + width], m[x - width], m[x + width], tolerance, min_gain, max_gain)
                                      && lit(f[x - width], f[x + width], p[x - width], p[x + width], tolerance, min_gain, max_gain))
                ? (uint8_t)(hv - lv) : 0;
            out[x] = max_u8(horizontal, vertical);
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
