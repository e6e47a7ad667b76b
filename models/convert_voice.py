#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 OR MIT
"""Reproducible conversion of the voice models: Silero VAD v6 (16 kHz, static-shape variant)
and the Resemblyzer GE2E speaker encoder, with reference vectors from the original runtimes.

Sources (both wheels are downloaded with pip --require-hashes and checked again here):
  PyPI silero-vad==6.2.3, silero_vad/data/silero_vad_openvino_16k.onnx (MIT). Already ONNX:
      it is copied byte for byte to models/silero_vad_16k.onnx.
  PyPI resemblyzer==0.1.4, resemblyzer/pretrained.pt (Apache-2.0). A legacy (pre-1.6, not zip)
      torch.save file; its tensors are read here with a restricted pickle reader (no torch),
      and the 3-layer LSTM + Linear + ReLU + L2 normalisation is written as an ONNX graph
      (opset 13) with the onnx package: models/resemblyzer_ge2e.onnx.

Reference vectors come from the packages' own code running in their own runtimes:
  silero: silero_vad.utils_vad.get_speech_timestamps + OnnxWrapper (onnxruntime); cross-checked
      against the package's TorchScript model (silero_vad.jit) and its standard silero_vad.onnx.
  resemblyzer: resemblyzer.preprocess_wav (librosa, webrtcvad), wav_to_mel_spectrogram
      (librosa) and VoiceEncoder.embed_utterance (PyTorch CPU); cross-checked against an
      independent float64 numpy LSTM written from the checkpoint tensors.

Run through models/convert-voice.sh, which makes the pinned venv. Modes:
  (default)       convert twice (must be byte-identical), write both ONNX files, the reference
                  folders models/reference/silero_vad_16k/ and models/reference/resemblyzer_ge2e/,
                  check onnxruntime against the references (fails above 1e-3) and update this
                  conversion's lines in models/SHA256SUMS
  --check         convert and regenerate everything into a temporary directory; fail unless the
                  ONNX files and reference inputs are byte-identical to the committed ones and
                  SHA256SUMS, the regenerated reference outputs are within tolerance of the
                  committed ones, and the committed ONNX files reproduce the committed outputs
  --real-speech   local sanity check on real recordings (LibriSpeech FLAC): same- vs different-
                  speaker cosine similarities, ONNX vs PyTorch; writes nothing
"""

from __future__ import annotations

import collections
import io
import json
import pickle
import tempfile
import time
from pathlib import Path

import numpy as np

# The voice generator (voiced_speech) lived here and moved to common.py; the committed
# reference.json files of this and other conversions still name convert_voice.py.
from common import (Check, arg_parser, assemble, check_installed, convert_main, enforce,
                    load_f32, ort_session, pip_download, read_member, same_twice, save_f32s,
                    set_metadata, voiced_speech, write_outputs)

# ---------------------------------------------------------------------------------------
# Pinned sources, hashes recorded the first time the conversion was run (2026-11-21).

SILERO_PACKAGE = "silero-vad"
SILERO_VERSION = "6.2.3"
SILERO_WHEEL = "silero_vad-6.2.3-py3-none-any.whl"
SILERO_WHEEL_SHA256 = "7b7f5436cfcb02fae583a05b512ea96467fd449fe54cb49a5e4f06c51a1e43b8"
SILERO_MEMBER = "silero_vad/data/silero_vad_openvino_16k.onnx"
SILERO_MEMBER_SHA256 = "7776b81ad1b0350c15d7f1555943b9232eb53e9ca5d989c6d0cea9ebc8664d87"
# Only used for cross-checks (the same network in the package's other formats).
SILERO_STD_MEMBER = "silero_vad/data/silero_vad.onnx"
SILERO_STD_SHA256 = "1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3"
SILERO_JIT_MEMBER = "silero_vad/data/silero_vad.jit"
SILERO_JIT_SHA256 = "e1122837f4154c511485fe0b9c64455f7b929c96fbb8d79fbdb336383ebd3720"
SILERO_UTILS_MEMBER = "silero_vad/utils_vad.py"
SILERO_UTILS_SHA256 = "15d0f6b3ef9590e22ca2f146e1436f6901da356cb552d3183df4100862b333cb"

RESEMBLYZER_PACKAGE = "resemblyzer"
RESEMBLYZER_VERSION = "0.1.4"
RESEMBLYZER_WHEEL = "Resemblyzer-0.1.4-py3-none-any.whl"
RESEMBLYZER_WHEEL_SHA256 = "8f12eb2f1a9982d32e8db7856de754709b59c93a77bcf0ff536584b619a9dd1f"
RESEMBLYZER_MEMBER = "resemblyzer/pretrained.pt"
RESEMBLYZER_MEMBER_SHA256 = "39373b86598fa3da9fcddee6142382efe09777e8d37dc9c0561f41f0070f134e"
RESEMBLYZER_CODE_SHA256 = {
    "resemblyzer/audio.py": "c43bd9e415b97487b8f1f6e0bcf4d41055ef2b2dc6a7a6d5c2dd35dcea360ff4",
    "resemblyzer/hparams.py": "511abe53b7515263ff33e1c0eaf82f7ffaa165f977b90def312182a15dfb81ae",
    "resemblyzer/voice_encoder.py": "c9ad016fcc4e627d44b27f4597001eec360a6c6f41286297c820a65acfe90767",
}

VAD_ONNX = "silero_vad_16k.onnx"
GE2E_ONNX = "resemblyzer_ge2e.onnx"
VAD_REF = "reference/silero_vad_16k"
GE2E_REF = "reference/resemblyzer_ge2e"

OPSET = 13
IR_VERSION = 8
MAX_ALLOWED_DIFF = 1e-3     # ONNX vs reference, and regenerated vs committed reference outputs
MEL_REL_TOLERANCE = 1e-4    # regenerated vs committed mel spectrogram, relative to its maximum
SR = 16000
VAD_CHUNK, VAD_CONTEXT = 512, 64
GE2E_FRAMES, GE2E_MELS, GE2E_HIDDEN, GE2E_LAYERS = 160, 40, 256, 3
VAD_SEED = 20261121
GE2E_SEED = 20261122
VAD_STEP_CHUNK = 40         # chunk whose single-step model inputs/outputs are stored

# get_speech_timestamps parameter sets stored as state-machine references (all other
# parameters at silero's defaults). The first is silero's default configuration.
VAD_PARAM_SETS = [
    {"name": "defaults", "params": {}},
    {"name": "threshold_0.3", "params": {"threshold": 0.3}},
    {"name": "threshold_0.8_pad_0", "params": {"threshold": 0.8, "speech_pad_ms": 0}},
    {"name": "min_speech_50_min_silence_300_pad_100",
     "params": {"min_speech_duration_ms": 50, "min_silence_duration_ms": 300,
                "speech_pad_ms": 100}},
    {"name": "max_speech_1.5s", "params": {"max_speech_duration_s": 1.5}},
    {"name": "max_speech_1.5s_last_silence",
     "params": {"max_speech_duration_s": 1.5, "use_max_poss_sil_at_max_speech": False}},
    {"name": "max_speech_0.7s_min_silence_at_max_50",
     "params": {"max_speech_duration_s": 0.7, "min_silence_at_max_speech": 50}},
    {"name": "seconds", "params": {"return_seconds": True}},
    {"name": "seconds_resolution_3", "params": {"return_seconds": True, "time_resolution": 3}},
]


# ---------------------------------------------------------------------------------------
# Sources


class Sources:
    def __init__(self, cache_dir: Path):
        self.silero = pip_download(cache_dir, SILERO_PACKAGE, SILERO_VERSION, SILERO_WHEEL,
                                   SILERO_WHEEL_SHA256)
        self.resemblyzer = pip_download(cache_dir, RESEMBLYZER_PACKAGE, RESEMBLYZER_VERSION,
                                        RESEMBLYZER_WHEEL, RESEMBLYZER_WHEEL_SHA256)
        for member, sha in RESEMBLYZER_CODE_SHA256.items():
            read_member(self.resemblyzer, RESEMBLYZER_WHEEL_SHA256, member, sha)
        read_member(self.silero, SILERO_WHEEL_SHA256, SILERO_UTILS_MEMBER, SILERO_UTILS_SHA256)
        # The reference runtimes import silero_vad and resemblyzer from the venv: make sure
        # those are the same files as in the hash-checked wheels.
        check_installed({SILERO_MEMBER: SILERO_MEMBER_SHA256, SILERO_STD_MEMBER: SILERO_STD_SHA256,
                         SILERO_JIT_MEMBER: SILERO_JIT_SHA256,
                         SILERO_UTILS_MEMBER: SILERO_UTILS_SHA256,
                         RESEMBLYZER_MEMBER: RESEMBLYZER_MEMBER_SHA256, **RESEMBLYZER_CODE_SHA256})

    def silero_onnx(self) -> bytes:
        return read_member(self.silero, SILERO_WHEEL_SHA256, SILERO_MEMBER, SILERO_MEMBER_SHA256)

    def silero_std_onnx(self) -> bytes:
        return read_member(self.silero, SILERO_WHEEL_SHA256, SILERO_STD_MEMBER, SILERO_STD_SHA256)

    def checkpoint(self) -> bytes:
        return read_member(self.resemblyzer, RESEMBLYZER_WHEEL_SHA256, RESEMBLYZER_MEMBER,
                           RESEMBLYZER_MEMBER_SHA256)


# ---------------------------------------------------------------------------------------
# Legacy torch.save reader (torch/serialization.py, _legacy_save / _legacy_load), no torch:
#   pickle(magic 0x1950a86a20f9469cfc6c), pickle(protocol 1001), pickle(sys_info),
#   pickle(object) whose tensors are torch._utils._rebuild_tensor_v2(storage, offset, size,
#   stride, requires_grad, hooks) with storages as persistent ids
#   ('storage', torch.FloatStorage, key, location, numel, view_metadata),
#   pickle(list of storage keys), then per key: int64 little-endian numel + the raw elements.

LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL = 1001
STORAGE_DTYPES = {"FloatStorage": "<f4", "DoubleStorage": "<f8", "HalfStorage": "<f2",
                  "LongStorage": "<i8", "IntStorage": "<i4", "ShortStorage": "<i2",
                  "CharStorage": "i1", "ByteStorage": "u1", "BoolStorage": "?"}


class _StorageType:
    def __init__(self, name: str):
        self.dtype = np.dtype(STORAGE_DTYPES[name])


class _StorageRef:
    def __init__(self, key: str):
        self.key = key


class _TensorRef:
    def __init__(self, storage, offset, size, stride):
        self.storage, self.offset, self.size, self.stride = storage, offset, tuple(size), tuple(stride)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, *_ignored):
    return _TensorRef(storage, storage_offset, size, stride)


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"unexpected global {module}.{name}")


def read_legacy_torch(data: bytes) -> dict:
    f = io.BytesIO(data)
    if _PlainUnpickler(f).load() != LEGACY_MAGIC:
        raise ValueError("not a legacy torch.save file (magic number)")
    if _PlainUnpickler(f).load() != LEGACY_PROTOCOL:
        raise ValueError("unsupported legacy protocol version")
    sys_info = _PlainUnpickler(f).load()
    if not sys_info.get("little_endian", False):
        raise ValueError("big-endian checkpoint")
    storages: dict[str, tuple[np.dtype, int]] = {}

    class Unpickler(pickle.Unpickler):
        def find_class(self, module, name):
            if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
                return _rebuild_tensor_v2
            if module == "torch" and name in STORAGE_DTYPES:
                return _StorageType(name)
            if (module, name) == ("collections", "OrderedDict"):
                return collections.OrderedDict
            raise pickle.UnpicklingError(f"unexpected global {module}.{name}")

        def persistent_load(self, pid):
            kind, storage_type, key, _location, numel, view_metadata = pid
            if kind != "storage" or view_metadata is not None:
                raise pickle.UnpicklingError(f"unsupported persistent id {pid!r}")
            storages.setdefault(key, (storage_type.dtype, numel))
            return _StorageRef(key)

    obj = Unpickler(f).load()
    keys = _PlainUnpickler(f).load()
    raw: dict[str, np.ndarray] = {}
    for key in keys:
        dtype, numel = storages[key]
        n = int.from_bytes(f.read(8), "little", signed=True)
        if n != numel:
            raise ValueError(f"storage {key}: {n} elements, pickle says {numel}")
        raw[key] = np.frombuffer(f.read(n * dtype.itemsize), dtype=dtype)
    if f.tell() != len(data):
        raise ValueError(f"read {f.tell()} of {len(data)} bytes")

    def materialise(x):
        if isinstance(x, _TensorRef):
            base = raw[x.storage.key]
            span = x.offset + sum((s - 1) * st for s, st in zip(x.size, x.stride)) + 1
            if span > base.size:
                raise ValueError("tensor view outside its storage")
            view = np.lib.stride_tricks.as_strided(
                base[x.offset:], shape=x.size,
                strides=[st * base.itemsize for st in x.stride])
            return np.array(view, dtype=base.dtype.newbyteorder("="))
        if isinstance(x, dict):
            return type(x)((k, materialise(v)) for k, v in x.items())
        if isinstance(x, (list, tuple)):
            return type(x)(materialise(v) for v in x)
        return x

    return materialise(obj)


def ge2e_weights(checkpoint: bytes) -> dict[str, np.ndarray]:
    state = read_legacy_torch(checkpoint)["model_state"]
    shapes = {"linear.weight": (256, 256), "linear.bias": (256,)}
    for layer in range(GE2E_LAYERS):
        n_in = GE2E_MELS if layer == 0 else GE2E_HIDDEN
        shapes[f"lstm.weight_ih_l{layer}"] = (4 * GE2E_HIDDEN, n_in)
        shapes[f"lstm.weight_hh_l{layer}"] = (4 * GE2E_HIDDEN, GE2E_HIDDEN)
        shapes[f"lstm.bias_ih_l{layer}"] = (4 * GE2E_HIDDEN,)
        shapes[f"lstm.bias_hh_l{layer}"] = (4 * GE2E_HIDDEN,)
    weights = {}
    for name, shape in shapes.items():
        w = state[name]
        if w.shape != shape or w.dtype != np.float32:
            raise ValueError(f"{name}: {w.shape} {w.dtype}, expected {shape} float32")
        weights[name] = w
    # similarity_weight/bias are GE2E training-loss parameters, unused at inference
    # (VoiceEncoder.load_state_dict(..., strict=False) ignores them).
    extra = sorted(set(state) - set(shapes))
    if extra != ["similarity_bias", "similarity_weight"]:
        raise ValueError(f"unexpected checkpoint entries {extra}")
    return weights


# ---------------------------------------------------------------------------------------
# ONNX graph for the GE2E encoder


def _pt_to_onnx_gates(w: np.ndarray) -> np.ndarray:
    """PyTorch stacks LSTM gates as (i, f, g, o); ONNX as (i, o, f, c) with c = PyTorch's g."""
    i, f, g, o = np.split(w, 4, axis=0)
    return np.concatenate([i, o, f, g], axis=0)


def build_ge2e_onnx(weights: dict[str, np.ndarray]):
    """mels [1,160,40] float32 -> embedding [1,256]: Transpose to time-major, three one-layer
    ONNX LSTMs (zero initial state), last layer's final hidden state, Linear, ReLU, divide by
    the L2 norm. Mirrors VoiceEncoder.forward."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    H = GE2E_HIDDEN
    nodes, inits = [], []

    def const(name, array):
        inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    nodes.append(helper.make_node("Transpose", ["mels"], ["x_time_major"], name="to_time_major",
                                  perm=[1, 0, 2]))
    x = "x_time_major"
    squeeze_axes = const("squeeze_axes_1", np.array([1], dtype=np.int64))
    for layer in range(GE2E_LAYERS):
        w = _pt_to_onnx_gates(weights[f"lstm.weight_ih_l{layer}"])[None]
        r = _pt_to_onnx_gates(weights[f"lstm.weight_hh_l{layer}"])[None]
        b = np.concatenate([_pt_to_onnx_gates(weights[f"lstm.bias_ih_l{layer}"]),
                            _pt_to_onnx_gates(weights[f"lstm.bias_hh_l{layer}"])])[None]
        p = f"lstm{layer}"
        inputs = [x, const(f"{p}.W", w.astype(np.float32)), const(f"{p}.R", r.astype(np.float32)),
                  const(f"{p}.B", b.astype(np.float32))]
        last = layer == GE2E_LAYERS - 1
        outputs = [f"{p}_y", f"{p}_h"] if last else [f"{p}_y"]
        nodes.append(helper.make_node("LSTM", inputs, outputs, name=p, hidden_size=H,
                                      direction="forward"))
        if not last:
            # Y is [seq, num_directions=1, batch, hidden] -> [seq, batch, hidden]
            nodes.append(helper.make_node("Squeeze", [f"{p}_y", squeeze_axes], [f"{p}_out"],
                                          name=f"{p}_squeeze"))
            x = f"{p}_out"
    # Y_h of the last layer is [1, 1, 256] = hidden[-1] of torch's nn.LSTM.
    nodes.append(helper.make_node(
        "Reshape", [f"lstm{GE2E_LAYERS - 1}_h", const("hidden_shape", np.array([1, H], np.int64))],
        ["hidden"], name="hidden_last_layer"))
    nodes.append(helper.make_node(
        "MatMul", ["hidden", const("linear.weight_t", weights["linear.weight"].T.copy())],
        ["linear_mm"], name="linear_matmul"))
    nodes.append(helper.make_node("Add", ["linear_mm", const("linear.bias", weights["linear.bias"])],
                                  ["linear_out"], name="linear_bias"))
    nodes.append(helper.make_node("Relu", ["linear_out"], ["embeds_raw"], name="relu"))
    nodes.append(helper.make_node("ReduceL2", ["embeds_raw"], ["norm"], name="l2_norm",
                                  axes=[1], keepdims=1))
    nodes.append(helper.make_node("Div", ["embeds_raw", "norm"], ["embedding"], name="normalise"))

    graph = helper.make_graph(
        nodes, "resemblyzer_ge2e_voice_encoder",
        [helper.make_tensor_value_info("mels", TensorProto.FLOAT, [1, GE2E_FRAMES, GE2E_MELS])],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, [1, 256])],
        inits)
    model = helper.make_model(
        graph, producer_name="vouch models/convert_voice.py", producer_version="1",
        opset_imports=[helper.make_opsetid("", OPSET)],
        doc_string=(f"Resemblyzer GE2E voice encoder from PyPI {RESEMBLYZER_PACKAGE}=="
                    f"{RESEMBLYZER_VERSION} resemblyzer/pretrained.pt (sha256 "
                    f"{RESEMBLYZER_MEMBER_SHA256}). Input: one 160-frame window of resemblyzer's "
                    "40-band POWER mel spectrogram (16 kHz, n_fft 400, hop 160), [1,160,40]. "
                    "Output: ReLU(Linear(final hidden state of the 3-layer LSTM)), "
                    "L2-normalised, [1,256]."))
    model.ir_version = IR_VERSION
    set_metadata(model, [("source", f"PyPI {RESEMBLYZER_PACKAGE}=={RESEMBLYZER_VERSION}: "
                                    f"{RESEMBLYZER_MEMBER}"),
                         ("license", "Apache-2.0 (Resemblyzer, Resemble AI)")])
    onnx.checker.check_model(model, full_check=True)
    return model


def convert(src: Sources) -> tuple[bytes, bytes]:
    """Returns (silero ONNX bytes, GE2E ONNX bytes)."""
    return src.silero_onnx(), build_ge2e_onnx(ge2e_weights(src.checkpoint())).SerializeToString()


# ---------------------------------------------------------------------------------------
# Independent numpy forward of the PyTorch modules (float64), from the checkpoint tensors.


def numpy_ge2e(weights: dict[str, np.ndarray], mels: np.ndarray) -> np.ndarray:
    """torch.nn.LSTM(40, 256, 3, batch_first=True) with zero initial state, gates (i, f, g, o):
    i = sig(W_ii x + b_ii + W_hi h + b_hi), f = sig(...), g = tanh(...), o = sig(...),
    c' = f*c + i*g, h' = o*tanh(c'); then relu(linear(h_T of layer 3)) / ||.||_2."""
    sig = lambda v: 1.0 / (1.0 + np.exp(-v))
    out = []
    for window in mels.astype(np.float64):
        x = window
        for layer in range(GE2E_LAYERS):
            w_ih = weights[f"lstm.weight_ih_l{layer}"].astype(np.float64)
            w_hh = weights[f"lstm.weight_hh_l{layer}"].astype(np.float64)
            b = (weights[f"lstm.bias_ih_l{layer}"].astype(np.float64)
                 + weights[f"lstm.bias_hh_l{layer}"].astype(np.float64))
            h = np.zeros(GE2E_HIDDEN)
            c = np.zeros(GE2E_HIDDEN)
            pre_in = x @ w_ih.T + b
            ys = []
            for t in range(x.shape[0]):
                z = pre_in[t] + w_hh @ h
                i, f, g, o = np.split(z, 4)
                c = sig(f) * c + sig(i) * np.tanh(g)
                h = sig(o) * np.tanh(c)
                ys.append(h)
            x = np.stack(ys)
        e = np.maximum(0.0, h @ weights["linear.weight"].astype(np.float64).T
                       + weights["linear.bias"].astype(np.float64))
        out.append(e / np.linalg.norm(e))
    return np.stack(out)


# ---------------------------------------------------------------------------------------
# Deterministic synthetic speech-like signals (no third-party audio), from the voice generator
# of models/common.py

def vad_signal() -> tuple[np.ndarray, list[dict]]:
    """6.8 s at 16 kHz: near-silence, two phrases of voice A split by 0.4 s, voice B (higher
    pitch, shorter vocal tract), white noise at -35 dBFS, and a 0.15 s voiced blip; the length
    is not a multiple of 512, so the last chunk is zero-padded."""
    rng = np.random.default_rng(VAD_SEED)
    quiet = lambda s: rng.normal(0.0, 10 ** (-70 / 20), int(s * SR))
    parts = [("silence -70 dBFS", quiet(0.5)),
             ("voice A phrase 1 (F0 120 Hz)", 0.3 * voiced_speech(rng, "aieoua", 120.0, 1.0)),
             ("silence -70 dBFS", quiet(0.4)),
             ("voice A phrase 2 (F0 115 Hz)", 0.3 * voiced_speech(rng, "oiea", 115.0, 1.0)),
             ("silence -70 dBFS", quiet(0.4)),
             ("voice B (F0 210 Hz, formants x1.18)", 0.25 * voiced_speech(rng, "eiaou", 210.0, 1.18)),
             ("white noise -35 dBFS", rng.normal(0.0, 10 ** (-35 / 20), int(0.8 * SR))),
             ("silence -70 dBFS", quiet(0.3)),
             ("voiced blip 0.15 s", 0.3 * voiced_speech(rng, "a", 130.0, 1.0, syllable_s=0.15)),
             ("silence -70 dBFS", quiet(0.3))]
    return assemble(parts)


def ge2e_signal() -> tuple[np.ndarray, list[dict]]:
    """5.65 s at 16 kHz, quiet (so normalize_volume raises it) and with a 1 s pause (so
    trim_long_silences removes part of it); after preprocessing it is long enough for five
    partial windows, the last one zero-padded."""
    rng = np.random.default_rng(GE2E_SEED)
    quiet = lambda s: rng.normal(0.0, 10 ** (-70 / 20), int(s * SR))
    parts = [("silence -70 dBFS", quiet(0.3)),
             ("voice C phrase 1 (F0 100 Hz, formants x0.95)",
              0.06 * voiced_speech(rng, "aoiuea", 100.0, 0.95)),
             ("silence -70 dBFS", quiet(1.0)),
             ("voice C phrase 2 (F0 104 Hz, formants x0.95)",
              0.06 * voiced_speech(rng, "ieaouaieo", 104.0, 0.95)),
             ("silence -70 dBFS", quiet(0.45))]
    return assemble(parts)


# ---------------------------------------------------------------------------------------
# Runtimes


class _SessionWithoutSr:
    """silero's OnnxWrapper always feeds 'sr'; the openvino_16k graph has no such input (it is
    the 16 kHz branch only). Drop it, record the feeds, and otherwise run the real session."""

    def __init__(self, session):
        self.session = session
        self.feeds = []

    def run(self, names, feed):
        feed = {k: np.array(v, copy=True) for k, v in feed.items() if k != "sr"}
        out = self.session.run(names, feed)
        self.feeds.append((feed, [np.array(o, copy=True) for o in out]))
        return out


class _ProbRecorder:
    """Passes get_speech_timestamps' calls through to the model and records each probability."""

    def __init__(self, model):
        self.model = model
        self.probs: list[float] = []

    def reset_states(self):
        self.model.reset_states()

    def __call__(self, x, sr):
        out = self.model(x, sr)
        self.probs.append(float(out.item()))
        return out


def silero_reference(onnx_path: Path, audio: np.ndarray) -> dict:
    """Run silero's own get_speech_timestamps with its OnnxWrapper over the openvino_16k ONNX."""
    import torch
    from silero_vad.utils_vad import (OnnxWrapper, get_speech_timestamps,
                                      get_speech_timestamps_from_probs)

    torch.set_num_threads(1)
    wrapper = OnnxWrapper(str(onnx_path), force_onnx_cpu=True)
    wrapper.session = _SessionWithoutSr(wrapper.session)
    recorder = _ProbRecorder(wrapper)
    tensor = torch.from_numpy(audio.copy())
    speeches = get_speech_timestamps(tensor, recorder)  # silero's defaults
    probs = np.array(recorder.probs, dtype=np.float32)
    feed, out = wrapper.session.feeds[VAD_STEP_CHUNK]
    step = {"input": feed["input"].astype(np.float32), "state": feed["state"].astype(np.float32),
            "output": out[0].astype(np.float32), "stateN": out[1].astype(np.float32)}
    sets = []
    for ps in VAD_PARAM_SETS:
        if ps["name"] == "defaults":
            ts = speeches
        else:
            ts = get_speech_timestamps_from_probs(list(recorder.probs), sampling_rate=SR,
                                                  audio_length_samples=len(audio), **ps["params"])
        sets.append({"name": ps["name"], "params": ps["params"], "speech_timestamps": ts})
    # The full get_speech_timestamps with a non-default parameter set must agree with the
    # probability-only state machine (it is the same code path).
    again = get_speech_timestamps(tensor, _ProbRecorder(wrapper), **VAD_PARAM_SETS[4]["params"])
    if again != sets[4]["speech_timestamps"]:
        raise SystemExit("get_speech_timestamps and get_speech_timestamps_from_probs disagree")
    return {"probs": probs, "step": step, "param_sets": sets}


def silero_cross_checks(src: Sources, audio: np.ndarray, probs: np.ndarray) -> dict:
    """The same network in the package's other formats, driven by the package's own code:
    the standard silero_vad.onnx (with the 'If' on sr) through OnnxWrapper unchanged, and the
    TorchScript silero_vad.jit (the model silero-vad loads by default)."""
    import torch
    import silero_vad
    from silero_vad.utils_vad import OnnxWrapper, get_speech_timestamps

    torch.set_num_threads(1)
    result = {}
    with tempfile.TemporaryDirectory() as tmp:
        std = Path(tmp) / "silero_vad.onnx"
        std.write_bytes(src.silero_std_onnx())
        rec = _ProbRecorder(OnnxWrapper(str(std), force_onnx_cpu=True))
        ts_std = get_speech_timestamps(torch.from_numpy(audio.copy()), rec)
        result["silero_vad.onnx (onnxruntime)"] = (float(np.abs(np.array(rec.probs) - probs).max()),
                                                   ts_std)
    rec = _ProbRecorder(silero_vad.load_silero_vad(onnx=False))
    ts_jit = get_speech_timestamps(torch.from_numpy(audio.copy()), rec)
    result["silero_vad.jit (torch)"] = (float(np.abs(np.array(rec.probs) - probs).max()), ts_jit)
    return result


def ort_vad_probs(session, audio: np.ndarray) -> np.ndarray:
    """Plain numpy re-statement of OnnxWrapper + get_speech_timestamps' chunk loop: zero state
    and zero context at the start, 512-sample chunks (last one zero-padded), each fed with the
    previous 64 input samples in front; the returned state is fed back."""
    state = np.zeros((2, 1, 128), dtype=np.float32)
    context = np.zeros(VAD_CONTEXT, dtype=np.float32)
    probs = []
    for start in range(0, len(audio), VAD_CHUNK):
        chunk = np.zeros(VAD_CHUNK, dtype=np.float32)
        piece = audio[start:start + VAD_CHUNK]
        chunk[:len(piece)] = piece
        x = np.concatenate([context, chunk])[None]
        out, state = session.run(["output", "stateN"], {"input": x, "state": state})
        probs.append(out[0, 0])
        context = x[0, -VAD_CONTEXT:]
    return np.array(probs, dtype=np.float32)


def resemblyzer_reference(audio: np.ndarray) -> dict:
    """resemblyzer's own preprocessing, mel front end and VoiceEncoder (PyTorch CPU)."""
    import torch
    from resemblyzer import VoiceEncoder, preprocess_wav, wav_to_mel_spectrogram
    import librosa

    torch.set_num_threads(1)
    pre = preprocess_wav(audio.copy())  # source_sr None: no resampling
    flags, keep, pre_np = trim_long_silences_numpy(audio)
    if not np.array_equal(pre_np, pre):
        raise SystemExit("trim_long_silences_numpy() does not reproduce resemblyzer.preprocess_wav")
    encoder = VoiceEncoder(device="cpu", verbose=False)
    embed, partials, wav_slices = encoder.embed_utterance(pre, return_partials=True)
    # The same steps as embed_utterance, kept to expose the intermediate mel spectrogram.
    wav_slices2, mel_slices = encoder.compute_partial_slices(len(pre), rate=1.3, min_coverage=0.75)
    padded = pre
    if wav_slices2[-1].stop >= len(pre):
        padded = np.pad(pre, (0, wav_slices2[-1].stop - len(pre)), "constant")
    mel = wav_to_mel_spectrogram(padded)
    windows = np.array([mel[s] for s in mel_slices])
    with torch.no_grad():
        partials2 = encoder(torch.from_numpy(windows)).numpy()
    if not (np.array_equal(partials, partials2) and
            [(s.start, s.stop) for s in wav_slices] == [(s.start, s.stop) for s in wav_slices2]):
        raise SystemExit("re-running embed_utterance's steps did not reproduce it")
    filters = librosa.filters.mel(sr=SR, n_fft=400, n_mels=GE2E_MELS)
    torch_weights = {k: v.numpy() for k, v in encoder.state_dict().items()}
    return {"preprocessed": pre.astype(np.float32), "padded_len": len(padded),
            "vad_flags": flags, "keep_windows": keep,
            "mel": mel.astype(np.float32), "mel_slices": [(int(s.start), int(s.stop)) for s in mel_slices],
            "wav_slices": [(int(s.start), int(s.stop)) for s in wav_slices],
            "windows": windows.astype(np.float32), "partials": partials.astype(np.float32),
            "embedding": np.asarray(embed, dtype=np.float32), "mel_filters": filters.astype(np.float32),
            "torch_weights": torch_weights}


def trim_long_silences_numpy(wav: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """resemblyzer.preprocess_wav for 16 kHz input, restated (see resemblyzer-notes.md); only
    the per-window webrtcvad decision comes from webrtcvad itself. Returns the raw webrtcvad
    flags, the windows kept, and the preprocessed signal."""
    import webrtcvad
    from resemblyzer.audio import normalize_volume

    wav = normalize_volume(wav, -30, increase_only=True)
    win = 480  # 30 ms
    wav = wav[:len(wav) - len(wav) % win]
    pcm = np.round(wav * 32767).astype(np.int16)
    vad = webrtcvad.Vad(3)
    flags = np.array([vad.is_speech(pcm[k:k + win].astype("<i2").tobytes(), SR)
                      for k in range(0, len(pcm), win)], dtype=bool)
    votes = np.convolve(np.pad(flags.astype(np.int64), (3, 4)), np.ones(8, dtype=np.int64), "valid")
    smoothed = votes >= 5  # np.round(votes / 8) rounds half to even: 4/8 -> 0, 5/8 -> 1
    padded = np.pad(smoothed, 3)
    keep = np.array([padded[k:k + 7].any() for k in range(len(smoothed))])  # dilation by 3
    return flags, keep, wav[np.repeat(keep, win)]


def numpy_mel(wav: np.ndarray) -> np.ndarray:
    """Independent float64 restatement of librosa.feature.melspectrogram(y, sr=16000, n_fft=400,
    hop_length=160, n_mels=40) as called by resemblyzer (see reference/resemblyzer-notes.md)."""
    n_fft, hop = 400, 160
    x = np.pad(wav.astype(np.float64), (n_fft // 2, n_fft // 2))  # center=True, zeros
    n_frames = 1 + (len(x) - n_fft) // hop
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n_fft) / n_fft)  # periodic Hann
    frames = np.stack([x[t * hop:t * hop + n_fft] for t in range(n_frames)])
    power = np.abs(np.fft.rfft(frames * window, axis=1)) ** 2  # [T, 201]

    def hz_to_mel(f):  # Slaney: linear below 1 kHz, logarithmic above
        f = np.asarray(f, dtype=np.float64)
        m = f / (200.0 / 3)
        return np.where(f >= 1000.0, 15.0 + np.log(np.maximum(f, 1e-10) / 1000.0) / (np.log(6.4) / 27.0), m)

    def mel_to_hz(m):
        m = np.asarray(m, dtype=np.float64)
        f = m * (200.0 / 3)
        return np.where(m >= 15.0, 1000.0 * np.exp((np.log(6.4) / 27.0) * (m - 15.0)), f)

    mel_f = mel_to_hz(np.linspace(hz_to_mel(0.0), hz_to_mel(SR / 2), GE2E_MELS + 2))
    fft_f = np.linspace(0, SR / 2, n_fft // 2 + 1)
    fdiff = np.diff(mel_f)
    ramps = mel_f[:, None] - fft_f[None, :]
    lower = -ramps[:-2] / fdiff[:-1, None]
    upper = ramps[2:] / fdiff[1:, None]
    fb = np.maximum(0.0, np.minimum(lower, upper)) * (2.0 / (mel_f[2:] - mel_f[:-2]))[:, None]
    return power @ fb.T  # [T, 40]


def ort_ge2e(session, windows: np.ndarray) -> np.ndarray:
    return np.concatenate([session.run(["embedding"], {"mels": w[None].astype(np.float32)})[0]
                           for w in windows])


def average_embedding(partials: np.ndarray) -> np.ndarray:
    raw = partials.astype(np.float32).mean(axis=0)
    return (raw / np.linalg.norm(raw, 2)).astype(np.float32)


# ---------------------------------------------------------------------------------------
# Building everything into a directory (the same code for writing and for --check)


def build(src: Sources, out: Path) -> dict:
    """Convert (twice, must be byte-identical), generate the reference vectors from the original
    runtimes, compare onnxruntime with them, and write everything under `out` (a models/-like
    directory). Returns the measured differences."""
    t0 = time.time()
    vad_bytes, ge2e_bytes = same_twice(lambda: convert(src))
    weights = ge2e_weights(src.checkpoint())
    (out / VAD_ONNX).write_bytes(vad_bytes)
    (out / GE2E_ONNX).write_bytes(ge2e_bytes)
    report = {}

    # --- Silero VAD
    audio, layout = vad_signal()
    ref = silero_reference(out / VAD_ONNX, audio)
    probs = ref["probs"]
    mine = ort_vad_probs(ort_session(out / VAD_ONNX), audio)
    report["vad_probs_numpy_loop_vs_wrapper"] = float(np.abs(mine - probs).max())
    cross = silero_cross_checks(src, audio, probs)
    for name, (diff, ts) in cross.items():
        report[f"vad_probs_{name}"] = diff
        report[f"vad_timestamps_equal_{name}"] = ts == ref["param_sets"][0]["speech_timestamps"]
    step = ref["step"]
    d = save_f32s(out / VAD_REF, {"input.f32": audio, "probs.f32": probs,
                                  **{f"step_{k}.f32": v for k, v in step.items()}})
    (d / "speech_timestamps.json").write_text(json.dumps(
        {"what": "silero_vad.utils_vad.get_speech_timestamps(input, model) for 'defaults' and "
                 "get_speech_timestamps_from_probs(probs, audio_length_samples=len(input), ...) "
                 "for the others (the function get_speech_timestamps ends with); only the "
                 "listed parameters differ from silero's defaults",
         "audio_length_samples": int(len(audio)),
         "param_sets": ref["param_sets"]}, indent=1) + "\n")
    import onnxruntime
    import torch
    meta = {
        "model": VAD_ONNX,
        "source": f"PyPI {SILERO_PACKAGE}=={SILERO_VERSION}: {SILERO_MEMBER}",
        "source_sha256": SILERO_MEMBER_SHA256,
        "reference_runtime": f"onnxruntime {onnxruntime.__version__} (CPU, 1 thread) driven by "
                             f"silero-vad {SILERO_VERSION}'s own OnnxWrapper and "
                             "get_speech_timestamps (torch " + torch.__version__ + "); the "
                             "wrapper's 'sr' feed is dropped because this graph has no sr input",
        "generator": f"models/convert_voice.py vad_signal(), numpy default_rng({VAD_SEED}); "
                     "float32 on the 16-bit grid k/32768",
        "sample_rate": SR,
        "signal_layout": layout,
        "files": {
            "input.f32": {"dtype": "float32 LE", "shape": [len(audio)], "meaning": "mono 16 kHz signal"},
            "probs.f32": {"dtype": "float32 LE", "shape": [len(probs)],
                          "meaning": "speech probability of chunk k = samples [512k, 512k+512), "
                                     "state and context carried from chunk 0, last chunk zero-padded"},
            "step_input.f32": {"shape": [1, VAD_CHUNK + VAD_CONTEXT],
                               "meaning": f"model input 'input' for chunk {VAD_STEP_CHUNK}: the "
                                          "previous chunk's last 64 samples, then the chunk"},
            "step_state.f32": {"shape": [2, 1, 128], "meaning": "model input 'state' for that chunk"},
            "step_output.f32": {"shape": [1, 1], "meaning": "model output 'output' (probability)"},
            "step_stateN.f32": {"shape": [2, 1, 128], "meaning": "model output 'stateN'"},
            "speech_timestamps.json": {"meaning": "silero's segments in samples (or seconds)"},
        },
        "tolerance": MAX_ALLOWED_DIFF,
    }
    (d / "reference.json").write_text(json.dumps(meta, indent=1) + "\n")
    got = ort_session(out / VAD_ONNX).run(["output", "stateN"], {"input": step["input"],
                                                                "state": step["state"]})
    report["vad_step"] = max(float(np.abs(got[0] - step["output"]).max()),
                             float(np.abs(got[1] - step["stateN"]).max()))

    # --- Resemblyzer GE2E
    audio, layout = ge2e_signal()
    ref = resemblyzer_reference(audio)
    for name, w in weights.items():
        if not np.array_equal(w, ref["torch_weights"][name]):
            raise SystemExit(f"legacy reader: {name} differs from torch.load")
    session = ort_session(out / GE2E_ONNX)
    onnx_partials = ort_ge2e(session, ref["windows"])
    np_partials = numpy_ge2e(weights, ref["windows"])
    report["ge2e_onnx_vs_torch_partials"] = float(np.abs(onnx_partials - ref["partials"]).max())
    report["ge2e_numpy_vs_torch_partials"] = float(np.abs(np_partials - ref["partials"]).max())
    report["ge2e_onnx_vs_numpy_partials"] = float(np.abs(onnx_partials - np_partials).max())
    report["ge2e_onnx_vs_torch_embedding"] = float(
        np.abs(average_embedding(onnx_partials) - ref["embedding"]).max())
    mel_np = numpy_mel(np.pad(ref["preprocessed"], (0, ref["padded_len"] - len(ref["preprocessed"]))))
    report["mel_numpy_float64_vs_librosa_rel"] = float(np.abs(mel_np - ref["mel"]).max()
                                                       / np.abs(ref["mel"]).max())
    d = save_f32s(out / GE2E_REF, {
        "input.f32": audio, "preprocessed.f32": ref["preprocessed"], "mel.f32": ref["mel"],
        "mel_filters.f32": ref["mel_filters"], "partial_embeddings.f32": ref["partials"],
        "embedding.f32": ref["embedding"]})
    import librosa
    import scipy
    import webrtcvad
    meta = {
        "model": GE2E_ONNX,
        "source": f"PyPI {RESEMBLYZER_PACKAGE}=={RESEMBLYZER_VERSION}: {RESEMBLYZER_MEMBER}",
        "source_sha256": RESEMBLYZER_MEMBER_SHA256,
        "reference_runtime": f"resemblyzer {RESEMBLYZER_VERSION} itself: preprocess_wav, "
                             "wav_to_mel_spectrogram and VoiceEncoder('cpu').embed_utterance("
                             f"wav, return_partials=True) with torch {torch.__version__} (CPU, "
                             f"1 thread), librosa {librosa.__version__}, scipy {scipy.__version__}, "
                             f"webrtcvad {webrtcvad.__version__}, numpy {np.__version__}",
        "generator": f"models/convert_voice.py ge2e_signal(), numpy default_rng({GE2E_SEED}); "
                     "float32 on the 16-bit grid k/32768",
        "sample_rate": SR,
        "signal_layout": layout,
        "webrtcvad_flags": "".join("1" if f else "0" for f in ref["vad_flags"]),
        "kept_windows": "".join("1" if f else "0" for f in ref["keep_windows"]),
        "preprocessed_length": len(ref["preprocessed"]),
        "padded_length": ref["padded_len"],
        "mel_slices": ref["mel_slices"],
        "wav_slices": ref["wav_slices"],
        "files": {
            "input.f32": {"dtype": "float32 LE", "shape": [len(audio)], "meaning": "raw 16 kHz signal"},
            "preprocessed.f32": {"shape": [len(ref["preprocessed"])],
                                 "meaning": "resemblyzer.preprocess_wav(input): normalize_volume "
                                            "to -30 dBFS (increase only), trim_long_silences "
                                            "(webrtcvad mode 3)"},
            "mel.f32": {"shape": list(ref["mel"].shape),
                        "meaning": "resemblyzer.wav_to_mel_spectrogram(preprocessed zero-padded to "
                                   "padded_length): frames x 40 power mel (librosa)"},
            "mel_filters.f32": {"shape": list(ref["mel_filters"].shape),
                                "meaning": "librosa.filters.mel(sr=16000, n_fft=400, n_mels=40) "
                                           "(Slaney scale and norm), bands x FFT bins"},
            "partial_embeddings.f32": {"shape": list(ref["partials"].shape),
                                       "meaning": "VoiceEncoder forward of mel[mel_slices[k]]; "
                                                  "the ONNX model's expected output per window"},
            "embedding.f32": {"shape": [256], "meaning": "embed_utterance(preprocessed): mean of "
                                                         "the partials, L2-normalised"},
        },
        "tolerance": MAX_ALLOWED_DIFF,
    }
    (d / "reference.json").write_text(json.dumps(meta, indent=1) + "\n")
    report["seconds"] = round(time.time() - t0, 1)
    return report


# ---------------------------------------------------------------------------------------
# Modes

VAD_REF_FILES = ["input.f32", "probs.f32", "step_input.f32", "step_state.f32", "step_output.f32",
                 "step_stateN.f32", "speech_timestamps.json", "reference.json"]
GE2E_REF_FILES = ["input.f32", "preprocessed.f32", "mel.f32", "mel_filters.f32",
                  "partial_embeddings.f32", "embedding.f32", "reference.json"]


def our_sums_paths() -> list[str]:
    """This conversion's files, in their SHA256SUMS order."""
    return ([VAD_ONNX, GE2E_ONNX] + [f"{VAD_REF}/{f}" for f in VAD_REF_FILES]
            + [f"{GE2E_REF}/{f}" for f in GE2E_REF_FILES])


def build_checked(src: Sources, out: Path) -> None:
    """build(), its report printed; fails above the tolerances."""
    limits = {k: MAX_ALLOWED_DIFF for k in (
        "vad_probs_numpy_loop_vs_wrapper", "vad_step", "ge2e_onnx_vs_torch_partials",
        "ge2e_numpy_vs_torch_partials", "ge2e_onnx_vs_torch_embedding",
        "vad_probs_silero_vad.onnx (onnxruntime)", "vad_probs_silero_vad.jit (torch)")}
    limits["mel_numpy_float64_vs_librosa_rel"] = MEL_REL_TOLERANCE
    enforce(build(src, out), limits, 55)


def write(src: Sources, models_dir: Path) -> None:
    write_outputs(lambda out: build_checked(src, out), models_dir, our_sums_paths(),
                  [VAD_ONNX, GE2E_ONNX])


def check(src: Sources, models_dir: Path) -> None:
    with Check(models_dir, 45) as c:
        build_checked(src, c.fresh)
        c.identical([VAD_ONNX, GE2E_ONNX, f"{VAD_REF}/input.f32", f"{GE2E_REF}/input.f32",
                            f"{GE2E_REF}/preprocessed.f32", f"{VAD_REF}/speech_timestamps.json",
                            f"{VAD_REF}/step_input.f32", f"{VAD_REF}/reference.json",
                            f"{GE2E_REF}/reference.json"])
        c.listed(our_sums_paths())
        c.close([(rel, MAX_ALLOWED_DIFF) for rel in (
            f"{VAD_REF}/probs.f32", f"{VAD_REF}/step_state.f32", f"{VAD_REF}/step_output.f32",
            f"{VAD_REF}/step_stateN.f32", f"{GE2E_REF}/partial_embeddings.f32",
            f"{GE2E_REF}/embedding.f32", f"{GE2E_REF}/mel_filters.f32")])
        a, b = load_f32(c.fresh / GE2E_REF / "mel.f32"), load_f32(models_dir / GE2E_REF / "mel.f32")
        rel_diff = float(np.abs(a - b).max() / np.abs(b).max()) if a.shape == b.shape else float("inf")
        print(f"  {GE2E_REF + '/mel.f32':45s} max |fresh - committed| / max = {rel_diff:.3g}")
        c.expect(rel_diff <= MEL_REL_TOLERANCE, f"mel.f32: {rel_diff:.3g}")

    # The committed ONNX files against the committed references.
    vad = ort_session(models_dir / VAD_ONNX)
    probs = ort_vad_probs(vad, load_f32(models_dir / VAD_REF / "input.f32"))
    d_vad = float(np.abs(probs - load_f32(models_dir / VAD_REF / "probs.f32")).max())
    meta = json.loads((models_dir / GE2E_REF / "reference.json").read_text())
    mel = load_f32(models_dir / GE2E_REF / "mel.f32", meta["files"]["mel.f32"]["shape"])
    windows = np.array([mel[a:b] for a, b in meta["mel_slices"]])
    partials = ort_ge2e(ort_session(models_dir / GE2E_ONNX), windows)
    stored = load_f32(models_dir / GE2E_REF / "partial_embeddings.f32", partials.shape)
    d_ge2e = float(np.abs(partials - stored).max())
    d_emb = float(np.abs(average_embedding(partials)
                         - load_f32(models_dir / GE2E_REF / "embedding.f32")).max())
    print(f"  committed ONNX vs committed references: VAD probs {d_vad:.3g}, GE2E partials "
          f"{d_ge2e:.3g}, utterance embedding {d_emb:.3g}")
    c.expect(max(d_vad, d_ge2e, d_emb) <= MAX_ALLOWED_DIFF,
             "committed ONNX files do not reproduce the committed references")
    c.done()


def real_speech(src: Sources, speech_dir: Path, speakers: list[str], per_speaker: int) -> None:
    """Local sanity check: resemblyzer preprocessing + partial windows, ONNX vs PyTorch, and
    same- vs different-speaker cosine similarity. Reads the recordings, writes nothing."""
    import torch
    from resemblyzer import VoiceEncoder, preprocess_wav, wav_to_mel_spectrogram
    from silero_vad.utils_vad import OnnxWrapper, get_speech_timestamps

    torch.set_num_threads(1)
    _, ge2e_bytes = convert(src)
    session = ort_session(ge2e_bytes)
    encoder = VoiceEncoder(device="cpu", verbose=False)
    rows = [line.split(",") for line in (speech_dir / "utterances.csv").read_text().splitlines()[1:]]
    chosen = []
    for spk in speakers:
        files = sorted(r[0] for r in rows if r[1] == spk and 2.0 <= float(r[5]) <= 6.0)
        chosen += [(spk, f) for f in files[:per_speaker]]
    embs, worst, t_onnx, n_windows = [], 0.0, 0.0, 0
    with tempfile.TemporaryDirectory() as tmp:
        vad_path = Path(tmp) / "silero_vad_16k.onnx"
        vad_path.write_bytes(src.silero_onnx())
        vad = OnnxWrapper(str(vad_path), force_onnx_cpu=True)
        vad.session = _SessionWithoutSr(vad.session)
        for spk, rel in chosen:
            wav = preprocess_wav(speech_dir / rel)
            ws, ms = encoder.compute_partial_slices(len(wav), rate=1.3, min_coverage=0.75)
            padded = np.pad(wav, (0, max(0, ws[-1].stop - len(wav))))
            mel = wav_to_mel_spectrogram(padded)
            windows = np.array([mel[s] for s in ms])
            t = time.time()
            partials = ort_ge2e(session, windows)
            t_onnx += time.time() - t
            n_windows += len(windows)
            e_onnx = average_embedding(partials)
            e_torch = encoder.embed_utterance(wav)
            worst = max(worst, float(np.abs(e_onnx - e_torch).max()))
            speech = get_speech_timestamps(torch.from_numpy(wav.astype(np.float32)), vad)
            voiced = sum(s["end"] - s["start"] for s in speech) / len(wav)
            print(f"  {rel}: {len(wav) / SR:.2f} s after preprocessing, {len(windows)} windows, "
                  f"silero: {len(speech)} segments covering {voiced:.0%}")
            embs.append((spk, e_onnx))
    same, diff = [], []
    for i in range(len(embs)):
        for j in range(i + 1, len(embs)):
            cos = float(embs[i][1] @ embs[j][1])
            (same if embs[i][0] == embs[j][0] else diff).append(cos)
    print(f"max |ONNX - resemblyzer/torch| utterance embedding: {worst:.3g}")
    print(f"onnxruntime: {1000 * t_onnx / max(n_windows, 1):.1f} ms per 160-frame window (1 thread)")
    print(f"same speaker cosine:      n={len(same)} min {min(same):.3f} mean {np.mean(same):.3f} max {max(same):.3f}")
    print(f"different speaker cosine: n={len(diff)} min {min(diff):.3f} mean {np.mean(diff):.3f} max {max(diff):.3f}")


def main() -> None:
    parser = arg_parser(__doc__)
    parser.add_argument("--real-speech", type=Path, metavar="DIR",
                        help="local sanity check on DIR (with utterances.csv, LibriSpeech FLAC)")
    parser.add_argument("--speakers", nargs="+", default=["LS-1688", "LS-2414", "LS-3331"])
    parser.add_argument("--per-speaker", type=int, default=3)
    args = parser.parse_args()
    convert_main(args, Sources, check, write,
                 (lambda src: real_speech(src, args.real_speech, args.speakers, args.per_speaker))
                 if args.real_speech else None)


if __name__ == "__main__":
    main()
