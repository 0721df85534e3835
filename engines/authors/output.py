"""Reading what the authors' programs print (and write into their working folder) as our measures.

parse_<program>(stdout, workdir) -> dict in the worker's vocabulary: per_iter_s as {mean, std, min,
median, n}, loop_time_s, outputs, plus what the program printed and which line the time came from
("timer": {"line", "formula", "clock"}). Output they lack raises ParseError (one line).
Line numbers cited are those of their commit b1a9d66.
"""
from __future__ import annotations

import re
import struct
from pathlib import Path
from typing import Mapping

CLOCK = "gettimeofday (burt::HighPrecisionTimer on Linux: burt/timers/include/HighPrecisionTimer.h:12)"

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


def summary(mean: float | None, n: int | None, std: float | None = None) -> dict:
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
        "per_iter_s": summary(per_iter, iterations),
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
        "per_iter_s": summary(seconds / iterations, iterations),
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
        "per_iter_s": summary(mean, steps, std),
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
