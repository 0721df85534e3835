#pragma once
// workloads/catalog/max_pool2d.py on LibTorch: one forward at::max_pool2d per step, FP32, of the
// input the harness prepared (--inputs DIR/input.bin, an (N, H, W, C) float32 array), viewed as
// NCHW over its channels-last storage as burn-bench's input is. No autograd: the release timed
// the forward alone. The window comes from the workload's parameters; NaN defaults make a missing
// one an error, so that the declaration stays the one place that sets them.
#include <torch/types.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli.hpp"
#include "inputs.hpp"

class MaxPool2dWorkload {
 public:
  static constexpr std::string_view kPrecision = "fp32";
  static constexpr double kUnset = std::numeric_limits<double>::quiet_NaN();
  static constexpr std::array<burtorch::driver::Param, 6> kDefaults{{{"batch", kUnset},
                                                                     {"channels", kUnset},
                                                                     {"size", kUnset},
                                                                     {"kernel", kUnset},
                                                                     {"stride", kUnset},
                                                                     {"padding", kUnset}}};
  // workloads/catalog/max_pool2d.py's WEIGHT_MODULUS.
  static constexpr std::int64_t kWeightModulus = 97;

  MaxPool2dWorkload(const std::array<burtorch::driver::Param, 6>& params, const burtorch::driver::Options& options) {
    std::array<std::int64_t, 6> v{};
    for (std::size_t k = 0; k < v.size(); ++k) {
      if (std::isnan(params[k].value) || params[k].value < 0) {
        throw std::invalid_argument("max_pool2d needs --param " + std::string(params[k].name) + "=N");
      }
      v[k] = static_cast<std::int64_t>(params[k].value);
    }
    const auto [n, c, side, kernel, stride, padding] = v;
    kernel_ = kernel, stride_ = stride, padding_ = padding;
    x_ = readInput(std::string(options.inputs) + "/input.bin", {n, side, side, c}).permute({0, 3, 1, 2});
  }

  void operator()() { out_ = at::max_pool2d(x_, {kernel_, kernel_}, {stride_, stride_}, {padding_, padding_}); }

  // Two FP64 sums of the output in NCHW order (plain, and weighted by the index mod 97), one (H, W) plane at a
  // time: the checksum adds no output-sized copy to the peak memory.
  std::vector<std::pair<std::string_view, double>> outputs() const {
    const std::int64_t planes = out_.size(0) * out_.size(1), channels = out_.size(1);
    const std::int64_t plane = out_.size(2) * out_.size(3);
    const auto offsets = torch::arange(plane, torch::kInt64);
    double total = 0, weighted = 0;
    for (std::int64_t k = 0; k < planes; ++k) {
      const auto values = out_[k / channels][k % channels].reshape({-1}).to(torch::kFloat64);
      const auto weights = torch::remainder(offsets + k * plane, kWeightModulus).to(torch::kFloat64);
      total += values.sum().item<double>();
      weighted += values.dot(weights).item<double>();
    }
    return {{"sum", total}, {"weighted_sum", weighted}};
  }

 private:
  static torch::Tensor readInput(const std::string& path, const std::array<std::int64_t, 4>& shape) {
    burtorch::driver::ArrayFile file;
    std::string error;
    if (!file.open(path, burtorch::driver::Dtype::Float32, 4, error)) throw std::runtime_error(error);
    for (std::size_t k = 0; k < shape.size(); ++k) {
      if (static_cast<std::int64_t>(file.dim(k)) != shape[k]) {
        throw std::runtime_error(path + ": its shape is not the point's (N, H, W, C)");
      }
    }
    auto x = torch::empty({shape[0], shape[1], shape[2], shape[3]}, torch::kFloat32);
    if (!file.read(0, file.elements(), x.data_ptr<float>())) throw std::runtime_error(path + ": read failed");
    return x;
  }

  std::int64_t kernel_ = 0, stride_ = 0, padding_ = 0;
  torch::Tensor x_, out_;
};
