/* fp8lab's C kernels: the element loops of a scaled FP8 cast and a table decode, one pass each.
 *
 * Built by fp8lab/codec/ckernels.py on first use (gcc, -O3, no fast-math, no FMA contraction) and
 * called through ctypes on contiguous CPU tensors. Every formula here is the one of the codec's
 * bit-level algorithm (fp8lab/codec/core.py) for 8-bit signed formats with subnormals, written for
 * one float32 at a time; its parameters come from the format's dataclass. The tests compare it with
 * torch's cast on every finite float32 (tests/test_ckernels.py).
 */
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int32_t mantissa_bits;   /* m */
    int32_t bias;            /* the format's exponent bias */
    uint32_t max_bits;       /* float32 bits of the format's max */
    uint32_t normal_bits;    /* float32 bits of the smallest normal, 2^(1 - bias) */
    int32_t unsigned_zero;   /* fnuz: a value that rounds to zero gets code 0, never the sign bit alone */
    int32_t special;         /* where NaN and inf are (decode): 0 ieee (top exponent), 1 fn (all-ones code), 2 fnuz
                                (the negative-zero code) */
} enc_params;

/* The arguments of a scaled cast (fp8lab_scaled_encode) and of a fused band cast (fp8lab_band_encode), as one
   struct: ckernels.py fills the same layout (_CastArgs, a ctypes.Structure), so no call passes a long list of
   positional numbers that could be swapped silently. */
typedef struct {
    const float *x;          /* the contiguous float32 matrix (rows, cols) */
    int64_t rows, cols;
    const float *scales;     /* scaled_encode: one float32 scale per block (rows / brows, cols / bcols) */
    int64_t brows, bcols;    /* the block */
    int32_t reciprocal;      /* multiply by 1 / scale (power-of-two scales: the same operation) */
    float fmt_max;           /* the format's max */
    const enc_params *p;     /* the format's encode parameters */
    uint8_t *codes;          /* out: codes (rows, cols), or (cols, rows) with transpose_out */
    float *values;           /* out (or null): each code's float32 value, laid out as codes */
    int32_t dequant;         /* values times their scale */
    int32_t transpose_out;   /* write codes and values transposed */
    int32_t rule;            /* band_encode: 0 MX rceil, 1 power-of-two float scales */
    float inv_max;           /* band_encode rule 0: float32(1 / max) */
    double margin_scale;     /* band_encode rule 1: 2^margin */
    float *amax_out;         /* band_encode out: per block amax */
    float *scale_out;        /* band_encode out: per block scale */
    uint8_t *scode_out;      /* band_encode out (rule 0): per block E8M0 code */
    int64_t *flush_out;      /* out (or null): [nonzero x, nonzero x whose code is zero] */
} cast_args;

/* The layout of cast_args, for ckernels.py to check its ctypes mirror against: out[0] its size, out[1 + i] the
   offset of field i. Returns the number of fields. */
int64_t fp8lab_cast_args_layout(int64_t *out) {
    const size_t offsets[] = {
        offsetof(cast_args, x), offsetof(cast_args, rows), offsetof(cast_args, cols), offsetof(cast_args, scales),
        offsetof(cast_args, brows), offsetof(cast_args, bcols),
        offsetof(cast_args, reciprocal), offsetof(cast_args, fmt_max), offsetof(cast_args, p),
        offsetof(cast_args, codes), offsetof(cast_args, values), offsetof(cast_args, dequant),
        offsetof(cast_args, transpose_out), offsetof(cast_args, rule), offsetof(cast_args, inv_max),
        offsetof(cast_args, margin_scale), offsetof(cast_args, amax_out), offsetof(cast_args, scale_out),
        offsetof(cast_args, scode_out), offsetof(cast_args, flush_out)};
    const int64_t n = (int64_t)(sizeof offsets / sizeof offsets[0]);
    out[0] = (int64_t)sizeof(cast_args);
    for (int64_t i = 0; i < n; i++) out[1 + i] = (int64_t)offsets[i];
    return n;
}

static inline uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* TWIN RULE: the Python statement is fp8lab/codec/core.py (encode_bits, saturate=True); both stay, and
   tests/test_ckernels.py pins them equal on every finite float32 of E4M3 and E5M2 and on sweeps of every format
   this kernel serves.
   The saturating, round-to-nearest-even code of a finite float32 (|t| beyond max gives max), and in *value the
   float32 value of that code. |t| is first clamped to max (max is a code's value, so this is the saturation, and
   below max it changes nothing). One rounding then serves normals and subnormals alike: the quantum of |t|'s
   binade (the subnormal step below the smallest normal) is q = 2^(E - m), and adding M = 2^23 q to |t| rounds |t|
   to a multiple of q, ties to even, in float32's own adder (|t| < 2^(E + 1) keeps the sum in M's binade, whose
   ulp is q). The sum's low bits count the quanta, the code is that count plus the binade's offset, and
   (sum - M) is the rounded value, exactly. fnuz (a compile-time constant at each call): a value that rounds to
   zero gets +0, since the negative-zero code is NaN. Branch-free, so that the loops vectorize. */
static inline __attribute__((always_inline)) uint8_t encode_one(float t, uint32_t shift, uint32_t magic,
                                                                  uint32_t max_bits, uint32_t normal_bits,
                                                                  const uint32_t fnuz, float *value) {
    uint32_t u = f2u(t);
    uint32_t a = u & 0x7FFFFFFFu;
    a = a < max_bits ? a : max_bits;               /* saturate */
    uint32_t e = a & 0x7F800000u;
    e = e < normal_bits ? normal_bits : e;        /* the binade of the quantum: at least the smallest normal's */
    uint32_t mb = e + magic;                       /* M = 2^23 q: the exponent moved up by 23 - m */
    float big = u2f(mb);
    float sum = u2f(a) + big;                      /* |t| rounded to a multiple of q (ties to even), plus M */
    uint32_t mag = (f2u(sum) - mb) + ((e - normal_bits) >> shift);  /* quanta, plus the binade's code offset */
    uint32_t sign = u & 0x80000000u;
    if (fnuz) sign = mag != 0u ? sign : 0u;
    *value = u2f(f2u(sum - big) | sign);           /* the rounded |t|, exact (both in M's binade), signed */
    return (uint8_t)(mag | (sign >> 24));
}

/* One row of the scaled cast: cr[j] = encode(xr[j] / scale) (times 1 / scale where the scales are powers of two:
   for column blocks the band's reciprocals inv, when the caller has them), vr[j] its value (times the scale with
   dequant) where vr is not null. Inlined at each call with fnuz constant. */
static inline __attribute__((always_inline)) void encode_row(
        const float *restrict xr, int64_t cols, const float *restrict sr, const float *restrict inv, int64_t bcols,
        int32_t reciprocal,
        uint8_t *restrict cr, float *restrict vr, int32_t dequant, uint32_t shift, uint32_t magic,
        uint32_t max_bits, uint32_t normal_bits, const uint32_t fnuz) {
    float v;
    if (bcols == 1) {  /* column blocks: a scale per element of the row, the row walked once; with power-of-two
                          scales, times the band's reciprocals (inv, computed once per band) */
        if (inv) {
            for (int64_t j = 0; j < cols; j++) {
                cr[j] = encode_one(xr[j] * inv[j], shift, magic, max_bits, normal_bits, fnuz, &v);
                if (vr) vr[j] = dequant ? v * sr[j] : v;
            }
        } else {
            for (int64_t j = 0; j < cols; j++) {
                cr[j] = encode_one(xr[j] / sr[j], shift, magic, max_bits, normal_bits, fnuz, &v);
                if (vr) vr[j] = dequant ? v * sr[j] : v;
            }
        }
        return;
    }
    for (int64_t jb = 0; jb < cols / bcols; jb++) {
        const float s = sr[jb];
        const float inv = 1.0f / s;
        const int64_t j0 = jb * bcols, j1 = j0 + bcols;
        if (reciprocal) {  /* power-of-two scales: x * 2^-k is x / 2^k, both rounded once */
            for (int64_t j = j0; j < j1; j++) {
                cr[j] = encode_one(xr[j] * inv, shift, magic, max_bits, normal_bits, fnuz, &v);
                if (vr) vr[j] = dequant ? v * s : v;
            }
        } else {
            for (int64_t j = j0; j < j1; j++) {
                cr[j] = encode_one(xr[j] / s, shift, magic, max_bits, normal_bits, fnuz, &v);
                if (vr) vr[j] = dequant ? v * s : v;
            }
        }
    }
}

/* codes[i, j] = encode(x[i, j] / scales[i / brows, j / bcols]) for a contiguous (rows, cols) matrix, saturating
   (what clamping x / s to +-max first, as torch's clamp_ before its cast, gives). With values (not NULL), each code's value
   is written there as well (the rounded x / s: what decoding the code gives), or with dequant that value times
   its scale (one float32 multiply: what scaling the decoded operand in place gives). With transpose_out the
   outputs are written transposed, contiguous (cols, rows): each row is computed into a scratch row, then
   scattered down its column (consecutive rows fill the same cache lines). Returns 0, or -1 if the scratch
   rows could not be allocated. */
#define TILE 16  /* rows computed before a transposed write: 16 float32 fill a 64-byte cache line */

/* Fold one row's |x| (compared as bits, ordered like the magnitudes) into its blocks' running maxima orow:
   one per column for column blocks (bcols == 1), else one per bcols elements. Returns 1 if the row holds an
   inf or NaN. */
static inline uint32_t amax_row(const uint32_t *restrict xr, int64_t cols, int64_t bcols, uint32_t *restrict orow) {
    uint32_t bad = 0;
    if (bcols == 1) {  /* column blocks: one running max per column, the row walked once */
        for (int64_t j = 0; j < cols; j++) {
            uint32_t a = xr[j] & 0x7FFFFFFFu;
            orow[j] = a > orow[j] ? a : orow[j];
            bad |= a >= 0x7F800000u ? 1u : 0u;
        }
    } else {
        for (int64_t jb = 0; jb < cols / bcols; jb++) {
            uint32_t m = orow[jb];
            for (int64_t j = jb * bcols; j < (jb + 1) * bcols; j++) {
                uint32_t a = xr[j] & 0x7FFFFFFFu;
                m = a > m ? a : m;
                bad |= a >= 0x7F800000u ? 1u : 0u;
            }
            orow[jb] = m;
        }
    }
    return bad;
}

/* Rows row0 .. row0 + nrows of the scaled cast (x and scales start at those rows); outputs laid out for a
   (total_rows, cols) matrix, or transposed (cols, total_rows) through scratch rows (TILE of them, written
   down the output's columns together). */
static int64_t encode_rows(const float *restrict x, int64_t nrows, int64_t cols, const float *restrict scales,
                           int64_t brows, int64_t bcols, int32_t reciprocal, const enc_params *restrict p,
                           uint8_t *restrict codes, float *restrict values, int32_t dequant, int32_t transpose_out,
                           int64_t total_rows, int64_t row0, uint8_t *restrict scratch_c, float *restrict scratch_v,
                           uint32_t *restrict amax, int64_t *restrict flush) {
    const uint32_t shift = 23u - (uint32_t)p->mantissa_bits;
    const uint32_t magic = shift << 23;  /* M = 2^(23 - m) times a binade's first value */
    const uint32_t max_bits = p->max_bits, normal_bits = p->normal_bits;
    const uint8_t zero_mask = p->unsigned_zero ? 0xFFu : 0x7Fu;  /* a code is zero where (code & mask) == 0 */
    const int64_t scols = cols / bcols;
    int64_t nonfinite = 0;
    /* power-of-two column scales: a reciprocal per column and band, so the row loop multiplies (x * 2^-k is x / 2^k);
       without the scratch row (malloc failed) it divides, with the same result */
    float *inv = reciprocal && bcols == 1 ? (float *)malloc((size_t)cols * sizeof(float)) : 0;
    for (int64_t i = 0; i < nrows; i++) {
        const float *restrict xr = x + i * cols;
        const int64_t t = i % TILE;  /* the row's place in the scratch tile */
        float *restrict vr = transpose_out ? (values ? scratch_v + t * cols : 0) : (values ? values + (row0 + i) * cols : 0);
        const float *restrict sr = scales + (i / brows) * scols;
        uint8_t *restrict cr = transpose_out ? scratch_c + t * cols : codes + (row0 + i) * cols;
        if (amax)  /* the row's amax into its blocks' (it stays in cache for the cast below) */
            nonfinite += amax_row((const uint32_t *)xr, cols, bcols, amax + (i / brows) * scols);
        if (inv && i % brows == 0)
            for (int64_t j = 0; j < cols; j++) inv[j] = 1.0f / sr[j];
        if (p->unsigned_zero)
            encode_row(xr, cols, sr, inv, bcols, reciprocal, cr, vr, dequant, shift, magic, max_bits, normal_bits, 1u);
        else
            encode_row(xr, cols, sr, inv, bcols, reciprocal, cr, vr, dequant, shift, magic, max_bits, normal_bits, 0u);
        if (flush) {  /* the row's flush counts, from x and the codes just written (both still in cache) */
            const uint32_t *restrict xb = (const uint32_t *)xr;
            uint32_t nz_sum = 0u, fl_sum = 0u;
            for (int64_t j = 0; j < cols; j++) {
                uint32_t nz = (xb[j] & 0x7FFFFFFFu) != 0u;
                nz_sum += nz;
                fl_sum += nz & (uint32_t)((cr[j] & zero_mask) == 0);
            }
            flush[0] += nz_sum;
            flush[1] += fl_sum;
        }
        if (transpose_out && (t == TILE - 1 || i == nrows - 1)) {  /* the tile's rows, written down the columns */
            const int64_t first = i - t, n = t + 1;
            for (int64_t j = 0; j < cols; j++) {
                uint8_t *restrict co = codes + j * total_rows + row0 + first;
                for (int64_t r = 0; r < n; r++) co[r] = scratch_c[r * cols + j];
                if (values) {
                    float *restrict vo = values + j * total_rows + row0 + first;
                    for (int64_t r = 0; r < n; r++) vo[r] = scratch_v[r * cols + j];
                }
            }
        }
    }
    free(inv);
    return nonfinite;
}

/* The scaled cast (encode_rows) of a whole matrix. With amax_out, each block's amax is measured in the same walk
   (for a scale that does not depend on it: delayed scaling), and with flush_out the flush counts of the codes.
   Returns 0, 1 if x holds an inf or NaN (with amax_out: the outputs are then meaningless), or -1 if the scratch
   rows could not be allocated. */
int32_t fp8lab_scaled_encode(const cast_args *a) {
    const float *restrict x = a->x;
    const int64_t rows = a->rows, cols = a->cols, brows = a->brows, bcols = a->bcols;
    const float *restrict scales = a->scales;
    const int32_t reciprocal = a->reciprocal, dequant = a->dequant, transpose_out = a->transpose_out;
    const enc_params *restrict p = a->p;
    uint8_t *restrict codes = a->codes;
    float *restrict values = a->values;
    uint8_t *scratch_c = 0;
    float *scratch_v = 0;
    if (transpose_out) {
        scratch_c = (uint8_t *)malloc((size_t)(TILE * cols));
        scratch_v = values ? (float *)malloc((size_t)(TILE * cols) * sizeof(float)) : 0;
        if (!scratch_c || (values && !scratch_v)) { free(scratch_c); free(scratch_v); return -1; }
    }
    uint32_t *amax = (uint32_t *)a->amax_out;
    if (amax)
        for (int64_t b = 0; b < (rows / brows) * (cols / bcols); b++) amax[b] = 0u;
    if (a->flush_out) a->flush_out[0] = a->flush_out[1] = 0;
    const int64_t nonfinite = encode_rows(x, rows, cols, scales, brows, bcols, reciprocal, p, codes, values, dequant,
                                          transpose_out, rows, 0, scratch_c, scratch_v, amax, a->flush_out);
    free(scratch_c);
    free(scratch_v);
    return nonfinite > 0 ? 1 : 0;
}

/* amax[i / brows, j / bcols] = max |x[i, j]| over each block of a contiguous (rows, cols) matrix, as float32
   (+0.0 for a block of zeros). Returns how many rows hold an inf or NaN (their blocks' amax is then
   meaningless; 0 means every element is finite). |x| is compared as its bits, ordered like the magnitudes. */
int64_t fp8lab_block_amax(const float *restrict x, int64_t rows, int64_t cols, int64_t brows, int64_t bcols,
                          float *restrict amax) {
    const int64_t scols = cols / bcols;
    const int64_t nblocks = (rows / brows) * scols;
    uint32_t *restrict out = (uint32_t *)amax;
    int64_t nonfinite = 0;
    for (int64_t b = 0; b < nblocks; b++) out[b] = 0u;
    for (int64_t i = 0; i < rows; i++)
        nonfinite += amax_row((const uint32_t *)(x + i * cols), cols, bcols, out + (i / brows) * scols);
    return nonfinite;
}

/* values[i] = table[codes[i]]: a 256-entry table of float32 values (the codec's own, built from the bits). */
void fp8lab_table_decode(const uint8_t *restrict codes, int64_t n, const float *restrict table,
                         float *restrict values) {
    for (int64_t i = 0; i < n; i++) values[i] = table[codes[i]];
}

/* values[i] = the float32 value of codes[i], computed from the code's bits (the inverse of encode_one): a normal
   code's exponent rebiased and its mantissa moved up, a subnormal's mantissa times the subnormal step (exact), the
   sign bit moved up; NaN codes give the quiet NaN 0x7FC00000 with the code's sign and ieee's inf codes +-inf, as
   the codec's table holds them. TWIN RULE: the codec's decode (fp8lab/codec/core.py, decode_codes) is the other
   statement; tests/test_ckernels.py compares the two on every code of every format this kernel serves. Branch-free
   (selects), so that the loop vectorizes: a table gather is several times slower here. */
void fp8lab_arith_decode(const uint8_t *restrict codes, int64_t n, const enc_params *restrict p,
                         float *restrict values) {
    const uint32_t m = (uint32_t)p->mantissa_bits, shift = 23u - m;
    const uint32_t fmask = (1u << m) - 1u, top = 0x7Fu >> m;  /* the all-ones exponent field */
    const uint32_t rebias = (uint32_t)(127 - p->bias);
    const float sub_step = u2f(p->normal_bits - (m << 23));  /* 2^(1 - bias - m): a normal float32 */
    const int32_t special = p->special;
    for (int64_t i = 0; i < n; i++) {
        const uint32_t c = codes[i];
        const uint32_t sign = (c & 0x80u) << 24, mag = c & 0x7Fu;
        const uint32_t e = mag >> m, f = mag & fmask;
        const uint32_t normal = ((e + rebias) << 23) | (f << shift);
        const uint32_t sub = f2u((float)(int32_t)f * sub_step);
        uint32_t v = (e == 0u ? sub : normal) | sign;
        const uint32_t is_nan = special == 0 ? (e == top && f != 0u) : special == 1 ? (mag == 0x7Fu) : (c == 0x80u);
        const uint32_t is_inf = special == 0 && e == top && f == 0u;
        v = is_inf ? (0x7F800000u | sign) : v;
        v = is_nan ? (0x7FC00000u | sign) : v;
        values[i] = u2f(v);
    }
}

/* The loop of both flush counts: counts[0] = how many of the n float32 x are nonzero, counts[1] = how many of those
   have ZERO(i) true (their cast is zero). Counted in chunks of 32-bit sums so that the loop vectorizes. */
#define FLUSH_COUNT(ZERO) do { \
        const uint32_t *restrict xb = (const uint32_t *)x; \
        int64_t nonzero = 0, flushed = 0; \
        for (int64_t i0 = 0; i0 < n; i0 += 65536) { \
            const int64_t i1 = n - i0 < 65536 ? n : i0 + 65536; \
            uint32_t nz_sum = 0u, fl_sum = 0u; \
            for (int64_t i = i0; i < i1; i++) { \
                uint32_t nz = (xb[i] & 0x7FFFFFFFu) != 0u; \
                nz_sum += nz; \
                fl_sum += nz & (uint32_t)(ZERO); \
            } \
            nonzero += nz_sum; \
            flushed += fl_sum; \
        } \
        counts[0] = nonzero; \
        counts[1] = flushed; \
    } while (0)

/* The flush counts of a cast to codes: a code is zero where (code & zero_mask) == 0 (0x7F where +0 and -0 are both
   codes, 0xFF where 0 is the only one), a mask test rather than a table lookup, so that the loop vectorizes. */
void fp8lab_flush_count(const float *restrict x, const uint8_t *restrict codes, int64_t n, uint32_t zero_mask,
                        int64_t *restrict counts) {
    const uint8_t mask = (uint8_t)zero_mask;
    FLUSH_COUNT((codes[i] & mask) == 0);
}

/* The flush counts of a cast to float values v (a 16-bit rounding as float32): +0 and -0 are zero. */
void fp8lab_flush_count_values(const float *restrict x, const float *restrict v, int64_t n, int64_t *restrict counts) {
    const uint32_t *restrict vb = (const uint32_t *)v;
    FLUSH_COUNT((vb[i] & 0x7FFFFFFFu) == 0u);
}

/* The epilogue of a GEMM whose scales are constant along K: out[i, j] = (out[i, j] * sa[i]) * sb[j], plus bias[j]
   where bias is not null, in place, for a contiguous (rows, cols) float32 matrix, in one pass: the float32 products
   and sum torch's out.mul_(sa).mul_(sb).add_(bias) forms, in the same order. sa_step and sb_step are the scales'
   strides (0: one scale for every row or column). */
void fp8lab_scale_epilogue(float *restrict out, int64_t rows, int64_t cols, const float *restrict sa, int64_t sa_step,
                           const float *restrict sb, int64_t sb_step, const float *restrict bias) {
    for (int64_t i = 0; i < rows; i++) {
        float *restrict o = out + i * cols;
        const float a = sa[i * sa_step];
        if (sb_step == 0) {
            const float b = sb[0];
            if (bias)
                for (int64_t j = 0; j < cols; j++) o[j] = (o[j] * a) * b + bias[j];
            else
                for (int64_t j = 0; j < cols; j++) o[j] = (o[j] * a) * b;
        } else {
            if (bias)
                for (int64_t j = 0; j < cols; j++) o[j] = (o[j] * a) * sb[j * sb_step] + bias[j];
            else
                for (int64_t j = 0; j < cols; j++) o[j] = (o[j] * a) * sb[j * sb_step];
        }
    }
}

/* out = the transpose of a contiguous (rows, cols) float32 matrix, contiguous (cols, rows): copied in 32x32 tiles
   so that reads and writes both stay within a few cache lines at a time. */
void fp8lab_transpose_f32(const float *restrict x, int64_t rows, int64_t cols, float *restrict out) {
    const int64_t T = 32;
    for (int64_t i0 = 0; i0 < rows; i0 += T) {
        const int64_t i1 = i0 + T < rows ? i0 + T : rows;
        for (int64_t j0 = 0; j0 < cols; j0 += T) {
            const int64_t j1 = j0 + T < cols ? j0 + T : cols;
            for (int64_t j = j0; j < j1; j++)
                for (int64_t i = i0; i < i1; i++) out[j * rows + i] = x[i * cols + j];
        }
    }
}

/* A band-local scaled cast fused: for each band of brows rows (blocks of (brows, bcols): rows, columns, 1xN tiles,
   NxN blocks, or the whole matrix as one band), each block's amax, its scale by the rule, then the band's codes of
   x / scale (clamped to +-max in a block whose amax / scale exceeds max in float64) and values (or dequantized
   values) as fp8lab_scaled_encode writes them, while the band is in cache (a band of a few rows) or in one call. Rules (each the Python one, fp8lab/scaling):
     0  OCP MX rceil (mx_scale_exponents, MXScaling.compute_scales): k from the float32 product amax * inv_max
        rounded up to a power of two (a subnormal product: 2^-126 above 2^-127, else 2^-127; a zero block
        2^-127), k clamped to [-127, 127]; scale 2^k, scale code k + 127;
     1  power-of-two float scales (float_scales(pow2=True)): amax * margin_scale / max in float64 rounded up to
        a power of two (frexp), its exponent clamped to [-127, 127]; a zero block gets 1.0;
     2  float32 scales (float_scales(pow2=False)): amax * margin_scale / max in float64, kept at or above the
        smallest normal float32 and rounded up to a float32; a zero block gets 1.0; x is divided by the scale.
   Outputs per block (shape (rows / brows, cols / bcols)): amax, scale, and for rule 0 the scale code; with
   flush_out, the cast's flush counts (as fp8lab_scaled_encode counts them). Returns
   the number of saturated blocks, or -1 if x holds an inf or NaN, -2 if the scratch rows could not be
   allocated, -3 if a rule-1 scale would pass 2^127 or a rule-2 scale float32's max (nothing is meaningful then:
   the caller takes the general path, which says why). */
int64_t fp8lab_band_encode(const cast_args *a) {
    const float *restrict x = a->x;
    const int64_t rows = a->rows, cols = a->cols, brows = a->brows, bcols = a->bcols;
    const int32_t rule = a->rule, dequant = a->dequant, transpose_out = a->transpose_out;
    const float inv_max = a->inv_max, fmt_max = a->fmt_max;
    const double margin_scale = a->margin_scale;
    const enc_params *restrict p = a->p;
    uint8_t *restrict codes = a->codes;
    float *restrict values = a->values;
    float *restrict amax_out = a->amax_out;
    float *restrict scale_out = a->scale_out;
    uint8_t *restrict scode_out = a->scode_out;
    const int64_t scols = cols / bcols;
    const int64_t band_blocks = bcols == 1 ? cols : scols;  /* blocks per band */
    int64_t n_sat = 0;
    if (a->flush_out) a->flush_out[0] = a->flush_out[1] = 0;
    uint8_t *scratch_c = transpose_out ? (uint8_t *)malloc((size_t)(TILE * cols)) : 0;
    float *scratch_v = transpose_out && values ? (float *)malloc((size_t)(TILE * cols) * sizeof(float)) : 0;
    if (transpose_out && (!scratch_c || (values && !scratch_v))) { free(scratch_c); free(scratch_v); return -2; }
    for (int64_t i0 = 0; i0 < rows; i0 += brows) {
        const int64_t band = i0 / brows;
        uint32_t *restrict am = (uint32_t *)(amax_out + band * band_blocks);
        uint32_t bad = 0;
        int64_t band_sat = 0;
        /* 1. the band's block amaxes */
        for (int64_t b = 0; b < band_blocks; b++) am[b] = 0u;
        for (int64_t i = i0; i < i0 + brows; i++) bad |= amax_row((const uint32_t *)(x + i * cols), cols, bcols, am);
        if (bad) { free(scratch_c); free(scratch_v); return -1; }
        /* 2. each block's scale (and code), whether it saturates */
        for (int64_t b = 0; b < band_blocks; b++) {
            float a32 = u2f(am[b]);
            float s;
            if (rule == 0) {  /* TWIN RULE: fp8lab/scaling/mx.py mx_scale_exponents(..., "rceil"); pinned equal by
                                 tests/test_scaling_fast.py (fused vs general QTensor, field by field) */
                int32_t k;
                if (!(a32 > 0.0f)) {
                    k = -127;
                } else {
                    float descale = a32 * inv_max;  /* the float32 product, as on the GPU */
                    uint32_t bits = f2u(descale);
                    k = (int32_t)((bits + 0x7FFFFFu) >> 23) - 127;  /* a nonzero mantissa carries into the exponent */
                    if (bits < 0x00800000u) k = bits > 0x00400000u ? -126 : -127;
                }
                k = k < -127 ? -127 : (k > 127 ? 127 : k);
                s = k == -127 ? u2f(0x00400000u) : u2f((uint32_t)(k + 127) << 23);
                scode_out[band * band_blocks + b] = (uint8_t)(k + 127);
            } else if (rule == 2) {  /* TWIN RULE: fp8lab/scaling/scales.py float_scales(pow2=False); pinned as above */
                if (a32 > 0.0f) {
                    double sd = (double)a32 * margin_scale / (double)fmt_max;
                    if (sd > (double)FLT_MAX) { free(scratch_c); free(scratch_v); return -3; }
                    sd = sd < (double)FLT_MIN ? (double)FLT_MIN : sd;  /* at least the smallest normal float32 */
                    s = (float)sd;                                     /* rounded to nearest, then up if below */
                    if ((double)s < sd) s = nextafterf(s, INFINITY);
                } else {
                    s = 1.0f;
                }
            } else if (a32 > 0.0f) {  /* TWIN RULE: fp8lab/scaling/scales.py float_scales(pow2=True); pinned as above */
                double sd = (double)a32 * margin_scale / (double)fmt_max;
                if (sd > 0x1p127) { free(scratch_c); free(scratch_v); return -3; }
                int e;
                double m = frexp(sd, &e);  /* sd = m 2^e, 0.5 <= m < 1: the power of two at or above is 2^e, or 2^(e-1) */
                int k = m == 0.5 ? e - 1 : e;
                k = k < -127 ? -127 : (k > 127 ? 127 : k);
                s = (float)ldexp(1.0, k);
            } else {
                s = 1.0f;
            }
            scale_out[band * band_blocks + b] = s;
            /* TWIN RULE: fp8lab/scaling/base.py saturating_blocks; pinned as above */
            int32_t saturates = ((double)a32 / (double)s) > (double)fmt_max;
            band_sat += saturates;
        }
        n_sat += band_sat;
        /* 3. the band's codes and values: the scaled cast with these scales (saturating where a block does) */
        encode_rows(x + i0 * cols, brows, cols, scale_out + band * band_blocks, brows, bcols, rule != 2, p, codes,
                    values, dequant, transpose_out, rows, i0, scratch_c, scratch_v, 0, a->flush_out);  /* rule 2: x / s */
    }
    free(scratch_c);
    free(scratch_v);
    return n_sat;
}
