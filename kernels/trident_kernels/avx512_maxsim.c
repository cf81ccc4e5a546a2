// Fused MaxSim on AVX512-BF16 (CPUs without AMX, e.g. AMD Zen 4/5): the AMX kernel's
// algorithm with vdpbf16ps instead of tiles. Same operands, same arguments, same result.
//
// Built on first use by trident_kernels/amx.py and called through ctypes (which releases
// the GIL). Why: without AMX, torch has no bf16 GEMM with an fp32 result on CPU, so its
// exact path converts pages to fp32 and writes a [query rows x page tokens] fp32 matrix
// before taking the max; here the max is taken from the fp32 accumulators in registers.
//
// Layout. One zmm accumulator holds <page token r, query rows 16j..16j+15>. The query
// operand is the AMX kernel's VNNI layout: for each pair of reduction steps, 16 query rows
// x 2 bf16 = one zmm. The page operand is one bf16 pair of token r broadcast to all lanes,
// so vdpbf16ps adds two exact bf16 products per lane in fp32 (round to nearest even).
// A register block is 8 page tokens x 32 query rows (16 accumulators).
//
// Precision. Operands are the same bf16 parts as in amx_maxsim.c (maxsim_convert.h).

#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "maxsim_convert.h"

#define BLOCK_TOKENS 32  // page tokens converted at a time
#define REG_TOKENS 8     // page tokens per register block

static inline __m512bh broadcast_pair(const uint16_t *p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return (__m512bh)_mm512_set1_epi32(v);
}

// One register block: maxima of REG_TOKENS page tokens (the first n valid) against 32 query
// rows (b0: rows 0-15, b1: rows 16-31) folded into m[0], m[1].
static inline void block_max(const uint16_t *a, int kp, const uint16_t *b0, const uint16_t *b1,
                             int n, __m512 *m) {
    __m512 c0[REG_TOKENS], c1[REG_TOKENS];
    for (int i = 0; i < REG_TOKENS; i++) {
        c0[i] = _mm512_setzero_ps();
        c1[i] = _mm512_setzero_ps();
    }
    for (int d = 0; d < kp; d += 2) {
        const __m512bh q0 = (__m512bh)_mm512_loadu_si512(b0 + (int64_t)d * 16);
        const __m512bh q1 = (__m512bh)_mm512_loadu_si512(b1 + (int64_t)d * 16);
        for (int i = 0; i < REG_TOKENS; i++) {
            const __m512bh x = broadcast_pair(a + (int64_t)i * kp + d);
            c0[i] = _mm512_dpbf16_ps(c0[i], x, q0);
            c1[i] = _mm512_dpbf16_ps(c1[i], x, q1);
        }
    }
    for (int i = 0; i < REG_TOKENS; i++) {
        if (i < n) {
            m[0] = _mm512_max_ps(m[0], c0[i]);
            m[1] = _mm512_max_ps(m[1], c1[i]);
        }
    }
}

// fp32 products: one page token's value broadcast, 16 query rows per FMA.
static inline void block_max_f32(const float *a, int dim, const float *b0, const float *b1, int n,
                                 __m512 *m) {
    __m512 c0[REG_TOKENS], c1[REG_TOKENS];
    for (int i = 0; i < REG_TOKENS; i++) {
        c0[i] = _mm512_setzero_ps();
        c1[i] = _mm512_setzero_ps();
    }
    for (int d = 0; d < dim; d++) {
        const __m512 q0 = _mm512_loadu_ps(b0 + (int64_t)d * 16);
        const __m512 q1 = _mm512_loadu_ps(b1 + (int64_t)d * 16);
        for (int i = 0; i < REG_TOKENS; i++) {
            const __m512 x = _mm512_set1_ps(a[(int64_t)i * dim + d]);
            c0[i] = _mm512_fmadd_ps(x, q0, c0[i]);
            c1[i] = _mm512_fmadd_ps(x, q1, c1[i]);
        }
    }
    for (int i = 0; i < REG_TOKENS; i++) {
        if (i < n) {
            m[0] = _mm512_max_ps(m[0], c0[i]);
            m[1] = _mm512_max_ps(m[1], c1[i]);
        }
    }
}

static inline void row_to_f32(const void *src, int dtype, int dim, float *dst) {
    for (int d = 0; d < dim; d += 16) {
        const __mmask16 m = lanes(d, dim);
        _mm512_mask_storeu_ps(dst + d, m, load_f32(src, dtype, d, m));
    }
}

// Both entry points: pages in blocks of BLOCK_TOKENS tokens, converted into the scratch
// rows (bf16 parts, or fp32 when f32), then REG_TOKENS tokens x 32 query rows at a time.
// f32 is a constant at each call, so the compiler builds one specialised loop for each.
static inline int pages_max(const void *tokens, int dtype, int64_t row_stride, int dim, const int64_t *starts,
                            const int64_t *lens, int64_t n_pages, const void *q, int n_qtiles, int n_parts,
                            const int *picks, float *page_max, const int f32) {
    const int esize = dtype == 0 ? 4 : 2;
    const int dpad = (dim + 31) / 32 * 32;
    const int width = f32 ? dim : n_parts * dpad;  // scratch row: fp32 values or bf16 parts
    const size_t vsize = f32 ? sizeof(float) : sizeof(uint16_t);
    const int64_t qtile = (int64_t)width * 16;  // values per query tile
    const int rows_out = n_qtiles * 16;
    char *a = aligned_alloc(64, ((size_t)BLOCK_TOKENS * width * vsize + 63) / 64 * 64);
    if (!a) return -1;
    for (int64_t p = 0; p < n_pages; p++) {
        const char *base = (const char *)tokens + starts[p] * row_stride * esize;
        const int64_t len = lens[p];
        float *acc = page_max + p * rows_out;
        for (int i = 0; i < rows_out; i += 16) _mm512_storeu_ps(acc + i, _mm512_set1_ps(-INFINITY));
        for (int64_t t = 0; t < len; t += BLOCK_TOKENS) {
            const int rows = len - t < BLOCK_TOKENS ? (int)(len - t) : BLOCK_TOKENS;
            const int padded = (rows + REG_TOKENS - 1) / REG_TOKENS * REG_TOKENS;
            for (int r = 0; r < rows; r++) {
                const void *src = base + (t + r) * row_stride * esize;
                char *dst = a + (size_t)r * width * vsize;
                if (f32) {
                    row_to_f32(src, dtype, dim, (float *)dst);
                } else {
                    convert_row(src, dtype, dim, dpad, picks, n_parts, (uint16_t *)dst);
                }
            }
            if (rows < padded) memset(a + (size_t)rows * width * vsize, 0, (size_t)(padded - rows) * width * vsize);
            for (int j = 0; j < n_qtiles; j += 2) {
                __m512 m[2] = {_mm512_loadu_ps(acc + j * 16), _mm512_loadu_ps(acc + j * 16 + 16)};
                for (int r = 0; r < rows; r += REG_TOKENS) {
                    const char *ar = a + (size_t)r * width * vsize;
                    if (f32) {
                        const float *b0 = (const float *)q + j * qtile;
                        block_max_f32((const float *)ar, dim, b0, b0 + qtile, rows - r, m);
                    } else {
                        const uint16_t *b0 = (const uint16_t *)q + j * qtile;
                        block_max((const uint16_t *)ar, width, b0, b0 + qtile, rows - r, m);
                    }
                }
                _mm512_storeu_ps(acc + j * 16, m[0]);
                _mm512_storeu_ps(acc + j * 16 + 16, m[1]);
            }
        }
    }
    free(a);
    return 0;
}

// Arguments and result as maxsim_amx_pages (amx_maxsim.c): page_max[p][n] = max over the
// tokens of page p of <query row n, token>; qv is [n_qtiles][kc][16][16][2] bf16 with
// n_qtiles even. Returns 0, or -1 when scratch memory cannot be allocated.
int maxsim_avx512_pages(const void *tokens, int dtype, int64_t row_stride, int dim, const int64_t *starts,
                        const int64_t *lens, int64_t n_pages, const uint16_t *qv, int n_qtiles,
                        int n_parts, const int *picks, float *page_max) {
    return pages_max(tokens, dtype, row_stride, dim, starts, lens, n_pages, qv, n_qtiles, n_parts, picks,
                     page_max, 0);
}

// The same maxima with fp32 products: exact fp32 FMAs, as an fp32 GEMM would compute them.
// Why a second entry: vdpbf16ps does two bf16 products per lane per instruction, an FMA
// one fp32 product, so a page operand split into 3-4 bf16 parts (fp32 or fp16 pages, see
// SplitPlan) costs more than plain fp32 here; only AMX makes the split pay. qf is fp32
// [n_qtiles][dim][16] (n_qtiles even).
int maxsim_avx512_f32_pages(const void *tokens, int dtype, int64_t row_stride, int dim, const int64_t *starts,
                            const int64_t *lens, int64_t n_pages, const float *qf, int n_qtiles,
                            float *page_max) {
    return pages_max(tokens, dtype, row_stride, dim, starts, lens, n_pages, qf, n_qtiles, 1, NULL, page_max, 1);
}
