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

import math
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

SRC = "burt"
CLOCK = "gettimeofday (burt::HighPrecisionTimer on Linux: burt/timers/include/HighPrecisionTimer.h:12)"


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


# --------------------------------------------------------------------------------------------------
# Reading their output

_NUMBER = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|inf|nan|-nan)"


def _float(text: str) -> float:
    return float(text.replace("-nan", "nan"))


def _line_value(stdout: str, label: str) -> tuple[float, str] | None:
    """(value, printed text) of the last line `label: number`."""
    hits = re.findall(rf"^\s*{re.escape(label)}:\s*({_NUMBER})\s*$", stdout, re.M)
    return (_float(hits[-1]), hits[-1]) if hits else None


def significant_digits(text: str) -> int:
    mantissa = re.split(r"[eE]", text.strip().lstrip("+-"))[0]
    digits = mantissa.replace(".", "").lstrip("0")
    return max(len(digits), 1)


def half_unit(text: str) -> float:
    """Half a unit in the last printed digit: how far the printed number may be from the value."""
    text = text.strip().lstrip("+-")
    if re.search(r"[eE]", text):
        mantissa, exponent = re.split(r"[eE]", text)
        power = int(exponent)
    else:
        mantissa, power = text, 0
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return 0.5 * 10.0 ** (power - decimals)


def _summary(mean: float | None, n: int | None, std: float | None = None) -> dict:
    return {"mean": mean, "std": std, "min": None, "median": None, "n": n}


class ParseError(ValueError):
    """The program's output lacks what the parser needs; str(error) is one line."""


def _need(stdout: str, label: str, target: str) -> tuple[float, str]:
    hit = _line_value(stdout, label)
    if hit is None:
        raise ParseError(f"{target} printed no '{label}:' line")
    return hit


def _parse_dot_graph(text: str) -> list[dict]:
    """Nodes of their buildDotGraph output: [{'id', 'op', 'grad', 'data', 'grad_text', 'data_text', 'root'}]."""
    nodes = []
    for m in re.finditer(r'^(\d+)\[label = "\|([^|]*)\| grad:([^|]*)\| data:([^|]*)\|#\d+"(.*)\];\s*$', text, re.M):
        nodes.append({"id": int(m.group(1)), "op": m.group(2).strip(), "grad_text": m.group(3).strip(),
                      "data_text": m.group(4).strip(), "grad": _float(m.group(3).strip()),
                      "data": _float(m.group(4).strip()), "root": "yellow" in m.group(5)})
    return nodes


def parse_tiny(stdout: str, workdir: Path, a: float = -41.0, b: float = 2.0) -> dict:
    target = "bin_tiny_example"
    iterations = int(_need(stdout, "iterations", target)[0])
    timers = {}
    for label in ("without pre-allocated buffers", "with pre-allocated buffers", "with precalculated topo-sort"):
        timers[label] = _need(stdout, label, target)[0]
    headline = "with pre-allocated buffers"
    outputs, printed = {}, {}
    dot = Path(workdir) / "test.txt"
    if dot.is_file():
        nodes = _parse_dot_graph(dot.read_text(errors="replace"))
        roots = [n for n in nodes if n["root"]]
        leaf_a = [n for n in nodes if n["op"] == "leaf" and n["data"] == a]
        leaf_b = [n for n in nodes if n["op"] == "leaf" and n["data"] == b]
        if roots and leaf_a and leaf_b:
            outputs = {"g": roots[0]["data"], "dg_da": leaf_a[0]["grad"], "dg_db": leaf_b[0]["grad"]}
            printed = {"g": roots[0]["data_text"], "dg_da": leaf_a[0]["grad_text"], "dg_db": leaf_b[0]["grad_text"]}
    per_iter = timers[headline] / iterations
    return {
        "iterations": iterations,
        "per_iter_s": _summary(per_iter, iterations),
        "loop_time_s": timers[headline],
        "outputs": outputs,
        "printed": printed,
        "outputs_source": "test.txt (their Graphviz dump of the graph after one more backward, main_tiny_graph.cpp:176-211)"
        if outputs else "test.txt missing or unreadable: no outputs",
        "timers_s": timers,
        "timer": {"line": f"{headline}: <seconds>", "formula": "per_iter_s = seconds / iterations",
                  "clock": CLOCK, "where": "main_tiny_graph.cpp:123-143 (loop 2 of 3: backwardWithScratchStorage)",
                  "note": "loop 1 calls backward() (allocates scratch per call); loop 3 reuses loop 2's"
                          " topological order (no sort); both are kept in timers_s"},
    }


def parse_small(stdout: str, workdir: Path, target: str = "bin_small_example") -> dict:
    iterations = int(_need(stdout, "iterations", target)[0])
    seconds = _need(stdout, "without pre-allocated buffers", target)[0]
    outputs, printed = {}, {}
    for key, label in (("g", "g.data"), ("dg_da", "a.grad"), ("dg_db", "b.grad")):
        hit = _line_value(stdout, label)
        if hit is not None:
            outputs[key], printed[key] = hit
    return {
        "iterations": iterations,
        "per_iter_s": _summary(seconds / iterations, iterations),
        "loop_time_s": seconds,
        "outputs": outputs,
        "printed": printed,
        "outputs_source": "stdout g.data / a.grad / b.grad (default 6 significant digits)",
        "timer": {"line": "without pre-allocated buffers: <seconds>", "formula": "per_iter_s = seconds / iterations",
                  "clock": CLOCK,
                  "where": "main_small_graph.cpp:41-99 (the last iteration's printing is inside the timed loop)"},
    }


def parse_energy(stdout: str, workdir: Path) -> dict:
    return parse_small(stdout, workdir, target="bin_small_example_for_energy")


SAVED_FILE = "my_file_f.bin"


def _parse_save_or_load(stdout: str, workdir: Path, target: str, key: str) -> dict:
    iterations = int(_need(stdout, "iterations", target)[0])
    seconds = _need(stdout, "without pre-allocated buffers", target)[0]
    out = {
        "iterations": iterations,
        f"{key}_s": seconds,
        f"{key}_per_iter_s": seconds / iterations,
        "timer": {"line": "without pre-allocated buffers: <seconds>", "formula": f"{key}_s = seconds (total);"
                  f" per iteration = seconds / iterations", "clock": CLOCK},
    }
    path = Path(workdir) / SAVED_FILE
    if path.is_file():
        raw = path.read_bytes()
        out["file_size_bytes"] = len(raw)
        if len(raw) == 56:
            out["file_values"] = dict(zip("abcdefg", struct.unpack("<7d", raw)))
    return out


def parse_saving(stdout: str, workdir: Path) -> dict:
    return _parse_save_or_load(stdout, workdir, "bin_small_example_saving", "save")


def parse_loading(stdout: str, workdir: Path) -> dict:
    return _parse_save_or_load(stdout, workdir, "bin_small_example_loading", "load")


def _train_records(stdout: str) -> list[dict]:
    """Each printed `->Train: [e/N]` block with its ` | Key: value` fields."""
    records = []
    blocks = re.split(r"(?=->Train: \[)", stdout)
    for block in blocks[1:]:
        head = re.match(r"->Train: \[(\d+)/(\d+)\]", block)
        if not head:
            continue
        lines = block.splitlines()
        text = lines[0]
        for line in lines[1:]:
            if line.lstrip().startswith("|"):
                text += " " + line
            else:
                break
        fields = {k.strip(): v for k, v in re.findall(rf"\|\s*([A-Za-z][A-Za-z .0-9]*?):\s*({_NUMBER})", text)}
        record = {"step": int(head.group(1)), "of": int(head.group(2))}
        for name, key in (("Loss", "loss"), ("Grad l2 norm sqr", "grad_l2_sqr"), ("Batch Time", "batch_time_ms"),
                          ("Avg Time", "avg_time_ms"), ("Std.dev for time", "std_time_ms"), ("Params", "params")):
            if name in fields:
                record[key] = int(fields[name]) if key == "params" else _float(fields[name])
        records.append(record)
    return records


def _parse_training(stdout: str, target: str, header: Mapping[str, str], where: str) -> dict:
    records = _train_records(stdout)
    if not records:
        raise ParseError(f"{target} printed no '->Train: [e/N]' line (fewer steps than its print interval?)")
    last = records[-1]
    if "avg_time_ms" not in last:
        raise ParseError(f"{target}'s last '->Train' block has no 'Avg Time'")
    steps = last["step"]
    mean = last["avg_time_ms"] / 1000.0
    std = last["std_time_ms"] / 1000.0 if "std_time_ms" in last else None
    printed = {}
    for key, label in header.items():
        hit = re.findall(rf"^\s*{re.escape(label)}:?\s*(\d+)\s*$", stdout, re.M)
        if hit:
            printed[key] = int(hit[0])
    return {
        "iterations": steps,
        "steps_planned": last["of"],
        "per_iter_s": _summary(mean, steps, std),
        "loop_time_s": mean * steps,
        "outputs": {"losses": [r.get("loss") for r in records], "loss_steps": [r["step"] for r in records]},
        "param_count": last.get("params"),
        "printed": printed,
        "records": records,
        "timer": {"line": "->Train: [N/N] ... | Avg Time: <ms> msec. / | Std.dev for time: <ms> msec. (the last block)",
                  "formula": "per_iter_s.mean = Avg Time / 1000 (their running mean of every step's time,"
                             " first step included); per_iter_s.std = Std.dev / 1000 (population);"
                             " loop_time_s = mean * steps", "clock": CLOCK, "where": where},
    }


def parse_makemore(stdout: str, workdir: Path) -> dict:
    return _parse_training(stdout, "bin_makemore_nlp_example",
                           {"batch": " ~ batch", "hidden_dim": " ~ hidden dim", "train_samples": " ~ train set size"},
                           "main_makemore.cpp:319-470 (timer reset at the step's start: gradient zeroing, the"
                           " index copy and shuffle, forward, backward, SGD step)")


def parse_gpt(stdout: str, workdir: Path) -> dict:
    out = _parse_training(stdout, "bin_gpt_example", {"batch": "BATCH SZ", "vocab_size": "vocab size"},
                          "main_gpt.cpp:904-1152 (batch sampling before the timer; gradient zeroing, forward,"
                          " one backward per token, SGD step inside)")
    return out


# --------------------------------------------------------------------------------------------------
# Checks

TINY_REFERENCE = {"g": 612.5, "dg_da": -35.0, "dg_db": 1050.0}
SMALL_REFERENCE = {"g": 2421 / 98, "dg_da": 47620 / 343, "dg_db": 221433 / 343}
SAVE_LOAD_REFERENCE = {"a": -4.0, "b": 2.0, "c": -1.0, "d": 6.0, "e": -7.0, "f": 49.0, "g": 49.0 / 2 + 10.0 / 49.0}
FP64_TOLERANCE = 1e-12


def check_printed(measures: Mapping, reference: Mapping[str, float], tolerance: float = FP64_TOLERANCE) -> dict:
    """Compare printed outputs with the reference, as far as the printed digits allow.

    status: "ok" (agrees within tolerance, and the print is fine enough to say so), "mismatch" (the
    printed number cannot be the reference's, even allowing for its rounding), "agrees_to_printed_digits"
    (agrees as far as the print goes, which is coarser than the tolerance: ok is then None), or
    "missing". The authors' programs print with the stream's default 6 significant digits.
    """
    got = dict(measures.get("outputs") or {})
    printed = dict(measures.get("printed") or {})
    expected = dict(reference)
    missing = [k for k in expected if not isinstance(got.get(k), (int, float))]
    if missing:
        return {"ok": False, "status": "missing", "max_rel_err": None, "expected": expected, "got": got,
                "reason": f"the program's output has no {', '.join(missing)}"}
    errors, statuses, digits = {}, {}, {}
    for key, ref in expected.items():
        value = got[key]
        err = abs(value - ref) / abs(ref) if ref else abs(value)
        errors[key] = err
        text = printed.get(key, repr(value))
        digits[key] = significant_digits(text)
        slack = half_unit(text) * (1 + 1e-9) + abs(ref) * 1e-15
        if not math.isfinite(value) or (abs(value - ref) > slack and err > tolerance):
            statuses[key] = "mismatch"
        elif half_unit(text) <= tolerance * abs(ref):
            statuses[key] = "ok" if err <= tolerance else "mismatch"
        else:
            statuses[key] = "agrees_to_printed_digits"
    if "mismatch" in statuses.values():
        status, ok = "mismatch", False
    elif "agrees_to_printed_digits" in statuses.values():
        status, ok = "agrees_to_printed_digits", None
    else:
        status, ok = "ok", True
    bad = [k for k, s in statuses.items() if s == "mismatch"]
    coarse = [k for k, s in statuses.items() if s == "agrees_to_printed_digits"]
    reason = None
    if bad:
        reason = "; ".join(f"{k}: printed {printed.get(k, got[k])}, expected {expected[k]!r}" for k in bad)
    elif coarse:
        reason = (f"{', '.join(coarse)} agree with the reference as far as printed"
                  f" ({', '.join(f'{k}: {digits[k]} significant digits' for k in coarse)});"
                  f" {tolerance:g} relative cannot be decided from the print")
    return {"ok": ok, "status": status, "max_rel_err": max(errors.values()), "expected": expected, "got": got,
            "printed": printed, "per_output": statuses, "printed_digits": digits, "tolerance": tolerance,
            "reason": reason}


def check_tiny(measures: Mapping, reference: Mapping[str, float] | None = None) -> dict:
    return check_printed(measures, reference or TINY_REFERENCE)


def check_small(measures: Mapping, reference: Mapping[str, float] | None = None) -> dict:
    return check_printed(measures, reference or SMALL_REFERENCE)


def check_save_load(measures: Mapping, reference: Mapping[str, float] | None = None) -> dict:
    """The saved file's seven FP64 values must equal the graph's exactly (tolerance 0).

    Their loading program prints nothing of what it loaded, so the load half can only be checked
    as: the file it read was the saved one, unchanged, and of the size it expects (56 bytes).
    """
    expected = dict(reference or SAVE_LOAD_REFERENCE)
    saved = measures.get("saved_file_values") or {}
    after = measures.get("file_values_after_load") or {}
    if not saved:
        return {"ok": False, "status": "missing", "max_rel_err": None, "expected": expected, "got": {},
                "reason": f"no 56-byte {SAVED_FILE} after their saving program"}
    diff = [k for k in expected if saved.get(k) != expected[k]]
    changed = bool(after) and after != saved
    ok = not diff and not changed and bool(after)
    reason = None
    if diff:
        reason = "saved values differ: " + ", ".join(f"{k}={saved.get(k)!r} (expected {expected[k]!r})" for k in diff)
    elif not after:
        reason = f"{SAVED_FILE} missing after their loading program"
    elif changed:
        reason = f"{SAVED_FILE} changed while being loaded"
    errors = [abs(saved[k] - v) / abs(v) for k, v in expected.items() if k in saved and v]
    return {"ok": ok, "status": "ok" if ok else "mismatch", "max_rel_err": max(errors) if errors else None,
            "expected": expected, "got": dict(saved), "tolerance": 0.0, "reason": reason,
            "load_note": "their loading program prints nothing it loaded: the load half is checked as"
                         " reading the saved, unchanged 56-byte file"}


def check_training(measures: Mapping, reference: Mapping | None = None) -> dict:
    losses = (measures.get("outputs") or {}).get("losses") or []
    return {"ok": None, "status": "not comparable", "max_rel_err": None, "expected": {},
            "got": {"losses": losses, "loss_steps": (measures.get("outputs") or {}).get("loss_steps")},
            "reason": "the authors' program starts from its own initial weights (its own RNG and"
                      " distributions) and samples its own batches, with a tanh on the logits: its losses"
                      " cannot be compared with the shared reference"}


# --------------------------------------------------------------------------------------------------
# The programs


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
        "per_iter_s": _summary(total / iterations, iterations),
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
