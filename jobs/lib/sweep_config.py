"""The sweep config (inputs/sweeps/*.json) as jobs/sweep reads it, each key checked with one line
naming what is wrong (InputError). The grid flags and shared options are the executables' own
lists (--list-options), not a copy. Standard library only, like jobs/sweep.
"""
import json
import os
import re
import subprocess
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class InputError(Exception):
    """A bad config, site file or command line: one line, exit status 2."""


# ---------------------------------------------------------------------------- schemes and options

# Every executable's own choices a point may vary beside its grid (the planner weighs each
# configuration with and without them).
RUN_FLAGS = ("checkpoint-activations",)
# Shared options a sweep sets itself (batch from the scaling mode, out per point) and those that
# are no run setting (actions, and a trace file that every point would overwrite).
SET_BY_SWEEP = ("batch", "out")
NOT_SWEPT = ("check-grid", "list-options", "trace")


@dataclass(frozen=True)
class Scheme:
    """An executable's options as it lists them itself (--list-options): the grid flags a point
    may set are its own and RUN_FLAGS; the options a whole sweep may set are the shared ones.
    Whether a grid's values fit a rank count is the executable's answer too (--check-grid)."""
    flags: tuple
    shared: tuple


def run_executable(executable, args, what):
    """bin/<executable> with args on this one process; (exit status, stdout, stderr)."""
    binary = os.path.join(ROOT, "bin", executable)
    if not os.access(binary, os.X_OK):
        raise InputError(f"{binary} not found: build the executables first (make)")
    # A sweep started inside a job must not make the check look like a Slurm launch.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "PMI_"))}
    try:
        done = subprocess.run([binary] + args, capture_output=True, text=True, timeout=120,
                              env=env)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise InputError(f"{executable} {what} did not answer: {e}")
    return done.returncode, done.stdout, done.stderr


_registered = []


def registered_schemes():
    """The schemes' executables in the registry's order (bin/plan --list-schemes), asked once."""
    if not _registered:
        status, out, err = run_executable("plan", ["--list-schemes"], "--list-schemes")
        if status != 0:
            last = (err.strip().splitlines() or ["no message"])[-1]
            raise InputError(f"bin/plan --list-schemes failed (exit status {status}: {last})")
        _registered.extend(out.split())
    return _registered


def training_program(name):
    """Whether bin/<name> is a scheme's executable, one that answers --list-options."""
    return name in registered_schemes()


def training_executables():
    """The built executables that answer --list-options."""
    return [n for n in registered_schemes() if os.access(os.path.join(ROOT, "bin", n), os.X_OK)
            and run_executable(n, ["--list-options"], "--list-options")[0] == 0]


_schemes = {}


def scheme_options(executable, where):
    """The Scheme of bin/<executable>, asked once per sweep."""
    if executable in _schemes:
        return _schemes[executable]
    if not training_program(executable):
        raise InputError(f"{where}: unknown scheme {json.dumps(executable)} "
                         f"(known: {', '.join(training_executables()) or 'none built: make'})")
    status, out, err = run_executable(executable, ["--list-options"], "--list-options")
    last = (err.strip().splitlines() or ["no message"])[-1]
    if status == 127 or "error while loading shared libraries" in err:
        raise InputError(f"{where}: bin/{executable} cannot start here ({last})")
    try:
        listed = json.loads(out) if status == 0 else None
    except json.JSONDecodeError:
        listed = None
    if not isinstance(listed, dict) or not {"shared", "scheme"} <= set(listed):
        raise InputError(f"{where}: bin/{executable} is not a training executable "
                         f"(--list-options: exit status {status}, {last})")
    shared = tuple(listed["shared"])
    scheme = Scheme(flags=tuple(listed["scheme"]) + tuple(f for f in RUN_FLAGS if f in shared),
                    shared=shared)
    _schemes[executable] = scheme
    return scheme


TOP_KEYS = ("study", "description", "nodes", "tasks_per_node", "scaling", "schemes", "options",
            "time", "repeat")
SCHEME_KEYS = ("executable", "grids", "nodes", "tasks_per_node")
SCALING_KEYS = {"strong": "batch", "weak": "batch_per_rank"}
# Rounds of every point: a median needs a handful; each round is another job per point, and the
# points are planned in memory before the first is launched.
MAX_REPEAT = 100


def shown(value):
    """A config value as JSON, cut short: messages stay one readable line."""
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def positive_int(value, where):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{where} must be a positive integer, not {shown(value)}")
    return value


def int_list(value, where):
    """A positive integer or a non-empty list of them."""
    values = value if isinstance(value, list) else [value]
    if not values:
        raise InputError(f"{where} must not be empty")
    return [positive_int(v, f"{where} entry") for v in values]


SLURM_TIME_FORMATS = "minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS"
# A year: far beyond any cluster's limit, and it keeps a typo from overflowing Slurm's minutes.
MAX_TIME_SECONDS = 365 * 24 * 3600


def slurm_time_seconds(text, where):
    """Seconds of a Slurm time limit, a string in one of SLURM_TIME_FORMATS; only the first field
    may pass its clock range (90, 25:00:00), and the whole is 1 second (Slurm reads 0 as no
    limit; a local run would time out at once) to MAX_TIME_SECONDS."""
    hint = f"a Slurm time limit ({SLURM_TIME_FORMATS}, e.g. 00:30:00)"
    if not isinstance(text, str):
        raise InputError(f"{where} must be a string holding {hint}, not {shown(text)}")
    quoted = shown(text)
    match = re.fullmatch(r"(?:([0-9]+)-)?([0-9]+)(?::([0-9]+))?(?::([0-9]+))?", text)
    if not match:
        raise InputError(f"{where} {quoted} is not {hint}")
    range_error = InputError(f"{where} {quoted} must be from 1 second to 365 days "
                             "(Slurm reads 0 as no limit)")
    days, a, b, c = match.groups()
    if any(len(g.lstrip("0")) > 9 for g in match.groups() if g):  # before int(): huge digit runs
        raise range_error
    if days is not None:
        hours, minutes, seconds = int(a), int(b or 0), int(c or 0)
    elif c is not None:
        hours, minutes, seconds = int(a), int(b), int(c)
    else:  # MM[:SS]: the minutes are the first field, as many as wanted
        hours, minutes, seconds = 0, int(a), int(b or 0)
    limits = (("hours", hours, 24 if days is not None else None),
              ("minutes", minutes, 60 if days is not None or c is not None else None),
              ("seconds", seconds, 60))
    for name, value, limit in limits:
        if limit is not None and value >= limit:
            raise InputError(f"{where} {quoted}: {name} {value} must be below {limit} "
                             f"in {hint}")
    total = ((int(days or 0) * 24 + hours) * 60 + minutes) * 60 + seconds
    if not 0 < total <= MAX_TIME_SECONDS:
        raise range_error
    return total


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


@dataclass
class SchemeRuns:
    executable: str
    grids: list
    nodes: list             # the sweep's, or the entry's own
    tasks_per_node: list


def parse_grid(executable, scheme, grid, where):
    """A point's grid flags, lists joined by commas ("tp-dims": [2, 2] -> "2,2"); their values
    and whether they fit are the executable's to judge (jobs/sweep asks --check-grid)."""
    if not isinstance(grid, dict):
        raise InputError(f"{where} must be an object of {executable}'s grid flags")
    normalised = {}
    for key, value in grid.items():
        if key not in scheme.flags:
            known = ", ".join(scheme.flags) or "none"
            raise InputError(f"{where}: '{key}' is not a grid flag of {executable} "
                             f"(known: {known})")
        if isinstance(value, list) and value and all(
                isinstance(v, (int, str)) and not isinstance(v, bool) for v in value):
            value = ",".join(str(v) for v in value)
        check_option_value(key, value, where)
        # Grid values name result files, logs and Slurm jobs: no path separators, no shell.
        if not isinstance(value, bool) and not re.fullmatch(r"[A-Za-z0-9._,+-]+", str(value)):
            raise InputError(f"{where}: '{key}' value {json.dumps(value)} may hold only letters, "
                             "digits and . _ , + -")
        normalised[key] = value
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
    except UnicodeDecodeError as e:
        raise InputError(f"{where}: not UTF-8 text (byte {e.start})") from None
    except ValueError as e:  # a number past Python's digit limit for int()
        raise InputError(f"{where}: not usable JSON ({str(e).split(':')[0]})") from None
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
        if not isinstance(executable, str):
            raise InputError(f"{at}: executable must be a string like \"data\"")
        scheme = scheme_options(executable, at)
        grids = entry.get("grids", [{}])
        if not isinstance(grids, list) or not grids:
            raise InputError(f"{at}: grids must be a non-empty list of objects")
        schemes.append(SchemeRuns(
            executable,
            [parse_grid(executable, scheme, g, f"{at}.grids[{j}]") for j, g in enumerate(grids)],
            int_list(entry["nodes"], f"{at}: nodes") if "nodes" in entry else nodes,
            int_list(entry["tasks_per_node"], f"{at}: tasks_per_node")
            if "tasks_per_node" in entry else tasks_per_node))

    options = raw.get("options", {})
    if not isinstance(options, dict):
        raise InputError(f"{where}: options must be an object of option names and values")
    used = [_schemes[runs.executable] for runs in schemes]
    grid_flags = {flag for scheme in used for flag in scheme.flags}
    # A sweep-wide option must be one every executable of the sweep shares.
    settable = [o for o in used[0].shared if all(o in scheme.shared for scheme in used)
                and o not in SET_BY_SWEEP + NOT_SWEPT and o not in grid_flags]
    for key, value in options.items():
        if key in SET_BY_SWEEP:
            raise InputError(f"{where}: options.{key} is set by the sweep (batch from scaling, "
                             "out per point)")
        if key in grid_flags:
            raise InputError(f"{where}: options.{key} is a grid flag: put it in a scheme's grids")
        if key not in settable:
            raise InputError(f"{where}: options: unknown option '{key}' "
                             f"(known: {', '.join(settable)})")
        check_option_value(key, value, f"{where}: options")
    for key in ("config", "machine"):
        value = str(options.get(key, "none"))
        if value != "none" and not os.path.isfile(os.path.join(ROOT, value)):
            raise InputError(f"{where}: options.{key} {value} not found "
                             "(paths are relative to the repository root)")

    time_limit = raw.get("time", "")
    if "time" in raw:  # "" and 0 too: leave the key out for the site's SITE_TIME
        slurm_time_seconds(time_limit, f"{where}: time")
    description = raw.get("description", "")
    if not isinstance(description, str):
        raise InputError(f"{where}: description must be a string")
    repeat = raw.get("repeat", 1)
    if isinstance(repeat, bool) or not isinstance(repeat, int) or not 1 <= repeat <= MAX_REPEAT:
        raise InputError(f"{where}: repeat must be a positive integer up to {MAX_REPEAT}, "
                         f"not {shown(repeat)}")
    return Sweep(path=path, study=study, description=description,
                 nodes=nodes, tasks_per_node=tasks_per_node,
                 scaling=modes, schemes=schemes, options=options, time_limit=str(time_limit),
                 raw=raw, repeat=repeat)
