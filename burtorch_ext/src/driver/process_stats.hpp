// What the driver reads of its own process: CPU time and peak memory, per OS. The mapping from
// each OS's counters to the result fields is plain code compiled everywhere, so that it is
// tested on any machine; only the system calls sit behind the OS branches.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>

#if defined(_WIN32)
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>
#include <psapi.h>
#else
#include <sys/resource.h>
#include <sys/time.h>
#endif

namespace burtorch::driver {

struct PeakMemory {
  std::optional<std::uint64_t> residentBytes;
  std::optional<std::uint64_t> virtualBytes;
  std::optional<std::uint64_t> privateBytes;
  // Where each figure was read, or why it is null: the fields the Python worker reports too.
  const char* residentSource = nullptr;
  const char* virtualSource = nullptr;
  const char* privateSource = nullptr;
};

// The value of a "Key:   1234 kB" line of /proc/<pid>/status, in bytes.
inline std::optional<std::uint64_t> procStatusBytes(std::string_view status, std::string_view key) {
  std::size_t at = 0;
  while (at < status.size()) {
    std::size_t end = status.find('\n', at);
    if (end == std::string_view::npos) end = status.size();
    const std::string_view line = status.substr(at, end - at);
    if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == ':') {
      std::string_view rest = line.substr(key.size() + 1);
      while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
      std::uint64_t kib = 0;
      std::size_t digits = 0;
      while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') {
        kib = kib * 10 + static_cast<std::uint64_t>(rest[digits] - '0');
        ++digits;
      }
      if (digits == 0 || rest.substr(digits) != " kB") return std::nullopt;
      return kib * 1024;
    }
    at = end + 1;
  }
  return std::nullopt;
}

inline PeakMemory peakMemoryFromProcStatus(std::string_view status) {
  PeakMemory peak;
  peak.residentBytes = procStatusBytes(status, "VmHWM");
  peak.virtualBytes = procStatusBytes(status, "VmPeak");
  peak.residentSource = peak.residentBytes ? "/proc/self/status VmHWM" : "no VmHWM in /proc/self/status";
  peak.virtualSource = peak.virtualBytes ? "/proc/self/status VmPeak" : "no VmPeak in /proc/self/status";
  peak.privateSource = "not sampled by the native driver (Linux has no peak of private memory; it would need a sampling thread)";
  return peak;
}

// Windows: PeakWorkingSetSize is the peak resident set; PeakPagefileUsage the peak private
// committed memory, the paper's Windows figure. No peak of the whole address space is kept.
inline PeakMemory peakMemoryFromWindowsCounters(std::uint64_t peakWorkingSet, std::uint64_t peakPagefileUsage) {
  PeakMemory peak;
  peak.residentBytes = peakWorkingSet;
  peak.privateBytes = peakPagefileUsage;
  peak.residentSource = "GetProcessMemoryInfo PeakWorkingSetSize";
  peak.privateSource = "GetProcessMemoryInfo PeakPagefileUsage";
  peak.virtualSource = "Windows keeps no peak address-space size in GetProcessMemoryInfo; see peak_private_bytes";
  return peak;
}

// macOS: ru_maxrss is in bytes there (kilobytes on Linux).
inline PeakMemory peakMemoryFromMacRusage(std::uint64_t maxRssBytes) {
  PeakMemory peak;
  peak.residentBytes = maxRssBytes;
  peak.residentSource = "getrusage ru_maxrss";
  peak.virtualSource = "macOS keeps no peak virtual size";
  peak.privateSource = "not measured by the native driver on macOS";
  return peak;
}

inline PeakMemory peakMemory() {
#if defined(_WIN32)
  PROCESS_MEMORY_COUNTERS counters{};
  counters.cb = sizeof counters;
  if (!GetProcessMemoryInfo(GetCurrentProcess(), &counters, sizeof counters)) {
    PeakMemory peak;
    peak.residentSource = peak.virtualSource = peak.privateSource = "GetProcessMemoryInfo failed";
    return peak;
  }
  return peakMemoryFromWindowsCounters(counters.PeakWorkingSetSize, counters.PeakPagefileUsage);
#elif defined(__APPLE__)
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return peakMemoryFromMacRusage(static_cast<std::uint64_t>(usage.ru_maxrss));
#elif defined(__linux__)
  char text[4096];
  std::size_t length = 0;
  if (std::FILE* file = std::fopen("/proc/self/status", "r")) {
    length = std::fread(text, 1, sizeof text - 1, file);
    std::fclose(file);
  }
  return peakMemoryFromProcStatus(std::string_view(text, length));
#else
  PeakMemory peak;
  peak.residentSource = peak.virtualSource = peak.privateSource = "not implemented on this OS";
  return peak;
#endif
}

// CPU time (user + system) this process has used so far, in seconds; empty if the OS refused.
inline std::optional<double> cpuTimeSeconds() {
#if defined(_WIN32)
  FILETIME created, exited, kernel, user;
  if (!GetProcessTimes(GetCurrentProcess(), &created, &exited, &kernel, &user)) return std::nullopt;
  const auto ticks = [](FILETIME t) {
    return static_cast<double>((static_cast<std::uint64_t>(t.dwHighDateTime) << 32) | t.dwLowDateTime);
  };
  return (ticks(kernel) + ticks(user)) * 1e-7;  // 100 ns units
#else
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return std::nullopt;
  const auto seconds = [](timeval t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
#endif
}

}  // namespace burtorch::driver
