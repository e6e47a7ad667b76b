"""onnxruntime on the ONNX files and inputs that `vouch eval models --runs` timed in tract.

Reads the tract side's JSON (file, input shapes, median ms), runs each file in onnxruntime on
one thread (intra- and inter-op), with every graph optimisation on (onnxruntime's default), on
the same input values (the same multiplicative hash of the index as `input_values` in
cli/src/eval/models.rs), the same number of timed runs after one warm-up, and prints one
Markdown table with the ratio tract / onnxruntime per model. Run by scripts/compare-onnxruntime.
"""

import argparse
import json
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort


def input_values(shape):
    n = int(np.prod(shape))
    i = np.arange(n, dtype=np.uint64)
    values = ((i * np.uint64(2654435761)) % np.uint64(65536)).astype(np.float32) / 65536.0 - 0.5
    return values.reshape(shape)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tract", required=True, help="JSON of vouch eval models --runs-json")
    parser.add_argument("--models", required=True, help="folder of the ONNX files")
    parser.add_argument("--json", help="write the comparison here as JSON")
    args = parser.parse_args()
    with open(args.tract, encoding="utf-8") as f:
        tract = json.load(f)
    runs = tract["runs"]
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3  # no notes about unused initialisers
    rows = []
    print(f"onnxruntime {ort.__version__}, numpy {np.__version__}; one thread each; "
          f"median of {runs} runs after one warm-up, ms\n")
    print("| file | inputs | tract | onnxruntime | tract / onnxruntime |")
    print("|---|---|---|---|---|")
    for model in tract["models"]:
        session = ort.InferenceSession(f"{args.models}/{model['file']}", options,
                                       providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        feeds = {name: input_values(shape) for name, shape in zip(names, model["inputs"])}
        session.run(None, feeds)
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            session.run(None, feeds)
            times.append((time.perf_counter() - start) * 1e3)
        ort_ms = statistics.median(times)
        ratio = model["median_ms"] / ort_ms
        rows.append({"file": model["file"], "inputs": model["inputs"],
                     "tract_ms": model["median_ms"], "onnxruntime_ms": ort_ms, "ratio": ratio})
        print(f"| `{model['file']}` | {model['inputs']} | {model['median_ms']:.2f} | "
              f"{ort_ms:.2f} | {ratio:.2f} |")
        sys.stdout.flush()
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"onnxruntime": ort.__version__, "runs": runs, "models": rows}, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
