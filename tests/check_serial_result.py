"""Checks a bin/serial result file.

usage: check_serial_result.py FILE ITERATIONS [config.KEY=VALUE | attr.NAME=VALUE]...
VALUE is JSON, or else a plain string. Prints the problems found on one line (nothing when there
are none); exit status 1 if any.
"""
import json, math, sys
import h5py

from result_checks import run_checks


def check(problems):
    path, iterations = sys.argv[1], int(sys.argv[2])
    with h5py.File(path, "r") as f:
        attrs = f.attrs
        if attrs.get("scheme") != "serial":
            problems.append(f"scheme is {attrs.get('scheme')!r}")
        if attrs.get("world_size") != 1:
            problems.append(f"world_size is {attrs.get('world_size')!r}")
        if attrs.get("iterations") != iterations:
            problems.append(f"iterations is {attrs.get('iterations')!r}, expected {iterations}")
        step = f.get("timing/step")
        if step is None or step.shape != (iterations, 1):
            problems.append(f"/timing/step shape {None if step is None else step.shape}")
        loss = f.get("train/loss")
        if loss is None or loss.shape != (iterations,):
            problems.append(f"/train/loss shape {None if loss is None else loss.shape}")
        elif not all(math.isfinite(x) for x in loss[()]):
            problems.append("/train/loss is not finite")
        config = json.loads(attrs["config_json"])
        if not isinstance(config, dict):
            problems.append("config_json is not a JSON object")
            config = {}
        for spec in sys.argv[3:]:
            key, text = spec.split("=", 1)
            where, name = key.split(".", 1)
            try:
                expected = json.loads(text)
            except ValueError:
                expected = text
            actual = config.get(name, "<missing>") if where == "config" else attrs.get(name, "<missing>")
            if actual != expected:
                problems.append(f"{key} is {actual!r}, expected {expected!r}")


if __name__ == "__main__":
    run_checks(check)
