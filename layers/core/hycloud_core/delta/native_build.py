"""cffi builder of `_native`, the delta engine's compiled loops (native.c).

Run by setuptools at install (`cffi_modules` in setup.py) and by infra/build_layer.py for the Lambda
layer. Where no compiler is at hand the package still works: `kernels` falls back to numpy.
"""

from __future__ import annotations

from pathlib import Path

from cffi import FFI

HERE = Path(__file__).resolve().parent

CDEF = """
void hc_window_sums(const uint8_t *data, size_t n, size_t width, uint32_t base, uint32_t base_inv,
                    uint32_t *out);
size_t hc_candidates(const uint32_t *weaks, size_t n, const uint8_t *table, const uint8_t *table2,
                     unsigned shift, const uint32_t *sorted, size_t n_sorted, int64_t *idx_out,
                     int64_t *slot_out);
size_t hc_weak_run(const uint32_t *weaks, size_t n_weaks, size_t at, size_t step,
                   const uint32_t *old_weak, size_t j, size_t max_run);
int64_t hc_write_ops(int fd, const uint8_t *kinds, const int64_t *lo, const int64_t *hi, size_t n,
                     uint8_t copy_op, const uint8_t *old, const uint8_t *lit);
void *hc_hash_new(void);
void hc_hash_ops(void *state, const uint8_t *kinds, const int64_t *lo, const int64_t *hi, size_t n,
                 uint8_t copy_op, const uint8_t *old, const uint8_t *lit);
void hc_hash_digest(void *state, uint8_t *out);
void hc_hash_free(void *state);
"""

ffibuilder = FFI()
ffibuilder.cdef(CDEF)
ffibuilder.set_source(
    "hycloud_core.delta._native",
    (HERE / "native.c").read_text(),
    include_dirs=[str(HERE / "vendor")],  # xxhash.h, xxHash's own header (BSD-2-Clause)
    extra_compile_args=["-O3"],  # portable: no -march, the Lambda layer is built on any x86_64 host
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
