// Matrix-matrix products for the layers applied to a block of many rows (b samples x tokens):
// C (+)= A B, with A m x k and B k x n given by how to read them (packers, below), and C by
// where each of its rows is. A register-blocked micro-kernel computes a kMR x kNR tile of C
// from packed panels of A (kMR rows) and B (kNR columns), both laid out in the order the kernel
// reads them; blocks of A (kMC x kKC) stay in L2 and a panel of B (kKC x kNR) in L1, so every
// value of B is read once from memory per block of kMC rows of A, not once per row.
//
// Each element of C is one chain of products added in order of k, from the block's first k
// (kKC at a time: C = C + that block's chain). The chain multiplies and adds with FMA where the
// build targets it (BURTORCH_FMA), else with a multiply and an add: registers of any width give
// the same bits for the same kind of arithmetic, but an FMA build differs from one without (one
// rounding per term instead of two), well within 1e-6 relative in FP32.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

#include "burtorch/config.hpp"
#include "burtorch/kernels.hpp"

#if defined(__FMA__) && BURTORCH_AVX
#define BURTORCH_FMA 1
#else
#define BURTORCH_FMA 0
#endif

namespace burtorch::kernels {

// One vector register of T: its width, loads, stores, and the multiply-add of the GEMM.
template <class T>
struct Register {  // portable: one value per "register"
  using V = T;
  static constexpr std::size_t kWidth = 1;
  static BURTORCH_INLINE V zero() noexcept { return T(0); }
  static BURTORCH_INLINE V load(const T* p) noexcept { return *p; }
  static BURTORCH_INLINE void store(T* p, V v) noexcept { *p = v; }
  static BURTORCH_INLINE V broadcast(const T* p) noexcept { return *p; }
  static BURTORCH_INLINE V add(V a, V b) noexcept { return a + b; }
  static BURTORCH_INLINE V mul(V a, V b) noexcept { return a * b; }
  static BURTORCH_INLINE V mulAdd(V a, V b, V c) noexcept { return add(mul(a, b), c); }
};

#if BURTORCH_AVX512
// 16 floats: where the core has 512-bit FMA units (AMD Zen 5, Intel server cores), twice the
// products per instruction of AVX2; the chains, hence the bits, stay those of any other width.
template <>
struct Register<float> {
  using V = __m512;
  static constexpr std::size_t kWidth = 16;
  static BURTORCH_INLINE V zero() noexcept { return _mm512_setzero_ps(); }
  static BURTORCH_INLINE V load(const float* p) noexcept { return _mm512_loadu_ps(p); }
  static BURTORCH_INLINE void store(float* p, V v) noexcept { _mm512_storeu_ps(p, v); }
  static BURTORCH_INLINE V broadcast(const float* p) noexcept { return _mm512_set1_ps(*p); }
  static BURTORCH_INLINE V add(V a, V b) noexcept { return _mm512_add_ps(a, b); }
  static BURTORCH_INLINE V mul(V a, V b) noexcept { return _mm512_mul_ps(a, b); }
  static BURTORCH_INLINE V mulAdd(V a, V b, V c) noexcept { return _mm512_fmadd_ps(a, b, c); }
};
#elif BURTORCH_AVX
template <>
struct Register<float> {
  using V = __m256;
  static constexpr std::size_t kWidth = 8;
  static BURTORCH_INLINE V zero() noexcept { return _mm256_setzero_ps(); }
  static BURTORCH_INLINE V load(const float* p) noexcept { return _mm256_loadu_ps(p); }
  static BURTORCH_INLINE void store(float* p, V v) noexcept { _mm256_storeu_ps(p, v); }
  static BURTORCH_INLINE V broadcast(const float* p) noexcept { return _mm256_broadcast_ss(p); }
  static BURTORCH_INLINE V add(V a, V b) noexcept { return _mm256_add_ps(a, b); }
  static BURTORCH_INLINE V mul(V a, V b) noexcept { return _mm256_mul_ps(a, b); }
#if BURTORCH_FMA
  static BURTORCH_INLINE V mulAdd(V a, V b, V c) noexcept { return _mm256_fmadd_ps(a, b, c); }
#else
  static BURTORCH_INLINE V mulAdd(V a, V b, V c) noexcept { return add(mul(a, b), c); }
#endif
};
#endif

#if BURTORCH_AVX
template <>
struct Register<double> {
  using V = __m256d;
  static constexpr std::size_t kWidth = 4;
  static BURTORCH_INLINE V zero() noexcept { return _mm256_setzero_pd(); }
  static BURTORCH_INLINE V load(const double* p) noexcept { return _mm256_loadu_pd(p); }
  static BURTORCH_INLINE void store(double* p, V v) noexcept { _mm256_storeu_pd(p, v); }
  static BURTORCH_INLINE V broadcast(const double* p) noexcept { return _mm256_broadcast_sd(p); }
  static BURTORCH_INLINE V add(V a, V b) noexcept { return _mm256_add_pd(a, b); }
  static BURTORCH_INLINE V mul(V a, V b) noexcept { return _mm256_mul_pd(a, b); }
#if BURTORCH_FMA
  static BURTORCH_INLINE V mulAdd(V a, V b, V c) noexcept { return _mm256_fmadd_pd(a, b, c); }
#else
  static BURTORCH_INLINE V mulAdd(V a, V b, V c) noexcept { return add(mul(a, b), c); }
#endif
};
#elif BURTORCH_SSE
template <>
struct Register<float> {
  using V = __m128;
  static constexpr std::size_t kWidth = 4;
  static BURTORCH_INLINE V zero() noexcept { return _mm_setzero_ps(); }
  static BURTORCH_INLINE V load(const float* p) noexcept { return _mm_loadu_ps(p); }
  static BURTORCH_INLINE void store(float* p, V v) noexcept { _mm_storeu_ps(p, v); }
  static BURTORCH_INLINE V broadcast(const float* p) noexcept { return _mm_set1_ps(*p); }
  static BURTORCH_INLINE V add(V a, V b) noexcept { return _mm_add_ps(a, b); }
  static BURTORCH_INLINE V mul(V a, V b) noexcept { return _mm_mul_ps(a, b); }
  static BURTORCH_INLINE V mulAdd(V a, V b, V c) noexcept { return add(mul(a, b), c); }
};

template <>
struct Register<double> {
  using V = __m128d;
  static constexpr std::size_t kWidth = 2;
  static BURTORCH_INLINE V zero() noexcept { return _mm_setzero_pd(); }
  static BURTORCH_INLINE V load(const double* p) noexcept { return _mm_loadu_pd(p); }
  static BURTORCH_INLINE void store(double* p, V v) noexcept { _mm_storeu_pd(p, v); }
  static BURTORCH_INLINE V broadcast(const double* p) noexcept { return _mm_set1_pd(*p); }
  static BURTORCH_INLINE V add(V a, V b) noexcept { return _mm_add_pd(a, b); }
  static BURTORCH_INLINE V mul(V a, V b) noexcept { return _mm_mul_pd(a, b); }
  static BURTORCH_INLINE V mulAdd(V a, V b, V c) noexcept { return add(mul(a, b), c); }
};
#endif

// transposeTile(src, k, out, stride): out[q * stride + r] = src[r][k + q] for r, q < the
// square that the build transposes in registers, kTransposeTile<T> (1 where it has none).
template <class T>
inline constexpr std::size_t kTransposeTile = 1;
template <class T>
void transposeTile(const T* const* src, std::size_t k, T* out, std::size_t stride) noexcept;

#if BURTORCH_AVX
template <>
inline constexpr std::size_t kTransposeTile<float> = 8;
template <>
BURTORCH_INLINE void transposeTile(const float* const* src, std::size_t k, float* out, std::size_t stride) noexcept {
  __m256 r[8], t[8];
  for (std::size_t i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src[i] + k);
  for (std::size_t i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (std::size_t i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (std::size_t i = 0; i < 4; ++i) {
    _mm256_storeu_ps(out + i * stride, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps(out + (i + 4) * stride, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}

template <>
inline constexpr std::size_t kTransposeTile<double> = 4;
template <>
BURTORCH_INLINE void transposeTile(const double* const* src, std::size_t k, double* out, std::size_t stride) noexcept {
  const __m256d r0 = _mm256_loadu_pd(src[0] + k), r1 = _mm256_loadu_pd(src[1] + k);
  const __m256d r2 = _mm256_loadu_pd(src[2] + k), r3 = _mm256_loadu_pd(src[3] + k);
  const __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
  const __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
  _mm256_storeu_pd(out, _mm256_permute2f128_pd(t0, t2, 0x20));
  _mm256_storeu_pd(out + stride, _mm256_permute2f128_pd(t1, t3, 0x20));
  _mm256_storeu_pd(out + 2 * stride, _mm256_permute2f128_pd(t0, t2, 0x31));
  _mm256_storeu_pd(out + 3 * stride, _mm256_permute2f128_pd(t1, t3, 0x31));
}
#elif BURTORCH_SSE
template <>
inline constexpr std::size_t kTransposeTile<float> = 4;
template <>
BURTORCH_INLINE void transposeTile(const float* const* src, std::size_t k, float* out, std::size_t stride) noexcept {
  __m128 r0 = _mm_loadu_ps(src[0] + k), r1 = _mm_loadu_ps(src[1] + k), r2 = _mm_loadu_ps(src[2] + k), r3 = _mm_loadu_ps(src[3] + k);
  _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
  _mm_storeu_ps(out, r0);
  _mm_storeu_ps(out + stride, r1);
  _mm_storeu_ps(out + 2 * stride, r2);
  _mm_storeu_ps(out + 3 * stride, r3);
}
#endif

// The tile of C a micro-kernel call computes, and the blocks the panels are packed in.
template <class T>
struct Gemm {
  static constexpr std::size_t kMR = Register<T>::kWidth == 16 ? 8 : 6;  // rows of A per panel
  static constexpr std::size_t kNR = 2 * Register<T>::kWidth;      // columns of B per panel
  static constexpr std::size_t kKC = 256 * 4 / sizeof(T);           // k per block
  static constexpr std::size_t kMC = 16 * kMR;                      // rows of A per block
  static constexpr std::size_t kNC = 1024 / sizeof(T);              // columns of B per block
};

namespace detail {

// Grows, never shrinks, never initialises: the packed panels of the calls on this thread.
template <class T>
class PanelBuffer {
 public:
  PanelBuffer() = default;
  PanelBuffer(const PanelBuffer&) = delete;
  PanelBuffer& operator=(const PanelBuffer&) = delete;
  ~PanelBuffer() { ::operator delete(data_, std::align_val_t{64}); }

  T* fit(std::size_t n) {
    if (n > size_) {
      ::operator delete(data_, std::align_val_t{64});
      data_ = static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{64}));
      size_ = n;
    }
    return data_;
  }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

// f(0), f(1), ..., f(N - 1), each index a compile-time constant: the micro-kernels' accumulators
// are then named, not indexed, and stay in registers (with a loop over the rows, GCC keeps them
// in a stack array and stores every one of them on every step of k).
template <std::size_t N, class F>
BURTORCH_INLINE void forEachRow(F f) noexcept {
  [&]<std::size_t... I>(std::index_sequence<I...>) BURTORCH_INLINE_LAMBDA { (f(std::integral_constant<std::size_t, I>{}), ...); }(std::make_index_sequence<N>{});
}

// C tile (kMR x kNR) += a (kc x kMR panel) x b (kc x kNR panel); c[i]: row i of the tile, kNR
// values, no two overlapping. With `store`, C = the products instead.
template <class T>
BURTORCH_INLINE void microKernel(std::size_t kc, const T* BURTORCH_RESTRICT a, const T* BURTORCH_RESTRICT b, T* const* c, bool store) noexcept {
  using R = Register<T>;
  constexpr std::size_t mr = Gemm<T>::kMR, w = R::kWidth;
  typename R::V acc[mr][2];
  forEachRow<mr>([&](auto i) BURTORCH_INLINE_LAMBDA { acc[i][0] = acc[i][1] = R::zero(); });
  for (std::size_t k = 0; k < kc; ++k) {
    const typename R::V b0 = R::load(b), b1 = R::load(b + w);
    forEachRow<mr>([&](auto i) BURTORCH_INLINE_LAMBDA {
      const typename R::V ai = R::broadcast(a + i);
      acc[i][0] = R::mulAdd(ai, b0, acc[i][0]);
      acc[i][1] = R::mulAdd(ai, b1, acc[i][1]);
    });
    a += mr;
    b += 2 * w;
  }
  // Every row read before any is written (rows of C at a multiple of 4 KiB from each other
  // would otherwise wait on each other's stores): the caller guarantees the rows are distinct.
  if (!store)
    forEachRow<mr>([&](auto i) BURTORCH_INLINE_LAMBDA {
      acc[i][0] = R::add(R::load(c[i]), acc[i][0]);
      acc[i][1] = R::add(R::load(c[i] + w), acc[i][1]);
    });
  forEachRow<mr>([&](auto i) BURTORCH_INLINE_LAMBDA {
    R::store(c[i], acc[i][0]);
    R::store(c[i] + w, acc[i][1]);
  });
}

// The same over the first half of the panel of b (one register per row of the tile): the last
// panel of a narrow C (24 columns in AVX registers: 16 + 8), without multiplying the panel's
// zeros or going through a buffer. The same chains, so the same bits.
template <class T>
BURTORCH_INLINE void microKernelHalf(std::size_t kc, const T* BURTORCH_RESTRICT a, const T* BURTORCH_RESTRICT b, T* const* c, bool store) noexcept {
  using R = Register<T>;
  constexpr std::size_t mr = Gemm<T>::kMR, w = R::kWidth;
  typename R::V acc[mr];
  forEachRow<mr>([&](auto i) BURTORCH_INLINE_LAMBDA { acc[i] = R::zero(); });
  for (std::size_t k = 0; k < kc; ++k) {
    const typename R::V b0 = R::load(b);
    forEachRow<mr>([&](auto i) BURTORCH_INLINE_LAMBDA { acc[i] = R::mulAdd(R::broadcast(a + i), b0, acc[i]); });
    a += mr;
    b += 2 * w;
  }
  if (!store) forEachRow<mr>([&](auto i) BURTORCH_INLINE_LAMBDA { acc[i] = R::add(R::load(c[i]), acc[i]); });
  forEachRow<mr>([&](auto i) BURTORCH_INLINE_LAMBDA { R::store(c[i], acc[i]); });
}

}  // namespace detail

// How a packer reads a matrix (its Rows: StridedRows below, InputRows in linear.hpp): rows, each
// contiguous in segments. segment(r, k, len) returns the address of element k of row r and sets
// len to how many elements from there are contiguous (at least 1).

// Packs rows [r0, r0 + p) of `rows` (r0 + p may pass `count`: zeros), columns [k0, k0 + kc), as
// out[k * P + i] = rows(r0 + i)[k0 + k]: a panel of A from rows of A, or of B from its columns.
template <std::size_t P, class T, class Rows>
BURTORCH_INLINE void packAcross(const Rows& rows, std::size_t r0, std::size_t count, std::size_t k0, std::size_t kc, T* out) noexcept {
  constexpr std::size_t w = kTransposeTile<T>;
  if constexpr (w > 1 && P % w == 0) {
    // Every row there and contiguous over the block: w x w transposes in registers.
    const T* src[P];
    bool whole = r0 + P <= count;
    for (std::size_t i = 0; i < P && whole; ++i) {
      std::size_t len;
      src[i] = rows.segment(r0 + i, k0, len);
      whole = len >= kc;
    }
    if (whole) {
      // w rows at a time down the whole block: w streams of reads, not P (Zen 5, the MLP's
      // forward product at b = 64, e = 1,024: 180 -> 208 GFLOP/s).
      const std::size_t transposed = kc / w * w;
      for (std::size_t g = 0; g < P; g += w)
        for (std::size_t k = 0; k < transposed; k += w) transposeTile(src + g, k, out + k * P + g, P);
      for (std::size_t k = transposed; k < kc; ++k)
        for (std::size_t i = 0; i < P; ++i) out[k * P + i] = src[i][k];
      return;
    }
  }
  for (std::size_t i = 0; i < P; ++i) {
    if (r0 + i >= count) {
      for (std::size_t k = 0; k < kc; ++k) out[k * P + i] = T(0);
      continue;
    }
    std::size_t k = 0;
    while (k < kc) {
      std::size_t len;
      const T* src = rows.segment(r0 + i, k0 + k, len);
      const std::size_t n = std::min(len, kc - k);
      for (std::size_t q = 0; q < n; ++q) out[(k + q) * P + i] = src[q];
      k += n;
    }
  }
}

// Packs rows [k0, k0 + kc) of `rows`, columns [c0, c0 + P) (past `width`: zeros), as
// out[k * P + j] = rows(k0 + k)[c0 + j]: a panel of B from its rows, or of A from its columns.
template <std::size_t P, class T, class Rows>
BURTORCH_INLINE void packAlong(const Rows& rows, std::size_t k0, std::size_t kc, std::size_t c0, std::size_t width, T* out) noexcept {
  const std::size_t p = std::min(P, width - c0);
  for (std::size_t k = 0; k < kc; ++k) {
    T* dst = out + k * P;
    if (p == P) {  // the usual case: one segment of P values, copied as a fixed-size block
      std::size_t len;
      const T* src = rows.segment(k0 + k, c0, len);
      if (len >= P) {
        std::memcpy(dst, src, P * sizeof(T));  // a fixed size: a few vector moves
        continue;
      }
    }
    std::size_t j = 0;
    while (j < p) {
      std::size_t len;
      const T* src = rows.segment(k0 + k, c0 + j, len);
      const std::size_t n = std::min(len, p - j);
      std::memcpy(dst + j, src, n * sizeof(T));
      j += n;
    }
    for (; j < P; ++j) dst[j] = T(0);
  }
}

// A's packer from its rows (row i of A: rows(i), contiguous along k).
template <class Rows>
struct AFromRows {
  const Rows& rows;
  std::size_t m;
  template <class T>
  void pack(std::size_t i0, std::size_t mc, std::size_t k0, std::size_t kc, T* out) const noexcept {
    constexpr std::size_t mr = Gemm<T>::kMR;
    for (std::size_t i = 0; i < mc; i += mr) packAcross<mr>(rows, i0 + i, m, k0, kc, out + i * kc);
  }
};

// A's packer from its columns (column i of A: rows(k)[i], i.e. A is rows transposed).
template <class Rows>
struct AFromColumns {
  const Rows& rows;
  std::size_t m;
  template <class T>
  void pack(std::size_t i0, std::size_t mc, std::size_t k0, std::size_t kc, T* out) const noexcept {
    constexpr std::size_t mr = Gemm<T>::kMR;
    for (std::size_t i = 0; i < mc; i += mr) packAlong<mr>(rows, k0, kc, i0 + i, m, out + i * kc);
  }
};

// B's packer from its rows (row k of B: rows(k), contiguous along n).
template <class Rows>
struct BFromRows {
  const Rows& rows;
  std::size_t n;
  template <class T>
  void pack(std::size_t k0, std::size_t kc, std::size_t j0, std::size_t nc, T* out, std::size_t stride) const noexcept {
    constexpr std::size_t nr = Gemm<T>::kNR;
    // A few rows at a time: a few sequential reads of B, and a few lines written per panel.
    constexpr std::size_t kRows = 8;
    for (std::size_t k = 0; k < kc; k += kRows)
      for (std::size_t j = 0; j < nc; j += nr) packAlong<nr>(rows, k0 + k, std::min(kRows, kc - k), j0 + j, n, out + j / nr * stride + k * nr);
  }
};

// B's packer from its columns (column j of B: rows(j), contiguous along k: B is rows transposed).
template <class Rows>
struct BFromColumns {
  const Rows& rows;
  std::size_t n;
  template <class T>
  void pack(std::size_t k0, std::size_t kc, std::size_t j0, std::size_t nc, T* out, std::size_t stride) const noexcept {
    constexpr std::size_t nr = Gemm<T>::kNR;
    for (std::size_t j = 0; j < nc; j += nr) packAcross<nr>(rows, j0 + j, n, k0, kc, out + j / nr * stride);
  }
};

// C (m x n) += A (m x k) B (k x n); with `overwrite`, C = A B (C need not be initialised).
// cRows.segment(i, j, len) locates C's elements as the packers' rows do.
template <class T, class PackA, class PackB, class CRows>
void gemm(std::size_t m, std::size_t n, std::size_t k, const PackA& packA, const PackB& packB, const CRows& cRows, bool overwrite) noexcept {
  using G = Gemm<T>;
  constexpr std::size_t mr = G::kMR, nr = G::kNR;
  if (m == 0 || n == 0) return;
  static thread_local detail::PanelBuffer<T> aBuffer, bBuffer;
  T* const ap = aBuffer.fit(G::kMC * G::kKC);
  alignas(64) T tile[mr * nr];
  if (k == 0) {
    if (overwrite)
      for (std::size_t i = 0; i < m; ++i)
        for (std::size_t j = 0; j < n;) {
          std::size_t len;
          T* dst = const_cast<T*>(cRows.segment(i, j, len));
          const std::size_t count = std::min(len, n - j);
          std::fill_n(dst, count, T(0));
          j += count;
        }
    return;
  }
  // One tile: from the packed panels into C, through `tile` where C's rows are not contiguous
  // over the tile (or at the edges).
  constexpr std::size_t w = Register<T>::kWidth;
  const auto tileAt = [&](const T* a, const T* b, std::size_t kc, std::size_t i0, std::size_t mm, std::size_t j0, std::size_t nn, bool store) {
    T* rows[mr];
    bool direct = (nn == nr || nn == w) && mm == mr;
    for (std::size_t i = 0; i < mm && direct; ++i) {
      std::size_t len;
      rows[i] = const_cast<T*>(cRows.segment(i0 + i, j0, len));
      direct = len >= nn;
      // Rows that overlap (an input two rows share) are added one after the other, below.
      for (std::size_t u = 0; u < i && direct; ++u) direct = rows[u] + nn <= rows[i] || rows[i] + nn <= rows[u];
    }
    if (direct) {
      if (nn == nr) detail::microKernel(kc, a, b, rows, store);
      else detail::microKernelHalf(kc, a, b, rows, store);
      return;
    }
    for (std::size_t i = 0; i < mr; ++i) rows[i] = tile + i * nr;
    detail::microKernel(kc, a, b, rows, true);
    for (std::size_t i = 0; i < mm; ++i)
      for (std::size_t j = 0; j < nn;) {
        std::size_t len;
        T* dst = const_cast<T*>(cRows.segment(i0 + i, j0 + j, len));
        const std::size_t count = std::min(len, nn - j);
        for (std::size_t q = 0; q < count; ++q) dst[q] = store ? tile[i * nr + j + q] : dst[q] + tile[i * nr + j + q];
        j += count;
      }
  };
  // As many columns of B per block as keep a block of B within kKC x kNC values: wider where k
  // is short, so that C is swept along longer rows.
  const std::size_t ncMax = std::max(G::kNC, G::kKC * G::kNC / std::min(k, G::kKC) / nr * nr);
  T* const bp = bBuffer.fit((G::kKC + 1) * (ncMax + nr));
  // A of one block of rows (the tokens of a batch, often) is packed once per block of k, not
  // once per block of B's columns. Each element of C still takes the blocks of k in order.
  const bool oneBlockOfA = m <= G::kMC;
  for (std::size_t pc = 0; pc < k; pc += G::kKC) {
    const std::size_t kc = std::min(G::kKC, k - pc);
    const bool store = overwrite && pc == 0;
    // Panels one cache line further apart than their size: at a power-of-two distance,
    // packing B row by row would write every panel's line to the same set of L1.
    const std::size_t bStride = kc * nr + nr;
    if (oneBlockOfA) packA.template pack<T>(0, m, pc, kc, ap);
    for (std::size_t jc = 0; jc < n; jc += ncMax) {
      const std::size_t nc = std::min(ncMax, n - jc);
      packB.template pack<T>(pc, kc, jc, nc, bp, bStride);
      for (std::size_t ic = 0; ic < m; ic += G::kMC) {
        const std::size_t mc = std::min(G::kMC, m - ic);
        if (!oneBlockOfA) packA.template pack<T>(ic, mc, pc, kc, ap);
        if (kc >= G::kKC / 2) {
          // A panel of B stays in L1 while the tiles go down the rows of the block.
          for (std::size_t jr = 0; jr < nc; jr += nr)
            for (std::size_t ir = 0; ir < mc; ir += mr)
              tileAt(ap + ir * kc, bp + jr / nr * bStride, kc, ic + ir, std::min(mr, mc - ir), jc + jr, std::min(nr, nc - jr), store);
        } else {
          // Few products per tile: reading and writing C costs more than the panels, so the
          // tiles go along C's rows, as the hardware prefetches.
          for (std::size_t ir = 0; ir < mc; ir += mr)
            for (std::size_t jr = 0; jr < nc; jr += nr)
              tileAt(ap + ir * kc, bp + jr / nr * bStride, kc, ic + ir, std::min(mr, mc - ir), jc + jr, std::min(nr, nc - jr), store);
        }
      }
    }
  }
}

// Rows of a row-major matrix: row r at base + r * stride.
template <class T>
struct StridedRows {
  T* base;
  std::size_t stride;
  BURTORCH_INLINE T* segment(std::size_t r, std::size_t k, std::size_t& len) const noexcept {
    len = static_cast<std::size_t>(-1);
    return base + r * stride + k;
  }
};

}  // namespace burtorch::kernels
