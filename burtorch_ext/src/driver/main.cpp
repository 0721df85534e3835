// burtorch-bench: the native driver. Runs one workload on the C++ engine and prints ONE JSON
// line on stdout, the same protocol as harness/worker.py, so the harness treats it as the
// engine burtorch/eager/cpp/cpu. It must not load Python.
#include <array>
#include <cstdio>
#include <span>
#include <string>

#include "burtorch/burtorch.hpp"
#include "cli.hpp"
#include "gpt.hpp"
#include "measured_run.hpp"
#include "mlp.hpp"
#include "save_load.hpp"
#include "scalar_graphs.hpp"
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
  return measureAndReport(step, options, W::kPrecision, "burtorch " BURTORCH_VERSION);
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
    // Table 19's workload: the small graph, its energy measured by the harness over the process life.
    Entry{"energy", &run<ScalarGraphWorkload<SmallGraph>>},
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
