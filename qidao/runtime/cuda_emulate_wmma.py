"""``nvcuda::wmma`` for the CUDA emulator (``EmulatedDevice`` in ``cuda.py``): the
tensor-core API that tensorized tiles use, on the CPU.

On a GPU a fragment is spread over the 32 lanes of a warp, each lane holding a few
of its elements in an order CUDA does not specify; the lanes load, multiply and
store it together. Here every lane (a ``std::thread``) holds the whole matrix in
its fragment, row by row, and does the whole operation itself:
``load_matrix_sync`` reads all of it, ``mma_sync`` computes all of ``D = A x B +
C``, ``store_matrix_sync`` writes all of it (the lanes write the same values,
since they compute from the same inputs). As the ``_sync`` says, a warp's lanes
meet there: a store waits at the warp's barrier (the emulation header's, which
``__shfl_xor_sync`` uses) until every lane has made the loads before it, so a
tile that loads C, multiplies into it and stores it back reads C once, as the
warp does on a GPU, not after another lane's store. Code that uses fragments only through
the API (and ``x[t]`` elementwise, as ``qd_to_tf32`` does) gets the same values
as on the GPU, up to the order of the additions inside ``mma_sync``: the
emulator adds the k products one after the other in f32.

Precision, as the tensor cores compute: ``__float_to_tf32`` rounds an f32 to 10
mantissa bits, to nearest with ties away from zero (PTX ``cvt.rna.tf32.f32``),
leaving the low 13 bits 0; a half is ``_Float16`` (``__float2half_rn`` rounds to
nearest even). The products of TF32 or half inputs are exact in f32 and are
accumulated in f32.

The header is added to the emulated program only when the program uses
``wmma::`` (:func:`wmma_emulation`); the generated code includes ``<mma.h>`` only
under ``__CUDACC__`` (nvcc), so g++ sees this one instead. ``__trap()`` (the
alignment check of ``__shared__`` staging arrays) aborts.
"""

from __future__ import annotations

WMMA_EMULATION = r"""// qidao: nvcuda::wmma on the CPU, every lane the whole fragment
// (qidao/runtime/cuda_emulate_wmma.py).
#include <stdlib.h>
#include <type_traits>
typedef _Float16 __half;
static inline __half __float2half_rn(float v) { return (__half)v; }
static inline void __trap() { abort(); }
// WMMA's matrices start 32 bytes aligned: the __shared__ staging arrays here too.
#undef __align__
#define __align__(n) __attribute__((aligned((n) < 32 ? 32 : (n))))
namespace nvcuda {
namespace wmma {
struct row_major;
struct col_major;
struct matrix_a;
struct matrix_b;
struct accumulator;
namespace precision { struct tf32; }
enum layout_t { mem_row_major, mem_col_major };
template <typename T> struct qd_storage { typedef T type; };
template <> struct qd_storage<precision::tf32> { typedef float type; };
template <typename Use, int M, int N, int K> struct qd_shape;
template <int M, int N, int K> struct qd_shape<matrix_a, M, N, K> {
  enum { rows = M, cols = K };
};
template <int M, int N, int K> struct qd_shape<matrix_b, M, N, K> {
  enum { rows = K, cols = N };
};
template <int M, int N, int K> struct qd_shape<accumulator, M, N, K> {
  enum { rows = M, cols = N };
};
// The whole matrix, row by row, in every lane.
template <typename Use, int M, int N, int K, typename T, typename Layout = void>
struct fragment {
  typedef typename qd_storage<T>::type element_type;
  enum {
    rows = qd_shape<Use, M, N, K>::rows,
    cols = qd_shape<Use, M, N, K>::cols,
    num_elements = rows * cols
  };
  element_type x[num_elements];
};
static inline float __float_to_tf32(float v) {
  unsigned int bits;
  memcpy(&bits, &v, 4);
  if ((bits & 0x7f800000u) != 0x7f800000u) {  // finite: round, ties away
    bits = (bits + 0x1000u) & 0xffffe000u;
  }
  float out;
  memcpy(&out, &bits, 4);
  return out;
}
template <typename Use, int M, int N, int K, typename T, typename Layout, typename S>
static inline void load_matrix_sync(fragment<Use, M, N, K, T, Layout>& f, const S* p,
                                    unsigned ldm) {
  typedef fragment<Use, M, N, K, T, Layout> F;
  const bool rows_contiguous = std::is_same<Layout, row_major>::value;
  for (int r = 0; r < F::rows; ++r)
    for (int c = 0; c < F::cols; ++c)
      f.x[r * F::cols + c] = rows_contiguous ? p[r * ldm + c] : p[c * ldm + r];
}
template <int M, int N, int K, typename T>
static inline void load_matrix_sync(fragment<accumulator, M, N, K, T>& f, const T* p,
                                    unsigned ldm, layout_t layout) {
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c)
      f.x[r * N + c] = layout == mem_row_major ? p[r * ldm + c] : p[c * ldm + r];
}
// Before a store the lanes of the warp meet at the warp's barrier (the emulation
// header's, which its shuffles use): every lane has loaded what it overwrites.
static inline void qd_wmma_meet() { qd_warps[qd_linear_tid() / 32].bar->arrive_and_wait(); }
template <int M, int N, int K, typename T>
static inline void store_matrix_sync(T* p, const fragment<accumulator, M, N, K, T>& f,
                                     unsigned ldm, layout_t layout) {
  qd_wmma_meet();
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c)
      (layout == mem_row_major ? p[r * ldm + c] : p[c * ldm + r]) = f.x[r * N + c];
}
template <typename Use, int M, int N, int K, typename T, typename Layout>
static inline void fill_fragment(fragment<Use, M, N, K, T, Layout>& f,
                                 typename qd_storage<T>::type v) {
  for (int t = 0; t < f.num_elements; ++t) f.x[t] = v;
}
template <int M, int N, int K, typename TA, typename LA, typename TB, typename LB>
static inline void mma_sync(fragment<accumulator, M, N, K, float>& d,
                            const fragment<matrix_a, M, N, K, TA, LA>& a,
                            const fragment<matrix_b, M, N, K, TB, LB>& b,
                            const fragment<accumulator, M, N, K, float>& c) {
  float out[M * N];
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      float sum = c.x[m * N + n];
      for (int k = 0; k < K; ++k)
        sum += (float)a.x[m * K + k] * (float)b.x[k * N + n];
      out[m * N + n] = sum;
    }
  for (int t = 0; t < M * N; ++t) d.x[t] = out[t];
}
}  // namespace wmma
}  // namespace nvcuda
"""


def wmma_emulation(source: str) -> str:
    """The emulation of ``nvcuda::wmma`` when ``source`` uses it, else nothing."""
    return WMMA_EMULATION if "wmma::" in source else ""


__all__ = ["WMMA_EMULATION", "wmma_emulation"]
