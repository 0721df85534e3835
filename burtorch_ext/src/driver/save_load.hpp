// Save and load of seven activations of the small graph (the paper's Table 4, workloads/save_load.py):
// a, b and the final values of c, d, e, f and g, FP64, 56 bytes of raw payload.
//
// The graph is built and backpropagated once. Each step saves the seven values to a file, then
// reads the file into seven consecutive nodes; the two halves are timed apart and summed over
// the timed loop as save_s and load_s. How the bytes travel is the Transfer: StdioTransfer
// (--timing lean) or, as the authors' programs do, MappedTransfer (--timing paper). As in the
// Python engines, one untimed round trip is made when the workload is built (the workload runs
// no warm-up steps), and the outputs are the loaded values.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "burtorch/burtorch.hpp"
#include "cli.hpp"
#include "json_line.hpp"
#include "mapped_file.hpp"
#include "scalar_graphs.hpp"

#if defined(_WIN32)
#include <process.h>
#else
#include <unistd.h>
#endif

namespace burtorch::driver {

constexpr std::size_t kSavedCount = 7;
using SavedValues = std::array<Value<double>, kSavedCount>;

// Gathers the values into seven consecutive nodes and writes that node range with one unbuffered
// write (burtorch/serialize.hpp); reads the file with one read.
class StdioTransfer {
 public:
  static constexpr std::string_view kName = "stdio";

  bool save(const char* path, const SavedValues& values) noexcept {
    for (std::size_t k = 0; k < kSavedCount; ++k) staged_[k].setData(values[k].data());
    return burtorch::save(path, staged_[0], staged_[kSavedCount - 1]);
  }

  static bool load(const char* path, NodeRange<double> into) noexcept {
    return burtorch::load(path, into[0], into[kSavedCount - 1]);
  }

 private:
  NodeRange<double> staged_ = leaves<double>(kSavedCount);
};

#if !defined(_WIN32)
// The authors' saveToFile/loadFromFile: one mapping of the file per save and per load, each
// value copied straight from its node into the mapping and back.
class MappedTransfer {
 public:
  static constexpr std::string_view kName = "mmap";
  static constexpr std::size_t kBytes = kSavedCount * sizeof(double);

  static bool save(const char* path, const SavedValues& values) noexcept {
    MappedFile file = MappedFile::forWriting(path, kBytes);
    if (!file) return false;
    for (std::size_t k = 0; k < kSavedCount; ++k) {
      const double value = values[k].data();
      std::memcpy(file.data() + k * sizeof(double), &value, sizeof(double));
    }
    return file.unmap();
  }

  static bool load(const char* path, NodeRange<double> into) noexcept {
    MappedFile file = MappedFile::forReading(path);
    if (!file || file.size() != kBytes) return false;
    for (std::size_t k = 0; k < kSavedCount; ++k) {
      double value;
      std::memcpy(&value, file.data() + k * sizeof(double), sizeof(double));
      into[k].setData(value);
    }
    return file.unmap();
  }
};
#endif

template <class Transfer>
class SaveLoadWorkload {
 public:
  using T = double;
  static constexpr std::string_view kName = "save_load";
  static constexpr std::string_view kPrecision = "fp64";
  static constexpr auto kDefaults = SmallGraph::kDefaults;
  static constexpr std::size_t kCount = kSavedCount;

  SaveLoadWorkload(std::span<const Param> params, const Options&)
      : a_(params[0].value),
        b_(params[1].value),
        activations_(activationsOf(a_, b_)),
        loaded_(leaves<T>(kCount, std::numeric_limits<T>::quiet_NaN())),
        path_(temporaryFile()) {
    (*this)();
    saveNs_ = loadNs_ = 0;
  }

  ~SaveLoadWorkload() { std::remove(path_.c_str()); }
  SaveLoadWorkload(const SaveLoadWorkload&) = delete;
  SaveLoadWorkload& operator=(const SaveLoadWorkload&) = delete;

  void operator()() {
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    const bool saved = transfer_.save(path_.c_str(), activations_);
    const auto middle = Clock::now();
    const bool loaded = transfer_.load(path_.c_str(), loaded_);
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
        .field("file_size_bytes", fileSize())
        .field("file_io", Transfer::kName);
  }

 private:
  static constexpr std::string_view kNames[kCount] = {"a", "b", "c", "d", "e", "f", "g"};

  // The small graph, backpropagated once: a, b and the final c, d, e, f, g.
  static SavedValues activationsOf(Value<T> a, Value<T> b) noexcept {
    const auto v = SmallGraph::variables(a, b);
    backward(v.g);
    return {a, b, v.c, v.d, v.e, v.f, v.g};
  }

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

  // In this order: the staging nodes of a StdioTransfer follow the graph's.
  Value<T> a_, b_;
  SavedValues activations_;
  Transfer transfer_;
  NodeRange<T> loaded_;
  std::string path_;
  std::int64_t saveNs_ = 0, loadNs_ = 0;
};

using LeanSaveLoad = SaveLoadWorkload<StdioTransfer>;
#if defined(_WIN32)
// No mapped variant on Windows (the authors' CreateFileMapping path is not written here): both
// timings run the stdio loop, and report timed_as "lean".
using AuthorsSaveLoad = LeanSaveLoad;
#else
using AuthorsSaveLoad = SaveLoadWorkload<MappedTransfer>;
#endif

}  // namespace burtorch::driver
