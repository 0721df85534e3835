// burtorch-bench --products MxKxN[,MxKxN...]: our block products (gemm.hpp) timed alone at the
// shapes a training step multiplies, C = A B with A (m x k) and B (k x n) row-major, as
// harness/machine/ceiling.py times a library's SGEMM at the same shapes: repeats of one product
// for at least 2 ms, the best of 5 such timings. Prints one JSON line:
//   {"version": "burtorch ...", "seconds": [the best time of one product, per shape]}
#pragma once

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <system_error>
#include <string>
#include <string_view>
#include <vector>

#include "burtorch/gemm.hpp"
#include "burtorch/random.hpp"
#include "json_line.hpp"

namespace burtorch::driver {

namespace products {

using Shape = std::array<std::size_t, 3>;  // m, k, n

// "64x1024x1024,1x27x64" -> shapes; false on anything else.
inline bool parseShapes(std::string_view text, std::vector<Shape>& out) {
  while (!text.empty()) {
    const std::string_view item = text.substr(0, text.find(','));
    text.remove_prefix(std::min(text.size(), item.size() + 1));
    Shape shape{};
    const char* at = item.data();
    const char* const end = item.data() + item.size();
    for (std::size_t d = 0; d < 3; ++d) {
      const auto [next, error] = std::from_chars(at, end, shape[d]);
      if (error != std::errc() || shape[d] == 0 || (d < 2 ? next == end || *next != 'x' : next != end)) return false;
      at = next + 1;
    }
    out.push_back(shape);
  }
  return !out.empty();
}

// The best time of one product C = A B at `shape`.
inline double bestSeconds(const Shape& shape) {
  using Clock = std::chrono::steady_clock;
  const auto [m, k, n] = shape;
  std::vector<float> a(m * k), b(k * n), c(m * n);
  Rng random(1);
  for (float& x : a) x = random.uniform(-1.0f, 1.0f);
  for (float& x : b) x = random.uniform(-1.0f, 1.0f);
  const kernels::StridedRows<float> aRows{a.data(), k}, bRows{b.data(), n}, cRows{c.data(), n};
  const auto product = [&] {
    kernels::gemm<float>(m, n, k, kernels::AFromRows<kernels::StridedRows<float>>{aRows, m},
                         kernels::BFromRows<kernels::StridedRows<float>>{bRows, n}, cRows, true);
  };
  const auto timed = [&](long repeats) {
    const auto start = Clock::now();
    for (long r = 0; r < repeats; ++r) product();
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  product();
  long repeats = 1;
  double took = timed(repeats);
  while (took < 2e-3) took = timed(repeats *= 2);
  double best = took / static_cast<double>(repeats);
  for (int t = 0; t < 4; ++t) best = std::min(best, timed(repeats) / static_cast<double>(repeats));
  return best;
}

}  // namespace products

inline int printProducts(std::string_view shapesText, const std::string& version) {
  std::vector<products::Shape> shapes;
  if (!products::parseShapes(shapesText, shapes)) {
    std::fprintf(stderr, "burtorch-bench --products: expected MxKxN[,MxKxN...] (positive sizes), got '%.*s'\n",
                 static_cast<int>(shapesText.size()), shapesText.data());
    return 2;
  }
  std::vector<double> seconds;
  for (const products::Shape& shape : shapes) seconds.push_back(products::bestSeconds(shape));
  std::fputs(JsonLine().field("version", version).array("seconds", seconds).finish().c_str(), stdout);
  return 0;
}

}  // namespace burtorch::driver
