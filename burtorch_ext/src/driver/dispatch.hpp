#pragma once
// What both native drivers (burtorch-bench, libtorch-bench) do around a workload: resolve its
// parameters, answer --help and --version, find the workload by name, and report bad input as
// one line on stderr with exit code 2. Each driver defines kProgram (its name in messages) and
// runAs<W>() (how it builds and measures a workload).
#include <array>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "cli.hpp"

namespace burtorch::driver {

extern const char* const kProgram;
constexpr int kExitUsage = 2;

inline int usageError(const std::string& message) {
  std::fprintf(stderr, "%s: error: %s (try --help)\n", kProgram, message.c_str());
  return kExitUsage;
}

inline int runError(const std::string& message) {
  std::fprintf(stderr, "%s: error: %s\n", kProgram, message.c_str());
  return 1;
}

// The workload's parameters: its defaults, overridden by --param; unknown names are errors.
template <class W, std::size_t N>
std::optional<std::string> resolveParams(const Options& options, std::array<Param, N>& params) {
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
      message.append(options.workload).append(" has no parameter '").append(given.name).append("' (has:");
      for (const Param& p : params) message.append(" ").append(p.name);
      return message + ")";
    }
  }
  return std::nullopt;
}

// Builds workload W from the options and measures it; `timedAs` is the region W's loop times.
// Defined by each driver.
template <class W>
int runAs(const Options& options, Timing timedAs);

// Under --timing paper a workload with the authors' loop (Paper) steps with it; otherwise Lean.
template <class Lean, class Paper = Lean>
int run(const Options& options) {
  if (!std::is_same_v<Lean, Paper> && options.timing == Timing::Paper) return runAs<Paper>(options, Timing::Paper);
  return runAs<Lean>(options, Timing::Lean);
}

struct Entry {
  std::string_view name;
  int (*run)(const Options&);
};

// main() of a driver: `usage` is its help text before the list of workloads.
inline int runDriver(int argc, char** argv, std::string_view usage, std::string_view version,
                     std::span<const Entry> workloads) {
  Options options;
  if (const auto error = parseOptions(argc, argv, options)) return usageError(*error);
  std::string names;
  for (const Entry& e : workloads) {
    if (!names.empty()) names += ", ";
    names += e.name;
  }
  if (options.help) {
    std::printf("%.*sworkloads: %s\n", static_cast<int>(usage.size()), usage.data(), names.c_str());
    return 0;
  }
  if (options.version) {
    std::printf("%.*s\n", static_cast<int>(version.size()), version.data());
    return 0;
  }
  for (const Entry& e : workloads) {
    if (e.name == options.workload) return e.run(options);
  }
  return usageError("unknown workload '" + std::string(options.workload) + "' (have: " + names + ")");
}

}  // namespace burtorch::driver
