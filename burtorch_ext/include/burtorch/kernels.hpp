// Loops over contiguous arrays of values and gradients: the inner products of a layer's rows,
// and their gradients. They are written so that the compiler vectorises them without
// -ffast-math: the dot product keeps independent partial sums in lanes (one vector register's
// worth per group of lanes) and adds the lanes in a fixed order, so the result does not depend
// on the vector width the build targets.
#pragma once

#include <cstddef>
#include <type_traits>

#include "burtorch/config.hpp"
#include "burtorch/simd.hpp"

namespace burtorch::kernels {

namespace detail {

// lanes[l] += lanes[l + width] for l < width: halves the partial sums, as vector adds.
template <std::size_t width, class T>
BURTORCH_INLINE void fold(T* lanes) noexcept {
  for (std::size_t l = 0; l < width; ++l) lanes[l] += lanes[l + width];
}

// sum_k x[k] * y[k], in the fixed order that every build computes.
template <class T>
BURTORCH_INLINE T dotLanes(const T* BURTORCH_RESTRICT x, const T* BURTORCH_RESTRICT y, std::size_t n) noexcept {
  constexpr std::size_t kLanes = 64 / sizeof(T);  // one cache line of each operand per round
  constexpr std::size_t kShort = 16 / sizeof(T);  // one SSE/NEON register: short rows and tails
  T lanes[kLanes] = {};
  std::size_t k = 0;
  for (; k + kLanes <= n; k += kLanes)
    for (std::size_t l = 0; l < kLanes; ++l) lanes[l] += x[k + l] * y[k + l];
  for (; k + kShort <= n; k += kShort)
    for (std::size_t l = 0; l < kShort; ++l) lanes[l] += x[k + l] * y[k + l];
  T tail = 0;
  for (; k < n; ++k) tail += x[k] * y[k];
  // Fixed widths, so that the compiler unrolls the folds and keeps the lanes in registers.
  if constexpr (kLanes >= 16) fold<kLanes / 2>(lanes);
  if constexpr (kLanes >= 8) fold<4>(lanes);
  if constexpr (kLanes >= 4) fold<2>(lanes);
  return (lanes[0] + lanes[1]) + tail;
}

}  // namespace detail

// sum_k x[k] * y[k]
template <class T>
BURTORCH_INLINE T dot(const T* BURTORCH_RESTRICT x, const T* BURTORCH_RESTRICT y, std::size_t n) noexcept {
  return detail::dotLanes(x, y, n);
}

// out[j] = dot(x, w + j n, n) for j < rows: the rows of a layer, one after another in w.
inline constexpr std::size_t kDotRows = 4;

template <class T>
BURTORCH_INLINE void dotRows(const T* x, const T* w, std::size_t n, std::size_t rows, T* out) noexcept {
  for (std::size_t j = 0; j < rows; ++j) out[j] = dot(x, w + j * n, n);
}

// y[k] += a * x[k], a register's worth at a time, so that short rows need no vector prologue.
template <class T>
BURTORCH_INLINE void axpy(T* BURTORCH_RESTRICT y, T a, const T* BURTORCH_RESTRICT x, std::size_t n) noexcept {
  constexpr std::size_t kShort = 16 / sizeof(T);
  std::size_t k = 0;
  for (; k + kShort <= n; k += kShort)
    for (std::size_t l = 0; l < kShort; ++l) y[k + l] += a * x[k + l];
  for (; k < n; ++k) y[k] += a * x[k];
}

// y[k] = ((y[k] + a[0] * x[0][k]) + a[1] * x[1][k]) + ...: up to kManyRows axpy() in one pass
// over y, the same bits as one axpy() after another. A layer's backward uses it for a weight
// row's gradient (x: the tokens' inputs) and for an input's gradient (x: the weight rows).
inline constexpr std::size_t kManyRows = 8;

template <class T>
BURTORCH_INLINE void axpyMany(T* BURTORCH_RESTRICT y, const T* a, const T* const* x, std::size_t count, std::size_t n) noexcept {
  constexpr std::size_t kShort = 16 / sizeof(T);
  std::size_t k = 0;
  for (; k + kShort <= n; k += kShort) {
    T sum[kShort];
    for (std::size_t l = 0; l < kShort; ++l) sum[l] = y[k + l];
    for (std::size_t r = 0; r < count; ++r)
      for (std::size_t l = 0; l < kShort; ++l) sum[l] += a[r] * x[r][k + l];
    for (std::size_t l = 0; l < kShort; ++l) y[k + l] = sum[l];
  }
  for (; k < n; ++k) {
    T sum = y[k];
    for (std::size_t r = 0; r < count; ++r) sum += a[r] * x[r][k];
    y[k] = sum;
  }
}

// axpyMany() into two outputs that share the rows x: y0 with the coefficients a0, y1 with a1.
// y0 and y1 must not overlap.
template <class T>
BURTORCH_INLINE void axpyManyPair(T* y0, T* y1, const T* a0, const T* a1, const T* const* x, std::size_t count, std::size_t n) noexcept {
  axpyMany(y0, a0, x, count, n);
  axpyMany(y1, a1, x, count, n);
}

// The register of T that the streaming kernel below uses: the build's widest (elementwise, so
// any width gives the same bits; 512-bit halves its instructions where the build has AVX-512).
template <class T>
inline constexpr std::size_t kStream = kWidest<T>;

namespace detail {

// axpyManyAndDescend() over `fixed` rows (0: over count), so that a full block's loop over the
// rows unrolls and its coefficients stay in registers.
template <std::size_t fixed, class T>
BURTORCH_INLINE void descendRows(T* BURTORCH_RESTRICT y, const T* a, T* const* w, std::size_t count, const T* BURTORCH_RESTRICT x, T step, std::size_t n) noexcept {
  using R = Register<T, kStream<T>>;
  constexpr std::size_t lanes = R::kWidth;
  const std::size_t rows = fixed != 0 ? fixed : count;
  typename R::V as[kManyRows];
  for (std::size_t r = 0; r < rows; ++r) as[r] = R::broadcast(a + r);
  const typename R::V steps = R::broadcast(&step);
  std::size_t k = 0;
  for (; k + lanes <= n; k += lanes) {
    const typename R::V xs = R::load(x + k);
    typename R::V sum = R::load(y + k);
    for (std::size_t r = 0; r < rows; ++r) {
      const typename R::V old = R::load(w[r] + k);
      sum = R::add(sum, R::mul(as[r], old));
      R::store(w[r] + k, R::sub(old, R::mul(steps, R::mul(as[r], xs))));
    }
    R::store(y + k, sum);
  }
  for (; k < n; ++k) {
    T sum = y[k];
    for (std::size_t r = 0; r < rows; ++r) {
      const T old = w[r][k];
      sum += a[r] * old;
      w[r][k] = old - step * (a[r] * x[k]);
    }
    y[k] = sum;
  }
}

}  // namespace detail

// A layer's backward for one token, fused with the SGD step on its weights, over the segment
// x[0, n) of its input: the rows w[0..count) of the weights (in the order their terms enter, as
// axpyMany's), whose gradients before the activation are a[r] and whose weights' gradients are
// zero. Each value of each row is read once, for both
//   y[k] = ((y[k] + a[0] w[0][k]) + a[1] w[1][k]) + ...   the input's gradient (axpyMany's bits)
//   w[r][k] = w[r][k] - step (a[r] x[k])                   the step (sgdStepAndZeroGrad's bits)
// so a step reads its weights twice (forward, here) and writes them once, and never touches
// their gradients. w[r] must not overlap y or x.
template <class T>
BURTORCH_INLINE void axpyManyAndDescend(T* BURTORCH_RESTRICT y, const T* a, T* const* w, std::size_t count, const T* BURTORCH_RESTRICT x, T step, std::size_t n) noexcept {
  if (count == kManyRows) detail::descendRows<kManyRows>(y, a, w, count, x, step, n);
  else detail::descendRows<0>(y, a, w, count, x, step, n);
}

#if BURTORCH_AVX
// With AVX: the same sums, the same bits, in registers twice as wide. The lanes of the SSE
// versions below map onto halves of these registers, and the adds happen in the same order.
template <>
BURTORCH_INLINE float dot(const float* BURTORCH_RESTRICT x, const float* BURTORCH_RESTRICT y, std::size_t n) noexcept {
  __m256 lo = _mm256_setzero_ps(), hi = lo;  // lanes 0-7 and 8-15
  std::size_t k = 0;
  for (; k + 16 <= n; k += 16) {
    lo = _mm256_add_ps(lo, _mm256_mul_ps(_mm256_loadu_ps(x + k), _mm256_loadu_ps(y + k)));
    hi = _mm256_add_ps(hi, _mm256_mul_ps(_mm256_loadu_ps(x + k + 8), _mm256_loadu_ps(y + k + 8)));
  }
  __m128 a0 = _mm256_castps256_ps128(lo);
  for (; k + 4 <= n; k += 4) a0 = _mm_add_ps(a0, _mm_mul_ps(_mm_loadu_ps(x + k), _mm_loadu_ps(y + k)));
  float tail = 0;
  for (; k < n; ++k) tail += x[k] * y[k];
  const __m128 a1 = _mm256_extractf128_ps(lo, 1), a2 = _mm256_castps256_ps128(hi), a3 = _mm256_extractf128_ps(hi, 1);
  a0 = _mm_add_ps(_mm_add_ps(a0, a2), _mm_add_ps(a1, a3));
  a0 = _mm_add_ps(a0, _mm_movehl_ps(a0, a0));
  return (_mm_cvtss_f32(a0) + _mm_cvtss_f32(_mm_shuffle_ps(a0, a0, 1))) + tail;
}

// dot() of kDotRows rows at a time: the rows share the loads of x, and their last additions,
// lane by lane, run in one register after a 4 x 4 transpose. Each row's sum keeps the order of
// dot(); so do the reductions, which add lane 0 + 2 and 1 + 3, then the two.
namespace detail {

BURTORCH_INLINE void dotFourRows(const float* x, const float* w, std::size_t n, float* out) noexcept {
  __m256 lo[kDotRows], hi[kDotRows];
  for (std::size_t r = 0; r < kDotRows; ++r) lo[r] = hi[r] = _mm256_setzero_ps();
  std::size_t k = 0;
#if BURTORCH_AVX512
  // Long rows: lanes 0-15 in one register, half the instructions, the same sums lane by lane
  // (the MLP's 1,024 inputs: 250 -> 220 ns per four rows; the GPT's 24, whose one step of 16
  // does not repay the split of the register, stay below).
  if (n >= 64) {
    __m512 lanes16[kDotRows];
    for (std::size_t r = 0; r < kDotRows; ++r) lanes16[r] = _mm512_setzero_ps();
    for (; k + 16 <= n; k += 16) {
      const __m512 xs = _mm512_loadu_ps(x + k);
      for (std::size_t r = 0; r < kDotRows; ++r) lanes16[r] = _mm512_add_ps(lanes16[r], _mm512_mul_ps(xs, _mm512_loadu_ps(w + r * n + k)));
    }
    for (std::size_t r = 0; r < kDotRows; ++r) {
      alignas(64) float halves[16];  // through memory: GCC 12's register extracts warn of an undefined value
      _mm512_store_ps(halves, lanes16[r]);
      lo[r] = _mm256_load_ps(halves);
      hi[r] = _mm256_load_ps(halves + 8);
    }
  }
#endif
  for (; k + 16 <= n; k += 16) {
    const __m256 xl = _mm256_loadu_ps(x + k), xh = _mm256_loadu_ps(x + k + 8);
    for (std::size_t r = 0; r < kDotRows; ++r) {
      lo[r] = _mm256_add_ps(lo[r], _mm256_mul_ps(xl, _mm256_loadu_ps(w + r * n + k)));
      hi[r] = _mm256_add_ps(hi[r], _mm256_mul_ps(xh, _mm256_loadu_ps(w + r * n + k + 8)));
    }
  }
  __m128 lanes[kDotRows];
  for (std::size_t r = 0; r < kDotRows; ++r) lanes[r] = _mm256_castps256_ps128(lo[r]);
  for (; k + 4 <= n; k += 4) {
    const __m128 xs = _mm_loadu_ps(x + k);
    for (std::size_t r = 0; r < kDotRows; ++r) lanes[r] = _mm_add_ps(lanes[r], _mm_mul_ps(xs, _mm_loadu_ps(w + r * n + k)));
  }
  float tail[kDotRows] = {};
  for (; k < n; ++k)
    for (std::size_t r = 0; r < kDotRows; ++r) tail[r] += x[k] * w[r * n + k];
  for (std::size_t r = 0; r < kDotRows; ++r) {
    const __m128 a1 = _mm256_extractf128_ps(lo[r], 1), a2 = _mm256_castps256_ps128(hi[r]), a3 = _mm256_extractf128_ps(hi[r], 1);
    lanes[r] = _mm_add_ps(_mm_add_ps(lanes[r], a2), _mm_add_ps(a1, a3));
  }
  _MM_TRANSPOSE4_PS(lanes[0], lanes[1], lanes[2], lanes[3]);  // lanes[l]: lane l of each row
  const __m128 sum = _mm_add_ps(_mm_add_ps(lanes[0], lanes[2]), _mm_add_ps(lanes[1], lanes[3]));
  _mm_storeu_ps(out, _mm_add_ps(sum, _mm_loadu_ps(tail)));
}

}  // namespace detail

template <>
BURTORCH_INLINE void dotRows(const float* x, const float* w, std::size_t n, std::size_t rows, float* out) noexcept {
  std::size_t j = 0;
  for (; j + kDotRows <= rows; j += kDotRows) detail::dotFourRows(x, w + j * n, n, out + j);
  for (; j < rows; ++j) out[j] = dot(x, w + j * n, n);
}

#elif BURTORCH_SSE
// The same sums for float, written out in SSE registers: GCC spills the lanes to scalars after
// the wide loop and runs the short rows (24 values in the GPT) one value at a time. Separate
// multiplies and adds round exactly as the plain loop does.
template <>
BURTORCH_INLINE float dot(const float* BURTORCH_RESTRICT x, const float* BURTORCH_RESTRICT y, std::size_t n) noexcept {
  __m128 a0 = _mm_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  std::size_t k = 0;
  for (; k + 16 <= n; k += 16) {
    a0 = _mm_add_ps(a0, _mm_mul_ps(_mm_loadu_ps(x + k), _mm_loadu_ps(y + k)));
    a1 = _mm_add_ps(a1, _mm_mul_ps(_mm_loadu_ps(x + k + 4), _mm_loadu_ps(y + k + 4)));
    a2 = _mm_add_ps(a2, _mm_mul_ps(_mm_loadu_ps(x + k + 8), _mm_loadu_ps(y + k + 8)));
    a3 = _mm_add_ps(a3, _mm_mul_ps(_mm_loadu_ps(x + k + 12), _mm_loadu_ps(y + k + 12)));
  }
  for (; k + 4 <= n; k += 4) a0 = _mm_add_ps(a0, _mm_mul_ps(_mm_loadu_ps(x + k), _mm_loadu_ps(y + k)));
  float tail = 0;
  for (; k < n; ++k) tail += x[k] * y[k];
  a0 = _mm_add_ps(_mm_add_ps(a0, a2), _mm_add_ps(a1, a3));  // lanes l += l + 8, then l += l + 4
  a0 = _mm_add_ps(a0, _mm_movehl_ps(a0, a0));                 // l += l + 2
  return (_mm_cvtss_f32(a0) + _mm_cvtss_f32(_mm_shuffle_ps(a0, a0, 1))) + tail;
}

#endif

#if BURTORCH_AVX || BURTORCH_SSE
// One vector register of floats, for the elementwise kernels below.
using FloatRegister = Register<float, kElementwise<float>>;

// Elementwise, so any register width gives the same bits.
template <>
BURTORCH_INLINE void axpy(float* BURTORCH_RESTRICT y, float a, const float* BURTORCH_RESTRICT x, std::size_t n) noexcept {
  using R = FloatRegister;
  const R::V av = R::broadcast(&a);
  std::size_t k = 0;
  for (; k + R::kWidth <= n; k += R::kWidth) R::store(y + k, R::add(R::load(y + k), R::mul(av, R::load(x + k))));
  for (; k < n; ++k) y[k] += a * x[k];
}

namespace detail {

// axpyMany() over `regs` registers of each of `outputs` ys from offset k. The sums of a y are
// chains of dependent additions, one per register: several registers and several ys give the
// CPU independent chains to overlap, and the ys share the loads of x.
template <std::size_t outputs, std::size_t regs>
BURTORCH_INLINE void axpyBlock(float* const* y, const float* const* a, const float* const* x, std::size_t count, std::size_t k) noexcept {
  using R = FloatRegister;
  constexpr std::size_t w = R::kWidth;
  R::V sum[outputs][regs];
  for (std::size_t i = 0; i < outputs; ++i)
    for (std::size_t q = 0; q < regs; ++q) sum[i][q] = R::load(y[i] + k + q * w);
  for (std::size_t r = 0; r < count; ++r) {
    R::V xs[regs];
    for (std::size_t q = 0; q < regs; ++q) xs[q] = R::load(x[r] + k + q * w);
    for (std::size_t i = 0; i < outputs; ++i) {
      const R::V ai = R::broadcast(&a[i][r]);
      for (std::size_t q = 0; q < regs; ++q) sum[i][q] = R::add(sum[i][q], R::mul(ai, xs[q]));
    }
  }
  for (std::size_t i = 0; i < outputs; ++i)
    for (std::size_t q = 0; q < regs; ++q) R::store(y[i] + k + q * w, sum[i][q]);
}

// Blocks of kBlock registers, then the remaining registers in one block, then single values.
template <std::size_t outputs>
BURTORCH_INLINE void axpyRows(float* const* y, const float* const* a, const float* const* x, std::size_t count, std::size_t n) noexcept {
  constexpr std::size_t w = FloatRegister::kWidth;
  constexpr std::size_t kBlock = outputs == 1 ? 4 : 3;  // 4 or 6 chains, 16 registers in all
  std::size_t k = 0;
  for (; k + kBlock * w <= n; k += kBlock * w) axpyBlock<outputs, kBlock>(y, a, x, count, k);
  switch ((n - k) / w) {
    case 3: axpyBlock<outputs, 3>(y, a, x, count, k); break;
    case 2: axpyBlock<outputs, 2>(y, a, x, count, k); break;
    case 1: axpyBlock<outputs, 1>(y, a, x, count, k); break;
    default: break;
  }
  for (k += (n - k) / w * w; k < n; ++k)
    for (std::size_t i = 0; i < outputs; ++i) {
      float sum = y[i][k];
      for (std::size_t r = 0; r < count; ++r) sum += a[i][r] * x[r][k];
      y[i][k] = sum;
    }
}

}  // namespace detail

template <>
BURTORCH_INLINE void axpyMany(float* BURTORCH_RESTRICT y, const float* a, const float* const* x, std::size_t count, std::size_t n) noexcept {
  float* const ys[1] = {y};
  const float* const as[1] = {a};
  detail::axpyRows<1>(ys, as, x, count, n);
}

template <>
BURTORCH_INLINE void axpyManyPair(float* y0, float* y1, const float* a0, const float* a1, const float* const* x, std::size_t count, std::size_t n) noexcept {
  float* const ys[2] = {y0, y1};
  const float* const as[2] = {a0, a1};
  detail::axpyRows<2>(ys, as, x, count, n);
}
#endif

}  // namespace burtorch::kernels
