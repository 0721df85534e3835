// burtorch-bench --bandwidth BYTES[,BYTES...]: this core's memory bandwidth with working sets of these
// sizes (harness/machine/bandwidth.py sizes them for each cache level and for DRAM from the machine's
// own cache sizes). Two sweeps over one buffer, in the widest registers the build targets, each over
// kStreams quarters of it at once (several streams in ascending order, as a core's prefetchers follow
// them best, and as a step reads a layer's weights, inputs and gradients side by side):
//   read:  every value loaded into independent sums (bytes read per second);
//   rmw:   every value loaded, scaled and stored back in place, as an SGD update does
//          (bytes read plus bytes written per second).
// Each is the best of many short timings, as --peak's (on a shared machine a long timing also
// counts the other processes' turns on the core), over several buffers (kPlacements). Prints one JSON line:
//   {"bytes": [...], "read_bytes_per_s": [...], "rmw_bytes_per_s": [...], "lanes": W, "sink": x}
#pragma once

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "burtorch/gemm.hpp"
#include "json_line.hpp"

namespace burtorch::driver {

namespace bandwidth {

using Lane = kernels::Register<float, kernels::kWidest<float>>;
// Independent sums: enough to cover the latency of the adds at two loads a cycle.
inline constexpr std::size_t kSums = 8;
inline constexpr std::size_t kStreams = 4;                   // kSums / kStreams sums per stream
inline constexpr std::size_t kStep = kSums * Lane::kWidth;  // floats per round of the read sweep, over every stream
inline constexpr std::size_t kAlignment = 64;                 // a cache line: no load straddles two

struct AlignedFree {
  void operator()(float* p) const noexcept { ::operator delete[](p, std::align_val_t{kAlignment}); }
};
using Buffer = std::unique_ptr<float[], AlignedFree>;

// "24576,1048576" -> sizes in bytes; false on anything else (each at least one round of the sweep).
inline bool parseSizes(std::string_view text, std::vector<std::size_t>& out) {
  while (!text.empty()) {
    const std::string_view item = text.substr(0, text.find(','));
    text.remove_prefix(std::min(text.size(), item.size() + 1));
    std::size_t bytes = 0;
    const auto [next, error] = std::from_chars(item.data(), item.data() + item.size(), bytes);
    if (error != std::errc() || next != item.data() + item.size() || bytes < kStep * sizeof(float)) return false;
    out.push_back(bytes);
  }
  return !out.empty();
}

// Adds the sum of every value to *total: a store the compiler must keep, so that no call is merged with
// the one before it (a function that only reads memory may be called once for many).
BURTORCH_OUTLINE inline void readSweep(const float* data, std::size_t count, float* total) noexcept {
  typename Lane::V sums[kSums];
  for (auto& s : sums) s = Lane::zero();
  constexpr std::size_t kPerStream = kSums / kStreams;
  const std::size_t per = count / kStreams;  // a multiple of kPerStream lanes: count is one of kStep
  for (std::size_t i = 0; i < per; i += kPerStream * Lane::kWidth)
    for (std::size_t s = 0; s < kSums; ++s)
      sums[s] = Lane::add(sums[s], Lane::load(data + (s % kStreams) * per + i + (s / kStreams) * Lane::kWidth));
  for (std::size_t s = 1; s < kSums; ++s) sums[0] = Lane::add(sums[0], sums[s]);
  float out[Lane::kWidth];
  Lane::store(out, sums[0]);
  *total += out[0];
}

// Scales every value in place: a power of two, so that values never drift however many sweeps run.
BURTORCH_OUTLINE inline void updateSweep(float* data, std::size_t count, float scale) noexcept {
  const typename Lane::V factor = Lane::broadcast(&scale);
  const std::size_t per = count / kStreams;
  for (std::size_t i = 0; i < per; i += Lane::kWidth)
    for (std::size_t s = 0; s < kStreams; ++s) Lane::store(data + s * per + i, Lane::mul(Lane::load(data + s * per + i), factor));
}

// The best rate, in bytes per second, of timings of `sweep` repeated for at least 0.1 ms each, over
// at least 0.2 s and 3 timings; `moved`: the bytes one sweep moves.
template <class Sweep>
double bestRate(Sweep&& sweep, double moved) {
  using Clock = std::chrono::steady_clock;
  const auto timed = [&](long repeats) {
    const auto start = Clock::now();
    for (long r = 0; r < repeats; ++r) sweep();
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  sweep();  // the buffer brought to this level before the first timing
  long repeats = 1;
  double took = timed(repeats);
  while (took < 1e-4) took = timed(repeats *= 2);
  double best = moved * static_cast<double>(repeats) / took;
  const auto begin = Clock::now();
  for (int t = 0; t < 3 || std::chrono::duration<double>(Clock::now() - begin).count() < 0.2; ++t)
    best = std::max(best, moved * static_cast<double>(repeats) / timed(repeats));
  return best;
}

struct Rates {
  double read = 0;
  double rmw = 0;
};

// A cache serves one buffer faster than another of the same size, as its pages fall on its sets
// (docs/engine.md): each working set is measured in kPlacements buffers in turn, each allocated anew, and
// the best of each rate is the level's roof, as a step's own data may be placed well.
inline constexpr int kPlacements = 3;

inline Rates measure(std::size_t bytes, float& sink) {
  const std::size_t count = bytes / sizeof(float) / kStep * kStep;
  const double moved = static_cast<double>(count * sizeof(float));
  Rates rates;
  for (int placement = 0; placement < kPlacements; ++placement) {
    const Buffer data(new (std::align_val_t{kAlignment}) float[count]);
    std::fill(data.get(), data.get() + count, 1.0f);  // every page touched before any timing
    rates.read = std::max(rates.read, bestRate([&] { readSweep(data.get(), count, &sink); }, moved));
    bool up = true;
    const double rmw = bestRate([&] { updateSweep(data.get(), count, (up = !up) ? 2.0f : 0.5f); }, 2 * moved);
    rates.rmw = std::max(rates.rmw, rmw);
    sink += data[count - 1];
  }
  return rates;
}

}  // namespace bandwidth

inline int printBandwidth(std::string_view sizesText) {
  std::vector<std::size_t> sizes;
  if (!bandwidth::parseSizes(sizesText, sizes)) {
    std::fprintf(stderr, "burtorch-bench --bandwidth: expected BYTES[,BYTES...], each at least %zu, got '%.*s'\n",
                 bandwidth::kStep * sizeof(float), static_cast<int>(sizesText.size()), sizesText.data());
    return 2;
  }
  std::vector<double> bytes, read, rmw;
  float sink = 0;
  for (const std::size_t size : sizes) {
    const bandwidth::Rates rates = bandwidth::measure(size, sink);
    bytes.push_back(static_cast<double>(size / sizeof(float) / bandwidth::kStep * bandwidth::kStep * sizeof(float)));
    read.push_back(rates.read);
    rmw.push_back(rates.rmw);
  }
  std::fputs(JsonLine()
                 .array("bytes", bytes)
                 .array("read_bytes_per_s", read)
                 .array("rmw_bytes_per_s", rmw)
                 .field("lanes", static_cast<std::int64_t>(bandwidth::Lane::kWidth))
                 .field("sink", static_cast<double>(sink))
                 .finish()
                 .c_str(),
             stdout);
  return 0;
}

}  // namespace burtorch::driver
