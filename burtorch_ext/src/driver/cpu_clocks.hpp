// CPU clocks of the driver's own timed loop, as harness/measure/clocks.py counts them for the
// Python workers: on Linux user-mode cycles (and instructions where the PMU counts them) from
// perf_event_open on this process; on Windows QueryProcessCycleTime. Where no counter can be
// read the cycles are null and the source says why; the harness then makes its labelled
// estimate from the loop's CPU time. The mapping from errors and raw counts to the result is
// plain code compiled everywhere, so that it is tested on any machine.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#if defined(_WIN32)
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>
#elif defined(__linux__) && __has_include(<linux/perf_event.h>)
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#define BURTORCH_HAS_PERF_EVENTS 1
#endif

namespace burtorch::driver {

struct ClockReading {
  std::optional<std::uint64_t> cycles;
  std::optional<std::uint64_t> instructions;
  std::string source;  // the counter, or why there is none
};

inline const char* errnoName(int error) {
  switch (error) {
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case ENOENT: return "ENOENT";
    case ENODEV: return "ENODEV";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case ENOSYS: return "ENOSYS";
    case EINVAL: return "EINVAL";
    case EMFILE: return "EMFILE";
    case EBUSY: return "EBUSY";
    default: return nullptr;
  }
}

// Why perf_event_open refused, in the words harness/measure/clocks.py uses.
inline std::string perfFailureReason(int error, std::string_view paranoid) {
  std::string out = "perf_event_open: ";
  if (const char* name = errnoName(error)) out += name;
  else out += std::to_string(error);
  out += ": ";
  if (error == EACCES || error == EPERM) {
    out.append("not permitted, kernel.perf_event_paranoid=").append(paranoid.empty() ? "?" : paranoid);
    out += "; own-process user-mode counting needs <= 2 or CAP_PERFMON";
  } else if (error == ENOENT || error == ENODEV || error == EOPNOTSUPP) {
    out += "no hardware cycle counter exposed (typical in a VM without PMU passthrough)";
  } else if (error == ENOSYS) {
    out += "kernel built without perf events";
  } else {
    out += std::strerror(error);
  }
  return out;
}

struct CounterValue {
  std::optional<std::uint64_t> count;
  std::string note;  // appended to the source: scaling, or why there is no count
};

// A count read with its enabled and running times: a counter the kernel multiplexed counted
// only part of the time, so it is scaled up and labelled so.
inline CounterValue scaledCount(std::uint64_t value, std::uint64_t enabled, std::uint64_t running) {
  if (running == 0) return {std::nullopt, ": counter never scheduled on the PMU (time_running = 0)"};
  if (running >= enabled) return {value, ""};
  const double share = static_cast<double>(running) / static_cast<double>(enabled);
  char note[96];
  std::snprintf(note, sizeof note, " (scaled: counted %.0f%% of the time, multiplexed)", share * 100.0);
  return {static_cast<std::uint64_t>(static_cast<double>(value) / share + 0.5), note};
}

// start() right before the timed loop, stop() right after.
class CycleCounter {
 public:
  CycleCounter() = default;
  CycleCounter(const CycleCounter&) = delete;
  CycleCounter& operator=(const CycleCounter&) = delete;
  ~CycleCounter() { closeAll(); }

  void start();
  ClockReading stop();

 private:
  void closeAll();

#if defined(BURTORCH_HAS_PERF_EVENTS)
  static int open(std::uint64_t config) {
    perf_event_attr attr{};
    attr.type = PERF_TYPE_HARDWARE;
    attr.size = sizeof attr;
    attr.config = config;
    attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
    attr.disabled = 1;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    return static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
  }

  static CounterValue read(int fd) {
    std::uint64_t words[3] = {};
    if (::read(fd, words, sizeof words) != static_cast<ssize_t>(sizeof words)) return {std::nullopt, ": read failed"};
    return scaledCount(words[0], words[1], words[2]);
  }

  static std::string paranoidLevel() {
    char text[16] = {};
    if (std::FILE* file = std::fopen("/proc/sys/kernel/perf_event_paranoid", "r")) {
      if (!std::fgets(text, sizeof text, file)) text[0] = '\0';
      std::fclose(file);
    }
    std::string level(text);
    while (!level.empty() && (level.back() == '\n' || level.back() == ' ')) level.pop_back();
    return level;
  }

  int cycles_ = -1;
  int instructions_ = -1;
#elif defined(_WIN32)
  ULONG64 begin_ = 0;
#endif
  std::string failure_;
};

#if defined(BURTORCH_HAS_PERF_EVENTS)

inline void CycleCounter::start() {
  cycles_ = open(PERF_COUNT_HW_CPU_CYCLES);
  if (cycles_ < 0) {
    failure_ = perfFailureReason(errno, paranoidLevel());
    return;
  }
  instructions_ = open(PERF_COUNT_HW_INSTRUCTIONS);  // optional: cycles alone are the paper's measure
  for (const int fd : {cycles_, instructions_}) {
    if (fd < 0) continue;
    ioctl(fd, PERF_EVENT_IOC_RESET, 0);
    ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
  }
}

inline ClockReading CycleCounter::stop() {
  if (cycles_ < 0) return {std::nullopt, std::nullopt, failure_};
  for (const int fd : {cycles_, instructions_})
    if (fd >= 0) ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
  const CounterValue cycles = read(cycles_);
  ClockReading reading{cycles.count, std::nullopt, "perf_event_open" + cycles.note};
  if (instructions_ >= 0) reading.instructions = read(instructions_).count;
  closeAll();
  return reading;
}

inline void CycleCounter::closeAll() {
  for (int* fd : {&cycles_, &instructions_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

#elif defined(_WIN32)

// Cycles of all this process's threads, user and kernel mode, as Windows counts them.
inline void CycleCounter::start() {
  if (!QueryProcessCycleTime(GetCurrentProcess(), &begin_))
    failure_ = "QueryProcessCycleTime failed (Windows error " + std::to_string(GetLastError()) + ")";
}

inline ClockReading CycleCounter::stop() {
  ULONG64 end = 0;
  if (failure_.empty() && !QueryProcessCycleTime(GetCurrentProcess(), &end))
    failure_ = "QueryProcessCycleTime failed (Windows error " + std::to_string(GetLastError()) + ")";
  if (!failure_.empty()) return {std::nullopt, std::nullopt, failure_};
  return {static_cast<std::uint64_t>(end - begin_), std::nullopt, "QueryProcessCycleTime"};
}

inline void CycleCounter::closeAll() {}

#else

inline void CycleCounter::start() {
#if defined(__APPLE__)
  failure_ = "macOS: no per-process user-mode cycle counter readable without root";
#elif defined(__linux__)
  failure_ = "perf_event_open: linux/perf_event.h was missing when the driver was built";
#else
  failure_ = "no cycle counter implemented on this OS";
#endif
}

inline ClockReading CycleCounter::stop() { return {std::nullopt, std::nullopt, failure_}; }

inline void CycleCounter::closeAll() {}

#endif

}  // namespace burtorch::driver
