// The instruction sets a build targets, and one vector register of T for the kernels written
// with intrinsics: Register<T, lanes> is the same few operations at every width, so a kernel is
// written once and instantiated per width (kernels.hpp's elementwise loops, gemm.hpp's
// micro-kernel). Separate multiplies and adds round as the plain loops do; only mulAdd fuses,
// and only where the build has FMA (BURTORCH_FMA).
#pragma once

#include <cstddef>

#include "burtorch/config.hpp"

#if defined(__AVX__)
#include <immintrin.h>
#define BURTORCH_AVX 1
#else
#define BURTORCH_AVX 0
#endif
// AVX-512 widens the block products' registers only (gemm.hpp); the other kernels stay 256-bit.
#if defined(__AVX512F__)
#define BURTORCH_AVX512 1
#else
#define BURTORCH_AVX512 0
#endif
#if defined(__FMA__) && BURTORCH_AVX
#define BURTORCH_FMA 1
#else
#define BURTORCH_FMA 0
#endif
#if defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
#define BURTORCH_SSE 1
#else
#define BURTORCH_SSE 0
#endif
#if BURTORCH_AVX512
#define BURTORCH_KERNELS "avx512"
#elif BURTORCH_AVX
#define BURTORCH_KERNELS "avx"
#elif BURTORCH_SSE
#define BURTORCH_KERNELS "sse2"
#else
#define BURTORCH_KERNELS "portable"
#endif

#if defined(_MSC_VER) && !defined(__clang__)
#define BURTORCH_RESTRICT __restrict
#else
#define BURTORCH_RESTRICT __restrict__
#endif

namespace burtorch::kernels {

// `lanes` values of T in one register: its loads, stores, and arithmetic.
template <class T, std::size_t lanes>
struct Register;

template <class T>
struct Register<T, 1> {  // portable: one value per "register"
  using V = T;
  static constexpr std::size_t kWidth = 1;
  static BURTORCH_INLINE V zero() noexcept { return T(0); }
  static BURTORCH_INLINE V load(const T* p) noexcept { return *p; }
  static BURTORCH_INLINE void store(T* p, V v) noexcept { *p = v; }
  static BURTORCH_INLINE V broadcast(const T* p) noexcept { return *p; }
  static BURTORCH_INLINE V add(V a, V b) noexcept { return a + b; }
  static BURTORCH_INLINE V sub(V a, V b) noexcept { return a - b; }
  static BURTORCH_INLINE V mul(V a, V b) noexcept { return a * b; }
  static BURTORCH_INLINE V mulAdd(V a, V b, V c) noexcept { return add(mul(a, b), c); }
};

// The widest register of T that the build targets (the block products'), and the width of the
// elementwise kernels (256-bit at most: the compiler's own vectorisation is measured and tested
// at that width).
template <class T>
inline constexpr std::size_t kWidest = 1;
template <class T>
inline constexpr std::size_t kElementwise = 1;

#if BURTORCH_AVX512
// 16 floats: where the core has 512-bit FMA units (AMD Zen 5, Intel server cores), twice the
// products per instruction of AVX2; the chains, hence the bits, stay those of any other width.
template <>
struct Register<float, 16> {
  using V = __m512;
  static constexpr std::size_t kWidth = 16;
  static BURTORCH_INLINE V zero() noexcept { return _mm512_setzero_ps(); }
  static BURTORCH_INLINE V load(const float* p) noexcept { return _mm512_loadu_ps(p); }
  static BURTORCH_INLINE void store(float* p, V v) noexcept { _mm512_storeu_ps(p, v); }
  static BURTORCH_INLINE V broadcast(const float* p) noexcept { return _mm512_set1_ps(*p); }
  static BURTORCH_INLINE V add(V a, V b) noexcept { return _mm512_add_ps(a, b); }
  static BURTORCH_INLINE V sub(V a, V b) noexcept { return _mm512_sub_ps(a, b); }
  static BURTORCH_INLINE V mul(V a, V b) noexcept { return _mm512_mul_ps(a, b); }
  static BURTORCH_INLINE V mulAdd(V a, V b, V c) noexcept { return _mm512_fmadd_ps(a, b, c); }
};
template <>
inline constexpr std::size_t kWidest<float> = 16;
#endif

#if BURTORCH_AVX
template <>
struct Register<float, 8> {
  using V = __m256;
  static constexpr std::size_t kWidth = 8;
  static BURTORCH_INLINE V zero() noexcept { return _mm256_setzero_ps(); }
  static BURTORCH_INLINE V load(const float* p) noexcept { return _mm256_loadu_ps(p); }
  static BURTORCH_INLINE void store(float* p, V v) noexcept { _mm256_storeu_ps(p, v); }
  static BURTORCH_INLINE V broadcast(const float* p) noexcept { return _mm256_broadcast_ss(p); }
  static BURTORCH_INLINE V add(V a, V b) noexcept { return _mm256_add_ps(a, b); }
  static BURTORCH_INLINE V sub(V a, V b) noexcept { return _mm256_sub_ps(a, b); }
  static BURTORCH_INLINE V mul(V a, V b) noexcept { return _mm256_mul_ps(a, b); }
#if BURTORCH_FMA
  static BURTORCH_INLINE V mulAdd(V a, V b, V c) noexcept { return _mm256_fmadd_ps(a, b, c); }
#else
  static BURTORCH_INLINE V mulAdd(V a, V b, V c) noexcept { return add(mul(a, b), c); }
#endif
};

template <>
struct Register<double, 4> {
  using V = __m256d;
  static constexpr std::size_t kWidth = 4;
  static BURTORCH_INLINE V zero() noexcept { return _mm256_setzero_pd(); }
  static BURTORCH_INLINE V load(const double* p) noexcept { return _mm256_loadu_pd(p); }
  static BURTORCH_INLINE void store(double* p, V v) noexcept { _mm256_storeu_pd(p, v); }
  static BURTORCH_INLINE V broadcast(const double* p) noexcept { return _mm256_broadcast_sd(p); }
  static BURTORCH_INLINE V add(V a, V b) noexcept { return _mm256_add_pd(a, b); }
  static BURTORCH_INLINE V sub(V a, V b) noexcept { return _mm256_sub_pd(a, b); }
  static BURTORCH_INLINE V mul(V a, V b) noexcept { return _mm256_mul_pd(a, b); }
#if BURTORCH_FMA
  static BURTORCH_INLINE V mulAdd(V a, V b, V c) noexcept { return _mm256_fmadd_pd(a, b, c); }
#else
  static BURTORCH_INLINE V mulAdd(V a, V b, V c) noexcept { return add(mul(a, b), c); }
#endif
};
#if !BURTORCH_AVX512
template <>
inline constexpr std::size_t kWidest<float> = 8;
#endif
template <>
inline constexpr std::size_t kWidest<double> = 4;
template <>
inline constexpr std::size_t kElementwise<float> = 8;
#elif BURTORCH_SSE
template <>
struct Register<float, 4> {
  using V = __m128;
  static constexpr std::size_t kWidth = 4;
  static BURTORCH_INLINE V zero() noexcept { return _mm_setzero_ps(); }
  static BURTORCH_INLINE V load(const float* p) noexcept { return _mm_loadu_ps(p); }
  static BURTORCH_INLINE void store(float* p, V v) noexcept { _mm_storeu_ps(p, v); }
  static BURTORCH_INLINE V broadcast(const float* p) noexcept { return _mm_set1_ps(*p); }
  static BURTORCH_INLINE V add(V a, V b) noexcept { return _mm_add_ps(a, b); }
  static BURTORCH_INLINE V sub(V a, V b) noexcept { return _mm_sub_ps(a, b); }
  static BURTORCH_INLINE V mul(V a, V b) noexcept { return _mm_mul_ps(a, b); }
  static BURTORCH_INLINE V mulAdd(V a, V b, V c) noexcept { return add(mul(a, b), c); }
};

template <>
struct Register<double, 2> {
  using V = __m128d;
  static constexpr std::size_t kWidth = 2;
  static BURTORCH_INLINE V zero() noexcept { return _mm_setzero_pd(); }
  static BURTORCH_INLINE V load(const double* p) noexcept { return _mm_loadu_pd(p); }
  static BURTORCH_INLINE void store(double* p, V v) noexcept { _mm_storeu_pd(p, v); }
  static BURTORCH_INLINE V broadcast(const double* p) noexcept { return _mm_set1_pd(*p); }
  static BURTORCH_INLINE V add(V a, V b) noexcept { return _mm_add_pd(a, b); }
  static BURTORCH_INLINE V sub(V a, V b) noexcept { return _mm_sub_pd(a, b); }
  static BURTORCH_INLINE V mul(V a, V b) noexcept { return _mm_mul_pd(a, b); }
  static BURTORCH_INLINE V mulAdd(V a, V b, V c) noexcept { return add(mul(a, b), c); }
};
template <>
inline constexpr std::size_t kWidest<float> = 4;
template <>
inline constexpr std::size_t kWidest<double> = 2;
template <>
inline constexpr std::size_t kElementwise<float> = 4;
#endif

// transposeTile(src, k, out, stride): out[q * stride + r] = src[r][k + q] for r, q < the
// square that the build transposes in registers, kTransposeTile<T> (1 where it has none).
template <class T>
inline constexpr std::size_t kTransposeTile = 1;
template <class T>
void transposeTile(const T* const* src, std::size_t k, T* out, std::size_t stride) noexcept;

#if BURTORCH_AVX
// Eight rows of 8 in registers transposed: lane j of row i becomes lane i of row j.
BURTORCH_INLINE void transpose8(__m256 r[8]) noexcept {
  __m256 t[8], u[8];
  for (std::size_t i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (std::size_t i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (std::size_t i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}

template <>
inline constexpr std::size_t kTransposeTile<float> = 8;
template <>
BURTORCH_INLINE void transposeTile(const float* const* src, std::size_t k, float* out, std::size_t stride) noexcept {
  __m256 r[8];
  for (std::size_t i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src[i] + k);
  transpose8(r);
  for (std::size_t i = 0; i < 8; ++i) _mm256_storeu_ps(out + i * stride, r[i]);
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

}  // namespace burtorch::kernels
