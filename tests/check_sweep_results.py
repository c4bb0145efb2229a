"""Checks what a jobs/sweep run left in one study directory against its manifest (sweep.json):
every point that ran has a readable HDF5 result whose scheme, rank count, grid, global batch,
row counts and recorded hosts (one per node) are the point's, and whose --verify verdict (when
the sweep asked for one) is PASS.

usage: check_sweep_results.py STUDY_DIR EXPECTED_POINTS
Prints one "ok - ..." or "not ok - ..." line per point, plus one for the point count; exit status
1 if any is not ok.
"""
import json
import os
import sys

import h5py


def check_point(study_dir, point, options):
    """Returns "" when the point's file is right, else what is wrong."""
    path = os.path.join(study_dir, point["file"])
    if not os.path.isfile(path):
        return f"{point['file']} missing"
    try:
        with h5py.File(path, "r") as f:
            attrs = f.attrs
            if attrs["scheme"] != point["executable"]:
                return f"scheme {attrs['scheme']}, expected {point['executable']}"
            if attrs["world_size"] != point["ranks"]:
                return f"world_size {attrs['world_size']}, expected {point['ranks']} ranks"
            grid = dict(item.split("=", 1) for item in attrs["grid"].split(",") if "=" in item)
            for key, value in point["grid"].items():
                if value is not True and grid.get(key) != str(value):
                    return f"grid {attrs['grid']} lacks {key}={value}"
            hosts = [h for h in attrs["hosts"].split(",") if h]
            if len(hosts) != point["nodes"]:
                return f"hosts {attrs['hosts']}, expected {point['nodes']} node(s)"
            config = json.loads(attrs["config_json"])
            if config.get("batch") != point["batch"]:
                return f"global batch {config.get('batch')}, expected {point['batch']}"
            iterations = int(options["iters"])
            if attrs["iterations"] != iterations:
                return f"iterations {attrs['iterations']}, expected {iterations}"
            shape = f["timing/step"].shape
            if shape != (iterations, point["ranks"]):
                return f"/timing/step has shape {shape}, expected {(iterations, point['ranks'])}"
            if len(f["train/loss"]) != iterations:
                return f"/train/loss has {len(f['train/loss'])} entries, expected {iterations}"
            verdict = f["verification"].attrs["verdict"]
            if options.get("verify") and verdict != "PASS":
                return f"verification verdict {verdict}"
    except (OSError, KeyError, ValueError) as e:
        return f"{point['file']}: {e}"
    return ""


def main(study_dir, expected_points):
    with open(os.path.join(study_dir, "sweep.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    options = manifest["sweep"].get("options", {})
    points = manifest["points"]
    bad = 0
    if len(points) == expected_points:
        print(f"ok - manifest lists {len(points)} points, {len(manifest['skipped'])} skipped")
    else:
        print(f"not ok - manifest lists {len(points)} points, expected {expected_points}")
        bad += 1
    for point in points:
        why = check_point(study_dir, point, options)
        if why:
            print(f"not ok - {point['label']}: {why}")
            bad += 1
        else:
            print(f"ok - {point['label']}: {point['ranks']} rank{'s' if point['ranks'] > 1 else ''} on {point['nodes']} "
                  f"node{'s' if point['nodes'] > 1 else ''}, batch {point['batch']}, valid HDF5{' (verify PASS)' if options.get('verify') else ''}")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], int(sys.argv[2])))
