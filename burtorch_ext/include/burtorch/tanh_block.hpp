// e^x and tanh over many values at once; tanh over a block's outputs at once (linear.hpp's matrix-product path): glibc's tanhf costs
// tens of nanoseconds per value (an expm1f and a division), as much as a 1,024-term inner
// product's share of the matrix product, so FP32 blocks compute tanh eight lanes at a time:
//   |x| < 0.35:  its series x - x^3/3 + 2x^5/15 - ... to x^13 (the next term is below 2^-24 x),
//   else:        1 - 2 / (e^{2|x|} + 1), with e^y = 2^n e^r, n = round(y / ln 2), r = y - n ln 2
//                in two parts (exact for n <= 26), e^r by its series to r^7 (|r| <= ln(2) / 2),
// with the sign of x. Within 1e-6 relative of tanh (test_kernels.cpp): the block path's bits
// differ from std::tanh's, as its sums' do. |x| >= 9 gives tanh within 2^-24 of 1.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "burtorch/kernels.hpp"

namespace burtorch::kernels {

namespace detail {

inline constexpr float kSeries[6] = {-1.0f / 3, 2.0f / 15, -17.0f / 315, 62.0f / 2835, -1382.0f / 155925, 21844.0f / 6081075};
inline constexpr float kSeriesBelow = 0.35f, kSaturatesAt = 9.0f;
inline constexpr float kLog2e = 1.44269504f, kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;

inline float tanhOne(float x) noexcept {
  const float a = std::min(std::fabs(x), kSaturatesAt);
  float t;
  if (a < kSeriesBelow) {
    const float z = a * a;
    float p = kSeries[5];
    for (int k = 4; k >= 0; --k) p = p * z + kSeries[k];
    t = a + a * z * p;
  } else {
    t = 1.0f - 2.0f / (std::exp(2.0f * a) + 1.0f);
  }
  return std::copysign(t, x);
}

#if BURTORCH_AVX
// e^y, eight lanes, for y in [-87, 88]: 2^n e^r as above.
inline __m256 expLanes(__m256 y) noexcept {
  const __m256 nf = _mm256_round_ps(_mm256_mul_ps(y, _mm256_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 r = _mm256_sub_ps(_mm256_sub_ps(y, _mm256_mul_ps(nf, _mm256_set1_ps(kLn2Hi))), _mm256_mul_ps(nf, _mm256_set1_ps(kLn2Lo)));
  __m256 e = _mm256_set1_ps(1.0f / 5040);
  for (const float c : {1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f, 1.0f, 1.0f}) e = _mm256_add_ps(_mm256_mul_ps(e, r), _mm256_set1_ps(c));
  // 2^n from its exponent bits, in two halves (AVX has no 256-bit integer arithmetic).
  const __m256i n = _mm256_cvtps_epi32(nf);
  const __m128i bias = _mm_set1_epi32(127);
  const __m128i lo = _mm_slli_epi32(_mm_add_epi32(_mm256_castsi256_si128(n), bias), 23);
  const __m128i hi = _mm_slli_epi32(_mm_add_epi32(_mm256_extractf128_si256(n, 1), bias), 23);
  return _mm256_mul_ps(e, _mm256_castsi256_ps(_mm256_insertf128_si256(_mm256_castsi128_si256(lo), hi, 1)));
}
#endif

}  // namespace detail

// v[k] = e^v[k] for k < n, FP32, the lanes as expLanes computes them (within 2 ulp of std::exp
// where the result is normal); below -87 a lane gives e^-87, not a subnormal or zero.
inline void expMany(float* v, std::size_t n) noexcept {
  std::size_t k = 0;
#if BURTORCH_AVX
  for (; k + 8 <= n; k += 8) {
    const __m256 y = _mm256_min_ps(_mm256_max_ps(_mm256_loadu_ps(v + k), _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
    _mm256_storeu_ps(v + k, detail::expLanes(y));
  }
#endif
  for (; k < n; ++k) v[k] = std::exp(std::max(v[k], -87.0f));
}

// The same in FP64, std::exp value by value (no clamp: FP64 holds e^-87 and far below).
inline void expMany(double* v, std::size_t n) noexcept {
  for (std::size_t k = 0; k < n; ++k) v[k] = std::exp(v[k]);
}

// v[k] = tanh(v[k]) for k < n, FP32.
inline void tanhMany(float* v, std::size_t n) noexcept {
  std::size_t k = 0;
#if BURTORCH_AVX
  using namespace detail;
  const __m256 sign = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f), two = _mm256_set1_ps(2.0f);
  for (; k + 8 <= n; k += 8) {
    const __m256 x = _mm256_loadu_ps(v + k);
    const __m256 a = _mm256_min_ps(_mm256_andnot_ps(sign, x), _mm256_set1_ps(kSaturatesAt));
    // Small |x|: the series in z = x^2.
    const __m256 z = _mm256_mul_ps(a, a);
    __m256 p = _mm256_set1_ps(kSeries[5]);
    for (int c = 4; c >= 0; --c) p = _mm256_add_ps(_mm256_mul_ps(p, z), _mm256_set1_ps(kSeries[c]));
    const __m256 small = _mm256_add_ps(a, _mm256_mul_ps(_mm256_mul_ps(a, z), p));
    // Large |x|: e^{2|x|}.
    const __m256 e = expLanes(_mm256_add_ps(a, a));
    const __m256 large = _mm256_sub_ps(one, _mm256_div_ps(two, _mm256_add_ps(e, one)));
    const __m256 t = _mm256_blendv_ps(large, small, _mm256_cmp_ps(a, _mm256_set1_ps(kSeriesBelow), _CMP_LT_OQ));
    _mm256_storeu_ps(v + k, _mm256_or_ps(t, _mm256_and_ps(sign, x)));
  }
#endif
  for (; k < n; ++k) v[k] = detail::tanhOne(v[k]);
}

}  // namespace burtorch::kernels
