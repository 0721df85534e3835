// Random parameters and token rows for the training tests (any fixed values would do: the tests
// compare two paths over the same inputs).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "burtorch/burtorch.hpp"

namespace random_inputs {

// Parameters uniform in (-1, 1), as the harness draws them.
template <class T>
void randomize(burtorch::NodeRange<T> params, std::uint64_t seed) {
  burtorch::Rng rng(seed);
  for (std::size_t k = 0; k < params.size(); ++k) params[k].setData(rng.uniform<T>(-1, 1));
}

// `count` samples of `width` token ids below vocab.
inline std::vector<std::uint8_t> sampleRows(std::size_t count, std::size_t width, std::size_t vocab,
                                            std::uint64_t seed) {
  burtorch::Rng rng(seed);
  std::vector<std::uint8_t> rows(count * width);
  for (std::uint8_t& id : rows) id = static_cast<std::uint8_t>(rng.next() % vocab);
  return rows;
}

}  // namespace random_inputs
