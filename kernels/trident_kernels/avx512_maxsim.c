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
// Precision. maxsim_avx512_pages takes the same bf16 parts as amx_maxsim.c
// (maxsim_convert.h). maxsim_avx512_f32_pages returns the maxima of fp32 products (what an
// fp32 GEMM computes) from a one-part bf16 screen plus fp32 re-checks of the near-maximal
// tokens; see its comment.

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

// One register block's bf16 dots: REG_TOKENS page tokens against 32 query rows (b0: rows
// 0-15 into c0, b1: rows 16-31 into c1), fp32 accumulation.
static inline void block_dots(const uint16_t *a, int kp, const uint16_t *b0, const uint16_t *b1, __m512 *c0,
                              __m512 *c1) {
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
}

// One register block: maxima of its first n valid tokens folded into m[0], m[1].
static inline void block_max(const uint16_t *a, int kp, const uint16_t *b0, const uint16_t *b1,
                             int n, __m512 *m) {
    __m512 c0[REG_TOKENS], c1[REG_TOKENS];
    block_dots(a, kp, b0, b1, c0, c1);
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

// fp32 dot of one query row (row-major) with one converted page token: the exact re-check.
static inline float dot_f32(const float *q, const float *p, int dim) {
    __m512 s = _mm512_setzero_ps();
    for (int d = 0; d < dim; d += 16) {
        const __mmask16 m = lanes(d, dim);
        s = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + d), _mm512_maskz_loadu_ps(m, p + d), s);
    }
    return _mm512_reduce_add_ps(s);
}

// Above this many (token, row) candidates in one register block, re-checking them one dot
// at a time costs more than the whole block in fp32 FMAs (a dot ~40 cycles, the block
// ~2,000), e.g. on pages of near-identical tokens.
#define MAX_SCALAR_CHECKS 48

// The screened fp32 block (see pages_max): bf16 products rank the tokens, and every
// (token, row) whose bf16 dot is within thr of the running bf16 max gets its fp32 dot,
// folded into the exact maxima e. m: running bf16 maxima; valid: real query rows.
static inline void block_screen(const uint16_t *a, int kp, const uint16_t *b0, const uint16_t *b1,
                                const float *af, int dim, const float *qf0, const float *qrows, int n,
                                __m512 *m, __m512 *e, const __m512 *thr, const __mmask16 *valid) {
    __m512 c0[REG_TOKENS], c1[REG_TOKENS];
    block_dots(a, kp, b0, b1, c0, c1);
    __m512 m0 = m[0], m1 = m[1];
    for (int i = 0; i < n; i++) {
        m0 = _mm512_max_ps(m0, c0[i]);
        m1 = _mm512_max_ps(m1, c1[i]);
    }
    const __m512 lim0 = _mm512_sub_ps(m0, thr[0]), lim1 = _mm512_sub_ps(m1, thr[1]);
    __mmask16 k0[REG_TOKENS], k1[REG_TOKENS];
    int count = 0;
    for (int i = 0; i < n; i++) {
        k0[i] = _mm512_mask_cmp_ps_mask(valid[0], c0[i], lim0, _CMP_GE_OQ);
        k1[i] = _mm512_mask_cmp_ps_mask(valid[1], c1[i], lim1, _CMP_GE_OQ);
        count += __builtin_popcount(k0[i]) + __builtin_popcount(k1[i]);
    }
    m[0] = m0;
    m[1] = m1;
    if (count == 0) return;
    if (count > MAX_SCALAR_CHECKS) {
        __m512 x[2] = {e[0], e[1]};
        block_max_f32(af, dim, qf0, qf0 + (int64_t)dim * 16, n, x);
        e[0] = x[0];
        e[1] = x[1];
        return;
    }
    float ev[32];
    _mm512_storeu_ps(ev, e[0]);
    _mm512_storeu_ps(ev + 16, e[1]);
    for (int i = 0; i < n; i++) {
        for (int half = 0; half < 2; half++) {
            for (unsigned k = half ? k1[i] : k0[i]; k; k &= k - 1) {
                const int r = __builtin_ctz(k) + 16 * half;
                const float v = dot_f32(qrows + (int64_t)r * dim, af + (int64_t)i * dim, dim);
                if (v > ev[r]) ev[r] = v;
            }
        }
    }
    e[0] = _mm512_loadu_ps(ev);
    e[1] = _mm512_loadu_ps(ev + 16);
}

// Largest L2 norm of a page's tokens (the screen's error bound scales with it).
static float page_norm_max(const char *base, int64_t len, int64_t stride_bytes, int dtype, int dim) {
    float best = 0.0f;
    for (int64_t t = 0; t < len; t++) {
        const void *src = base + t * stride_bytes;
        __m512 s = _mm512_setzero_ps();
        for (int d = 0; d < dim; d += 16) {
            const __m512 x = load_f32(src, dtype, d, lanes(d, dim));
            s = _mm512_fmadd_ps(x, x, s);
        }
        const float n2 = _mm512_reduce_add_ps(s);
        if (n2 > best) best = n2;
    }
    return sqrtf(best);
}

static inline void row_to_f32(const void *src, int dtype, int dim, float *dst) {
    for (int d = 0; d < dim; d += 16) {
        const __mmask16 m = lanes(d, dim);
        _mm512_mask_storeu_ps(dst + d, m, load_f32(src, dtype, d, m));
    }
}

// Arguments and result as maxsim_amx_pages (amx_maxsim.c): page_max[p][n] = max over the
// tokens of page p of <query row n, token>; qv is [n_qtiles][kc][16][16][2] bf16 with
// n_qtiles even. Pages in blocks of BLOCK_TOKENS tokens converted into bf16 parts, then
// REG_TOKENS tokens x 32 query rows at a time. Returns 0, or -1 when scratch memory cannot
// be allocated.
int maxsim_avx512_pages(const void *tokens, int dtype, int64_t row_stride, int dim, const int64_t *starts,
                        const int64_t *lens, int64_t n_pages, const uint16_t *qv, int n_qtiles,
                        int n_parts, const int *picks, float *page_max) {
    const int esize = dtype == 0 ? 4 : 2;
    const int dpad = (dim + 31) / 32 * 32;
    const int width = n_parts * dpad;
    const int64_t qtile = (int64_t)width * 16;  // values per query tile
    const int rows_out = n_qtiles * 16;
    uint16_t *a = aligned_alloc(64, ((size_t)BLOCK_TOKENS * width * sizeof(uint16_t) + 63) / 64 * 64);
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
                convert_row(base + (t + r) * row_stride * esize, dtype, dim, dpad, picks, n_parts,
                            a + (size_t)r * width);
            }
            if (rows < padded) memset(a + (size_t)rows * width, 0, (size_t)(padded - rows) * width * sizeof(uint16_t));
            for (int j = 0; j < n_qtiles; j += 2) {
                __m512 m[2] = {_mm512_loadu_ps(acc + j * 16), _mm512_loadu_ps(acc + j * 16 + 16)};
                const uint16_t *b0 = qv + j * qtile;
                for (int r = 0; r < rows; r += REG_TOKENS) {
                    block_max(a + (size_t)r * width, width, b0, b0 + qtile, rows - r, m);
                }
                _mm512_storeu_ps(acc + j * 16, m[0]);
                _mm512_storeu_ps(acc + j * 16 + 16, m[1]);
            }
        }
    }
    free(a);
    return 0;
}

// The same maxima with fp32 products, as an fp32 GEMM computes them, at about the cost of
// the bf16 entry. Why not plain fp32 FMAs for every token: vdpbf16ps does two products per
// lane where an FMA does one, and only the few tokens near a row's max need fp32.
//
// Screen: every token is first scored with bf16(q) . bf16(p) (fp32 accumulation). That is
// within eps = (2^-8 + 2^-15) |q| |p| of the fp32 dot (each bf16 rounding is <= 2^-9
// relative; the rest is both sums' fp32 rounding over <= 2^8 steps). The token with the
// largest fp32 dot therefore scores within 2 eps of the largest bf16 score of the page, so
// re-checking in fp32 every (token, row) that comes within thr = 2 eps of the running bf16
// max (the running max only grows) re-checks that token, and the fp32 maximum over the
// re-checked ones is the page's fp32 maximum. |p| is bounded by the page's largest token
// norm (a pre-pass); qcoef[n] = (2^-7 + 2^-12) |q_n| carries the rest, with slack.
//
// qv: bf16 tiles of the queries (one part, as maxsim_avx512_pages); qf: fp32 [n_qtiles][dim][16];
// qrows: fp32 [n_qtiles * 16][dim]; rows >= n_rows are padding and never re-checked.
int maxsim_avx512_f32_pages(const void *tokens, int dtype, int64_t row_stride, int dim, const int64_t *starts,
                            const int64_t *lens, int64_t n_pages, const uint16_t *qv, const float *qf,
                            const float *qrows, const float *qcoef, int n_qtiles, int n_rows,
                            float *page_max) {
    const int esize = dtype == 0 ? 4 : 2;
    const int64_t stride_bytes = row_stride * esize;
    const int dpad = (dim + 31) / 32 * 32;
    const int64_t qtile = (int64_t)dpad * 16, qtile_f = (int64_t)dim * 16;
    const int rows_out = n_qtiles * 16;
    const int picks[1] = {0};
    uint16_t *a = aligned_alloc(64, ((size_t)BLOCK_TOKENS * dpad * sizeof(uint16_t) + 63) / 64 * 64);
    float *af = aligned_alloc(64, ((size_t)BLOCK_TOKENS * dim * sizeof(float) + 63) / 64 * 64);
    float *approx = aligned_alloc(64, ((size_t)rows_out * sizeof(float) + 63) / 64 * 64);
    if (!a || !af || !approx) {
        free(a);
        free(af);
        free(approx);
        return -1;
    }
    for (int64_t p = 0; p < n_pages; p++) {
        const char *base = (const char *)tokens + starts[p] * stride_bytes;
        const int64_t len = lens[p];
        float *exact = page_max + p * rows_out;
        const __m512 pmax = _mm512_set1_ps(page_norm_max(base, len, stride_bytes, dtype, dim));
        for (int i = 0; i < rows_out; i += 16) {
            _mm512_storeu_ps(exact + i, _mm512_set1_ps(-INFINITY));
            _mm512_storeu_ps(approx + i, _mm512_set1_ps(-INFINITY));
        }
        for (int64_t t = 0; t < len; t += BLOCK_TOKENS) {
            const int rows = len - t < BLOCK_TOKENS ? (int)(len - t) : BLOCK_TOKENS;
            const int padded = (rows + REG_TOKENS - 1) / REG_TOKENS * REG_TOKENS;
            for (int r = 0; r < rows; r++) {
                const void *src = base + (t + r) * stride_bytes;
                convert_row(src, dtype, dim, dpad, picks, 1, a + (size_t)r * dpad);
                row_to_f32(src, dtype, dim, af + (size_t)r * dim);
            }
            if (rows < padded) {
                memset(a + (size_t)rows * dpad, 0, (size_t)(padded - rows) * dpad * sizeof(uint16_t));
                memset(af + (size_t)rows * dim, 0, (size_t)(padded - rows) * dim * sizeof(float));
            }
            for (int j = 0; j < n_qtiles; j += 2) {
                __m512 m[2] = {_mm512_loadu_ps(approx + j * 16), _mm512_loadu_ps(approx + j * 16 + 16)};
                __m512 e[2] = {_mm512_loadu_ps(exact + j * 16), _mm512_loadu_ps(exact + j * 16 + 16)};
                const __m512 thr[2] = {_mm512_mul_ps(_mm512_loadu_ps(qcoef + j * 16), pmax),
                                       _mm512_mul_ps(_mm512_loadu_ps(qcoef + j * 16 + 16), pmax)};
                const __mmask16 valid[2] = {lanes(j * 16, n_rows), lanes(j * 16 + 16, n_rows)};
                const uint16_t *b0 = qv + j * qtile;
                for (int r = 0; r < rows; r += REG_TOKENS) {
                    block_screen(a + (size_t)r * dpad, dpad, b0, b0 + qtile, af + (size_t)r * dim, dim,
                                 qf + j * qtile_f, qrows + (int64_t)j * 16 * dim, rows - r < REG_TOKENS ? rows - r : REG_TOKENS,
                                 m, e, thr, valid);
                }
                _mm512_storeu_ps(approx + j * 16, m[0]);
                _mm512_storeu_ps(approx + j * 16 + 16, m[1]);
                _mm512_storeu_ps(exact + j * 16, e[0]);
                _mm512_storeu_ps(exact + j * 16 + 16, e[1]);
            }
        }
        // A row never re-checked (NaN inputs; padding rows) keeps its bf16 maximum.
        for (int i = 0; i < rows_out; i += 16) {
            const __m512 x = _mm512_loadu_ps(exact + i);
            const __mmask16 unset = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-INFINITY), _CMP_EQ_OQ);
            _mm512_storeu_ps(exact + i, _mm512_mask_blend_ps(unset, x, _mm512_loadu_ps(approx + i)));
        }
    }
    free(a);
    free(af);
    free(approx);
    return 0;
}
