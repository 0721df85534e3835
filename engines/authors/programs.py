"""The authors' example programs as engines: what each one is, how it is run, and how its output is read.

Found by reading their code at commit b1a9d66 and running it (line numbers below are that commit's).

    PROGRAMS[workload] -> AuthorsProgram          # tiny, small, save_load, energy, mlp, gpt
    knob_values(workload, params, iterations)     # -> {step target: {knob: value}} for plan_changes
    PROGRAMS[w].check(measures, reference=None)   # -> the numerical check, as a dict

A program has one or more Steps (save_load: their saving program, then their loading program in the
same working folder). For each step:

- argv is [executable] plus, for mlp and gpt, the data file as their main expects it in argv[1]
  (names.txt, input.txt; the authors' repository ships both in datasets/);
- stdin must be closed (DEVNULL): the makemore program waits for a key at exit (getchar());
- the working folder must be a fresh scratch folder: tiny writes test.txt (a Graphviz dump with the
  values and gradients, which is where its outputs are read), saving writes my_file_f.bin, loading
  reads it (and silently times failed loads if it is missing: their asserts are compiled out);
- mlp and gpt pin their main thread to core 1 themselves (pthread_setaffinity_np with mask 0x2),
  overriding the runner's pinning: the preloaded library (memory.py) records where they ran;
- their stdout is fully buffered when it is a pipe: nothing arrives until exit, unless the
  preloaded library is asked for line buffering (do so for mlp and gpt only, whose printing is
  outside their timed region; small and energy print inside the timed region of their last
  iteration).

parse(stdout, workdir) returns a dict of measures in the worker's vocabulary (per_iter_s as
{mean, std, min, median, n}, loop_time_s, outputs) plus what the program printed and which line
the time came from ("timer": {"line", "formula", "clock"}).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

from engines.authors.checks import (NOT_COMPARABLE, SAVE_LOAD_REFERENCE, SMALL_REFERENCE, TINY_REFERENCE, check_printed,
                                    check_save_load, check_small, check_tiny, check_training)
from engines.authors.output import (SAVED_FILE, ParseError, parse_energy, parse_gpt, parse_loading, parse_makemore,
                                    parse_saving, parse_small, parse_tiny, summary)

# Re-exported: the reading and checking of each program's output live in output.py and checks.py.
__all__ = ["NOT_COMPARABLE", "SAVE_LOAD_REFERENCE", "SMALL_REFERENCE", "TINY_REFERENCE", "SAVED_FILE", "ParseError",
           "check_printed", "check_training", "parse_gpt", "parse_makemore", "Knob", "Step", "AuthorsProgram",
           "PROGRAMS", "merge_measures", "print_every_for", "knob_values"]

SRC = "burt"


@dataclass(frozen=True)
class Knob:
    """A compile-time constant of a program that a variant may change."""
    symbol: str      # their name
    file: str        # relative to the source root
    pattern: str     # a regex matching exactly one line; its group "value" is what a variant replaces


@dataclass(frozen=True)
class Step:
    target: str                       # their CMake target (and executable name)
    source: str                       # the main file, relative to the source root
    knobs: Mapping[str, Knob]
    parse: Callable[[str, Path], dict]
    data_file: str | None = None      # passed as argv[1]: "names.txt" | "input.txt"
    writes: tuple[str, ...] = ()      # files it writes into its working folder
    reads: tuple[str, ...] = ()       # files it needs in its working folder
    pins_core: int | None = None      # the core it pins itself to, if it does
    waits_for_key: bool = False
    prints_in_timed_region: bool = False
    # Knob values in the pinned commit (checked by the tests against their source).
    defaults: Mapping[str, int] = field(default_factory=dict)

    def argv(self, executable: str | Path, data_path: str | Path | None = None) -> list[str]:
        if self.data_file is None:
            return [str(executable)]
        if data_path is None:
            raise ValueError(f"{self.target} needs its data file {self.data_file} as argv[1]")
        return [str(executable), str(data_path)]


@dataclass(frozen=True)
class AuthorsProgram:
    workload: str
    title: str
    steps: tuple[Step, ...]
    precision: str
    check: Callable[..., dict]
    # Line buffering is harmless here: every print is outside the program's timed region.
    line_buffer_ok: bool = False

    @property
    def targets(self) -> tuple[str, ...]:
        return tuple(s.target for s in self.steps)



def _constexpr(symbol: str, file: str) -> Knob:
    return Knob(symbol, file, rf"^\s*constexpr size_t {symbol} = (?P<value>[0-9][0-9 *]*?)\s*;")


_TINY = f"{SRC}/bin_tiny_example/src/main_tiny_graph.cpp"
_SMALL = f"{SRC}/bin_small_example/src/main_small_graph.cpp"
_ENERGY = f"{SRC}/bin_small_example_for_energy/src/main_small_graph.cpp"
_SAVING = f"{SRC}/bin_small_example_saving/src/main_small_graph_saving.cpp"
_LOADING = f"{SRC}/bin_small_example_loading/src/main_small_graph_loading.cpp"
_MAKEMORE = f"{SRC}/bin_makemore_nlp_example/src/main_makemore.cpp"
_GPT = f"{SRC}/bin_gpt_example/src/main_gpt.cpp"

PROGRAMS: dict[str, AuthorsProgram] = {
    "tiny": AuthorsProgram(
        "tiny", "their bin_tiny_example (paper Fig. 1)",
        (Step("bin_tiny_example", _TINY, {"iterations": _constexpr("kIterations", _TINY)}, parse_tiny,
              writes=("test.txt",), defaults={"iterations": 100_000}),),
        "fp64", check_tiny),
    "small": AuthorsProgram(
        "small", "their bin_small_example (micrograd's graph, paper Fig. 2)",
        (Step("bin_small_example", _SMALL, {"iterations": _constexpr("kIterations", _SMALL)}, parse_small,
              prints_in_timed_region=True, defaults={"iterations": 20_000}),),
        "fp64", check_small),
    "energy": AuthorsProgram(
        "energy", "their bin_small_example_for_energy (paper Table 19)",
        (Step("bin_small_example_for_energy", _ENERGY, {"iterations": _constexpr("kIterations", _ENERGY)},
              parse_energy, prints_in_timed_region=True, defaults={"iterations": 200_000}),),
        "fp64", check_small),
    "save_load": AuthorsProgram(
        "save_load", "their bin_small_example_saving, then bin_small_example_loading (paper Table 4)",
        (Step("bin_small_example_saving", _SAVING,
              {"iterations": Knob("kIterations (template argument)", _SAVING,
                                  r"^\s*save_benchmark<double, true, false, (?P<value>\d+)>\(")},
              parse_saving, writes=(SAVED_FILE,), defaults={"iterations": 5000}),
         Step("bin_small_example_loading", _LOADING,
              {"iterations": Knob("kIterations (template argument)", _LOADING,
                                  r"^\s*load_benchmark<double, true, false, (?P<value>\d+)>\(")},
              parse_loading, reads=(SAVED_FILE,), defaults={"iterations": 5000})),
        "fp64", check_save_load),
    "mlp": AuthorsProgram(
        "mlp", "their bin_makemore_nlp_example (paper Tables 5/6)",
        (Step("bin_makemore_nlp_example", _MAKEMORE,
              {"batch": _constexpr("kBatchSize", _MAKEMORE), "hidden_dim": _constexpr("hidden_dim", _MAKEMORE),
               "iterations": _constexpr("kTotalIterations", _MAKEMORE),
               "print_every": _constexpr("kIterationsPrintFreq", _MAKEMORE)},
              parse_makemore, data_file="names.txt", pins_core=1, waits_for_key=True,
              defaults={"batch": 64, "hidden_dim": 1024, "iterations": 4000, "print_every": 10}),),
        "fp32", check_training, line_buffer_ok=True),
    "gpt": AuthorsProgram(
        "gpt", "their bin_gpt_example (paper Table 7)",
        (Step("bin_gpt_example", _GPT,
              {"batch": _constexpr("k_batch_size", _GPT), "iterations": _constexpr("kMaxIterations", _GPT),
               "print_every": _constexpr("kIterationsPrintFreq", _GPT)},
              parse_gpt, data_file="input.txt", pins_core=1,
              defaults={"batch": 64, "iterations": 3000, "print_every": 100}),),
        "fp32", check_training, line_buffer_ok=True),
}


def merge_measures(workload: str, step_measures: list[dict]) -> dict:
    """One trial's measures from its steps' (save_load has two programs; the others one)."""
    if workload != "save_load":
        return dict(step_measures[0])
    save, load = step_measures
    iterations = save["iterations"]
    total = save["save_s"] + load["load_s"]
    return {
        "iterations": iterations,
        "save_s": save["save_s"], "load_s": load["load_s"],
        "save_per_iter_s": save["save_per_iter_s"], "load_per_iter_s": load["load_per_iter_s"],
        # One save plus one load, as in our workload's per-iteration time (their loops run apart).
        "per_iter_s": summary(total / iterations, iterations),
        "loop_time_s": total,
        "file_size_bytes": save.get("file_size_bytes"),
        "saved_file_values": save.get("file_values"),
        "file_values_after_load": load.get("file_values"),
        "outputs": dict(save.get("file_values") or {}),
        "timer": {"save": save["timer"], "load": load["timer"],
                  "formula": "per_iter_s = (save seconds + load seconds) / iterations"},
    }


def print_every_for(steps: int, theirs: int) -> int:
    """Their print interval if it divides the step count, else the largest divisor of steps below it.

    Their programs print the running mean time only every `theirs` steps, and only a step count that
    is a multiple of the interval prints its last step: this keeps the change minimal (none at their
    own step counts) and makes the last step's line appear.
    """
    if steps % theirs == 0:
        return theirs
    return max(d for d in range(1, min(steps, theirs) + 1) if steps % d == 0)


def knob_values(workload: str, params: Mapping, iterations: int) -> dict[str, dict[str, int]]:
    """What each step of the authors' program must be compiled with for one of our grid points.

    Returns {target: {knob: value}}; pass each to build.plan_changes(tree, step, values), which drops
    the values equal to theirs (the paper profile's default point builds their code unchanged).
    """
    program = PROGRAMS[workload]
    out: dict[str, dict[str, int]] = {}
    for step in program.steps:
        values = {"iterations": int(iterations)}
        if workload in ("mlp", "gpt"):
            values["batch"] = int(params["batch"])
            values["print_every"] = print_every_for(int(iterations), step.defaults["print_every"])
        if workload == "mlp":
            values["hidden_dim"] = int(params["hidden_dim"])
        out[step.target] = values
    return out


from engines.authors.differences import DIFFERENCES  # noqa: E402  (data about these programs; kept apart)
