"""Loading and checking mlpscale result files (schema: results/README.md).

Two kinds of HDF5 file come out of the suite: training runs (bin/serial, bin/data, ...; no root
attribute `kind`) and collective benchmarks (bin/bench_comm; root attribute `kind` =
`bench_comm`). `load_result` reads either into plain numpy arrays and checks every field the
analysis uses; a file that breaks the schema raises `ResultFileError`, whose text is one line
naming the file and the field, e.g. `results/x.h5: missing /timing/step`.
"""
import json
import os
from dataclasses import dataclass, field

import h5py
import numpy as np

SCHEMA_VERSION = 1
REQUIRED_PHASES = ("step", "forward", "backward", "optimizer", "data")
# Root attributes of a training file that the analysis reads (the schema has a few more).
TRAINING_ATTRIBUTES = ("schema_version", "scheme", "grid", "device", "comm", "precision", "data",
                       "config_json", "command_line", "hosts", "world_size", "warmup_iterations",
                       "iterations", "parameters")
BENCH_ATTRIBUTES = ("ranks", "backend", "device", "datatype", "hosts")
BENCH_DATASETS = ("bytes", "time_seconds", "algbw", "busbw")


class ResultFileError(Exception):
    """A file that is not a complete mlpscale result; str() is 'FILE: what is wrong'."""

    def __init__(self, path, problem):
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


@dataclass
class CommTable:
    """One /comm/<name> group: a collective, possibly on a sub-communicator."""
    name: str            # link name, e.g. "allreduce" or "allreduce:inner"
    collective: str      # the `kind` attribute, else the name before ':'
    group_size: int      # the `group_size` attribute, else the world size
    time: np.ndarray     # [iterations x ranks] seconds, start to completion, summed per iteration
    bytes: np.ndarray    # [iterations x ranks] bytes


@dataclass
class TrainingRun:
    path: str
    attrs: dict
    config: dict
    timing: dict         # phase name -> [iterations x ranks] seconds
    comm: dict           # name -> CommTable
    loss: np.ndarray     # [iterations]
    test_accuracy: np.ndarray
    peak_bytes: np.ndarray  # [ranks]
    verification: dict
    name: str = ""       # how pages and labels call the file (the path relative to the results folder)

    scheme = property(lambda self: self.attrs["scheme"])
    grid = property(lambda self: self.attrs["grid"])
    ranks = property(lambda self: int(self.attrs["world_size"]))
    warmup = property(lambda self: int(self.attrs["warmup_iterations"]))
    iterations = property(lambda self: int(self.attrs["iterations"]))
    device = property(lambda self: self.attrs["device"])
    precision = property(lambda self: self.attrs["precision"])
    # "train" or "inference" (files from before --inference have no mode: training)
    mode = property(lambda self: self.attrs.get("mode", "train"))

    @property
    def hosts(self):
        return [h for h in self.attrs["hosts"].split(",") if h]

    @property
    def nodes(self):
        return max(1, len(self.hosts))

    @property
    def global_batch(self):
        return int(self.attrs["global_batch"])


@dataclass
class CommBench:
    path: str
    attrs: dict
    ops: dict = field(default_factory=dict)  # op name -> {dataset name -> 1-D array}
    name: str = ""

    ranks = property(lambda self: int(self.attrs["ranks"]))


def _text(value):
    return value.decode() if isinstance(value, bytes) else value


def _attributes(obj):
    return {k: _text(v.item() if isinstance(v, np.generic) else v) for k, v in obj.attrs.items()}


def _json_kind(value):
    """JSON's name for the type of a decoded value (bool before int: True is an int)."""
    for kind, types in (("boolean", bool), ("null", type(None)), ("object", dict),
                        ("array", list), ("string", str), ("number", (int, float))):
        if isinstance(value, types):
            return kind
    return type(value).__name__


def _require_attrs(path, attrs, names, where=""):
    for name in names:
        if name not in attrs:
            raise ResultFileError(path, f"missing attribute {where}{name}")


def _table(path, f, name, shape):
    """Dataset `name` as float64, checked to have `shape` (None: any length in that axis)."""
    if name not in f:
        raise ResultFileError(path, f"missing /{name}")
    obj = f[name]
    if not isinstance(obj, h5py.Dataset):
        raise ResultFileError(path, f"/{name} is not a dataset")
    data = np.asarray(obj[()], dtype=np.float64)
    if data.ndim != len(shape) or any(want is not None and have != want
                                      for have, want in zip(data.shape, shape)):
        want = " x ".join("any" if s is None else str(s) for s in shape)
        raise ResultFileError(path, f"/{name} has shape {list(data.shape)}, expected [{want}]")
    return data


def _load_training(path, f):
    attrs = _attributes(f)
    if not {"scheme", "schema_version"} & attrs.keys():
        raise ResultFileError(path, "not an mlpscale result (no root attribute scheme, "
                                    "schema_version or kind)")
    _require_attrs(path, attrs, TRAINING_ATTRIBUTES)
    if int(attrs["schema_version"]) != SCHEMA_VERSION:
        raise ResultFileError(path, f"schema_version {attrs['schema_version']} is not supported "
                                    f"(these scripts read {SCHEMA_VERSION})")
    try:
        config = json.loads(attrs["config_json"])
    except json.JSONDecodeError as e:
        raise ResultFileError(path, f"attribute config_json is not valid JSON ({e.msg})") from None
    if not isinstance(config, dict):  # every reader looks options up by name
        raise ResultFileError(path, f"attribute config_json is a JSON {_json_kind(config)}, "
                                    "expected an object of option names and values")
    for key, value in config.items():  # options group runs, so each value must be hashable
        items = value if isinstance(value, list) else [value]
        if any(isinstance(v, (list, dict)) for v in items):
            held = "an object" if isinstance(value, dict) else "a nested array"
            raise ResultFileError(path, f"attribute config_json option '{key}' holds {held}, "
                                        "expected a number, string, boolean, null or an array "
                                        "of those")
        if isinstance(value, list):
            config[key] = tuple(value)  # e.g. "tp-dims": [2, 2]
    if "global_batch" not in attrs:  # older files: the resolved --batch
        if "batch" not in config:
            raise ResultFileError(path, "missing attribute global_batch")
        attrs["global_batch"] = int(config["batch"])
    if int(attrs["global_batch"]) < 1:
        raise ResultFileError(path, f"global_batch {attrs['global_batch']} is not positive")
    iterations, ranks = int(attrs["iterations"]), int(attrs["world_size"])
    warmup = int(attrs["warmup_iterations"])
    if ranks < 1 or iterations < 0 or not 0 <= warmup <= iterations:
        raise ResultFileError(path, f"inconsistent world_size {ranks}, iterations {iterations}, "
                                    f"warmup_iterations {warmup}")
    if "timing" not in f:
        raise ResultFileError(path, "missing /timing")
    timing = {name: _table(path, f, f"timing/{name}", (iterations, ranks)) for name in f["timing"]}
    for name, table in timing.items():  # a time is a finite, non-negative number of seconds
        if not np.all(np.isfinite(table)) or np.any(table < 0):
            raise ResultFileError(path, f"/timing/{name} holds a NaN, infinite or negative time")
    for phase in REQUIRED_PHASES:
        if phase not in timing:
            raise ResultFileError(path, f"missing /timing/{phase}")
    if "comm" not in f:
        raise ResultFileError(path, "missing /comm")
    comm = {}
    for name in f["comm"]:
        group_attrs = _attributes(f["comm"][name])
        comm[name] = CommTable(
            name=name,
            collective=str(group_attrs.get("kind", name.split(":")[0])),
            group_size=int(group_attrs.get("group_size", ranks)),
            time=_table(path, f, f"comm/{name}/time", (iterations, ranks)),
            bytes=_table(path, f, f"comm/{name}/bytes", (iterations, ranks)))
    loss = _table(path, f, "train/loss", (iterations,))
    accuracy = _table(path, f, "train/test_accuracy", (None,))
    peak = _table(path, f, "memory/peak_bytes", (ranks,))
    if "verification" not in f:
        raise ResultFileError(path, "missing /verification")
    verification = _attributes(f["verification"])
    _require_attrs(path, verification, ("verdict",), "/verification ")
    return TrainingRun(path, attrs, config, timing, comm, loss, accuracy, peak, verification, path)


def _load_bench(path, f):
    attrs = _attributes(f)
    _require_attrs(path, attrs, BENCH_ATTRIBUTES)
    bench = CommBench(path, attrs, name=path)
    for op in f:
        if not isinstance(f[op], h5py.Group):
            continue
        columns = {name: _table(path, f, f"{op}/{name}", (None,)) for name in BENCH_DATASETS}
        sizes = {len(c) for c in columns.values()}
        if len(sizes) != 1:
            raise ResultFileError(path, f"/{op} datasets have different lengths {sorted(sizes)}")
        if "wrong" in f[op]:
            columns["wrong"] = _table(path, f, f"{op}/wrong", (len(columns["bytes"]),))
        bench.ops[op] = columns
    if not bench.ops:
        raise ResultFileError(path, "no collective groups (e.g. /allreduce) in a bench_comm file")
    return bench


def open_result_file(path):
    """`path` opened read-only; raises ResultFileError when it is not a readable HDF5 file."""
    try:
        return h5py.File(path, "r")
    except OSError as e:
        reason = " ".join(str(e).split()) or "cannot be opened"
        raise ResultFileError(path, f"not a readable HDF5 file ({reason})") from None


def load_result(path):
    """A TrainingRun or a CommBench; raises ResultFileError naming the file and field."""
    path = os.fspath(path)
    with open_result_file(path) as f:
        try:
            kind = _text(f.attrs.get("kind", "training"))
            if kind == "bench_comm":
                return _load_bench(path, f)
            if kind != "training":
                raise ResultFileError(path, f"unknown result kind '{kind}' (attribute kind)")
            return _load_training(path, f)
        except (OSError, KeyError, ValueError, TypeError) as e:  # damaged objects inside the file
            raise ResultFileError(path, f"unreadable content ({type(e).__name__}: {e})") from None


def find_result_files(folder):
    """Every *.h5 under `folder`, recursively, sorted."""
    found = []
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        found += [os.path.join(root, name) for name in sorted(files) if name.endswith(".h5")]
    return found
