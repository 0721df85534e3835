// Command line of the native driver; it mirrors harness/running/worker.py's:
//   burtorch-bench WORKLOAD --iterations N [--warmup W] [--blocks K] [--timing paper|lean]
//                  [--param NAME=VALUE ...] [--inputs DIR]
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace burtorch::driver {

struct Param {
  std::string_view name;
  double value;
};

// The timed region (workloads/timed_regions.csv): `paper` steps as the authors' program for the
// workload's paper row does, where the driver has that loop; `lean` steps with ours.
enum class Timing { Paper, Lean };

inline const char* timingName(Timing timing) noexcept { return timing == Timing::Paper ? "paper" : "lean"; }

struct Options {
  std::string_view workload;
  std::int64_t iterations = -1;
  std::int64_t warmup = 0;
  std::int64_t blocks = 100;
  Timing timing = Timing::Paper;  // the harness's default
  std::vector<Param> params;
  std::string_view inputs;  // the shared-inputs folder of a training workload (workloads/inputs.py)
  bool help = false;
  bool version = false;
};

inline std::optional<double> parseNumber(std::string_view text) {
  const std::string copy(text);  // strtod needs a terminated string
  if (copy.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size() || errno == ERANGE || !std::isfinite(value)) return std::nullopt;
  return value;
}

inline std::optional<std::int64_t> parseCount(std::string_view text) {
  const std::string copy(text);
  if (copy.empty() || copy.front() == '-' || copy.front() == '+') return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(copy.c_str(), &end, 10);
  if (end != copy.c_str() + copy.size() || errno == ERANGE) return std::nullopt;
  return value;
}

// Fills `options`; returns the error to print, if any.
inline std::optional<std::string> parseOptions(int argc, char** argv, Options& options) {
  for (int k = 1; k < argc; ++k) {
    std::string_view arg = argv[k];
    if (arg == "-h" || arg == "--help") {
      options.help = true;
      return std::nullopt;
    }
    if (arg == "--version") {
      options.version = true;
      return std::nullopt;
    }
    if (arg.substr(0, 2) != "--") {
      if (!options.workload.empty()) return "unexpected argument '" + std::string(arg) + "'";
      options.workload = arg;
      continue;
    }
    // --name value or --name=value (the value of --param itself holds an '=')
    std::string_view name = arg;
    std::string_view value;
    if (const auto eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    } else {
      if (k + 1 >= argc) return std::string(arg) + " needs a value";
      value = argv[++k];
    }
    if (name == "--iterations" || name == "--warmup" || name == "--blocks") {
      const auto count = parseCount(value);
      if (!count) return std::string(name) + ": not a whole number: '" + std::string(value) + "'";
      if (name == "--iterations") options.iterations = *count;
      else if (name == "--warmup") options.warmup = *count;
      else options.blocks = *count;
    } else if (name == "--timing") {
      if (value == "paper") options.timing = Timing::Paper;
      else if (value == "lean") options.timing = Timing::Lean;
      else return "--timing wants paper or lean, got '" + std::string(value) + "'";
    } else if (name == "--inputs") {
      if (value.empty()) return "--inputs needs a folder";
      options.inputs = value;
    } else if (name == "--param") {
      const auto eq = value.find('=');
      if (eq == std::string_view::npos || eq == 0) return "--param wants NAME=VALUE, got '" + std::string(value) + "'";
      const auto number = parseNumber(value.substr(eq + 1));
      if (!number) return "--param " + std::string(value.substr(0, eq)) + ": not a finite number: '" + std::string(value.substr(eq + 1)) + "'";
      options.params.push_back({value.substr(0, eq), *number});
    } else {
      return "unknown option '" + std::string(name) + "'";
    }
  }
  if (options.workload.empty()) return "no workload given";
  if (options.iterations < 1) return "--iterations N (N >= 1) is required";
  if (options.blocks < 1) return "--blocks must be at least 1";
  return std::nullopt;
}

}  // namespace burtorch::driver
