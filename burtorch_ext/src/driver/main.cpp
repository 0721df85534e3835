// burtorch-bench: the native driver. Runs one workload on the C++ engine and prints ONE JSON
// line on stdout, the same protocol as harness/worker.py, so the harness treats it as the
// engine burtorch/eager/cpp/cpu. It must not load Python.
#include <array>
#include <cstdio>
#include <span>
#include <string>

#include "burtorch/burtorch.hpp"
#include "cli.hpp"
#include "cpu_clocks.hpp"
#include "gpt.hpp"
#include "json_line.hpp"
#include "mlp.hpp"
#include "process_stats.hpp"
#include "save_load.hpp"
#include "scalar_graphs.hpp"
#include "timing.hpp"
#include "training.hpp"

namespace burtorch::driver {
namespace {

constexpr int kExitUsage = 2;

int usageError(const std::string& message) {
  std::fprintf(stderr, "burtorch-bench: error: %s (try --help)\n", message.c_str());
  return kExitUsage;
}

int runError(const std::string& message) {
  std::fprintf(stderr, "burtorch-bench: error: %s\n", message.c_str());
  return 1;
}

// The workload's parameters: its defaults, overridden by --param; unknown names are errors.
template <class W>
std::optional<std::string> resolveParams(const Options& options, std::array<Param, W::kDefaults.size()>& params) {
  params = W::kDefaults;
  for (const Param& given : options.params) {
    bool known = false;
    for (Param& p : params) {
      if (p.name == given.name) {
        p.value = given.value;
        known = true;
      }
    }
    if (!known) {
      std::string message = "workload ";
      message.append(W::kName).append(" has no parameter '").append(given.name).append("' (has:");
      for (const Param& p : params) message.append(" ").append(p.name);
      return message + ")";
    }
  }
  return std::nullopt;
}

template <class W>
int run(const Options& options) {
  std::array<Param, W::kDefaults.size()> params{};
  if (const auto error = resolveParams<W>(options, params)) return usageError(*error);

  W step(params, options);
  if constexpr (requires { step.error(); }) {
    if (!step.error().empty()) return runError(step.error());
  }
  for (std::int64_t k = 0; k < options.warmup; ++k) {
    if constexpr (requires { step.prepare(); }) step.prepare();
    step();
  }
  CycleCounter clocks;
  const auto cpuBefore = cpuTimeSeconds();
  clocks.start();
  const TimedLoop loop = timeBlocks(step, options.iterations, options.blocks);
  const ClockReading counted = clocks.stop();
  const auto cpuAfter = cpuTimeSeconds();
  const Summary summary = summarize(loop.samples);

  JsonLine json;
  json.field("status", "ok").beginObject("outputs");
  for (const Param& out : step.outputs()) json.field(out.name, out.value);
  json.endObject()
      .field("precision", W::kPrecision)
      .field("iterations", options.iterations)
      .field("warmup", options.warmup)
      .field("loop_time_s", loop.totalSeconds)
      .beginObject("per_iter_s")
      .field("mean", summary.mean)
      .field("std", summary.std)
      .field("min", summary.min)
      .field("median", summary.median)
      .field("n", summary.n)
      .endObject()
      .array("samples_s", loop.samples)
      .field("framework_version", "burtorch " BURTORCH_VERSION)
      .field("cpu_clocks", counted.cycles)
      .field("instructions", counted.instructions)
      .field("cpu_clocks_source", counted.source);
  if constexpr (requires { step.extras(json); }) step.extras(json);
  std::optional<double> loopCpu;
  if (cpuBefore && cpuAfter) loopCpu = *cpuAfter - *cpuBefore;
  json.field("loop_cpu_time_s", loopCpu).field("cpu_time_s", cpuTimeSeconds());

  // Read last, just before exit, so the peaks cover the whole run.
  const PeakMemory peak = peakMemory();
  json.field("peak_resident_bytes", peak.residentBytes)
      .field("peak_virtual_bytes", peak.virtualBytes)
      .field("peak_private_bytes", peak.privateBytes);
  if (peak.residentSource) json.field("peak_resident_source", peak.residentSource);
  if (peak.virtualSource) json.field("peak_virtual_source", peak.virtualSource);
  if (peak.privateSource) json.field("peak_private_source", peak.privateSource);

  const std::string line = json.finish();
  std::fwrite(line.data(), 1, line.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}

struct Entry {
  std::string_view name;
  int (*run)(const Options&);
};

// Every workload the driver knows; a new one is a class with kName, kPrecision, kDefaults,
// a constructor from its parameters and the options, operator() for one step and outputs().
// Optional: error() (why it cannot run, empty if it can), prepare() (untimed work before each
// timed block, such as reading the next batch) and extras(JsonLine&) (its own result fields).
constexpr std::array kWorkloads{
    Entry{TinyGraph::kName, &run<ScalarGraphWorkload<TinyGraph>>},
    Entry{SmallGraph::kName, &run<ScalarGraphWorkload<SmallGraph>>},
    Entry{SaveLoadWorkload::kName, &run<SaveLoadWorkload>},
    Entry{Mlp<float>::kName, &run<TrainingWorkload<Mlp<float>>>},
    Entry{Gpt<float>::kName, &run<TrainingWorkload<Gpt<float>>>},
};

void printHelp() {
  std::printf(
      "usage: burtorch-bench WORKLOAD --iterations N [--warmup W] [--blocks K] [--param NAME=VALUE ...] [--inputs DIR]\n"
      "Runs WORKLOAD on the BurTorch C++ engine and prints one JSON line (see harness/worker.py).\n"
      "mlp and gpt train on the shared-inputs folder DIR that the workload's prepare() wrote.\n"
      "workloads:");
  for (const Entry& e : kWorkloads) std::printf(" %.*s", static_cast<int>(e.name.size()), e.name.data());
  std::printf("\n");
}

}  // namespace
}  // namespace burtorch::driver

int main(int argc, char** argv) {
  using namespace burtorch::driver;
  Options options;
  if (const auto error = parseOptions(argc, argv, options)) return usageError(*error);
  if (options.help) {
    printHelp();
    return 0;
  }
  if (options.version) {
    std::printf("burtorch " BURTORCH_VERSION "\n");
    return 0;
  }
  for (const Entry& e : kWorkloads) {
    if (e.name == options.workload) return e.run(options);
  }
  std::string names;
  for (const Entry& e : kWorkloads) names += (names.empty() ? "" : ", ") + std::string(e.name);
  return usageError("unknown workload '" + std::string(options.workload) + "' (have: " + names + ")");
}
