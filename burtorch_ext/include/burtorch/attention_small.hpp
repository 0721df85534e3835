// The mini-GPT's attention head (block 8, head size 4) in FP32 with AVX: 8 scores are one register
// (in the forward a key's column over the queries, in the backward a query's row), the causal mask
// a lane comparison, e^x eight lanes at once (tanh_block.hpp), and each token's head of 4 one
// 128-bit register read and written where it lies in the pool. attention.hpp's loops compute the
// same for any size, in any precision.
#pragma once

#include <cfloat>
#include <cstddef>

#include "burtorch/simd.hpp"
#include "burtorch/tanh_block.hpp"

namespace burtorch::detail {

#if BURTORCH_AVX
inline constexpr bool kSmallHeadKernels = true;

inline float laneSum(__m256 x) noexcept {
  __m128 m = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  m = _mm_add_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_add_ss(m, _mm_shuffle_ps(m, m, 1)));
}

// mask[u]: lanes t >= u, the queries that see key u.
inline void causalColumns(__m256 mask[8]) noexcept {
  for (std::size_t u = 0; u < 8; ++u)
    mask[u] = _mm256_cmp_ps(_mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_ps(static_cast<float>(u)), _CMP_GE_OQ);
}

// Lanes u <= t: the keys token t sees.
inline __m256 causalMask(std::size_t t) noexcept {
  return _mm256_cmp_ps(_mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_ps(static_cast<float>(t)), _CMP_LE_OQ);
}

// The 8 tokens' heads of 4 (tokens d apart) transposed: four rows of 8.
inline void transposeHeads(const float* x, std::size_t d, __m256 rows[4]) noexcept {
  alignas(32) float t[4][8];
  for (std::size_t u = 0; u < 8; ++u)
    for (std::size_t j = 0; j < 4; ++j) t[j][u] = x[u * d + j];
  for (std::size_t j = 0; j < 4; ++j) rows[j] = _mm256_load_ps(t[j]);
}

// transposeHeads' inverse: four rows of 8 written as the 8 tokens' heads of 4, tokens d apart.
inline void storeHeads(const __m256 rows[4], float* x, std::size_t d) noexcept {
  const __m256 lo01 = _mm256_unpacklo_ps(rows[0], rows[1]), hi01 = _mm256_unpackhi_ps(rows[0], rows[1]);
  const __m256 lo23 = _mm256_unpacklo_ps(rows[2], rows[3]), hi23 = _mm256_unpackhi_ps(rows[2], rows[3]);
  const __m256 heads[4] = {_mm256_shuffle_ps(lo01, lo23, 0x44), _mm256_shuffle_ps(lo01, lo23, 0xEE), _mm256_shuffle_ps(hi01, hi23, 0x44),
                           _mm256_shuffle_ps(hi01, hi23, 0xEE)};  // tokens t and t + 4 of each
  for (std::size_t t = 0; t < 4; ++t) {
    _mm_storeu_ps(x + t * d, _mm256_castps256_ps128(heads[t]));
    _mm_storeu_ps(x + (t + 4) * d, _mm256_extractf128_ps(heads[t], 1));
  }
}

// p (8 x 8, row t the softmax of token t's scaled scores over keys 0..t, zeros after) and
// y = p v, one head of one sequence; q, k and v tokens ld apart, y's d apart. The lanes are the 8
// queries, so that every step is lane by lane: a column of scores per key, the row's peak and
// sum as maxima and sums of columns, each output's head of 4 as 4 columns: no sum across lanes,
// no weight stored and read back. Each value is computed in the order a row at a time would take it
// (the row's sum of exponentials in laneSum's), so the bits are those of a row at a time. A key u's
// products are masked in the lanes t < u, so that a value those queries do not see (even inf or NaN)
// adds an exact zero to them.
BURTORCH_INLINE void attendSmallHead(const float* q, const float* k, const float* v, std::size_t ld, std::size_t d, float scale, float* p,
                            float* y) noexcept {
  __m256 qt[4], s[8], mask[8];
  transposeHeads(q, ld, qt);
  causalColumns(mask);
  __m256 peak = _mm256_set1_ps(-FLT_MAX);
  for (std::size_t u = 0; u < 8; ++u) {
    const float* ku = k + u * ld;
    __m256 su = _mm256_mul_ps(qt[0], _mm256_broadcast_ss(ku));
    for (std::size_t j = 1; j < 4; ++j) su = _mm256_add_ps(su, _mm256_mul_ps(qt[j], _mm256_broadcast_ss(ku + j)));
    s[u] = _mm256_mul_ps(su, _mm256_set1_ps(scale));
    peak = _mm256_max_ps(peak, _mm256_blendv_ps(_mm256_set1_ps(-FLT_MAX), s[u], mask[u]));
  }
  for (std::size_t u = 0; u < 8; ++u)
    s[u] = _mm256_and_ps(kernels::detail::expLanes(_mm256_max_ps(_mm256_sub_ps(s[u], peak), _mm256_set1_ps(-87.0f))), mask[u]);
  const __m256 sum = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(s[0], s[4]), _mm256_add_ps(s[2], s[6])),
                                   _mm256_add_ps(_mm256_add_ps(s[1], s[5]), _mm256_add_ps(s[3], s[7])));
  const __m256 inverse = _mm256_div_ps(_mm256_set1_ps(1.0f), sum);
  __m256 yt[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  for (std::size_t u = 0; u < 8; ++u) {
    s[u] = _mm256_mul_ps(s[u], inverse);  // column u of p
    const float* vu = v + u * ld;
    for (std::size_t j = 0; j < 4; ++j)
      yt[j] = _mm256_add_ps(yt[j], _mm256_and_ps(_mm256_mul_ps(s[u], _mm256_broadcast_ss(vu + j)), mask[u]));
  }
  kernels::transpose8(s);  // the weights' columns back to p's rows
  for (std::size_t t = 0; t < 8; ++t) _mm256_storeu_ps(p + t * 8, s[t]);
  storeHeads(yt, y, d);
}

// The backward of attendSmallHead (attention.hpp's attentionHeadBackward says what it computes):
// adds to dq, dk and dv (tokens ld apart, as q, k and v) from dy (tokens d apart) and the weights p.
inline void attentionSmallHeadBackward(const float* q, const float* k, const float* v, const float* dy, const float* p, std::size_t ld,
                                       std::size_t d, float scale, float* dq, float* dk, float* dv) noexcept {
  __m256 vt[4], dkt[4], dvt[4];
  transposeHeads(v, ld, vt);
  for (std::size_t j = 0; j < 4; ++j) dkt[j] = dvt[j] = _mm256_setzero_ps();
  alignas(32) float ds[8];
  for (std::size_t t = 0; t < 8; ++t) {
    const __m256 pt = _mm256_loadu_ps(p + t * 8);
    const float* dyt = dy + t * d;
    __m256 dp = _mm256_mul_ps(_mm256_set1_ps(dyt[0]), vt[0]);
    for (std::size_t j = 1; j < 4; ++j) dp = _mm256_add_ps(dp, _mm256_mul_ps(_mm256_set1_ps(dyt[j]), vt[j]));
    const float mean = laneSum(_mm256_mul_ps(pt, dp));
    const __m256 dst = _mm256_mul_ps(_mm256_set1_ps(scale), _mm256_mul_ps(pt, _mm256_sub_ps(dp, _mm256_set1_ps(mean))));
    for (std::size_t j = 0; j < 4; ++j) {
      dvt[j] = _mm256_add_ps(dvt[j], _mm256_mul_ps(_mm256_set1_ps(dyt[j]), pt));
      dkt[j] = _mm256_add_ps(dkt[j], _mm256_mul_ps(_mm256_set1_ps(q[t * ld + j]), dst));
    }
    _mm256_store_ps(ds, dst);
    __m128 dqt = _mm_loadu_ps(dq + t * ld);
    for (std::size_t u = 0; u <= t; ++u) dqt = _mm_add_ps(dqt, _mm_mul_ps(_mm_set1_ps(ds[u]), _mm_loadu_ps(k + u * ld)));
    _mm_storeu_ps(dq + t * ld, dqt);
  }
  alignas(32) float kRows[4][8], vRows[4][8];
  for (std::size_t j = 0; j < 4; ++j) {
    _mm256_store_ps(kRows[j], dkt[j]);
    _mm256_store_ps(vRows[j], dvt[j]);
  }
  for (std::size_t u = 0; u < 8; ++u)
    for (std::size_t j = 0; j < 4; ++j) {
      dk[u * ld + j] += kRows[j][u];
      dv[u * ld + j] += vRows[j][u];
    }
}
#else
inline constexpr bool kSmallHeadKernels = false;
#endif

}  // namespace burtorch::detail
