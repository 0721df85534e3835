// Save and load of seven activations of the small graph (the paper's Table 4, workloads/save_load.py):
// a, b and the final values of c, d, e, f and g, FP64, 56 bytes of raw payload.
//
// The graph is built and backpropagated once. Each step gathers the seven values into seven
// consecutive nodes and writes that node range to a file (one raw write), then reads the file
// into seven other consecutive nodes; the two halves are timed apart and summed over the timed
// loop as save_s and load_s. As in the Python engines, one untimed round trip is made when the
// workload is built (the workload runs no warm-up steps), and the outputs are the loaded values.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "burtorch/burtorch.hpp"
#include "cli.hpp"
#include "json_line.hpp"
#include "scalar_graphs.hpp"

#if defined(_WIN32)
#include <process.h>
#else
#include <unistd.h>
#endif

namespace burtorch::driver {

class SaveLoadWorkload {
 public:
  using T = double;
  static constexpr std::string_view kName = "save_load";
  static constexpr std::string_view kPrecision = "fp64";
  static constexpr auto kDefaults = SmallGraph::kDefaults;
  static constexpr std::size_t kCount = 7;

  SaveLoadWorkload(std::span<const Param> params, const Options&) : a_(params[0].value), b_(params[1].value) {
    const auto v = SmallGraph::variables(a_, b_);
    backward(v.g);
    activations_ = {a_, b_, v.c, v.d, v.e, v.f, v.g};
    saved_ = leaves<T>(kCount);
    loaded_ = leaves<T>(kCount, std::numeric_limits<T>::quiet_NaN());
    path_ = temporaryFile();
    (*this)();
    saveNs_ = loadNs_ = 0;
  }

  ~SaveLoadWorkload() { std::remove(path_.c_str()); }
  SaveLoadWorkload(const SaveLoadWorkload&) = delete;
  SaveLoadWorkload& operator=(const SaveLoadWorkload&) = delete;

  void operator()() {
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    for (std::size_t k = 0; k < kCount; ++k) saved_[k].setData(activations_[k].data());
    const bool saved = save(path_.c_str(), saved_[0], saved_[kCount - 1]);
    const auto middle = Clock::now();
    const bool loaded = load(path_.c_str(), loaded_[0], loaded_[kCount - 1]);
    const auto end = Clock::now();
    if (!saved || !loaded) {
      std::fprintf(stderr, "burtorch-bench: error: cannot %s %s\n", saved ? "load" : "save", path_.c_str());
      std::exit(1);
    }
    saveNs_ += std::chrono::duration_cast<std::chrono::nanoseconds>(middle - start).count();
    loadNs_ += std::chrono::duration_cast<std::chrono::nanoseconds>(end - middle).count();
  }

  std::array<Param, kCount> outputs() const noexcept {
    std::array<Param, kCount> out;
    for (std::size_t k = 0; k < kCount; ++k) out[k] = {kNames[k], loaded_[k].data()};
    return out;
  }

  void extras(JsonLine& json) const {
    json.field("save_s", static_cast<double>(saveNs_) * 1e-9)
        .field("load_s", static_cast<double>(loadNs_) * 1e-9)
        .field("file_size_bytes", fileSize());
  }

 private:
  static constexpr std::string_view kNames[kCount] = {"a", "b", "c", "d", "e", "f", "g"};

  // A file of this process in the temporary folder the environment names (std::filesystem
  // would double the driver's size for this one call).
  static std::string temporaryFile() {
    std::string folder;
    for (const char* name : {"TMPDIR", "TEMP", "TMP"}) {
      if (const char* value = std::getenv(name); value && *value && folder.empty()) folder = value;
    }
#if defined(_WIN32)
    const long long pid = _getpid();
    if (folder.empty()) folder = ".";
#else
    const long long pid = getpid();
    if (folder.empty()) folder = "/tmp";
#endif
    return folder + "/burtorch-save-load-" + std::to_string(pid) + ".bin";
  }

  std::optional<std::uint64_t> fileSize() const {
    std::FILE* file = std::fopen(path_.c_str(), "rb");
    if (!file) return std::nullopt;
    const bool ok = std::fseek(file, 0, SEEK_END) == 0;
    const long size = std::ftell(file);
    std::fclose(file);
    if (!ok || size < 0) return std::nullopt;
    return static_cast<std::uint64_t>(size);
  }

  Value<T> a_, b_;
  std::array<Value<T>, kCount> activations_;
  NodeRange<T> saved_, loaded_;
  std::string path_;
  std::int64_t saveNs_ = 0, loadNs_ = 0;
};

}  // namespace burtorch::driver
