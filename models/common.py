# SPDX-License-Identifier: Apache-2.0 OR MIT
"""Helpers shared by the conversion scripts of models/ (convert_*.py): one home for each thing
more than one of them does. Nothing here runs on import; the heavy packages (onnx, onnxruntime,
torch, tensorflow) are imported inside the functions that need them, so every pinned venv can
import this module.

  hashes and pinned sources  sha256_bytes, sha256_file, pip_download (pip --require-hashes, then
                             checked again), read_member (a hash-checked member of a hash-checked
                             wheel or sdist), check_installed (venv files equal the wheel's)
  SHA256SUMS                 read_sums, update_sums (only the caller's lines are replaced, in place)
  files                      f32, save_f32, save_f32s, load_f32, write_json (lists of plain values on one line)
  runtimes                   ort_session and run_onnx (onnxruntime, CPU, one thread), median_ms,
                             set_metadata, same_twice (determinism), torch_state, torch_to_onnx,
                             torch_export_twice
  synthetic inputs           the speech-like voice (voiced_speech, to_pcm16_grid, assemble) and the
                             cartoon face (synth_image_u8); no third-party media
  modes                      arg_parser, convert_main, enforce (report, tolerances), write_outputs,
                             Check (the --check bookkeeping)
  tf2onnx drivers            canonicalize, close, tf2onnx_twice, build_models,
                             install_models, check_models, helper_main (convert_mediapipe.py and
                             convert_human.py)

The generators moved here from convert_voice.py (the voice) and convert_mediapipe.py (the face);
the committed reference.json files still name them there, and both scripts still provide them
under those names.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

MODELS_DIR = Path(__file__).resolve().parent
REF_DIR = "reference"     # reference vectors, under models/


def log(msg) -> None:
    print(msg, flush=True)


# ---------------------------------------------------------------------------------------
# Hashes and pinned sources


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def default_cache_dir() -> Path:
    """Where downloads are kept: ${XDG_CACHE_HOME:-$HOME/.cache}/vouch-models/downloads."""
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "vouch-models" / "downloads"


def pip_download(cache_dir: Path, package: str, version: str, filename: str, sha: str,
                 pip_args=("--only-binary=:all:",)) -> Path:
    """cache_dir/filename, pip-downloaded without dependencies unless it is there already with the
    pinned sha256 (hash-checked by pip with --require-hashes and again here). pip_args: e.g.
    "--no-binary=:all:" for an sdist, or a platform for a platform-specific wheel."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    target = cache_dir / filename
    if target.exists() and sha256_file(target) == sha:
        return target
    with tempfile.TemporaryDirectory() as tmp:
        req = Path(tmp) / "requirements.txt"
        req.write_text(f"{package}=={version} --hash=sha256:{sha}\n")
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--require-hashes", *pip_args,
             "--disable-pip-version-check", "-q", "-d", tmp, "-r", str(req)],
            check=True,
        )
        downloaded = Path(tmp) / filename
        got = sha256_file(downloaded)
        if got != sha:
            raise SystemExit(f"{filename}: sha256 {got}, expected {sha}")
        shutil.move(str(downloaded), target)
    return target


def read_member(archive: Path, archive_sha: str, member: str, member_sha: str | None) -> bytes:
    """One file of a wheel (zip) or sdist (tar): the archive's sha256 is checked again, then the
    member's (member_sha None: the archive's pin is all there is)."""
    if sha256_file(archive) != archive_sha:
        raise SystemExit(f"{archive}: sha256 mismatch")
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as z:
            data = z.read(member)
    else:
        with tarfile.open(archive) as t:
            data = t.extractfile(member).read()
    got = sha256_bytes(data)
    if member_sha is not None and got != member_sha:
        raise SystemExit(f"{member}: sha256 {got}, expected {member_sha}")
    return data


def check_installed(expected: dict[str, str]) -> None:
    """The reference runtimes import packages installed in the venv: make sure their files are the
    ones of the hash-checked wheels. Keys are paths as in the wheel ("package/sub/file.py")."""
    import importlib.util

    for rel, sha in expected.items():
        package = rel.split("/", 1)[0]
        root = Path(importlib.util.find_spec(package).origin).parent.parent
        got = sha256_file(root / rel)
        if got != sha:
            raise SystemExit(f"installed {rel} has sha256 {got}, expected {sha}")


# ---------------------------------------------------------------------------------------
# SHA256SUMS (one file for all conversions: each replaces only its own lines)


def read_sums(models_dir) -> dict[str, str]:
    """models_dir/SHA256SUMS as {path: sha256}."""
    sums = {}
    path = Path(models_dir) / "SHA256SUMS"
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            parts = line.split(None, 1)
            if len(parts) == 2:
                sums[parts[1].strip().lstrip("*")] = parts[0]
    return sums


def update_sums(models_dir, ours: list[str], owned_dirs=()) -> None:
    """Writes the SHA256SUMS lines of `ours` (paths under models_dir, in this order) in place of
    the caller's old lines (those paths and anything under owned_dirs), where the first of them
    was, keeping every other line; re-reads the file just before writing it."""
    lines = [f"{sha256_file(Path(models_dir) / p)}  {p}\n" for p in ours]
    owned = tuple(d.rstrip("/") + "/" for d in owned_dirs)
    sums = Path(models_dir) / "SHA256SUMS"
    old = sums.read_text(encoding="utf-8").splitlines(True) if sums.exists() else []
    kept, replaced = [], False
    for line in old:
        parts = line.rstrip("\n").split(None, 1)
        name = parts[1].lstrip("*") if len(parts) == 2 else ""
        if name in ours or (owned and name.startswith(owned)):
            if not replaced:
                kept.extend(lines)
                replaced = True
            continue
        if not line.endswith("\n"):
            line += "\n"
        kept.append(line)
    if not replaced:
        kept.extend(lines)
    fd, tmp = tempfile.mkstemp(prefix=".SHA256SUMS.", dir=models_dir)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.writelines(kept)
    os.chmod(tmp, 0o644)
    os.replace(tmp, sums)
    log(f"SHA256SUMS: {len(lines)} lines of ours, {len(kept) - len(lines)} other lines kept")


# ---------------------------------------------------------------------------------------
# Files


def f32(a) -> bytes:
    """Raw little-endian float32, row-major."""
    return np.ascontiguousarray(a, dtype="<f4").tobytes()


def save_f32(path, array) -> None:
    Path(path).write_bytes(f32(array))


def save_f32s(directory: Path, arrays: dict) -> Path:
    """directory/name for each name: array, as raw float32 (directory made if missing)."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, array in arrays.items():
        save_f32(directory / name, array)
    return directory


def load_f32(path, shape=None) -> np.ndarray:
    a = np.fromfile(path, dtype="<f4")
    return a.reshape(shape) if shape is not None else a


def write_json(path, obj) -> None:
    """JSON with indent 1 and every list of plain values on one line."""
    text = json.dumps(obj, indent=1)
    text = re.sub(r"\[\s*([^\[\]{}]*?)\s*\]",
                  lambda m: "[" + re.sub(r"\s*\n\s*", " ", m.group(1)) + "]", text)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text + "\n")


# ---------------------------------------------------------------------------------------
# Runtimes and export


def ort_session(model):
    """onnxruntime on the CPU with one thread (its sums are then run-to-run identical); model is
    ONNX bytes or a path."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    src = model if isinstance(model, bytes) else str(model)
    return ort.InferenceSession(src, options, providers=["CPUExecutionProvider"])


def run_onnx(model, tensor, input_name) -> dict:
    """{output name: array} for one input."""
    session = ort_session(model)
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, {input_name: tensor})))


def median_ms(fn, runs: int = 20) -> float:
    fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1000.0 * float(np.median(times))


def set_metadata(model, pairs) -> None:
    """Appends (key, value) pairs to an ONNX model's metadata_props."""
    for key, value in pairs:
        model.metadata_props.add(key=key, value=value)


def same_twice(make, what: str = "conversion"):
    """make() twice; fails unless both results are equal (the conversion is deterministic)."""
    first = make()
    if make() != first:
        raise SystemExit(f"{what} is not deterministic")
    return first


def torch_state(model, checkpoint: bytes):
    """Loads a state dict (strict) into a PyTorch module and puts it in eval mode; returns the
    module and its parameter count."""
    import torch

    state = torch.load(io.BytesIO(checkpoint), map_location="cpu", weights_only=True)
    model.load_state_dict(state, strict=True)
    model.eval()
    return model, sum(p.numel() for p in model.parameters())


def torch_export_twice(load_model, export_onnx, path: Path):
    """PyTorch on one thread; load_model() -> (model, parameter count); export_onnx(model) run
    twice (the bytes must be identical) and written to path. Returns (model, parameter count,
    ONNX bytes)."""
    import torch

    torch.set_num_threads(1)
    model, n_params = load_model()
    onnx_bytes = same_twice(lambda: export_onnx(model))
    path.write_bytes(onnx_bytes)
    return model, n_params, onnx_bytes


def torch_to_onnx(module, dummy, names: tuple[str, str], opset: int, file_name: str,
                  producer: str, doc_string: str, metadata) -> bytes:
    """torch.onnx.export (TorchScript exporter, constant folding) for one fixed-shape input and
    one output, then producer, doc string and metadata set and the full ONNX checker run."""
    import onnx
    import torch

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / file_name
        with torch.no_grad():
            torch.onnx.export(module, (dummy,), str(path), dynamo=False, export_params=True,
                              opset_version=opset, do_constant_folding=True,
                              input_names=[names[0]], output_names=[names[1]])
        m = onnx.load(str(path))
    m.producer_name = producer
    m.doc_string = doc_string
    set_metadata(m, metadata)
    onnx.checker.check_model(m, full_check=True)
    return m.SerializeToString()


# ---------------------------------------------------------------------------------------
# Synthetic speech-like voice (16 kHz): glottal pulses through gliding formant resonators.

VOICE_SR = 16000
# Vowel formants (F1, F2, F3) in Hz, adult male averages (Peterson & Barney style).
VOWELS = {"a": (730.0, 1090.0, 2440.0), "i": (270.0, 2290.0, 3010.0),
          "u": (300.0, 870.0, 2240.0), "e": (530.0, 1840.0, 2480.0),
          "o": (570.0, 840.0, 2410.0)}
FORMANT_BANDWIDTHS = (90.0, 110.0, 170.0)


def _rosenberg(phase: np.ndarray, open_q: float = 0.4, close_q: float = 0.16) -> np.ndarray:
    """Rosenberg glottal flow pulse, phase in [0, 1) of each pitch period."""
    g = np.zeros_like(phase)
    rising = phase < open_q
    g[rising] = 0.5 * (1.0 - np.cos(np.pi * phase[rising] / open_q))
    falling = (phase >= open_q) & (phase < open_q + close_q)
    g[falling] = np.cos(0.5 * np.pi * (phase[falling] - open_q) / close_q)
    return g


def _resonate(x: np.ndarray, freqs: np.ndarray, bandwidth: float) -> np.ndarray:
    """Two-pole resonator with a per-sample centre frequency and unity gain at DC (plain
    Python floats, so the result does not depend on a filtering library)."""
    r = math.exp(-math.pi * bandwidth / VOICE_SR)
    a2 = r * r
    out = [0.0] * len(x)
    y1 = y2 = 0.0
    for n, (xn, fn) in enumerate(zip(x.tolist(), freqs.tolist())):
        a1 = -2.0 * r * math.cos(2.0 * math.pi * fn / VOICE_SR)
        v = (1.0 + a1 + a2) * xn - a1 * y1 - a2 * y2
        out[n] = v
        y2, y1 = y1, v
    return np.array(out)


def voiced_speech(rng: np.random.Generator, syllables: str, f0: float, formant_scale: float,
                  syllable_s: float = 0.22, gap_s: float = 0.04) -> np.ndarray:
    """Speech-like signal, peak 1: Rosenberg glottal pulses (F0 declination, 3.1 Hz wobble,
    smoothed jitter), lip radiation (first difference), aspiration noise, three formant
    resonators gliding (40 ms) between the vowels of `syllables`, a syllabic envelope with
    30 ms raised-cosine ramps, and fricative-like high-passed noise in the gaps."""
    sr = VOICE_SR
    n_syl = len(syllables)
    seg, gap = int(syllable_s * sr), int(gap_s * sr)
    n = n_syl * (seg + gap)
    t = np.arange(n) / sr
    jitter = np.convolve(rng.normal(0.0, 1.0, n), np.ones(400) / 400.0, mode="same")
    f0_track = f0 * (1.0 - 0.15 * t / t[-1]) * (1.0 + 0.04 * np.sin(2 * np.pi * 3.1 * t)
                                                 + 0.6 * jitter)
    flow = _rosenberg((np.cumsum(f0_track) / sr) % 1.0)
    y = np.diff(flow, prepend=0.0) * 20.0 + rng.normal(0.0, 0.02, n)
    tracks = np.zeros((3, n))
    for k, v in enumerate(syllables):
        tracks[:, k * (seg + gap):(k + 1) * (seg + gap)] = (np.array(VOWELS[v])[:, None]
                                                            * formant_scale)
    glide = np.ones(int(0.04 * sr)) / int(0.04 * sr)
    for j in range(3):
        padded = np.pad(tracks[j], (len(glide), len(glide)), mode="edge")
        tracks[j] = np.convolve(padded, glide, mode="same")[len(glide):-len(glide)]
    for j in range(3):
        y = _resonate(y, tracks[j], FORMANT_BANDWIDTHS[j])
    env = np.zeros(n)
    ramp = int(0.03 * sr)
    for k in range(n_syl):
        e = np.ones(seg)
        e[:ramp] = 0.5 - 0.5 * np.cos(np.pi * np.arange(ramp) / ramp)
        e[-ramp:] = e[:ramp][::-1]
        env[k * (seg + gap):k * (seg + gap) + seg] = e * (0.8 + 0.2 * math.sin(1.7 * k))
    y = y * env
    hiss = np.diff(rng.normal(0.0, 1.0, n + 1))
    noise_env = np.zeros(n)
    for k in range(n_syl - 1):
        lo = k * (seg + gap) + seg - ramp
        noise_env[lo:lo + gap + 2 * ramp] = np.hanning(gap + 2 * ramp)
    return y / np.abs(y).max() + 0.05 * hiss * noise_env


def to_pcm16_grid(x: np.ndarray) -> np.ndarray:
    """Round to the 16-bit PCM grid k/32768 (exact in float32)."""
    return (np.clip(np.rint(x * 32768.0), -32768, 32767) / 32768.0).astype(np.float32)


def assemble(parts: list[tuple[str, np.ndarray]]) -> tuple[np.ndarray, list[dict]]:
    """(description, samples) parts -> the signal on the 16-bit grid and its layout
    [{"what", "start", "end"}] in samples."""
    layout, pos = [], 0
    for what, samples in parts:
        layout.append({"what": what, "start": pos, "end": pos + len(samples)})
        pos += len(samples)
    return to_pcm16_grid(np.concatenate([p for _, p in parts])), layout


# ---------------------------------------------------------------------------------------
# Synthetic face: a fixed smooth pattern (a cartoon face on a gradient, all Gaussian blobs and
# logistic edges, so that face detectors actually fire) plus seeded noise, quantised to 8-bit
# like a camera image. No third-party image is involved.


def synth_image_u8(height, width, seed, cx=0.5, cy=0.52, scale=1.0):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    u = (x + 0.5) / width
    v = (y + 0.5) / height
    img = np.stack([0.35 + 0.25 * u,
                    0.45 + 0.15 * np.sin(2 * np.pi * v),
                    0.55 - 0.2 * u * v], axis=-1)
    # face oval
    rx, ry = 0.26 * scale, 0.34 * scale
    d = ((u - cx) / rx) ** 2 + ((v - cy) / ry) ** 2
    mask = 1 / (1 + np.exp((d - 1) * 12))
    skin = np.array([0.85, 0.65, 0.52])
    img = img * (1 - mask[..., None]) + skin * mask[..., None]

    def blob(px, py, sx, sy, amp):
        px, py = cx + (px - 0.5) * scale, cy + (py - 0.52) * scale
        sx, sy = sx * scale, sy * scale
        return amp * np.exp(-(((u - px) / sx) ** 2 + ((v - py) / sy) ** 2))

    dark = blob(0.40, 0.44, 0.045, 0.022, 0.6) + blob(0.60, 0.44, 0.045, 0.022, 0.6)    # eyes
    dark += blob(0.40, 0.39, 0.06, 0.012, 0.4) + blob(0.60, 0.39, 0.06, 0.012, 0.4)     # brows
    dark += blob(0.50, 0.68, 0.08, 0.018, 0.45)                                         # mouth
    dark += blob(0.50, 0.57, 0.02, 0.01, 0.25)                                          # nose
    img = img - dark[..., None] * np.array([1.0, 1.1, 1.1])
    hair = 1 / (1 + np.exp(-((cy - 0.26 * scale) - v) * 40)) * mask
    img = img * (1 - hair[..., None]) + 0.15 * hair[..., None]
    img = img + rng.normal(0.0, 0.03, img.shape)
    return np.clip(np.rint(img * 255), 0, 255).astype(np.uint8)


# ---------------------------------------------------------------------------------------
# Modes of the convert_*.py scripts run through a venv driver (--check, --cache-dir, ...)


def arg_parser(doc: str, check_help: str = "reconvert into a temp dir and verify the committed "
                                           "files") -> argparse.ArgumentParser:
    """The common command line: --check and --cache-dir (where downloads are kept)."""
    parser = argparse.ArgumentParser(description=doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help=check_help)
    parser.add_argument("--cache-dir", type=Path, default=default_cache_dir())
    return parser


def print_report(report: dict, width: int = 55) -> None:
    for k, v in report.items():
        print(f"  {k:{width}s} {v:.3g}" if isinstance(v, float) else f"  {k:{width}s} {v}")


def enforce(report: dict, limits: dict[str, float], width: int = 55) -> None:
    """Prints a build's report of measured differences and fails if any entry named in limits is
    above its tolerance."""
    print_report(report, width)
    bad = [k for k, tol in limits.items() if not report[k] <= tol]
    if bad:
        raise SystemExit(f"differences above tolerance: {bad}")


def convert_main(args, sources, check, write, other=None) -> None:
    """Runs the mode chosen on the command line, timed: other(src) when given (a local
    evaluation), check(src, MODELS_DIR) with --check, else write(src, MODELS_DIR); src =
    sources(args.cache_dir), the hash-checked inputs."""
    t0 = time.time()
    src = sources(args.cache_dir)
    if other is not None:
        other(src)
    elif args.check:
        check(src, MODELS_DIR)
    else:
        write(src, MODELS_DIR)
    log(f"done in {time.time() - t0:.0f} s")


def write_outputs(build, models_dir: Path, ours: list[str], onnx_names: list[str]) -> None:
    """The default mode: build(out) writes everything into a temporary models/-like directory
    (and fails on differences above tolerance); the files `ours` are copied into models_dir, their
    SHA256SUMS lines updated and the ONNX files' sizes and sums printed."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        build(out)
        for rel in ours:
            target = models_dir / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes((out / rel).read_bytes())
    update_sums(models_dir, ours)
    for name in onnx_names:
        p = models_dir / name
        print(f"wrote {name} ({p.stat().st_size} bytes) sha256 {sha256_file(p)}")


class Check:
    """The bookkeeping of a --check run, used as `with Check(models_dir) as c:`: fresh files,
    regenerated into the temporary directory c.fresh, against the committed ones in models_dir
    and their SHA256SUMS lines; c.done() then fails with the list of failures, if any."""

    def __init__(self, models_dir: Path, width: int = 45):
        self.models_dir, self.width = Path(models_dir), width
        self.sums = read_sums(models_dir)
        self.failures: list[str] = []

    def __enter__(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.fresh = Path(self._tmp.name)
        return self

    def __exit__(self, *exc):
        self._tmp.cleanup()

    def expect(self, ok: bool, failure: str) -> None:
        if not ok:
            self.failures.append(failure)

    def identical(self, rels) -> None:
        """Fresh file, committed file and SHA256SUMS line all the same."""
        for rel in rels:
            a, b = sha256_file(self.fresh / rel), sha256_file(self.models_dir / rel)
            print(f"  {rel:{self.width}s} fresh {a[:16]} committed {b[:16]} "
                  f"SHA256SUMS {self.sums.get(rel, '-')[:16]}")
            self.expect(a == b == self.sums.get(rel),
                        f"{rel}: not byte-identical (or SHA256SUMS line stale)")

    def listed(self, rels) -> None:
        """The SHA256SUMS lines of rels match the committed files."""
        for rel in rels:
            self.expect(self.sums.get(rel) == sha256_file(self.models_dir / rel),
                        f"{rel}: SHA256SUMS line does not match the committed file")

    def close(self, rels_tolerances) -> None:
        """Fresh float32 files within a tolerance of the committed ones: (rel, tolerance) pairs."""
        for rel, tol in rels_tolerances:
            a, b = load_f32(self.fresh / rel), load_f32(self.models_dir / rel)
            diff = float(np.abs(a - b).max()) if a.shape == b.shape else float("inf")
            print(f"  {rel:{self.width}s} max |fresh - committed| = {diff:.3g}")
            self.expect(diff <= tol, f"{rel}: {diff:.3g}")

    def done(self) -> None:
        if self.failures:
            raise SystemExit("check failed:\n  " + "\n  ".join(self.failures))
        print("check passed")


# ---------------------------------------------------------------------------------------
# tf2onnx drivers (convert_mediapipe.py, convert_human.py): each model is converted twice in
# separate processes, canonicalised, compared; reference vectors from TensorFlow; then installed
# into models/ or checked against it. A model spec is a dict with at least "name", "input"
# (name, shape) and "outputs" [(name, shape), ...].
#
# ONNX canonicalisation. tf2onnx 1.17 is not deterministic: its optimisers iterate over sets
# of Node objects (hashed by id(), i.e. by memory address), so the order of nodes and the
# numbers in generated names (const_fold_opt__N, ...) change from run to run even with a
# fixed PYTHONHASHSEED, while the graph itself is the same. Rewriting the graph in an order
# derived from its structure alone, with names derived from that order, makes the bytes
# reproducible. Graph input and output names are kept.


def canonicalize(model, doc_string, metadata):
    import onnx

    g = model.graph
    producer = {}
    for node in g.node:
        for out in node.output:
            producer[out] = node
    inits = {t.name: t for t in g.initializer}

    order, seen = [], set()

    def visit(root):  # iterative post-order DFS over inputs in their order
        stack = [(root, 0)]
        while stack:
            node, k = stack.pop()
            if k == 0:
                if id(node) in seen:
                    continue
                seen.add(id(node))
            if k < len(node.input):
                stack.append((node, k + 1))
                p = producer.get(node.input[k])
                if p is not None and id(p) not in seen:
                    stack.append((p, 0))
            else:
                order.append(node)

    for out in g.output:
        visit(producer[out.name])
    if len(order) != len(g.node):
        raise SystemExit(f"canonicalize: {len(g.node) - len(order)} nodes do not reach an output")

    rename = {"": ""}
    for name in [i.name for i in g.input] + [o.name for o in g.output]:
        rename[name] = name
    new_inits = []
    for i, node in enumerate(order):
        for name in node.input:
            if name not in rename:
                if name not in inits:
                    raise SystemExit(f"canonicalize: input {name} has no producer")
                rename[name] = f"c{len(new_inits)}"
                new_inits.append(inits[name])
        for k, name in enumerate(node.output):
            if name not in rename:
                rename[name] = f"t{i}" if k == 0 else f"t{i}_{k}"
    if len(new_inits) != len(inits):
        raise SystemExit("canonicalize: unused initializers")

    nodes = []
    for i, node in enumerate(order):
        n = onnx.NodeProto()
        n.CopyFrom(node)
        n.name = f"{n.op_type}_{i}"
        n.input[:] = [rename[x] for x in n.input]
        n.output[:] = [rename[x] for x in n.output]
        nodes.append(n)
    tensors = []
    for t in new_inits:
        c = onnx.TensorProto()
        c.CopyFrom(t)
        c.name = rename[t.name]
        tensors.append(c)
    del g.node[:]
    g.node.extend(nodes)
    del g.initializer[:]
    g.initializer.extend(tensors)
    del g.value_info[:]
    g.doc_string = doc_string
    # drop opset imports no node uses (tf2onnx always adds ai.onnx.ml)
    used = {n.domain for n in g.node}
    keep = [o for o in model.opset_import if o.domain in used or o.domain == ""]
    del model.opset_import[:]
    model.opset_import.extend(keep)
    del model.metadata_props[:]
    set_metadata(model, metadata)
    return model


def close(a, b, tol):
    """JSON values equal, numbers within tol."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k], tol) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y, tol) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and abs(a - b) <= tol
    return a == b


def tf2onnx_twice(spec, command, scratch, out_dir, doc_string, metadata, source):
    """Runs command(output_path) (a tf2onnx command line) twice in different processes with
    PYTHONHASHSEED 0 and 1 and canonicalises both results, which must be byte-identical (this
    conversion's own determinism check); checks the signature against the spec, writes
    out_dir/<name>.onnx and returns the ONNX model."""
    import onnx

    canon = []
    for seed in ("0", "1"):
        raw = os.path.join(scratch, f"{spec['name']}.seed{seed}.onnx")
        logfile = os.path.join(scratch, f"{spec['name']}.seed{seed}.log")
        env = dict(os.environ, PYTHONHASHSEED=seed, TF_CPP_MIN_LOG_LEVEL="2")
        with open(logfile, "w") as lf:
            rc = subprocess.call(command(raw), stdout=lf, stderr=subprocess.STDOUT, env=env)
        if rc != 0:
            sys.stderr.write(open(logfile).read()[-4000:])
            raise SystemExit(f"tf2onnx failed on {source}")
        model = onnx.load(raw)
        canonicalize(model, doc_string, metadata)
        onnx.checker.check_model(model, full_check=True)
        canon.append(model.SerializeToString())
    if canon[0] != canon[1]:
        raise SystemExit(f"{spec['name']}: two conversions differ after canonicalisation")

    model = onnx.load_from_string(canon[0])
    ins = [(i.name, [d.dim_value for d in i.type.tensor_type.shape.dim]) for i in model.graph.input]
    outs = [(o.name, [d.dim_value for d in o.type.tensor_type.shape.dim]) for o in model.graph.output]
    want_in = [(spec["input"][0], spec["input"][1])]
    want_out = [(n, s) for n, s in spec["outputs"]]
    if ins != want_in or outs != want_out:
        raise SystemExit(f"{spec['name']}: ONNX signature {ins} -> {outs}, "
                         f"expected {want_in} -> {want_out}")
    dest = os.path.join(out_dir, spec["name"] + ".onnx")
    with open(dest, "wb") as f:
        f.write(canon[0])
    log(f"  {spec['name']}.onnx  {len(canon[0])} bytes  sha256 {sha256_file(dest)}")
    return model


def build_models(specs, out_dir, convert_one, build_reference, runtime, tolerance) -> None:
    """convert_one(spec, scratch) for every model, then build_reference(spec) (which returns the
    largest onnxruntime-vs-reference difference); fails above tolerance."""
    os.makedirs(out_dir, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="tf2onnx-", dir=out_dir)
    log("converting (each model twice, PYTHONHASHSEED 0 and 1, compared after canonicalisation)")
    for spec in specs:
        convert_one(spec, scratch)
    shutil.rmtree(scratch)
    log(f"reference vectors ({runtime}) and onnxruntime check")
    worst = 0.0
    for spec in specs:
        worst = max(worst, build_reference(spec))
    if worst > tolerance:
        raise SystemExit(f"FAIL: max abs difference {worst:.3g} > {tolerance}")
    log(f"ok: max abs difference onnxruntime vs {runtime} {worst:.3g} <= {tolerance}")


def install_models(specs, out_dir, models_dir, ours) -> None:
    """Copies each model's ONNX file and reference folder from out_dir into models_dir (the old
    folder is replaced) and writes the SHA256SUMS lines of `ours`."""
    for spec in specs:
        shutil.copyfile(os.path.join(out_dir, spec["name"] + ".onnx"),
                        os.path.join(models_dir, spec["name"] + ".onnx"))
        src = os.path.join(out_dir, REF_DIR, spec["name"])
        dst = os.path.join(models_dir, REF_DIR, spec["name"])
        if os.path.isdir(dst):
            shutil.rmtree(dst)
        shutil.copytree(src, dst)
    update_sums(models_dir, ours, [f"{REF_DIR}/{spec['name']}" for spec in specs])


def check_models(specs, out_dir, models_dir, exact, tolerance, what, width, json_ignore=()):
    """A fresh out_dir against models_dir: ONNX files byte-identical and in SHA256SUMS; reference
    files in `exact` byte-identical, other .f32 files and the JSON files (numbers, without the
    keys json_ignore) within tolerance; every reference file in SHA256SUMS; the committed ONNX
    files reproduce the committed outputs."""
    problems = []
    sums = read_sums(models_dir)
    for spec in specs:
        name = spec["name"] + ".onnx"
        fresh = sha256_file(os.path.join(out_dir, name))
        committed_path = os.path.join(models_dir, name)
        committed = sha256_file(committed_path) if os.path.exists(committed_path) else "missing"
        listed = sums.get(name, "not listed")
        ok = fresh == committed == listed
        log(f"  {name:{width}s} fresh {fresh[:16]}  committed {committed[:16]}  "
            f"SHA256SUMS {listed[:16]}  {'ok' if ok else 'MISMATCH'}")
        if not ok:
            problems.append(f"{name}: sha256 differs")

        fresh_ref = os.path.join(out_dir, REF_DIR, spec["name"])
        ref = os.path.join(models_dir, REF_DIR, spec["name"])
        if not os.path.isdir(ref):
            problems.append(f"{ref} missing")
            continue
        if sorted(os.listdir(ref)) != sorted(os.listdir(fresh_ref)):
            problems.append(f"{ref}: file list differs")
        for f in sorted(os.listdir(fresh_ref)):
            p_new, p_old = os.path.join(fresh_ref, f), os.path.join(ref, f)
            if not os.path.exists(p_old):
                continue
            if f in exact:
                same = open(p_new, "rb").read() == open(p_old, "rb").read()
            elif f.endswith(".f32"):
                a, b = np.fromfile(p_new, "<f4"), np.fromfile(p_old, "<f4")
                same = a.shape == b.shape and float(np.abs(a - b).max()) <= tolerance
            else:
                a, b = json.load(open(p_new)), json.load(open(p_old))
                for key in json_ignore:
                    a.pop(key, None), b.pop(key, None)
                same = close(a, b, tolerance)
            if not same:
                problems.append(f"{REF_DIR}/{spec['name']}/{f} differs from a fresh run")
            if sums.get(f"{REF_DIR}/{spec['name']}/{f}") != sha256_file(p_old):
                problems.append(f"{REF_DIR}/{spec['name']}/{f}: not matching SHA256SUMS")
        # the committed ONNX against the committed reference
        if os.path.exists(committed_path):
            in_name, in_shape = spec["input"]
            x = load_f32(os.path.join(ref, "input.f32"), in_shape)
            out = run_onnx(committed_path, x, in_name)
            for oname, oshape in spec["outputs"]:
                d = float(np.abs(out[oname] - load_f32(os.path.join(ref, oname + ".f32"), oshape)).max())
                log(f"    committed onnx vs committed reference {oname}: max abs diff {d:.3g}")
                if d > tolerance:
                    problems.append(f"{name}: {oname} differs from the reference by {d:.3g}")
    if problems:
        for p in problems:
            log("FAIL: " + p)
        raise SystemExit(1)
    log(f"check ok: committed {what} ONNX files are what this script produces")


def helper_main(argv, doc, build, install, check) -> None:
    """The subcommands of a tf2onnx helper: build SOURCE OUT, install OUT MODELS, check OUT MODELS."""
    if len(argv) != 3 or argv[0] not in ("build", "install", "check"):
        raise SystemExit(doc)
    cmd, a, b = argv
    {"build": build, "install": install, "check": check}[cmd](a, b)
