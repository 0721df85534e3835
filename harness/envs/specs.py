"""Managed environments (`burtbench run --env SPEC`): which engines a SPEC runs, and the cache of
environments the harness made (`burtbench envs`).

A SPEC is a requirement set ("jax==0.4.38", "jax==0.5.0,jaxlib==0.5.0"), or a version of BurTorch
itself ("burtorch@HEAD~1", "burtorch-authors@b1a9d66": harness/envs/revisions.py). The engines of a
framework the SPEC names run in that environment as engines of their own, `<engine id>@<SPEC>`,
planned and interleaved like any other. Making an environment is harness/envs/install.py (a
revision's: revisions.py).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from engines.base import AA_COPY
from engines.none import FLOOR
from harness.envs import revisions
from harness.envs.cache import env_dir as env_dir_of
from harness.errors import UsageError
from harness.store import results
from harness.store.run_plan import read_plan
from harness.store.runs import existing_run
from harness.text import clean, has_control



@dataclass(frozen=True)
class EnvSpec:
    text: str  # the requirements, normalized, joined by ","
    requirements: tuple[str, ...]  # each as the installer takes it
    names: frozenset[str]  # the distributions it names, normalized (PEP 503)
    # What it installs, whatever the spelling: 'autograd==1.7' and 'autograd==1.7.0' are one.
    key: frozenset = frozenset()
    false_markers: tuple[str, ...] = ()  # the markers false on this machine: their requirements install nothing


def parse_spec(text: str, option: str = "--env") -> EnvSpec | revisions.RevisionSpec:
    """A SPEC, checked: requirements joined by commas, where a piece starting with an operator
    continues the previous requirement ("jax>=0.4,<0.5"); or a revision of BurTorch."""
    if revisions.is_revision(text):
        return revisions.parse(text, option)
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name, canonicalize_version

    if has_control(text):  # it would reach the terminal, the folder's name and every report
        raise UsageError(f"{option} {clean(text)!r}: holds a control character")
    pieces: list[str] = []
    for piece in (p.strip() for p in text.split(",")):
        if piece and re.match(r"[<>=!~]", piece) and pieces:
            pieces[-1] += "," + piece
        else:
            pieces.append(piece)
    requirements = []
    for piece in pieces:
        try:
            if not piece:
                raise InvalidRequirement("empty requirement")
            requirements.append(Requirement(piece))
        except InvalidRequirement as exc:
            raise UsageError(f"{option} {text!r}: not a requirement set like 'jax==0.4.38' or "
                             f"'jax==0.5.0,jaxlib==0.5.0' ({piece!r}: {str(exc).splitlines()[0]})") from None
    names = [canonicalize_name(r.name) for r in requirements]
    if len(set(names)) < len(names):
        raise UsageError(f"{option} {text!r}: names a distribution twice")
    shown = [f"{canonicalize_name(r.name)}{'[' + ','.join(sorted(r.extras)) + ']' if r.extras else ''}"
             + (f" @ {r.url}" if r.url else str(r.specifier)) + (f"; {r.marker}" if r.marker else "")
             for r in requirements]
    key = frozenset((canonicalize_name(r.name), frozenset(r.extras), r.url,
                     frozenset((c.operator, canonicalize_version(c.version, strip_trailing_zero=True))
                               for c in r.specifier), str(r.marker)) for r in requirements)
    false = tuple(str(r.marker) for r in requirements if r.marker is not None and not r.marker.evaluate())
    return EnvSpec(",".join(shown), tuple(shown), frozenset(names), key, false)


def plan_options(texts: tuple[str, ...], env_dir: str | None, pip_args: tuple[str, ...], aa: bool,
                 upstream: str | None) -> dict:
    """--env, --env-dir and --pip-arg as the plan records them (a resumed run makes the same environments).
    A SPEC given twice, however spelled (two spellings of one version, two names of one commit), is
    refused without --aa and is one environment with it (its A/A copy is the second)."""
    if not texts:
        return {"envs": [], "env_dir": None, "pip_args": []}
    parsed = [parse_spec(text) for text in texts]
    same = {}
    for spec in parsed:
        if isinstance(spec, revisions.RevisionSpec):  # an unknown revision is said now, before anything is built
            key = revisions.check(spec, upstream)
        elif spec.false_markers:
            raise UsageError(f"--env {spec.text}: its marker '{spec.false_markers[0]}' is false on this machine: "
                             f"the environment would install nothing to measure")
        else:
            key = spec.key
        same.setdefault(key, []).append(spec.text)
    twice = next((key for key, spellings in same.items() if len(spellings) > 1), None)
    if twice is not None and not aa:
        spelled = list(dict.fromkeys(same[twice]))
        shown = spelled[0] if len(spelled) == 1 else " and ".join(spelled) + (
            f", one commit ({twice[1][:12]})," if isinstance(twice, tuple) else ", the same versions,")
        raise UsageError(f"--env {shown} is given twice (to measure the noise floor, an A/A run, add --aa)")
    return {"envs": [spellings[0] for spellings in same.values()], "env_dir": str(env_dir_of(env_dir)),
            "pip_args": list(pip_args)}


def provides(spec, engine) -> bool:
    from packaging.utils import canonicalize_name

    if isinstance(spec, revisions.RevisionSpec):
        return spec.provides(engine)
    return engine.kind == "python" and canonicalize_name(engine.dist_name) in spec.names


def variants(engines: list, specs: list, explicit: bool) -> list:
    """The selected engines as run in the environments: one per (engine, SPEC naming its framework).
    Engines the user named must each have a SPEC; with --engine all, the SPECs choose."""
    chosen = []
    for engine in engines:
        if engine.id == FLOOR:  # the harness's own floor row runs as it is, in no environment
            chosen.append(engine)
            continue
        mine = [spec for spec in specs if provides(spec, engine)]
        # `--engine burtorch` names the authors' program too: versions of ours leave it out, and the reverse.
        sibling = any(isinstance(s, revisions.RevisionSpec) and s.project.split("-")[0] == engine.framework.split("-")[0]
                      for s in specs)
        if not mine and explicit and not sibling:
            raise UsageError(f"--engine {engine.id}: no --env SPEC installs its framework "
                             f"(it needs '{engine.dist_name}'" + ("" if engine.kind == "python" else
                                                                  ", and only Python engines run in an environment")
                             + ")")
        chosen += [engine.replace(env=spec.text) for spec in mine]
    for spec in specs:
        if not any(v.env == spec.text for v in chosen):
            raise UsageError(f"--env {spec.text}: installs no framework of a selected engine "
                             f"(name the framework's distribution, e.g. 'autograd==1.7.0')")
    return chosen


def aa_planned(aa: bool, no_aa: bool, engines: list) -> bool:
    """Whether the run measures its A/A floor: with --aa, and by default where two versions or more of
    one engine run (an answer between versions without a floor cannot know the noise it was measured
    in); --no-aa skips it."""
    versioned = [engine.base_id for engine in engines if engine.env]
    return aa or (not no_aa and len(set(versioned)) < len(versioned))


def aa_copies(engines: list) -> list:
    """The A/A copies (aa_planned): every engine (but the harness's floor row) beside an exact copy of
    itself, in one round."""
    return [copy for engine in engines
            for copy in ([engine] if engine.id == FLOOR else [engine, engine.replace(env=engine.env + AA_COPY)])]


def original_env(env: str) -> str:
    """The environment an engine (or an A/A copy of it) runs in."""
    return env.removesuffix(AA_COPY)


def bind(engines: dict, environments: dict) -> dict:
    """The run's engines with the interpreter of their environment; an environment that could not
    be made leaves its engines unavailable, with the installer's reason."""
    bound = {}
    for eid, engine in engines.items():
        # Our rows in no environment may have a counting build (revisions.CHECKOUT), and nothing else.
        env = environments.get(original_env(engine.env) or revisions.CHECKOUT)
        if env is not None and env.problem:
            reason = f"environment {engine.env} could not be made: {env.problem}"
            engine = engine.replace(condition=lambda reason=reason: reason)
        elif isinstance(env, (revisions.OursEnv, revisions.TheirsEnv)):
            engine = env.bind(engine)
        elif env is not None:
            engine = engine.replace(python=env.python)
        bound[eid] = engine
    return bound


def run_side(text: str, what: str) -> tuple[Path, str | None]:
    """RUN, or RUN@SPEC: the trials of one environment (--env SPEC) of a run."""
    if results.is_run_dir(Path(text)) or "@" not in text:
        return existing_run(text, what), None
    folder, _, spec = text.partition("@")
    copy = AA_COPY if spec.endswith(AA_COPY) else ""  # an A/A copy (--aa) of an environment
    run_dir, env = existing_run(folder, what), parse_spec(spec.removesuffix(copy), f"{what} {folder}@").text + copy
    if copy:
        return run_dir, env
    known = read_plan(results.read_manifest(run_dir)).envs
    if env not in known:
        raise UsageError(f"{what} {text}: the run has no environment {env} (it has: {', '.join(known) or 'none'})")
    return run_dir, env
