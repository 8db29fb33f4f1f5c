#include "luma_kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>

int pushav_luma_avx2_available(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") ? 1 : 0;
}

__attribute__((target("avx2")))
void pushav_luma_pair_sums_avx2(const uint8_t *top, ptrdiff_t stride, int rows, int width, int continuing,
                                uint16_t *totals) {
    // vpmaddubsw against ones adds each pair of unsigned bytes into a 16-bit lane: one instruction per 32 pixels,
    // where widening both halves and adding them takes four.
    const __m256i ones = _mm256_set1_epi8(1);
    int x = 0;
    for (; x + 32 <= width; x += 32) {
        __m256i *out = (__m256i *)(totals + x / 2);
        __m256i total = continuing ? _mm256_loadu_si256(out) : _mm256_setzero_si256();
        const uint8_t *row = top + x;
        for (int r = 0; r < rows; r++, row += stride) {
            total = _mm256_add_epi16(total, _mm256_maddubs_epi16(_mm256_loadu_si256((const __m256i *)row), ones));
        }
        _mm256_storeu_si256(out, total);
    }
    for (; x + 1 < width; x += 2) {
        uint16_t total = continuing ? totals[x / 2] : 0;
        const uint8_t *row = top + x;
        for (int r = 0; r < rows; r++, row += stride) total += (uint16_t)(row[0] + row[1]);
        totals[x / 2] = total;
    }
}

#else

int pushav_luma_avx2_available(void) { return 0; }

void pushav_luma_pair_sums_avx2(const uint8_t *top, ptrdiff_t stride, int rows, int width, int continuing,
                                uint16_t *totals) {
    (void)top; (void)stride; (void)rows; (void)width; (void)continuing; (void)totals;
}

#endif
