// What the MLP and the GPT share: their parameter tensors as workloads/inputs.py names them
// (`name:d0xd1,...`), and sizes read from a run's config.txt.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "inputs.hpp"

namespace burtorch::driver {

struct Tensor {
  std::string name;
  std::vector<std::size_t> dims;
};

// The `params` entry of config.txt for these tensors.
inline std::string formatTensors(const std::vector<Tensor>& tensors) {
  std::string out;
  for (const Tensor& t : tensors) {
    if (!out.empty()) out += ',';
    out += t.name + ':';
    for (std::size_t k = 0; k < t.dims.size(); ++k) {
      if (k) out += 'x';
      out += std::to_string(t.dims[k]);
    }
  }
  return out;
}

inline std::size_t countValues(const std::vector<Tensor>& tensors) {
  std::size_t total = 0;
  for (const Tensor& t : tensors) {
    std::size_t n = 1;
    for (const std::size_t d : t.dims) n *= d;
    total += n;
  }
  return total;
}

// Sets each size from the config's integer of that name; false, naming the key, if one is
// missing or not positive.
inline bool readSizes(const Config& config, std::initializer_list<std::pair<std::string_view, std::size_t*>> sizes,
                      std::string& error) {
  for (const auto& [key, size] : sizes) {
    const auto value = config.integer(key);
    if (!value || *value < 1) {
      error = "config.txt: '" + std::string(key) + "' must be a positive integer";
      return false;
    }
    *size = static_cast<std::size_t>(*value);
  }
  return true;
}

}  // namespace burtorch::driver
