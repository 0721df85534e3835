// libtorch-bench: the paper's "PyTorch, Eager, LibTorch, C++" rows. Runs one workload with
// PyTorch's C++ API and prints ONE JSON line on stdout, the protocol of harness/running/worker.py and
// burtorch-bench (whose command line, JSON writer, block timer and process counters it shares),
// so the harness runs it as the engine libtorch/eager/cpp/cpu. FP64, one thread.
//
//   libtorch-bench WORKLOAD --iterations N [--warmup W] [--blocks K] [--timing paper|lean] [--param NAME=VALUE ...]
//
// Workloads: tiny, small, energy (the small graph, run end to end), save_load, and max_pool2d
// (FP32, max_pool2d.hpp).
#include <ATen/Parallel.h>
#include <torch/serialize.h>
#include <torch/types.h>
#include <torch/version.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(_WIN32)
#include <process.h>
#define BURTBENCH_GETPID _getpid
#else
#include <unistd.h>
#define BURTBENCH_GETPID getpid
#endif

#include "cli.hpp"
#include "dispatch.hpp"
#include "json_line.hpp"
#include "max_pool2d.hpp"
#include "measured_run.hpp"

namespace {

using burtorch::driver::JsonLine;
using burtorch::driver::Options;
using burtorch::driver::Param;
using Output = std::pair<std::string_view, double>;
using Params = std::array<Param, 2>;

torch::Tensor leaf(double value) {
  return torch::scalar_tensor(value, torch::TensorOptions().dtype(torch::kFloat64).requires_grad(true));
}

// Paper Fig. 1, as engines/graphs.py writes it.
struct TinyGraph {
  static constexpr Params kDefaults{{{"a", -41.0}, {"b", 2.0}}};

  static torch::Tensor build(const torch::Tensor& a, const torch::Tensor& b) {
    const auto c = a + b;
    const auto d = a * b + b.pow(3);
    const auto e = c - d;
    const auto f = e.pow(2);
    return f / 2.0;
  }
};

// Paper Fig. 2 (micrograd's example), as engines/graphs.py writes it: `x = x + y` makes a new node.
struct SmallGraph {
  static constexpr Params kDefaults{{{"a", -4.0}, {"b", 2.0}}};

  struct Nodes {
    torch::Tensor c, d, e, f, g;
  };

  static Nodes nodes(const torch::Tensor& a, const torch::Tensor& b) {
    auto c = a + b;
    auto d = a * b + b.pow(3);
    c = c + (c + 1);
    c = c + (1 + c + (-a));
    d = d + (d * 2 + torch::relu(b + a));
    d = d + (3 * d + torch::relu(b - a));
    auto e = c - d;
    auto f = e.pow(2);
    auto g = f / 2.0;
    g = g + 10.0 / f;
    return {c, d, e, f, g};
  }

  static torch::Tensor build(const torch::Tensor& a, const torch::Tensor& b) { return nodes(a, b).g; }
};

// --timing lean: every step rebuilds the autograd graph from the persistent leaves and
// backpropagates, as the Python eager engine does (its gradients are reset to undefined, like
// `a.grad = None`).
template <class Graph>
class GradientWorkload {
 public:
  static constexpr Params kDefaults = Graph::kDefaults;

  explicit GradientWorkload(const Params& params) : a_(leaf(params[0].value)), b_(leaf(params[1].value)) {}

  void operator()() {
    a_.mutable_grad().reset();
    b_.mutable_grad().reset();
    const auto g = Graph::build(a_, b_);
    g.backward();
    g_ = g.detach();
  }

  std::vector<Output> outputs() const {
    return {{"g", g_.item<double>()}, {"dg_da", a_.grad().item<double>()}, {"dg_db", b_.grad().item<double>()}};
  }

 private:
  torch::Tensor a_, b_, g_;
};

// --timing paper: the authors' programs make both leaves with torch::tensor in every iteration,
// so each starts without a gradient, and keep nothing between iterations (here the last step's
// tensors stay until the next step replaces them, for outputs()).
template <class Graph>
class AuthorsGradientWorkload {
 public:
  static constexpr Params kDefaults = Graph::kDefaults;

  explicit AuthorsGradientWorkload(const Params& params) : aData_(params[0].value), bData_(params[1].value) {}

  void operator()() {
    a_ = torch::tensor(aData_, torch::dtype(torch::kFloat64).requires_grad(true));
    b_ = torch::tensor(bData_, torch::dtype(torch::kFloat64).requires_grad(true));
    g_ = Graph::build(a_, b_);
    g_.backward();
  }

  std::vector<Output> outputs() const {
    return {{"g", g_.item<double>()}, {"dg_da", a_.grad().item<double>()}, {"dg_db", b_.grad().item<double>()}};
  }

 private:
  double aData_, bData_;
  torch::Tensor a_, b_, g_;
};

// workloads/save_load.py: the small graph's seven activations (leaves a, b; final c, d, e, f, g),
// computed with their gradients once; each step writes them to a file with torch::save and reads
// them back with torch::load. Save and load are timed apart and summed over the steps; the file
// is then deleted, untimed, so that every save writes a new file as in the Python engines.
class SaveLoadWorkload {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr Params kDefaults = SmallGraph::kDefaults;
  static constexpr std::array<std::string_view, 7> kNames{"a", "b", "c", "d", "e", "f", "g"};

  explicit SaveLoadWorkload(const Params& params)
      : folder_(std::filesystem::temp_directory_path() /
                ("burtbench-save-load-libtorch-" + std::to_string(BURTBENCH_GETPID()))),
        path_(folder_ / "activations.pt"),
        file_(path_.string()) {
    std::filesystem::create_directories(folder_);
    const auto a = leaf(params[0].value);
    const auto b = leaf(params[1].value);
    const auto n = SmallGraph::nodes(a, b);
    n.g.backward();
    for (const auto& node : {a, b, n.c, n.d, n.e, n.f, n.g}) activations_.push_back(node.detach());
    // One untimed round trip: the serializer is warm before the first step, as in the Python
    // engines (the workload runs no warm-up steps, so the sums cover the timed loop only).
    (*this)();
    save_ = load_ = Clock::duration::zero();
  }

  SaveLoadWorkload(const SaveLoadWorkload&) = delete;
  SaveLoadWorkload& operator=(const SaveLoadWorkload&) = delete;

  ~SaveLoadWorkload() {
    std::error_code ignored;
    std::filesystem::remove_all(folder_, ignored);
  }

  void operator()() {
    const auto start = Clock::now();
    torch::save(activations_, file_);
    const auto saved = Clock::now();
    std::vector<torch::Tensor> loaded;
    torch::load(loaded, file_);
    const auto done = Clock::now();
    save_ += saved - start;
    load_ += done - saved;
    loaded_ = std::move(loaded);
    fileSize_ = std::filesystem::file_size(path_);
    std::filesystem::remove(path_);
  }

  // A short read (a broken file) leaves names out, and the harness's check reports them missing.
  std::vector<Output> outputs() const {
    std::vector<Output> out;
    for (std::size_t k = 0; k < kNames.size() && k < loaded_.size(); ++k) {
      out.emplace_back(kNames[k], loaded_[k].item<double>());
    }
    return out;
  }

  void extras(JsonLine& json) const {
    json.field("save_s", seconds(save_))
        .field("load_s", seconds(load_))
        .field("file_size_bytes", static_cast<std::int64_t>(fileSize_))
        .field("save_load_dir", folder_.string());
  }

 private:
  static double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

  std::filesystem::path folder_, path_;
  std::string file_;  // path_ as the serializer takes it, converted once, outside the timings
  std::vector<torch::Tensor> activations_;
  std::vector<torch::Tensor> loaded_;
  Clock::duration save_{}, load_{};
  std::uintmax_t fileSize_ = 0;
};

}  // namespace

template <class W>
int burtorch::driver::runAs(const Options& options, Timing timedAs) {
  std::array<Param, W::kDefaults.size()> params{};
  if (const auto error = burtorch::driver::resolveParams<W>(options, params)) {
    return burtorch::driver::usageError(*error);
  }
  // Both are settable once, before any parallel work.
  at::set_num_threads(1);
  at::set_num_interop_threads(1);
  try {
    // A workload that reads the shared inputs takes the options too; one that declares no precision is FP64.
    // Returned as a prvalue: the workloads need not be movable.
    auto make = [&]() -> W {
      if constexpr (std::is_constructible_v<W, decltype(params), const Options&>) {
        return W(params, options);
      } else {
        return W(params);
      }
    };
    std::string_view precision = "fp64";
    if constexpr (requires { W::kPrecision; }) precision = W::kPrecision;
    W step = make();
    return burtorch::driver::measureAndReport(step, options, timedAs, precision, TORCH_VERSION);
  } catch (const std::exception& error) {
    return burtorch::driver::runError(error.what());
  }
}

namespace {

using burtorch::driver::run;

template <class Graph>
constexpr auto runGraph = &run<GradientWorkload<Graph>, AuthorsGradientWorkload<Graph>>;

using burtorch::driver::Entry;

const std::array kWorkloads{
    Entry{"tiny", runGraph<TinyGraph>},
    Entry{"small", runGraph<SmallGraph>},
    Entry{"energy", runGraph<SmallGraph>},
    Entry{"save_load", &run<SaveLoadWorkload>},
    Entry{"max_pool2d", &run<MaxPool2dWorkload>},
};

}  // namespace

const char* const burtorch::driver::kProgram = "libtorch-bench";

int main(int argc, char** argv) {
  return burtorch::driver::runDriver(
      argc, argv,
      "usage: libtorch-bench WORKLOAD --iterations N [--warmup W] [--blocks K] [--timing paper|lean]\n"
      "                      [--param NAME=VALUE ...]\n"
      "Runs WORKLOAD with LibTorch (PyTorch's C++ API) and prints one JSON line (see harness/running/worker.py).\n"
      "--timing paper (default): tiny, small and energy make their leaves every step, as the authors'\n"
      "programs do; lean: ours. The line's timed_as says which ran (workloads/timed_regions.csv).\n",
      "libtorch " TORCH_VERSION, kWorkloads);
}
