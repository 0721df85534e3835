// The native driver's pieces that do not need a run: argument parsing, JSON, timing
// statistics, the per-OS memory readings (Windows and macOS mappings run here too), and the
// mapped file of save_load's authors' loop.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "check.hpp"
#include "cli.hpp"
#include "json_line.hpp"
#include "process_stats.hpp"
#include "save_load.hpp"
#include "timing.hpp"

using namespace burtorch::driver;

namespace {

std::optional<std::string> parse(std::vector<const char*> args, Options& options) {
  args.insert(args.begin(), "burtorch-bench");
  return parseOptions(static_cast<int>(args.size()), const_cast<char**>(args.data()), options);
}

}  // namespace

TEST_CASE("driver: options") {
  Options o;
  CHECK(!parse({"small", "--iterations", "20000", "--warmup=5", "--blocks", "10", "--param", "a=-4.5", "--param=b=2"}, o));
  CHECK(o.workload == "small" && o.iterations == 20000 && o.warmup == 5 && o.blocks == 10);
  CHECK(o.params.size() == 2 && o.params[0].name == "a" && o.params[0].value == -4.5 && o.params[1].value == 2.0);
  CHECK(o.inputs.empty());
  Options training;
  CHECK(!parse({"mlp", "--iterations", "3", "--inputs", "/runs/x/inputs/mlp-1", "--param", "batch=64"}, training));
  CHECK(training.inputs == "/runs/x/inputs/mlp-1" && training.params[0].value == 64.0);
  CHECK(o.timing == Timing::Paper);  // the harness's default
  Options lean;
  CHECK(!parse({"tiny", "--iterations", "3", "--timing", "lean"}, lean) && lean.timing == Timing::Lean);
  Options paper;
  paper.timing = Timing::Lean;
  CHECK(!parse({"tiny", "--iterations", "3", "--timing=paper"}, paper) && paper.timing == Timing::Paper);
  const std::vector<std::vector<const char*>> bad{
      {"tiny"},                                         // no --iterations
      {"tiny", "--iterations", "ten"},                  // not a number
      {"tiny", "--iterations", "-3"},                   // negative
      {"tiny", "--iterations", "0"},                    // zero
      {"tiny", "--iterations", "5", "--blocks", "0"},   // no blocks
      {"tiny", "--iterations", "5", "--param", "a"},    // no value
      {"tiny", "--iterations", "5", "--param", "a=x"},  // not a number
      {"tiny", "--iterations", "5", "--param", "a=nan"},
      {"tiny", "--iterations", "5", "--speed", "9"},    // unknown option
      {"tiny", "small", "--iterations", "5"},           // two workloads
      {"--iterations", "5"},                            // no workload
      {"tiny", "--iterations"},                         // value missing
      {"mlp", "--iterations", "3", "--inputs="},        // no folder
      {"tiny", "--iterations", "3", "--timing", "fast"},  // neither paper nor lean
      {"tiny", "--iterations", "3", "--timing", "Paper"},
  };
  for (const auto& args : bad) {
    Options rejected;
    CHECK(parse(args, rejected).has_value());
  }
}

TEST_CASE("driver: JSON line") {
  JsonLine json;
  json.field("status", "ok").beginObject("outputs").field("g", 612.5).field("q\"", 0.1).endObject();
  json.field("n", std::int64_t{3}).null("cpu_clocks").field("inf", std::numeric_limits<double>::infinity()).field("bytes", std::optional<std::uint64_t>{});
  json.array("samples_s", std::vector<double>{1e-9, 2.5e-8});
  CHECK(json.finish() ==
        "{\"status\":\"ok\",\"outputs\":{\"g\":612.5,\"q\\\"\":0.10000000000000001},\"n\":3,\"cpu_clocks\":null,"
        "\"inf\":null,\"bytes\":null,\"samples_s\":[1.0000000000000001e-09,2.4999999999999999e-08]}\n");
}

TEST_CASE("driver: block sizes and summary match harness/analysis/stats.py") {
  CHECK((blockSizes(10, 3) == std::vector<std::int64_t>{4, 3, 3}));
  CHECK((blockSizes(2, 100) == std::vector<std::int64_t>{1, 1}));
  const Summary s = summarize({3.0, 1.0, 2.0, 10.0});
  CHECK(s.n == 4 && s.mean == 4.0 && s.min == 1.0 && s.median == 2.5);
  CHECK_CLOSE(s.std, 4.0824829046386302, 1e-15);  // statistics.stdev([3, 1, 2, 10])
  CHECK(summarize({5.0}).std == 0.0);
}

TEST_CASE("driver: Linux peaks from /proc/self/status") {
  const char* status = "Name:\tburtorch-bench\nVmPeak:\t    5656 kB\nVmSize:\t    5600 kB\nVmHWM:\t    2548 kB\n";
  const PeakMemory peak = peakMemoryFromProcStatus(status);
  CHECK(peak.virtualBytes == 5656u * 1024u && peak.residentBytes == 2548u * 1024u);
  CHECK(!peak.privateBytes && peak.privateSource != nullptr);
  const PeakMemory missing = peakMemoryFromProcStatus("Name:\tx\nVmPeakish:\t1 kB\n");
  CHECK(!missing.virtualBytes && missing.virtualSource != nullptr && !missing.residentBytes);
}

TEST_CASE("driver: Windows and macOS peaks") {
  const PeakMemory windows = peakMemoryFromWindowsCounters(4u << 20, 600u << 10);
  CHECK(windows.residentBytes == (4u << 20) && windows.privateBytes == (600u << 10));
  CHECK(!windows.virtualBytes && windows.virtualSource != nullptr);
  const PeakMemory mac = peakMemoryFromMacRusage(3u << 20);
  CHECK(mac.residentBytes == (3u << 20) && !mac.virtualBytes && !mac.privateBytes);
  CHECK(mac.virtualSource != nullptr && mac.privateSource != nullptr);
}

// Inside the case, so that every OS registers the same names (tests/test_burtorch_cpp.py).
TEST_CASE("driver: a mapped file is sized, rewritten in place and read back") {
#if !defined(_WIN32)  // Windows has no mapped variant (save_load.hpp)
  const char* dir = std::getenv("BURTORCH_TEST_TMP");
  const std::string path = std::string(dir ? dir : "/tmp") + "/burtorch-mapped-file.bin";
  std::remove(path.c_str());
  CHECK(!MappedFile::forReading(path.c_str()));  // no file
  for (const char* text : {"0123456789abcdef", "fedcba9876543210"}) {
    MappedFile file = MappedFile::forWriting(path.c_str(), 16);
    CHECK(file && file.size() == 16);
    if (file) std::memcpy(file.data(), text, 16);
    CHECK(file.unmap() && !file);
  }
  struct stat first {};
  CHECK(::stat(path.c_str(), &first) == 0 && first.st_size == 16);
  MappedFile read = MappedFile::forReading(path.c_str());
  CHECK(read && read.size() == 16 && std::memcmp(read.data(), "fedcba9876543210", 16) == 0);
  CHECK(read.unmap());
  CHECK(MappedFile::forWriting(path.c_str(), 8).size() == 8);  // resized, the same file
  struct stat second {};
  CHECK(::stat(path.c_str(), &second) == 0 && second.st_size == 8 && second.st_ino == first.st_ino);
  CHECK(!MappedTransfer::load(path.c_str(), burtorch::NodeRange<double>{}));  // 8 bytes, not the seven values' 56
  std::remove(path.c_str());
#endif
}
