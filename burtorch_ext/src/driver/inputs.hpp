// The shared-inputs folder of an MLP or GPT run, as workloads/inputs.py writes it: config.txt
// (key=value lines), params.bin (float32 initial parameters), samples.bin (uint8 token rows) and
// batches.bin (int32 sample rows of every step), each .bin a 48-byte header and a little-endian
// payload. Everything is checked when the folder is opened, before any timing; after that a
// step's batch is read straight from the files, so that memory does not grow with the batch or
// the number of steps.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace burtorch::driver {

static_assert(std::endian::native == std::endian::little, "the inputs' arrays are little-endian");

class Config {
 public:
  // Parses `key=value` lines; false (with `error`) if the file cannot be read.
  bool read(const std::string& path, std::string& error) {
    std::FILE* file = std::fopen(path.c_str(), "rb");
    if (!file) {
      error = "cannot open " + path;
      return false;
    }
    std::string text;
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, file)) > 0;) text.append(buffer, n);
    std::fclose(file);
    std::size_t at = 0;
    while (at < text.size()) {
      std::size_t end = text.find('\n', at);
      if (end == std::string::npos) end = text.size();
      std::string_view line(text.data() + at, end - at);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (const auto eq = line.find('='); eq != std::string_view::npos)
        entries_.emplace_back(std::string(line.substr(0, eq)), std::string(line.substr(eq + 1)));
      at = end + 1;
    }
    return true;
  }

  // The value of the key's last line, as Python's reader keeps it.
  std::optional<std::string_view> text(std::string_view key) const {
    for (auto entry = entries_.rbegin(); entry != entries_.rend(); ++entry)
      if (entry->first == key) return std::string_view(entry->second);
    return std::nullopt;
  }

  std::optional<double> number(std::string_view key) const {
    const auto value = text(key);
    if (!value || value->empty()) return std::nullopt;
    const std::string copy(*value);
    char* end = nullptr;
    const double x = std::strtod(copy.c_str(), &end);
    if (end != copy.c_str() + copy.size()) return std::nullopt;
    return x;
  }

  std::optional<std::int64_t> integer(std::string_view key) const {
    const auto value = text(key);
    if (!value || value->empty()) return std::nullopt;
    const std::string copy(*value);
    char* end = nullptr;
    const long long x = std::strtoll(copy.c_str(), &end, 10);
    if (end != copy.c_str() + copy.size()) return std::nullopt;
    return x;
  }

 private:
  std::vector<std::pair<std::string, std::string>> entries_;
};

enum class Dtype : std::uint32_t { Float32 = 1, Int32 = 2, UInt8 = 3 };

inline std::size_t elementSize(Dtype dtype) { return dtype == Dtype::UInt8 ? 1 : 4; }

// One .bin array, open for reading elements at any position.
class ArrayFile {
 public:
  static constexpr std::size_t kHeaderBytes = 48;

  ArrayFile() = default;
  ArrayFile(const ArrayFile&) = delete;
  ArrayFile& operator=(const ArrayFile&) = delete;
  ~ArrayFile() {
    if (file_) std::fclose(file_);
  }

  // Opens `path` and checks its header against the expected type and number of dimensions,
  // and its size against the header.
  bool open(const std::string& path, Dtype dtype, std::uint32_t ndim, std::string& error) {
    file_ = std::fopen(path.c_str(), "rb");
    if (!file_) {
      error = "cannot open " + path;
      return false;
    }
    std::setvbuf(file_, nullptr, _IONBF, 0);  // reads are a few bytes at scattered places
    unsigned char header[kHeaderBytes];
    if (std::fread(header, 1, sizeof header, file_) != sizeof header) {
      error = path + ": shorter than the 48-byte header";
      return false;
    }
    std::uint32_t code = 0, dims = 0;
    std::memcpy(&code, header + 8, 4);
    std::memcpy(&dims, header + 12, 4);
    std::memcpy(shape_, header + 16, sizeof shape_);
    if (std::memcmp(header, "BBARRAY1", 8) != 0 || code != static_cast<std::uint32_t>(dtype) || dims != ndim) {
      error = path + ": not the expected array (magic BBARRAY1, dtype " + std::to_string(static_cast<unsigned>(dtype)) +
              ", " + std::to_string(ndim) + " dimensions)";
      return false;
    }
    elementBytes_ = elementSize(dtype);
    const std::uint64_t expected = kHeaderBytes + elements() * elementBytes_;
    if (!seek(0, SEEK_END) || tell() != expected) {
      error = path + ": its size does not match its header (" + std::to_string(expected) + " bytes)";
      return false;
    }
    return true;
  }

  std::uint64_t dim(std::size_t k) const { return shape_[k]; }
  std::uint64_t elements() const { return shape_[0] * shape_[1] * shape_[2] * shape_[3]; }

  // Reads `count` elements starting at element `first` of the flat payload.
  bool read(std::uint64_t first, std::uint64_t count, void* out) {
    if (!seek(kHeaderBytes + first * elementBytes_, SEEK_SET)) return false;
    return std::fread(out, elementBytes_, count, file_) == count;
  }

 private:
  bool seek(std::uint64_t offset, int whence) {
#if defined(_WIN32)
    return _fseeki64(file_, static_cast<long long>(offset), whence) == 0;
#else
    return fseeko(file_, static_cast<off_t>(offset), whence) == 0;
#endif
  }
  std::uint64_t tell() {
#if defined(_WIN32)
    return static_cast<std::uint64_t>(_ftelli64(file_));
#else
    return static_cast<std::uint64_t>(ftello(file_));
#endif
  }

  std::FILE* file_ = nullptr;
  std::uint64_t shape_[4] = {1, 1, 1, 1};
  std::size_t elementBytes_ = 1;
};

// A training run's inputs: its config, its initial parameters, and its batches step by step.
class TrainingInputs {
 public:
  // Opens `folder` and checks that it holds `workload`'s inputs, consistent throughout: the
  // arrays' sizes, every batch's sample rows, every token id below `vocab`.
  bool open(std::string_view folder, std::string_view workload, std::string& error) {
    const std::string base = std::string(folder) + "/";
    if (!config_.read(base + "config.txt", error)) {
      error += " (not a shared-inputs folder: prepare it with the workload's prepare())";
      return false;
    }
    if (config_.integer("format") != 1) return fail(error, "config.txt: inputs format is not 1");
    if (config_.text("workload") != workload)
      return fail(error, "config.txt: these inputs are for '" + std::string(config_.text("workload").value_or("?")) +
                             "', not '" + std::string(workload) + "'");
    const auto steps = config_.integer("steps"), batch = config_.integer("batch");
    const auto count = config_.integer("param_count"), vocab = config_.integer("vocab");
    const auto rate = config_.number("learning_rate");
    if (!steps || !batch || !count || !vocab || !rate || *steps < 1 || *batch < 1 || *count < 1 || *vocab < 1)
      return fail(error, "config.txt: steps, batch, param_count, vocab and learning_rate must be given and positive");
    steps_ = *steps;
    batch_ = *batch;
    paramCount_ = static_cast<std::size_t>(*count);
    learningRate_ = *rate;
    if (!params_.open(base + "params.bin", Dtype::Float32, 1, error) ||
        !samples_.open(base + "samples.bin", Dtype::UInt8, 2, error) ||
        !batches_.open(base + "batches.bin", Dtype::Int32, 2, error))
      return false;
    if (params_.dim(0) != paramCount_) return fail(error, "params.bin does not hold param_count values");
    if (batches_.dim(0) != static_cast<std::uint64_t>(steps_) || batches_.dim(1) != static_cast<std::uint64_t>(batch_))
      return fail(error, "batches.bin is not steps x batch");
    width_ = static_cast<std::size_t>(samples_.dim(1));
    ids_.resize(static_cast<std::size_t>(batch_));
    return checkSamples(static_cast<std::uint64_t>(*vocab), error) && checkBatches(error);
  }

  const Config& config() const { return config_; }
  std::int64_t steps() const { return steps_; }
  std::int64_t batch() const { return batch_; }
  std::size_t paramCount() const { return paramCount_; }
  double learningRate() const { return learningRate_; }
  std::size_t sampleWidth() const { return width_; }

  // The initial parameters, all of them, into `out`.
  bool readParams(float* out) { return params_.read(0, paramCount_, out); }

  // The rows of step `step`'s batch, one after another, into `rows` (batch x width bytes).
  bool readBatch(std::int64_t step, std::uint8_t* rows) {
    if (!batches_.read(static_cast<std::uint64_t>(step * batch_), ids_.size(), ids_.data())) return false;
    for (std::size_t s = 0; s < ids_.size(); ++s)
      if (!samples_.read(static_cast<std::uint64_t>(ids_[s]) * width_, width_, rows + s * width_)) return false;
    return true;
  }

 private:
  static bool fail(std::string& error, std::string message) {
    error = std::move(message);
    return false;
  }

  // Streamed through a small buffer, so that checking costs no memory.
  bool checkSamples(std::uint64_t vocab, std::string& error) {
    std::uint8_t chunk[4096];
    const std::uint64_t total = samples_.elements();
    for (std::uint64_t at = 0; at < total; at += sizeof chunk) {
      const std::uint64_t n = std::min<std::uint64_t>(sizeof chunk, total - at);
      if (!samples_.read(at, n, chunk)) return fail(error, "samples.bin: read failed");
      for (std::uint64_t k = 0; k < n; ++k)
        if (chunk[k] >= vocab) return fail(error, "samples.bin: a token id is not below vocab");
    }
    return true;
  }

  bool checkBatches(std::string& error) {
    std::int32_t chunk[1024];
    const std::uint64_t total = batches_.elements(), rows = samples_.dim(0);
    for (std::uint64_t at = 0; at < total; at += 1024) {
      const std::uint64_t n = std::min<std::uint64_t>(1024, total - at);
      if (!batches_.read(at, n, chunk)) return fail(error, "batches.bin: read failed");
      for (std::uint64_t k = 0; k < n; ++k)
        if (chunk[k] < 0 || static_cast<std::uint64_t>(chunk[k]) >= rows)
          return fail(error, "batches.bin: a sample row is outside samples.bin");
    }
    return true;
  }

  Config config_;
  ArrayFile params_, samples_, batches_;
  std::int64_t steps_ = 0, batch_ = 0;
  std::size_t paramCount_ = 0, width_ = 0;
  double learningRate_ = 0;
  std::vector<std::int32_t> ids_;
};

}  // namespace burtorch::driver
