"""The sweep config (inputs/sweeps/*.json) as jobs/sweep reads it: the schemes' grid flags and the
options every executable shares, each key checked with one line naming what is wrong
(InputError). Standard library only, like jobs/sweep.
"""
import json
import os
import re
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class InputError(Exception):
    """A bad config, site file or command line: one line, exit status 2."""


# ---------------------------------------------------------------------------- schemes and options

@dataclass(frozen=True)
class Scheme:
    """What the sweep must know of an executable to validate a config: its grid flags, the ones
    that shape the grid (`--tp-dims x,y,z`), and which of those the executable derives when
    omitted. Whether a grid fits a rank count is the executable's answer (grid_misfit)."""
    flags: tuple
    factors: tuple = ()
    optional: tuple = ()
    dims: tuple = ()        # allowed entry counts of tp-dims


# Every executable's own choices a point may vary beside its grid (the planner weighs each
# configuration with and without them).
RUN_FLAGS = ("checkpoint-activations",)

# As the executables' --help describes their grids; `dp` always splits the global batch.
SCHEMES = {
    "serial": Scheme(flags=RUN_FLAGS),
    "data": Scheme(flags=("dp", "zero", "bucket-mb", "no-overlap", "shard-group") + RUN_FLAGS,
                   factors=("dp",), optional=("dp",)),
    "pipeline": Scheme(flags=("pp", "dp", "micro-batches", "schedule", "virtual-stages",
                              "partition") + RUN_FLAGS,
                       factors=("pp", "dp"), optional=("pp", "dp")),
    "tensor1d": Scheme(flags=("tp", "dp", "sequence-parallel") + RUN_FLAGS, factors=("tp", "dp"),
                       optional=("tp", "dp")),
    "tensor2d": Scheme(flags=("tp-dims", "dp") + RUN_FLAGS, factors=("tp-dims", "dp"),
                       optional=("tp-dims", "dp"), dims=(2,)),
    "tensor3d": Scheme(flags=("tp-dims", "dp") + RUN_FLAGS, factors=("tp-dims", "dp"),
                       optional=("dp",), dims=(3,)),
}

# The options every executable shares (README's table) that a sweep may set for all points.
# --batch comes from the scaling mode and --out from the point, so neither is listed.
COMMON_OPTIONS = ("config", "layers", "hidden", "ffn-mult", "ffn-hidden", "image-size", "block",
                  "epochs", "iters", "warmup", "optimizer", "lr", "seed", "data", "prefetch",
                  "device", "comm", "precision", "print-every", "eval-samples", "verify",
                  "machine")

TOP_KEYS = ("study", "description", "nodes", "tasks_per_node", "scaling", "schemes", "options",
            "time", "repeat")
SCHEME_KEYS = ("executable", "grids", "nodes", "tasks_per_node")
SCALING_KEYS = {"strong": "batch", "weak": "batch_per_rank"}


def positive_int(value, where):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{where} must be a positive integer, not {json.dumps(value)}")
    return value


def int_list(value, where):
    """A positive integer or a non-empty list of them."""
    values = value if isinstance(value, list) else [value]
    if not values:
        raise InputError(f"{where} must not be empty")
    return [positive_int(v, f"{where} entry") for v in values]


def slurm_time_seconds(text, where):
    """Slurm's time formats: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S."""
    match = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", str(text))
    if not match:
        raise InputError(f"{where} {json.dumps(text)} is not a Slurm time (e.g. 00:30:00)")
    days, a, b, c = match.groups()
    if days is not None:
        hours, minutes, seconds = int(a), int(b or 0), int(c or 0)
    elif c is not None:
        hours, minutes, seconds = int(a), int(b), int(c)
    else:
        hours, minutes, seconds = 0, int(a), int(b or 0)
    return ((int(days or 0) * 24 + hours) * 60 + minutes) * 60 + seconds


def option_args(options):
    """{"hidden": 64, "verify": true} -> ["--hidden", "64", "--verify"]; false drops a flag."""
    args = []
    for key, value in options.items():
        if value is False:
            continue
        args.append(f"--{key}")
        if value is not True:
            args.append(str(value))
    return args


def check_option_value(key, value, where):
    if isinstance(value, (list, dict)) or value is None:
        raise InputError(f"{where} '{key}' must be a number, string or boolean, "
                         f"not {json.dumps(value)}")


def tp_dims(value, where, allowed):
    """tp-dims as [x, y(, z)] from "2,2,1" or [2, 2, 1]."""
    parts = value if isinstance(value, list) else str(value).split(",")
    try:
        dims = [int(p) for p in parts]
    except (TypeError, ValueError):
        raise InputError(f"{where} tp-dims {json.dumps(value)} must be integers like \"2,2\"")
    if any(d < 1 for d in dims) or (allowed and len(dims) not in allowed):
        want = " or ".join(str(n) for n in allowed)
        raise InputError(f"{where} tp-dims {json.dumps(value)} must be {want} positive integers")
    return dims


@dataclass
class SchemeRuns:
    executable: str
    grids: list
    nodes: list             # the sweep's, or the entry's own
    tasks_per_node: list


def parse_grid(executable, scheme, grid, where):
    if not isinstance(grid, dict):
        raise InputError(f"{where} must be an object of {executable}'s grid flags")
    normalised = {}
    for key, value in grid.items():
        if key not in scheme.flags:
            known = ", ".join(scheme.flags) or "none"
            raise InputError(f"{where}: '{key}' is not a grid flag of {executable} "
                             f"(known: {known})")
        if key == "tp-dims":
            dims = tp_dims(value, where, scheme.dims)
            if scheme.dims == (2,) and dims[0] != dims[1]:
                raise InputError(f"{where}: {executable}'s tp-dims must be square (q,q), "
                                 f"not {json.dumps(value)}")
            value = ",".join(str(d) for d in dims)
            normalised[key] = value
            continue
        check_option_value(key, value, where)
        # Grid values name result files, logs and Slurm jobs: no path separators, no shell.
        if not isinstance(value, bool) and not re.fullmatch(r"[A-Za-z0-9._,+-]+", str(value)):
            raise InputError(f"{where}: '{key}' value {json.dumps(value)} may hold only letters, "
                             "digits and . _ , + -")
        if key in scheme.factors:
            positive_int(value, f"{where} '{key}'")
        normalised[key] = value
    for flag in scheme.factors:
        if flag not in scheme.optional and flag not in normalised:
            raise InputError(f"{where}: {executable} needs '{flag}' in every grid")
    return normalised


@dataclass
class Sweep:
    path: str
    study: str
    description: str
    nodes: list
    tasks_per_node: list
    scaling: dict            # mode -> batch parameter
    schemes: list            # SchemeRuns
    options: dict
    time_limit: str = ""
    raw: dict = field(default_factory=dict)
    repeat: int = 1          # rounds of every point, one after another (labels -run1, -run2, ...)


def load_sweep(path):
    where = path
    try:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
    except OSError as e:
        raise InputError(f"cannot read {where}: {e.strerror}")
    except json.JSONDecodeError as e:
        raise InputError(f"{where}: not valid JSON ({e.msg} at line {e.lineno})")
    except RecursionError:
        raise InputError(f"{where}: JSON nested too deeply to be a sweep config") from None
    if not isinstance(raw, dict):
        raise InputError(f"{where}: the sweep config must be a JSON object")
    for key in raw:
        if key not in TOP_KEYS:
            raise InputError(f"{where}: unknown key '{key}' (known: {', '.join(TOP_KEYS)})")
    for key in ("nodes", "tasks_per_node", "scaling", "schemes"):
        if key not in raw:
            raise InputError(f"{where}: missing key '{key}'")

    nodes = int_list(raw["nodes"], f"{where}: nodes")
    tasks_per_node = int_list(raw["tasks_per_node"], f"{where}: tasks_per_node")
    study = raw.get("study", os.path.splitext(os.path.basename(path))[0])
    if not isinstance(study, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", study):
        raise InputError(f"{where}: study {json.dumps(study)} must be a plain directory name")

    scaling = raw["scaling"]
    if not isinstance(scaling, dict) or not scaling:
        raise InputError(f"{where}: scaling must be an object with \"strong\" and/or \"weak\"")
    modes = {}
    for mode, settings in scaling.items():
        if mode not in SCALING_KEYS:
            raise InputError(f"{where}: unknown scaling mode '{mode}' (known: strong, weak)")
        batch_key = SCALING_KEYS[mode]
        if not isinstance(settings, dict) or set(settings) != {batch_key}:
            raise InputError(f"{where}: scaling.{mode} must be {{\"{batch_key}\": N}}")
        modes[mode] = positive_int(settings[batch_key], f"{where}: scaling.{mode}.{batch_key}")

    if not isinstance(raw["schemes"], list) or not raw["schemes"]:
        raise InputError(f"{where}: schemes must be a non-empty list")
    schemes = []
    for i, entry in enumerate(raw["schemes"]):
        at = f"{where}: schemes[{i}]"
        if not isinstance(entry, dict):
            raise InputError(f"{at} must be an object like {{\"executable\": \"data\"}}")
        for key in entry:
            if key not in SCHEME_KEYS:
                raise InputError(f"{at}: unknown key '{key}' (known: {', '.join(SCHEME_KEYS)})")
        if "executable" not in entry:
            raise InputError(f"{at}: missing key 'executable'")
        executable = entry["executable"]
        if executable not in SCHEMES:
            raise InputError(f"{at}: unknown scheme {json.dumps(executable)} "
                             f"(known: {', '.join(SCHEMES)})")
        grids = entry.get("grids", [{}])
        if not isinstance(grids, list) or not grids:
            raise InputError(f"{at}: grids must be a non-empty list of objects")
        schemes.append(SchemeRuns(
            executable,
            [parse_grid(executable, SCHEMES[executable], g, f"{at}.grids[{j}]")
             for j, g in enumerate(grids)],
            int_list(entry["nodes"], f"{at}: nodes") if "nodes" in entry else nodes,
            int_list(entry["tasks_per_node"], f"{at}: tasks_per_node")
            if "tasks_per_node" in entry else tasks_per_node))

    options = raw.get("options", {})
    if not isinstance(options, dict):
        raise InputError(f"{where}: options must be an object of option names and values")
    grid_flags = {flag for s in SCHEMES.values() for flag in s.flags}
    for key, value in options.items():
        if key in ("batch", "out"):
            raise InputError(f"{where}: options.{key} is set by the sweep (batch from scaling, "
                             "out per point)")
        if key in grid_flags:
            raise InputError(f"{where}: options.{key} is a grid flag: put it in a scheme's grids")
        if key not in COMMON_OPTIONS:
            raise InputError(f"{where}: options: unknown option '{key}' "
                             f"(known: {', '.join(COMMON_OPTIONS)})")
        check_option_value(key, value, f"{where}: options")
    for key in ("config", "machine"):
        value = str(options.get(key, "none"))
        if value != "none" and not os.path.isfile(os.path.join(ROOT, value)):
            raise InputError(f"{where}: options.{key} {value} not found "
                             "(paths are relative to the repository root)")

    time_limit = raw.get("time", "")
    if time_limit:
        slurm_time_seconds(time_limit, f"{where}: time")
    description = raw.get("description", "")
    if not isinstance(description, str):
        raise InputError(f"{where}: description must be a string")
    repeat = positive_int(raw.get("repeat", 1), f"{where}: repeat")
    return Sweep(path=path, study=study, description=description,
                 nodes=nodes, tasks_per_node=tasks_per_node,
                 scaling=modes, schemes=schemes, options=options, time_limit=str(time_limit),
                 raw=raw, repeat=repeat)
