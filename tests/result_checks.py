"""What the tests/check_*.py checkers of result files share: bytes per element, the /comm
tables, group sizes and the one line each prints."""
import sys


def element_bytes(config):
    """Bytes per element on the wire: bf16/fp16 payloads travel in 16 bits."""
    return {"fp64": 8, "fp32": 4}.get(config["precision"], 2)


def data_element_bytes(config):
    """The "data" group's: 4 with fp32-grad-comm in a 16-bit run."""
    e = element_bytes(config)
    return 4 if e == 2 and config.get("fp32-grad-comm") else e


def ffn_width(config):
    """F, each block's inner width: --ffn-hidden when set, else --ffn-mult times H."""
    return config.get("ffn-hidden") or config["ffn-mult"] * config["hidden"]


def zero3_units(config):
    """bin/data --zero 3's units (embed, each block, classifier): (parameters, weight elements).
    The model's 10 classes are fixed."""
    classes = 10
    h, f = config["hidden"], ffn_width(config)
    s2 = config["image-size"] ** 2
    units = [(s2 * h + h, s2 * h)]
    for _ in range(config["layers"]):
        if config["block"] == "mlp":
            units.append((2 * h + h * f + f + f * h + h, 2 * h * f))
        else:
            units.append((h * h + h, h * h))
    return units + [(classes * h + classes, classes * h)]


def comm_bytes(f):
    """{kind: bytes table [iterations x ranks]} of an open result file's /comm."""
    return {kind: f["comm"][kind]["bytes"][()] for kind in f["comm"]}


def comm_groups(f):
    """{kind: (bytes table [iterations x ranks], group size)} of an open result file's /comm."""
    return {kind: (f["comm"][kind]["bytes"][()], int(f["comm"][kind].attrs["group_size"]))
            for kind in f["comm"]}


def group_size_problems(comm, model_group, dp):
    """comm as comm_groups gives it: the "data" kinds' groups must have dp ranks, the others
    model_group."""
    problems = []
    for kind, (_, size) in sorted(comm.items()):
        want = dp if kind.endswith(":data") else model_group
        if size != want:
            problems.append(f"{kind} group size {size} != {want}")
    return problems


def verdict(path, problems, summary):
    """Prints "PATH: problem; ..." or, with none, summary() (called only then); the exit
    status."""
    if problems:
        print(f"{path}: " + "; ".join(problems))
        return 1
    print(summary())
    return 0


def run_checks(check):
    """Calls check(problems), which appends what it finds; an exception (an unreadable file or
    field) is one more problem. Prints them on one line (empty when none) and exits 1 if any."""
    problems = []
    try:
        check(problems)
    except Exception as e:  # any unreadable file or field is a failure, reported on one line
        problems.append(f"{type(e).__name__}: {e}")
    print("; ".join(problems))
    sys.exit(1 if problems else 0)
