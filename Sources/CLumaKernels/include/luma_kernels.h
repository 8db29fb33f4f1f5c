// Column-pair sums of 8-bit luma rows with AVX2, for the motion plane's block average (Motion.LumaBlockAverage).
// Swift cannot ask for one function to be built for AVX2 and chosen at run time; C can. The portable Swift code stays
// the fallback (and the reference the tests compare this with).
#ifndef PUSHAV_LUMA_KERNELS_H
#define PUSHAV_LUMA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/// 1 when this CPU runs pushav_luma_pair_sums_avx2, else 0.
int pushav_luma_avx2_available(void);

/// For each i < width / 2: totals[i] = (continuing ? totals[i] : 0) + the sum over `rows` rows (starting at `top`,
/// `stride` bytes apart) of the pixels 2i and 2i + 1. `width` is even; the caller keeps every total within 16 bits.
void pushav_luma_pair_sums_avx2(const uint8_t *top, ptrdiff_t stride, int rows, int width, int continuing,
                                uint16_t *totals);

#endif
