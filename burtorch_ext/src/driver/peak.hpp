// burtorch-bench --peak: this core's peak FP32 rate of multiply-adds, against which the block
// products (gemm.hpp) are judged. Independent chains of vector multiply-adds, as many as cover
// the latency of every FMA unit of a current core (4 cycles x 2 units, with room), in the same
// registers and instructions as the GEMM's micro-kernel (kernels::Register). Prints one JSON line.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "burtorch/gemm.hpp"

namespace burtorch::driver {

namespace detail {

using Widest = kernels::Register<float, kernels::kWidest<float>>;
inline constexpr int kChains = 12;

// `rounds` rounds of kChains multiply-adds; returns a sum of the chains so none is optimised away.
BURTORCH_OUTLINE inline float multiplyAddChains(long rounds, float a, float b) noexcept {
  using R = Widest;
  typename R::V acc[kChains];
  const typename R::V va = R::broadcast(&a), vb = R::broadcast(&b);
  for (int c = 0; c < kChains; ++c) acc[c] = R::zero();
  for (long r = 0; r < rounds; ++r)
    for (int c = 0; c < kChains; ++c) acc[c] = R::mulAdd(va, vb, acc[c]);  // accumulating, as the GEMM does
  for (int c = 1; c < kChains; ++c) acc[0] = R::add(acc[0], acc[c]);
  float out[R::kWidth];
  R::store(out, acc[0]);
  return out[0];
}

}  // namespace detail

// The best of many short timings (about 0.1 ms each, for 0.3 s), in GFLOP/s (a multiply-add is
// two operations): on a shared machine a long timing also counts the other processes' turns on
// the core.
inline int printPeak() {
  using Clock = std::chrono::steady_clock;
  constexpr long kRounds = 10'000;
  constexpr double kFlops = 2.0 * detail::kChains * detail::Widest::kWidth * kRounds;
  double best = 0;
  float sink = 0;
  const auto begin = Clock::now();
  while (std::chrono::duration<double>(Clock::now() - begin).count() < 0.3) {
    const auto start = Clock::now();
    sink += detail::multiplyAddChains(kRounds, 1e-3f, 1e-3f);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    best = std::max(best, kFlops / seconds / 1e9);
  }
  std::printf("{\"peak_gflops_fp32\": %.2f, \"fma\": %s, \"lanes\": %zu, \"sink\": %g}\n", best,
              BURTORCH_FMA ? "true" : "false", detail::Widest::kWidth, static_cast<double>(sink));
  return 0;
}

}  // namespace burtorch::driver
