#include "motion_kernels.h"

// Plain C on purpose: the same loops in Swift run about ten times slower in a debug build, which is what the test
// suite runs (every recording there analyses motion); in a release build both are equally fast.

static inline uint8_t max_u8(uint8_t a, uint8_t b) { return a > b ? a : b; }
static inline uint8_t min_u8(uint8_t a, uint8_t b) { return a < b ? a : b; }

void pushav_motion_edge_strength(const uint8_t *change, int width, int height, uint8_t *edges) {
    for (int i = 0; i < width * height; i++) edges[i] = 0;
    for (int y = 1; y < height - 1; y++) {
        const uint8_t *row = change + y * width, *above = row - width, *below = row + width;
        uint8_t *out = edges + y * width;
        for (int x = 1; x < width - 1; x++) {
            uint8_t l = row[x - 1], r = row[x + 1], a = above[x], b = below[x];
            uint8_t hl = max_u8(l, r), ll = min_u8(l, r), hv = max_u8(a, b), lv = min_u8(a, b);
            uint8_t horizontal = ll < hl / 3 ? (uint8_t)(hl - ll) : 0;
            uint8_t vertical = lv < hv / 3 ? (uint8_t)(hv - lv) : 0;
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
