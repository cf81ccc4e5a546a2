// Fused MaxSim on Intel AMX: bf16 tile GEMM with fp32 accumulation, max taken straight
// from the fp32 tiles, nothing larger than a few tiles ever written.
//
// Built on first use by trident_kernels/amx.py (cc -O3 -mamx-tile -mamx-bf16 ...) and
// called through ctypes, which releases the GIL, so several Python threads can each run
// it on their own pages.
//
// Layout. A 16 x 16 fp32 tile C holds <page token r, query row n>. Its A operand is 16
// page tokens x 32 bf16 (a row-major slice of the page, converted on the fly into a
// small scratch buffer); its B operand is 32 bf16 x 16 query rows in the VNNI layout
// AMX wants (packed once per call in Python). The max over a page's tokens is then a
// vertical max over the tile's rows: one 16-lane vmaxps per token, one lane per query row.
//
// Precision. Every operand is written as bf16 parts laid side by side along the
// reduction axis ("picks": part 0 = hi = bf16(x), part 1 = lo = bf16(x - hi)), so one
// tile GEMM of depth n_parts * dim sums the part products in fp32. A bf16 x bf16 product
// is exact in fp32. Pages are fp32, fp16 or bf16; conversion happens per 32-token block.

#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "maxsim_convert.h"

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

typedef struct {
    uint8_t palette_id;
    uint8_t start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

// Ask the kernel for the AMX tile state (needed once per process; 0 on success).
int maxsim_amx_init(void) {
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0 ? 0 : -1;
}

static void configure_tiles(void) {
    tile_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette_id = 1;
    for (int i = 0; i < 8; i++) {
        cfg.colsb[i] = 64;
        cfg.rows[i] = 16;
    }
    _tile_loadconfig(&cfg);
}

// page_max[p][n] = max over the tokens of page p of <query row n, token>, for
// n < n_qtiles * 16 (n_qtiles even; padded query rows are zeros). Pages are
// tokens[starts[p] : starts[p] + lens[p]] (lens > 0), rows row_stride elements apart.
// qv: VNNI bf16 [n_qtiles][kc][16][16][2], kc = n_parts * dpad / 32. Returns 0, or -1
// when scratch memory cannot be allocated.
int maxsim_amx_pages(const void *tokens, int dtype, int64_t row_stride, int dim, const int64_t *starts,
                     const int64_t *lens, int64_t n_pages, const uint16_t *qv, int n_qtiles,
                     int n_parts, const int *picks, float *page_max) {
    const int esize = dtype == 0 ? 4 : 2;
    const int dpad = (dim + 31) / 32 * 32;
    const int kp = n_parts * dpad;  // bf16 per scratch row
    const int kc = kp / 32;         // 32-deep tile steps
    const int rows_out = n_qtiles * 16;
    uint16_t *a = aligned_alloc(64, (size_t)32 * kp * sizeof(uint16_t));
    float *c = aligned_alloc(64, 4 * 256 * sizeof(float));
    if (!a || !c) {
        free(a);
        free(c);
        return -1;
    }
    configure_tiles();
    for (int64_t p = 0; p < n_pages; p++) {
        const char *base = (const char *)tokens + starts[p] * row_stride * esize;
        const int64_t len = lens[p];
        float *acc = page_max + p * rows_out;
        for (int i = 0; i < rows_out; i += 16) _mm512_storeu_ps(acc + i, _mm512_set1_ps(-INFINITY));
        for (int64_t t = 0; t < len; t += 32) {
            const int rows = len - t < 32 ? (int)(len - t) : 32;
            for (int r = 0; r < rows; r++) {
                convert_row(base + (t + r) * row_stride * esize, dtype, dim, dpad, picks, n_parts,
                            a + (int64_t)r * kp);
            }
            if (rows < 32) memset(a + (int64_t)rows * kp, 0, (size_t)(32 - rows) * kp * sizeof(uint16_t));
            const int v0 = rows < 16 ? rows : 16;
            const int v1 = rows - v0;
            for (int j = 0; j < n_qtiles; j += 2) {
                const uint16_t *b0 = qv + (int64_t)j * kc * 512;
                const uint16_t *b1 = b0 + (int64_t)kc * 512;
                _tile_zero(0);
                _tile_zero(1);
                if (v1) {
                    _tile_zero(2);
                    _tile_zero(3);
                }
                for (int k = 0; k < kc; k++) {
                    _tile_loadd(4, a + k * 32, kp * 2);
                    _tile_loadd(6, b0 + k * 512, 64);
                    _tile_loadd(7, b1 + k * 512, 64);
                    _tile_dpbf16ps(0, 4, 6);
                    _tile_dpbf16ps(1, 4, 7);
                    if (v1) {
                        _tile_loadd(5, a + 16 * kp + k * 32, kp * 2);
                        _tile_dpbf16ps(2, 5, 6);
                        _tile_dpbf16ps(3, 5, 7);
                    }
                }
                _tile_stored(0, c, 64);
                _tile_stored(1, c + 256, 64);
                __m512 m0 = _mm512_loadu_ps(acc + j * 16);
                __m512 m1 = _mm512_loadu_ps(acc + j * 16 + 16);
                for (int r = 0; r < v0; r++) {
                    m0 = _mm512_max_ps(m0, _mm512_load_ps(c + r * 16));
                    m1 = _mm512_max_ps(m1, _mm512_load_ps(c + 256 + r * 16));
                }
                if (v1) {
                    _tile_stored(2, c + 512, 64);
                    _tile_stored(3, c + 768, 64);
                    for (int r = 0; r < v1; r++) {
                        m0 = _mm512_max_ps(m0, _mm512_load_ps(c + 512 + r * 16));
                        m1 = _mm512_max_ps(m1, _mm512_load_ps(c + 768 + r * 16));
                    }
                }
                _mm512_storeu_ps(acc + j * 16, m0);
                _mm512_storeu_ps(acc + j * 16 + 16, m1);
            }
        }
    }
    _tile_release();
    free(a);
    free(c);
    return 0;
}
