// burtorch-bench: the native driver. Runs one workload on the C++ engine and prints ONE JSON
// line on stdout, the same protocol as harness/running/worker.py, so the harness treats it as the
// engine burtorch/eager/cpp/cpu. It must not load Python.
#include <array>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>

#include "bandwidth.hpp"
#include "burtorch/burtorch.hpp"
#include "cli.hpp"
#include "dispatch.hpp"
#include "gpt.hpp"
#include "measured_run.hpp"
#include "mlp.hpp"
#include "peak.hpp"
#include "products.hpp"
#include "save_load.hpp"
#include "scalar_graphs.hpp"
#include "training.hpp"

namespace burtorch::driver {

template <class W>
int runAs(const Options& options, Timing timedAs) {
  std::array<Param, W::kDefaults.size()> params{};
  if (const auto error = resolveParams<W>(options, params)) return usageError(*error);

  W step(params, options);
  if constexpr (requires { step.error(); }) {
    if (!step.error().empty()) return runError(step.error());
  }
  return measureAndReport(step, options, timedAs, W::kPrecision, "burtorch " BURTORCH_VERSION);
}

namespace {

template <class Graph>
constexpr auto runGraph = &run<ScalarGraphWorkload<Graph>, AuthorsScalarGraphWorkload<Graph>>;

// Every workload the driver knows; a new one is a class with kName, kPrecision, kDefaults,
// a constructor from its parameters and the options, operator() for one step and outputs().
// Optional: error() (why it cannot run, empty if it can), prepare() (untimed work before each
// timed block, such as reading the next batch) and extras(JsonLine&) (its own result fields).
// A second class, where given, is the loop of the authors' program for the workload's paper
// row (workloads/timed_regions.csv), run under --timing paper.
constexpr std::array kWorkloads{
    Entry{TinyGraph::kName, runGraph<TinyGraph>},
    Entry{SmallGraph::kName, runGraph<SmallGraph>},
    // Table 19's workload: the small graph, its energy measured by the harness over the process life.
    Entry{"energy", runGraph<SmallGraph>},
    Entry{LeanSaveLoad::kName, &run<LeanSaveLoad, AuthorsSaveLoad>},
    Entry{Mlp<float>::kName, &run<TrainingWorkload<Mlp<float>>>},
    Entry{Gpt<float>::kName, &run<TrainingWorkload<Gpt<float>>>},
};

}  // namespace
}  // namespace burtorch::driver

const char* const burtorch::driver::kProgram = "burtorch-bench";

int main(int argc, char** argv) {
  using namespace burtorch::driver;
  if (argc == 2 && std::string_view(argv[1]) == "--peak") return printPeak();
  const std::string version = "burtorch " BURTORCH_VERSION " (" + burtorch::buildDescription() + ")";
  if (argc == 3 && std::string_view(argv[1]) == "--products") return printProducts(argv[2], version);
  if (argc == 3 && std::string_view(argv[1]) == "--bandwidth") return printBandwidth(argv[2]);
  return runDriver(argc, argv,
                   "usage: burtorch-bench WORKLOAD --iterations N [--warmup W] [--blocks K] [--timing paper|lean]\n"
                   "                      [--param NAME=VALUE ...] [--inputs DIR]\n"
                   "       burtorch-bench --peak   (this core's peak FP32 multiply-add rate, one JSON line)\n"
                   "       burtorch-bench --products MxKxN[,MxKxN...]   (our FP32 block products timed at these shapes)\n"
                   "       burtorch-bench --bandwidth BYTES[,BYTES...]   (this core's read and read-modify-write bandwidth\n"
                   "                      with working sets of these sizes, one JSON line)\n"
                   "Runs WORKLOAD on the BurTorch C++ engine and prints one JSON line (see harness/running/worker.py).\n"
                   "--timing paper (default): tiny, small, energy and save_load step as the authors' programs do\n"
                   "(leaves made every step; save_load memory-maps its file, not on Windows); lean: ours. The line's\n"
                   "timed_as says which ran (workloads/timed_regions.csv).\n"
                   "mlp and gpt train on the shared-inputs folder DIR that the workload's prepare() wrote.\n",
                   version, kWorkloads);
}
