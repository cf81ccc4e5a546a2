// Shared by the fused MaxSim kernels (amx_maxsim.c, avx512_maxsim.c): one page token
// converted into its bf16 parts, laid side by side along the reduction axis.
#ifndef TRIDENT_MAXSIM_CONVERT_H
#define TRIDENT_MAXSIM_CONVERT_H

#include <immintrin.h>
#include <stdint.h>

static inline __m512 bf16_to_f32(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

// Lanes d..d+15 of a token that has dim values: the mask of those that exist.
static inline __mmask16 lanes(int d, int dim) {
    return d + 16 <= dim ? (__mmask16)0xFFFF : (d < dim ? (__mmask16)((1u << (dim - d)) - 1) : 0);
}

// Values d..d+15 (masked by m, zero elsewhere) of a token of dtype 0 = fp32, 1 = fp16, 2 = bf16, as fp32.
static inline __m512 load_f32(const void *src, int dtype, int d, __mmask16 m) {
    if (dtype == 0) return _mm512_maskz_loadu_ps(m, (const float *)src + d);
    if (dtype == 1) return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const uint16_t *)src + d));
    return bf16_to_f32(_mm256_maskz_loadu_epi16(m, (const uint16_t *)src + d));
}

// One page token (dim values of dtype 0 = fp32, 1 = fp16, 2 = bf16) -> n_parts * dpad bf16.
static inline void convert_row(const void *src, int dtype, int dim, int dpad, const int *picks,
                               int n_parts, uint16_t *dst) {
    for (int d = 0; d < dpad; d += 16) {
        const __m512 x = load_f32(src, dtype, d, lanes(d, dim));
        __m256i hi = (__m256i)_mm512_cvtneps_pbh(x);
        __m256i lo = _mm256_setzero_si256();
        for (int i = 0; i < n_parts; i++) {
            if (picks[i]) {
                lo = (__m256i)_mm512_cvtneps_pbh(_mm512_sub_ps(x, bf16_to_f32(hi)));
                break;
            }
        }
        for (int i = 0; i < n_parts; i++) {
            _mm256_storeu_si256((__m256i *)(dst + (int64_t)i * dpad + d), picks[i] ? lo : hi);
        }
    }
}

#endif
