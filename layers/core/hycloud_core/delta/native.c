/* The delta engine's per-offset and per-op loops, compiled (built by native_build.py with cffi).
 *
 * numpy computes a weak sum at every offset from prefix sums, whose cumsum carries each element on
 * the one before (about 2.5 ns per byte on a 2.3 GHz core), and filters the sums through a chain
 * of array calls that each pass over the window. Here both are single passes in registers.
 * Results are bit-identical to rolling.window_sums and SigIndex.candidates' numpy path.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define XXH_INLINE_ALL
#include "xxhash.h" /* xxHash 0.8.4 (vendor/), the whole-file check of wire.result_hash */

#define LANES 4
#define REMIX 0x85EBCA6Bu

static uint32_t direct_sum(const uint8_t *x, size_t width, uint32_t base)
{
    uint32_t w = 0, p = 1;
    for (size_t j = 0; j < width; j++) {
        w += (uint32_t)x[j] * p;
        p *= base;
    }
    return w;
}

/* Weak sums of the windows [k, k + width) for k < n; data holds n + width - 1 bytes.
 * Rolling one window to the next is a multiply on the previous sum (about 5 cycles of latency),
 * so the offsets are split into LANES stretches that roll side by side. */
void hc_window_sums(const uint8_t *data, size_t n, size_t width, uint32_t base, uint32_t base_inv,
                    uint32_t *out)
{
    if (n == 0)
        return;
    uint32_t top = 1; /* base ** (width - 1) */
    for (size_t j = 1; j < width; j++)
        top *= base;
    size_t lanes = n >= LANES * 4 * width ? LANES : 1;
    size_t seg = n / lanes;
    uint32_t w[LANES];
    for (size_t l = 0; l < lanes; l++) {
        w[l] = direct_sum(data + l * seg, width, base);
        out[l * seg] = w[l];
    }
    for (size_t t = 1; t < seg; t++) {
        for (size_t l = 0; l < lanes; l++) {
            size_t k = l * seg + t;
            w[l] = (w[l] - data[k - 1]) * base_inv + (uint32_t)data[k - 1 + width] * top;
            out[k] = w[l];
        }
    }
    uint32_t last = w[lanes - 1]; /* the last lane also takes the remainder */
    for (size_t k = lanes * seg; k < n; k++) {
        last = (last - data[k - 1]) * base_inv + (uint32_t)data[k - 1 + width] * top;
        out[k] = last;
    }
}

static inline int bit_set(const uint8_t *bits, uint32_t i)
{
    return (bits[i >> 3] >> (i & 7)) & 1;
}

/* Offsets k < n whose weak sum is one of `sorted` (n_sorted values, ascending), with the slot of
 * its first occurrence there. Two bitmaps on the top bits (the second after a multiplicative
 * remix; bit i in byte i / 8, as numpy.packbits(bitorder="little") packs them) reject almost
 * every other offset before the binary search. Returns how many were found. */
size_t hc_candidates(const uint32_t *weaks, size_t n, const uint8_t *table, const uint8_t *table2,
                     unsigned shift, const uint32_t *sorted, size_t n_sorted, int64_t *idx_out,
                     int64_t *slot_out)
{
    size_t m = 0;
    for (size_t k = 0; k < n; k++) {
        uint32_t w = weaks[k];
        if (!bit_set(table, w >> shift) || !bit_set(table2, (uint32_t)(w * REMIX) >> shift))
            continue;
        size_t lo = 0, hi = n_sorted;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (sorted[mid] < w)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < n_sorted && sorted[lo] == w) {
            idx_out[m] = (int64_t)k;
            slot_out[m] = (int64_t)lo;
            m++;
        }
    }
    return m;
}

/* How many of the old blocks j, j+1, ... follow back to back from offset `at` by weak sum:
 * weaks[at + t * step] == old_weak[j + t] for t < the result (at most max_run). */
size_t hc_weak_run(const uint32_t *weaks, size_t n_weaks, size_t at, size_t step,
                   const uint32_t *old_weak, size_t j, size_t max_run)
{
    size_t t = 0;
    while (t < max_run && at < n_weaks && weaks[at] == old_weak[j + t]) {
        t++;
        at += step;
    }
    return t;
}

/* The patcher's per-op work (patcher.py): a delta of small blocks over scattered edits is tens of
 * thousands of ops per file, and a Python slice, write and hash update per op cost more than
 * librsync's whole patch. Op k's bytes are [lo[k], hi[k]) of `old` when kinds[k] == copy_op, else
 * of `lit`; the caller checked every range. */

#define IOV_BATCH 1024 /* Linux's IOV_MAX */

static const uint8_t *op_bytes(const uint8_t *kinds, const int64_t *lo, size_t k, uint8_t copy_op,
                               const uint8_t *old, const uint8_t *lit)
{
    return (kinds[k] == copy_op ? old : lit) + lo[k];
}

/* Writes the ops, in order, to fd: a writev per IOV_BATCH ops, short writes resumed.
 * Returns the bytes written, or -errno. */
int64_t hc_write_ops(int fd, const uint8_t *kinds, const int64_t *lo, const int64_t *hi, size_t n,
                     uint8_t copy_op, const uint8_t *old, const uint8_t *lit)
{
    struct iovec iov[IOV_BATCH];
    int64_t total = 0;
    size_t k = 0;
    while (k < n) {
        int m = 0;
        for (; k < n && m < IOV_BATCH; k++) {
            iov[m].iov_base = (void *)op_bytes(kinds, lo, k, copy_op, old, lit);
            iov[m].iov_len = (size_t)(hi[k] - lo[k]);
            m++;
        }
        struct iovec *v = iov;
        while (m > 0) {
            ssize_t w = writev(fd, v, m);
            if (w < 0) {
                if (errno == EINTR)
                    continue;
                return -(int64_t)errno;
            }
            if (w == 0) /* nothing taken and no error: retrying would spin for ever */
                return -(int64_t)EIO;
            total += w;
            while (m > 0 && (size_t)w >= v->iov_len) {
                w -= (ssize_t)v->iov_len;
                v++;
                m--;
            }
            if (m > 0) {
                v->iov_base = (uint8_t *)v->iov_base + w;
                v->iov_len -= (size_t)w;
            }
        }
    }
    return total;
}

/* XXH3-128 over the ops, in order: a state made by hc_hash_new, read by hc_hash_digest
 * (canonical big-endian, as xxhash.xxh3_128().digest()), freed by hc_hash_free. */
void *hc_hash_new(void)
{
    XXH3_state_t *state = XXH3_createState();
    if (state)
        XXH3_128bits_reset(state);
    return state;
}

void hc_hash_ops(void *state, const uint8_t *kinds, const int64_t *lo, const int64_t *hi, size_t n,
                 uint8_t copy_op, const uint8_t *old, const uint8_t *lit)
{
    for (size_t k = 0; k < n; k++)
        XXH3_128bits_update((XXH3_state_t *)state, op_bytes(kinds, lo, k, copy_op, old, lit),
                            (size_t)(hi[k] - lo[k]));
}

void hc_hash_digest(void *state, uint8_t *out)
{
    XXH128_canonicalFromHash((XXH128_canonical_t *)out, XXH3_128bits_digest((XXH3_state_t *)state));
}

void hc_hash_free(void *state)
{
    XXH3_freeState((XXH3_state_t *)state);
}
