// The timed loop. The clock is read once per block, never per iteration: at tens of
// nanoseconds per step, a clock read per step would be a large part of what is measured.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <vector>

namespace burtorch::driver {

// Sizes of the blocks a loop of `iterations` steps is cut into, as harness/measure/timer.py cuts it.
inline std::vector<std::int64_t> blockSizes(std::int64_t iterations, std::int64_t blocks) {
  blocks = std::max<std::int64_t>(1, std::min(blocks, iterations));
  std::vector<std::int64_t> sizes(static_cast<std::size_t>(blocks), iterations / blocks);
  for (std::int64_t k = 0; k < iterations % blocks; ++k) ++sizes[static_cast<std::size_t>(k)];
  return sizes;
}

struct TimedLoop {
  double totalSeconds = 0;
  std::vector<double> samples;  // seconds per iteration, one per block
};

// A step with prepare() (a training step reading its batch) gets it called before each block,
// outside the timed region, as harness/measure/timer.py does.
template <class Step>
TimedLoop timeBlocks(Step& step, std::int64_t iterations, std::int64_t blocks) {
  using Clock = std::chrono::steady_clock;
  const std::vector<std::int64_t> sizes = blockSizes(iterations, blocks);
  TimedLoop loop;
  loop.samples.reserve(sizes.size());
  std::chrono::nanoseconds total{0};
  for (const std::int64_t size : sizes) {
    if constexpr (requires { step.prepare(); }) step.prepare();
    const auto start = Clock::now();
    for (std::int64_t i = 0; i < size; ++i) step();
    const auto elapsed = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start);
    total += elapsed;
    loop.samples.push_back(static_cast<double>(elapsed.count()) * 1e-9 / static_cast<double>(size));
  }
  loop.totalSeconds = static_cast<double>(total.count()) * 1e-9;
  return loop;
}

// mean, sample standard deviation, min and median, as harness/analysis/stats.py summarizes.
struct Summary {
  double mean = 0, std = 0, min = 0, median = 0;
  std::int64_t n = 0;
};

inline Summary summarize(std::vector<double> samples) {
  Summary s;
  s.n = static_cast<std::int64_t>(samples.size());
  if (samples.empty()) return s;
  double sum = 0;
  for (const double x : samples) sum += x;
  s.mean = sum / static_cast<double>(s.n);
  double squares = 0;
  for (const double x : samples) squares += (x - s.mean) * (x - s.mean);
  s.std = s.n > 1 ? std::sqrt(squares / static_cast<double>(s.n - 1)) : 0.0;
  std::sort(samples.begin(), samples.end());
  s.min = samples.front();
  const std::size_t mid = samples.size() / 2;
  s.median = samples.size() % 2 ? samples[mid] : (samples[mid - 1] + samples[mid]) / 2;
  return s;
}

}  // namespace burtorch::driver
