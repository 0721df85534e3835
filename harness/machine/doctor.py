"""`burtbench doctor`: what on this machine will make the numbers noisy, and which measures it cannot take.

diagnose() returns findings (plain data the runner can store in the manifest); format_findings()
renders them for the terminal. It takes about half a second: it watches the pinned core that long.
"""
from __future__ import annotations

import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Callable

from engines import burn
from harness.machine import bandwidth, calibrations, ceiling, peak
from harness.machine import host as machine
from harness.machine.doctor_measures import Finding, measure_findings
from harness.machine.valgrind import missing_valgrind, uncountable_isa
from harness.measure import affinity

WATCH_S = 0.5
WATCH_SAMPLES = 5
# Others' work on the pinned core above this share of its time shows up in the timings.
BUSY_WARN = 0.05
STEAL_WARN = 0.01
# Load above a quarter of the cores means the scheduler will sometimes use the pinned one too.
LOAD_WARN_PER_CORE = 0.25


def diagnose(cpu: int | None = None, sys_root: str | Path = "/sys", proc_root: str | Path = "/proc",
             perf=None, watch_s: float = WATCH_S, sleep: Callable[[float], None] = time.sleep,
             results: str | Path = "results", remeasure: bool = False) -> list[Finding]:
    """Findings about the machine and the core `cpu` (default: the core a run would use); `results`:
    the results folder its calibration is kept under; `remeasure`: the core's machine facts (bandwidth,
    peak, library ceilings) measured again rather than read from the cache, and a stream timed against the
    new roofs at each level."""
    cpu = affinity.default_cpu() if cpu is None else cpu
    sys_root, proc_root = Path(sys_root), Path(proc_root)
    facts = machine.describe(sys_root, proc_root)
    findings = [machine_finding(facts, cpu), calibration_finding(facts, Path(results))]
    if cpu >= (facts.get("logical_cores") or 0):
        findings.append(Finding("warn", "cpu", f"cpu{cpu} does not exist here "
                                f"({facts.get('logical_cores')} logical cores)", "pick another --cpu"))
        return findings
    findings += [governor_finding(facts, cpu, sys_root), turbo_finding(facts),
                 smt_finding(facts, cpu, sys_root), load_finding(facts),
                 isolation_finding(facts, cpu), virtualization_finding(facts)]
    findings += pinned_core_findings(cpu, proc_root, watch_s, sleep)
    findings += measure_findings(perf, sys_root, proc_root)
    findings += [valgrind_finding(), burn_finding(), *bandwidth.findings(cpu, sys_root, again=remeasure)]
    if remeasure:
        findings += remeasured(cpu)
    # Burn 0.20's release claim names this backend (workloads/claims_burn.csv): say why it has no row.
    findings.append(Finding("info", "burn-cubecl", f"Burn's CubeCL CPU backend has no engine: "
                                                   f"{burn.CUBECL_CPU_MISSING}"))
    return findings


def remeasured(cpu: int) -> list[Finding]:
    """doctor --remeasure's lines beside the bandwidth's: the peak measured now, the ceilings' cache forgotten."""
    value, how = peak.fp32_peak(cpu)
    found = [Finding("ok", "peak", f"FP32 peak on cpu{cpu}: {value:.1f} GFLOP/s ({how})") if value is not None
             else Finding("info", "peak", f"FP32 peak not measured: {how}", "make setup builds burtorch-bench")]
    forgotten = ceiling.forget(cpu)
    return found + [Finding("ok", "ceiling", f"library SGEMM times of cpu{cpu}: {forgotten}")]


def burn_finding() -> Finding:
    """Whether a run could build Burn's driver here, judged before any build tries (engines/burn.py)."""
    if burn.is_built():
        return Finding("ok", "burn", f"Burn's driver is built: {burn.executable()}")
    blocker = burn.build_blocker()
    if blocker:
        return Finding("info", "burn", f"the Burn engine is unavailable: {blocker}")
    return Finding("ok", "burn", f"Burn's driver can be built on its first run: cargo found, the crates "
                   f"{burn.crates_source()[0]}")


def valgrind_finding() -> Finding:
    """Whether `burtbench run --instructions` can count instructions here."""

    missing = missing_valgrind()
    if missing:
        return Finding("info", "instructions", f"--instructions unavailable: {missing.split(':')[0]}",
                       missing.split(": ", 1)[1])
    isa = uncountable_isa()
    if isa:
        return Finding("ok", "instructions", f"valgrind found; it cannot run {isa}, which this CPU has: our engine's "
                       f"instructions (both rows, and --env burtorch@REV) come from a build of the same code without "
                       f"{isa} (AVX+FMA), their time from the host build")
    return Finding("ok", "instructions", "valgrind found: burtbench run --instructions can count instructions "
                   "(of the builds that are timed)")


def machine_finding(facts: dict, cpu: int) -> Finding:
    return Finding("info", "machine", f"{facts.get('cpu_model') or 'unknown CPU'}, "
                   f"{facts.get('logical_cores')} logical / {facts.get('physical_cores')} physical cores, "
                   f"{facts['os']} {facts['kernel']}; runs pin to cpu{cpu}")


def calibration_finding(facts: dict, results: Path) -> Finding:
    """The latest `burtbench calibrate` of this machine: how often its stated 95% held here."""
    found = calibrations.latest(results, facts)
    if found is None:
        return Finding("info", "calibration", f"no calibration of this machine under {results / calibrations.FOLDER}: "
                       "how often its 95% intervals hold here is not measured",
                       "burtbench calibrate (5 minutes; --minutes N for longer)")
    return Finding("info", "calibration", f"{found.made}: {found.line}; {found.page}")


# ---- settings that move the clock -------------------------------------------------------------

def governor_finding(facts: dict, cpu: int, sys_root: Path) -> Finding:
    if sys.platform.startswith("linux"):
        governor = machine.governors(sys_root).get(cpu)
        if governor is None:
            vm = " in this VM" if facts.get("virtualized") else ""
            return Finding("info", "governor", f"governor unknown{vm}: {facts['governor_source']}")
        if governor == "performance":
            return Finding("ok", "governor", f"cpu{cpu} governor is performance")
        return Finding("warn", "governor", f"cpu{cpu} governor is {governor}: the clock follows the load, "
                       "so short loops run at a lower frequency than long ones",
                       f"sudo cpupower -c {cpu} frequency-set -g performance")
    plan = facts.get("governor")
    if sys.platform == "win32" and plan:
        if "performance" in plan.lower():
            return Finding("ok", "governor", f"power plan is {plan}")
        return Finding("warn", "governor", f"power plan is {plan}: the clock follows the load",
                       "powercfg /setactive SCHEME_MIN  (High performance)")
    return Finding("info", "governor", f"frequency scaling unknown: {facts['governor_source']}",
                   "plug in the power supply and turn off Low Power Mode" if sys.platform == "darwin" else None)


def turbo_finding(facts: dict) -> Finding:
    turbo, source = facts.get("turbo"), facts["turbo_source"]
    if turbo is None:
        return Finding("info", "turbo", f"turbo/boost unknown: {source}")
    if not turbo:
        return Finding("ok", "turbo", f"turbo/boost is off ({source})")
    if "no_turbo" in source:
        fix = "echo 1 | sudo tee /sys/devices/system/cpu/intel_pstate/no_turbo"
    else:
        fix = "echo 0 | sudo tee /sys/devices/system/cpu/cpufreq/boost"
    return Finding("warn", "turbo", f"turbo/boost is on ({source}): the clock depends on temperature "
                   "and on what the other cores do", fix)


def smt_finding(facts: dict, cpu: int, sys_root: Path) -> Finding:
    smt, source = facts.get("smt"), facts["smt_source"]
    if smt is None:
        return Finding("info", "smt", f"SMT unknown: {source}")
    if not smt:
        return Finding("ok", "smt", f"SMT is off ({source})")
    siblings = machine.read(sys_root / machine.CPU_DIR / f"cpu{cpu}/topology/thread_siblings_list")
    shared = f": cpu{cpu} shares its core with cpus {siblings}" if siblings else ""
    return Finding("warn", "smt", f"SMT is on{shared}; work on a sibling thread slows the benchmark",
                   "keep the sibling threads idle, or: echo off | sudo tee /sys/devices/system/cpu/smt/control")


def load_finding(facts: dict) -> Finding:
    load, cores = facts.get("load_average"), facts.get("logical_cores") or 1
    if load is None:
        return Finding("info", "load", f"load average unknown: {facts['load_average_source']}")
    message = f"load average {load[0]:.2f} (1 min) on {cores} logical cores"
    if load[0] > LOAD_WARN_PER_CORE * cores:
        return Finding("warn", "load", f"{message}: other work competes for the cores",
                       "stop other jobs before measuring")
    return Finding("ok", "load", message)


def isolation_finding(facts: dict, cpu: int) -> Finding:
    isolated = facts.get("isolated_cores")
    if isolated is None:
        return Finding("info", "isolation", f"core isolation unknown: {facts['isolated_cores_source']}")
    if cpu in isolated:
        return Finding("ok", "isolation", f"cpu{cpu} is isolated from the scheduler")
    return Finding("info", "isolation", f"cpu{cpu} is not isolated: the scheduler may put other tasks on it",
                   f"boot with isolcpus={cpu} nohz_full={cpu} rcu_nocbs={cpu}, "
                   f"or: sudo cset shield --cpu {cpu} --kthread on")


def virtualization_finding(facts: dict) -> Finding:
    if facts.get("virtualized"):
        return Finding("info", "virtualization", f"running in a virtual machine ({facts['virtualized_source']}): "
                       "the host shares the physical core and sets its clock, so expect more variance",
                       "use bare metal for paper-grade numbers")
    if facts.get("virtualized") is False:
        return Finding("ok", "virtualization", "not virtualized")
    return Finding("info", "virtualization", f"virtualization unknown: {facts['virtualized_source']}")


# ---- who else runs on the pinned core -----------------------------------------------------------

def pinned_core_findings(cpu: int, proc_root: Path, watch_s: float,
                         sleep: Callable[[float], None]) -> list[Finding]:
    if not sys.platform.startswith("linux"):
        return [psutil_core_finding(cpu, watch_s)]
    before = core_ticks(proc_root, cpu)
    tasks: dict[str, str] = {}
    for _ in range(WATCH_SAMPLES):
        tasks.update(runnable_on(cpu, proc_root, os.getpid()))
        sleep(watch_s / WATCH_SAMPLES)
    after = core_ticks(proc_root, cpu)
    if before is None or after is None or sum(after) <= sum(before):
        return [Finding("info", "pinned core", f"cpu{cpu} activity unknown: no clock ticks for it in /proc/stat")]
    user, nice, system, idle, iowait, irq, softirq, steal = [new - old for old, new in zip(before[:8], after[:8])]
    total = user + nice + system + idle + iowait + irq + softirq + steal
    findings = [busy_finding(cpu, 1 - (idle + iowait) / total, Counter(tasks.values()), watch_s)]
    if steal / total > STEAL_WARN:
        findings.append(Finding("warn", "steal", f"the hypervisor took {steal / total:.0%} of cpu{cpu}'s time "
                                "(steal)", "use a VM with dedicated cores, or bare metal"))
    return findings


def busy_finding(cpu: int, busy: float, seen: Counter, watch_s: float) -> Finding:
    others = ", ".join(f"{name} (x{count})" if count > 1 else name for name, count in seen.most_common(5))
    if busy <= BUSY_WARN and not seen:
        return Finding("ok", "pinned core",
                       f"cpu{cpu} was {busy:.0%} busy over {watch_s:g} s, nothing else runnable on it")
    listed = f"; runnable there: {others}" if others else ""
    return Finding("warn", "pinned core", f"cpu{cpu} was {busy:.0%} busy over {watch_s:g} s{listed}",
                   "stop that work or move it elsewhere (taskset -pc OTHER_CPUS PID), or pick a quieter --cpu")


def core_ticks(proc_root: Path, cpu: int) -> list[int] | None:
    """The cpuN line of /proc/stat: user nice system idle iowait irq softirq steal (guest...)."""
    for line in (machine.read(proc_root / "stat") or "").splitlines():
        name, _, rest = line.partition(" ")
        if name == f"cpu{cpu}":
            return [int(value) for value in rest.split()]
    return None


def runnable_on(cpu: int, proc_root: Path, self_pid: int) -> dict[str, str]:
    """Tasks (threads) now running or runnable whose last CPU was `cpu`, ours excluded: {tid: name}."""
    found = {}
    for stat in _task_stats(proc_root):
        if stat.parts[-4] == str(self_pid):
            continue
        text = machine.read(stat)
        if not text or ")" not in text:
            continue
        # comm may contain spaces and parentheses: the fields start after the last ')'.
        fields = text[text.rindex(")") + 2:].split()
        if len(fields) > 36 and fields[0] == "R" and fields[36] == str(cpu):
            found[stat.parent.name] = text[text.index("(") + 1:text.rindex(")")]
    return found


def _task_stats(proc_root: Path) -> list[Path]:
    """Every thread's stat file; a process that ends while it is listed is left out (not an error)."""
    stats = []
    for process in proc_root.glob("[0-9]*"):
        try:
            stats += [task / "stat" for task in (process / "task").iterdir() if task.name.isdigit()]
        except OSError:
            continue
    return stats


def psutil_core_finding(cpu: int, watch_s: float) -> Finding:
    try:
        import psutil
        busy = psutil.cpu_percent(interval=watch_s, percpu=True)[cpu] / 100
    except (ImportError, IndexError, OSError) as exc:
        return Finding("info", "pinned core", f"cpu{cpu} activity unknown ({exc})")
    return busy_finding(cpu, busy, Counter(), watch_s)


# ---- output --------------------------------------------------------------------------------------

def format_findings(findings: list[Finding], width: int = 120) -> str:
    """One finding a paragraph, its message and fix wrapped under the topic to fit `width` columns."""
    import textwrap

    topic_width = max((len(finding.topic) for finding in findings), default=0)
    indent = " " * (4 + 2 + topic_width + 2)
    lines = []
    # An option's name or a path is never split at its hyphens: a reader copies it whole.
    whole = {"break_on_hyphens": False, "break_long_words": False}
    for finding in findings:
        head = f"{finding.level:<4}  {finding.topic:<{topic_width}}  "
        lines += textwrap.wrap(finding.message, width, initial_indent=head, subsequent_indent=indent, **whole)
        if finding.fix:
            lines += textwrap.wrap(f"fix: {finding.fix}", width, initial_indent=indent, subsequent_indent=indent + "     ",
                                   **whole)
    line = summary(findings)
    lines += textwrap.wrap(f"{line}: numbers measured now may be noisy; the fix lines above say what to change",
                           width) if line else ["quiet: nothing found that should add noise"]
    return "\n".join(lines)


def summary(findings: list[Finding]) -> str | None:
    """'machine not quiet (its warnings' topics)', or None on a quiet machine."""
    topics = [finding.topic for finding in findings if finding.level == "warn"]
    if not topics:
        return None
    return f"machine not quiet ({', '.join(topics)})"
