#pragma once
// The measured part of a driver run, shared by burtorch-bench and libtorch-bench so both speak
// exactly the protocol of harness/running/worker.py: warm-up, the timed loop (CPU clocks and CPU time
// around it), then ONE JSON line with the outputs, the timing, the counters and the peaks.
//
// A workload W is called once per iteration (operator()) and has outputs() -> (name, value)
// pairs. Optional: prepare() (untimed work before each timed block, such as reading the next
// batch) and extras(JsonLine&) (its own result fields). `timedAs` is the region W's loop times
// (timed_as in the line): paper where W is the authors' loop, lean otherwise.
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include "cli.hpp"
#include "cpu_clocks.hpp"
#include "json_line.hpp"
#include "process_stats.hpp"
#include "timing.hpp"

namespace burtorch::driver {

template <class W>
int measureAndReport(W& step, const Options& options, Timing timedAs, std::string_view precision,
                     std::string_view version) {
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
  for (const auto& [name, value] : step.outputs()) json.field(name, value);
  json.endObject()
      .field("precision", precision)
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
      .field("timed_as", timingName(timedAs))
      .field("framework_version", version)
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
      .field("peak_private_bytes", peak.privateBytes)
      .field("peak_resident_source", peak.residentSource)
      .field("peak_virtual_source", peak.virtualSource)
      .field("peak_private_source", peak.privateSource);

  const std::string line = json.finish();
  std::fwrite(line.data(), 1, line.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}

}  // namespace burtorch::driver
