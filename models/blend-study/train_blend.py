#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 OR MIT
"""A study, not a shipped model (docs/avf.md, "Studies that did not change the detector"): trains
a face-blend detector, a small CNN that scores one aligned
96x96 face crop for the traces of a face blended into a frame (a boundary, a colour or sharpness
mismatch), learned from REAL faces only with self-blended images (SBI: Shiohara & Yamasaki,
"Detecting Deepfakes with Self-Blended Images", CVPR 2022).

Data: the aligned crops and 468 FaceMesh landmarks that `vouch eval face-crops` dumps (see
models/blend-study/run.sh) for the CC BY 4.0 sets only:
  grid-train    GRID speaker s1 (333 clips; s4 clips too, where the data folder has them)
  talking-grid  11 GRID clips of 10 speakers (GRID-A is s1, GRID-F is s4)
Identities s4 (GRID-s4, GRID-F) and s2 (GRID-s2) are HELD OUT of training (validation: 3 clips
when grid-train has no s4); every other identity (s1 and talking-grid's B, C, D, E, G, H, I)
trains. No fake video is ever used: each generator family the study measures is
unseen by construction. The sha256 of each index.csv and a digest of every training array are
recorded in reference.json.

Input contract (the engine must replicate exactly): `crops` float32 [N,3,96,96] = the crop's RGB
bytes / 255 (channel-first), no other preprocessing; output `logit` float32 [N,1], higher = more
likely blended. The crop is the similarity-aligned 96x96 crop of the face-crops dump (eyes'
midpoint at (48, 38.4), interocular 28.8 px, eye line horizontal).

Self-blended pair from a real crop I with landmarks L (all randomness from one numpy Generator
seeded by (SEED, step, index), so every run draws the same pairs):
  roles     with p 1/2 the source is the colour-augmented copy and the target I, else the reverse
  colour    brightness +-10 %, contrast x0.9-1.1 (always); per-channel shift +-20 (p 0.3);
            hue +-10 deg, saturation and value x0.8-1.2 (p 0.3); then one of: downscale by
            0.5-0.8 and back, unsharp sharpen (amount 0.2-0.6), Gaussian blur (sigma 0.4-1.0)
  affine    the source only: scale 0.95-1.05 about the crop centre, shift +-3 % (2.9 px)
  mask      convex hull of all 468 landmarks (whole face) or, with p MASK_LOWER_P, of the
            landmarks below a random line between the nose bridge (6) and the subnasale (2)
            (cheeks, mouth, jaw, chin: what lip-sync forgeries repaint); its polygon jittered
            (sigma 0-1.5 px per vertex), elastic warp (5x5 grid, 0-2.5 px), dilated or eroded
            by -4..4 px, Gaussian edge (sigma 1-4 px), normalised to peak 1, times a blend
            ratio in {0.25, 0.5, 0.75, 1, 1, 1}
  pair      fake = mask*source + (1-mask)*target (label 1); real = target (label 0)
  post      to each image independently: horizontal flip (p 1/2); with p 1/2 shrink to a side
            of 32-95 px (area); JPEG quality 30-95 (p 0.9) at that size; back to 96 px
            (bilinear or bicubic)

Network (BatchNorm folded into the convolutions at export; ops Conv, Relu, MaxPool,
GlobalAveragePool, Flatten, Gemm):
  conv3x3 3->16 | conv3x3/2 16->32 | conv3x3 32->32 | maxpool2 | conv3x3 32->64 |
  conv3x3 64->64 | maxpool2 | conv3x3 64->96 | conv3x3 96->128 | global average | linear 128->1
  (each conv followed by BatchNorm and ReLU in training). 236,001 parameters once folded.
Training: Adam (lr 1e-3, cosine decay to 0, weight decay 1e-4), STEPS steps of BATCH pairs (both
members of a pair in the same batch), one thread, identities sampled with weight sqrt(frames)
so the one-clip speakers of talking-grid are not drowned by s1. Fixed seeds everywhere.

Modes:
  --crops D --out DIR   train, export, write face_blend.onnx, reference/face_blend/ (four
                        synthetic crops and their logits) and report.json into DIR (never the
                        repository); --lower-p and --steps change the recipe for variants. One
                        thread: two runs write bit-identical files.
  --selftest            synthetic arrays only: the SBI generator, the network and the export
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from common import sha256_file, synth_image_u8, write_json  # noqa: E402

SIZE = 96
SEED = 20261127
BATCH = 16              # pairs per step (32 images)
STEPS = 2200
LR = 1e-3
WEIGHT_DECAY = 1e-4
MASK_LOWER_P = 0.5
WIDTHS = (16, 32, 32, 64, 64, 96, 128)
TRAIN_SETS = ("grid-train", "talking-grid")
HELD_OUT = ("GRID-s4", "GRID-s2")       # validation identities
ALIAS = {"GRID-A": "GRID-s1", "GRID-F": "GRID-s4"}
OPSET = 13
VAL_REPEATS = 4
ONNX_NAME = "face_blend.onnx"
REF = "reference/face_blend"
REF_FILES = ["crops.u8", "output.f32", "reference.json"]
TOL_LOGIT = 1e-4        # ONNX (onnxruntime) vs PyTorch

NOSE_BRIDGE, SUBNASALE = 6, 2


def log(msg) -> None:
    print(msg, flush=True)


# ---------------------------------------------------------------------------------------
# Data


def identity_of(row) -> str:
    ident = row["identity"]
    return ALIAS.get(ident, ident)


def load_set(crops_dir: Path, name: str):
    """[(row, crops u8 [n,96,96,3], marks f32 [n,468,2])] of one set, in index order."""
    index = crops_dir / name / "index.csv"
    out = []
    with open(index, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if int(row["n"]) == 0:
                continue
            stem = crops_dir / name / row["crops"]
            crops = np.load(f"{stem}.crops.npy")
            marks = np.load(f"{stem}.marks.npy").astype(np.float32)
            assert crops.dtype == np.uint8 and crops.shape[1:] == (SIZE, SIZE, 3), crops.shape
            assert marks.shape == (crops.shape[0], 468, 2), marks.shape
            out.append((row, crops, marks))
    return out


def load_training(crops_dir: Path):
    """Training and validation frames: dict with u8 crops, marks, identity and clip ids."""
    frames = {"train": ([], [], [], []), "val": ([], [], [], [])}
    digest = hashlib.sha256()
    sources = {}
    for name in TRAIN_SETS:
        sources[f"{name}/index.csv"] = sha256_file(crops_dir / name / "index.csv")
        for row, crops, marks in load_set(crops_dir, name):
            digest.update(crops.tobytes())
            digest.update(marks.tobytes())
            ident = identity_of(row)
            part = "val" if ident in HELD_OUT else "train"
            c, m, i, k = frames[part]
            c.append(crops)
            m.append(marks)
            i.extend([ident] * len(crops))
            k.extend([f"{name}/{row['file']}"] * len(crops))
    data = {}
    for part, (c, m, i, k) in frames.items():
        data[part] = {"crops": np.concatenate(c), "marks": np.concatenate(m),
                      "identity": np.array(i), "clip": np.array(k)}
    return data, sources, digest.hexdigest()


# ---------------------------------------------------------------------------------------
# Self-blended images (numpy + OpenCV; every random draw from the Generator passed in)


def _cv2():
    import cv2
    cv2.setNumThreads(1)
    return cv2


def colour_aug(img: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """img float32 [96,96,3] RGB in 0..255 -> augmented copy (source-side appearance change)."""
    cv2 = _cv2()
    x = img.copy()
    mean = x.mean()
    x = (x - mean) * rng.uniform(0.9, 1.1) + mean + rng.uniform(-0.1, 0.1) * 255.0
    if rng.random() < 0.3:
        x = x + rng.uniform(-20.0, 20.0, size=3).astype(np.float32)
    if rng.random() < 0.3:
        hsv = cv2.cvtColor(np.clip(x, 0, 255).astype(np.float32) / 255.0, cv2.COLOR_RGB2HSV)
        hsv[..., 0] = np.mod(hsv[..., 0] + rng.uniform(-10.0, 10.0), 360.0)
        hsv[..., 1] = np.clip(hsv[..., 1] * rng.uniform(0.8, 1.2), 0.0, 1.0)
        hsv[..., 2] = np.clip(hsv[..., 2] * rng.uniform(0.8, 1.2), 0.0, 1.0)
        x = cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB) * 255.0
    x = np.clip(x, 0, 255).astype(np.float32)
    pick = rng.integers(3)
    if pick == 0:
        side = int(round(SIZE * rng.uniform(0.5, 0.8)))
        x = cv2.resize(x, (side, side), interpolation=cv2.INTER_AREA)
        x = cv2.resize(x, (SIZE, SIZE), interpolation=cv2.INTER_LINEAR)
    elif pick == 1:
        blur = cv2.GaussianBlur(x, (0, 0), 1.0)
        x = x + rng.uniform(0.2, 0.6) * (x - blur)
    else:
        x = cv2.GaussianBlur(x, (0, 0), rng.uniform(0.4, 1.0))
    return np.clip(x, 0, 255).astype(np.float32)


def random_affine(img: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    cv2 = _cv2()
    s = rng.uniform(0.95, 1.05)
    tx, ty = rng.uniform(-0.03, 0.03, size=2) * SIZE
    c = (SIZE - 1) / 2.0
    m = np.array([[s, 0.0, (1 - s) * c + tx], [0.0, s, (1 - s) * c + ty]], np.float64)
    return cv2.warpAffine(img, m, (SIZE, SIZE), flags=cv2.INTER_LINEAR,
                          borderMode=cv2.BORDER_REFLECT_101)


def blend_mask(marks: np.ndarray, rng: np.random.Generator, lower_p: float) -> np.ndarray:
    """marks [468,2] in crop pixels (centres at +0.5) -> mask float32 [96,96] in 0..1."""
    cv2 = _cv2()
    pts = marks.astype(np.float64) - 0.5          # OpenCV's pixel centres are integers
    if rng.random() < lower_p:
        y0, y1 = pts[NOSE_BRIDGE, 1], pts[SUBNASALE, 1]
        cut = y0 + rng.uniform(0.0, 1.0) * (y1 - y0)
        sub = pts[pts[:, 1] >= cut]
        if len(sub) >= 3:
            pts = sub
    hull = cv2.convexHull(pts.astype(np.float32)).reshape(-1, 2).astype(np.float64)
    hull = hull + rng.normal(0.0, rng.uniform(0.0, 1.5), size=hull.shape)
    mask = np.zeros((SIZE, SIZE), np.uint8)
    cv2.fillPoly(mask, [np.round(hull * 4).astype(np.int32)], 255, lineType=cv2.LINE_AA, shift=2)
    mask = mask.astype(np.float32) / 255.0
    amp = rng.uniform(0.0, 2.5)
    grid = rng.normal(0.0, 1.0, size=(2, 5, 5)).astype(np.float32) * amp
    dx = cv2.resize(grid[0], (SIZE, SIZE), interpolation=cv2.INTER_CUBIC)
    dy = cv2.resize(grid[1], (SIZE, SIZE), interpolation=cv2.INTER_CUBIC)
    yy, xx = np.mgrid[0:SIZE, 0:SIZE].astype(np.float32)
    mask = cv2.remap(mask, xx + dx, yy + dy, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)
    r = int(rng.integers(-4, 5))
    if r != 0:
        k = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * abs(r) + 1, 2 * abs(r) + 1))
        mask = cv2.dilate(mask, k) if r > 0 else cv2.erode(mask, k)
    mask = cv2.GaussianBlur(mask, (0, 0), rng.uniform(1.0, 4.0))
    peak = float(mask.max())
    if peak > 1e-3:
        mask = mask / peak
    ratio = float(rng.choice([0.25, 0.5, 0.75, 1.0, 1.0, 1.0]))
    return (mask * ratio).astype(np.float32)


def self_blend(img_u8: np.ndarray, marks: np.ndarray, rng: np.random.Generator,
               lower_p: float = MASK_LOWER_P):
    """One SBI pair from a real crop: (real u8, fake u8, mask) before post-augmentation."""
    img = img_u8.astype(np.float32)
    if rng.random() < 0.5:
        source, target = colour_aug(img, rng), img
    else:
        source, target = img, colour_aug(img, rng)
    source = random_affine(source, rng)
    mask = blend_mask(marks, rng, lower_p)[..., None]
    fake = mask * source + (1.0 - mask) * target
    to_u8 = lambda a: np.clip(np.rint(a), 0, 255).astype(np.uint8)   # noqa: E731
    return to_u8(target), to_u8(fake), mask[..., 0]


def post_aug(img_u8: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The same distribution for both classes: flip, small-face resampling, JPEG."""
    cv2 = _cv2()
    x = img_u8
    if rng.random() < 0.5:
        x = x[:, ::-1]
    x = np.ascontiguousarray(x)
    small = rng.random() < 0.5
    if small:
        side = int(rng.integers(32, SIZE))
        x = cv2.resize(x, (side, side), interpolation=cv2.INTER_AREA)
    if rng.random() < 0.9:
        q = int(rng.integers(30, 96))
        ok, enc = cv2.imencode(".jpg", x[..., ::-1], [cv2.IMWRITE_JPEG_QUALITY, q])
        assert ok
        x = cv2.imdecode(enc, cv2.IMREAD_COLOR)[..., ::-1]
    if small:
        interp = cv2.INTER_LINEAR if rng.random() < 0.5 else cv2.INTER_CUBIC
        x = cv2.resize(np.ascontiguousarray(x), (SIZE, SIZE), interpolation=interp)
    return np.ascontiguousarray(x)


def make_batch(crops, marks, idx, seed_key, lower_p=MASK_LOWER_P):
    """Pairs for frames idx: (x float32 [2B,3,96,96], y float32 [2B])."""
    xs, ys = [], []
    for j, i in enumerate(idx):
        rng = np.random.default_rng([SEED, *seed_key, j])
        real, fake, _ = self_blend(crops[i], marks[i], rng, lower_p)
        xs.append(post_aug(real, rng))
        ys.append(0.0)
        xs.append(post_aug(fake, rng))
        ys.append(1.0)
    x = np.stack(xs).astype(np.float32).transpose(0, 3, 1, 2) / 255.0
    return np.ascontiguousarray(x), np.array(ys, np.float32)


def to_input(crops_u8: np.ndarray) -> np.ndarray:
    """u8 [N,96,96,3] RGB -> the model input float32 [N,3,96,96] = RGB/255."""
    return np.ascontiguousarray(crops_u8.transpose(0, 3, 1, 2)).astype(np.float32) / 255.0


# ---------------------------------------------------------------------------------------
# Network


def build_net(widths=WIDTHS):
    import torch.nn as nn

    def block(cin, cout, stride=1):
        return [nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout),
                nn.ReLU(inplace=True)]

    w = widths
    layers = (block(3, w[0]) + block(w[0], w[1], 2) + block(w[1], w[2]) + [nn.MaxPool2d(2)]
              + block(w[2], w[3]) + block(w[3], w[4]) + [nn.MaxPool2d(2)]
              + block(w[4], w[5]) + block(w[5], w[6])
              + [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(w[6], 1)])
    return nn.Sequential(*layers)


def fuse(net):
    """A copy with every Conv+BatchNorm folded into one Conv (eval mode)."""
    import copy

    import torch.nn as nn
    from torch.nn.utils.fusion import fuse_conv_bn_eval

    net = copy.deepcopy(net).eval()
    out, mods, i = [], list(net), 0
    while i < len(mods):
        if isinstance(mods[i], nn.Conv2d) and i + 1 < len(mods) \
                and isinstance(mods[i + 1], nn.BatchNorm2d):
            out.append(fuse_conv_bn_eval(mods[i], mods[i + 1]))
            i += 2
        else:
            out.append(mods[i])
            i += 1
    return nn.Sequential(*out).eval()


def n_params(net) -> int:
    return int(sum(p.numel() for p in net.parameters()))


def export_onnx(fused, metadata: dict) -> bytes:
    import onnx
    import torch

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ONNX_NAME
        dummy = torch.zeros(2, 3, SIZE, SIZE)
        with torch.no_grad():
            torch.onnx.export(fused, (dummy,), str(path), dynamo=False, export_params=True,
                              opset_version=OPSET, do_constant_folding=True,
                              input_names=["crops"], output_names=["logit"],
                              dynamic_axes={"crops": {0: "N"}, "logit": {0: "N"}})
        m = onnx.load(str(path))
    m.producer_name = "vouch models/train_blend.py"
    m.doc_string = ("Face-blend detector (self-blended images, real faces only). Input crops "
                    "float32 [N,3,96,96] = aligned RGB crop / 255; output logit [N,1], higher = "
                    "more likely blended.")
    for k, v in metadata.items():
        m.metadata_props.add(key=k, value=str(v))
    onnx.checker.check_model(m, full_check=True)
    ops = sorted({n.op_type for n in m.graph.node})
    allowed = {"Conv", "Relu", "MaxPool", "GlobalAveragePool", "Flatten", "Gemm", "Reshape"}
    assert set(ops) <= allowed, ops
    return m.SerializeToString()


def ort_logits(onnx_bytes: bytes, x: np.ndarray, batch: int = 64) -> np.ndarray:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    s = ort.InferenceSession(onnx_bytes, options, providers=["CPUExecutionProvider"])
    out = [s.run(None, {"crops": x[i:i + batch]})[0] for i in range(0, len(x), batch)]
    return np.concatenate(out) if out else np.zeros((0, 1), np.float32)


# ---------------------------------------------------------------------------------------
# Metrics


def auc(neg, pos) -> float:
    """Area under the ROC curve (ties count one half): P(pos > neg)."""
    neg, pos = np.asarray(neg, np.float64), np.asarray(pos, np.float64)
    if len(neg) == 0 or len(pos) == 0:
        return float("nan")
    allv = np.concatenate([neg, pos])
    order = np.argsort(allv, kind="mergesort")
    ranks = np.empty(len(allv))
    sv = allv[order]
    i = 0
    while i < len(sv):
        j = i
        while j + 1 < len(sv) and sv[j + 1] == sv[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    rp = ranks[len(neg):].sum()
    return float((rp - len(pos) * (len(pos) + 1) / 2.0) / (len(pos) * len(neg)))


def aggregate(frame_logits: np.ndarray, rule: str = "mean") -> float:
    v = np.asarray(frame_logits, np.float64).ravel()
    if rule == "mean":
        return float(v.mean())
    if rule == "tophalf":
        k = max(1, int(math.ceil(len(v) / 2)))
        return float(np.sort(v)[::-1][:k].mean())
    if rule == "median":
        return float(np.median(v))
    raise ValueError(rule)


# ---------------------------------------------------------------------------------------
# Training


def sampling_weights(identity: np.ndarray) -> np.ndarray:
    ids, inv, counts = np.unique(identity, return_inverse=True, return_counts=True)
    w = np.sqrt(counts.astype(np.float64))[inv] / counts[inv]
    return w / w.sum()


def train(data, steps=STEPS, lower_p=MASK_LOWER_P, widths=WIDTHS, log_every=200):
    import torch

    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    net = build_net(widths)
    opt = torch.optim.Adam(net.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: 0.5 * (1.0 + math.cos(math.pi * min(s, steps) / steps)))
    lossf = torch.nn.BCEWithLogitsLoss()
    tr = data["train"]
    p = sampling_weights(tr["identity"])
    order_rng = np.random.default_rng([SEED, 1])
    t0, run_loss, run_acc = time.time(), 0.0, 0.0
    net.train()
    for step in range(steps):
        idx = order_rng.choice(len(p), size=BATCH, p=p)
        x, y = make_batch(tr["crops"], tr["marks"], idx, (step,), lower_p)
        xt, yt = torch.from_numpy(x), torch.from_numpy(y)
        out = net(xt)[:, 0]
        loss = lossf(out, yt)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        run_loss += float(loss)
        run_acc += float(((out > 0).float() == yt).float().mean())
        if (step + 1) % log_every == 0:
            log(f"  step {step + 1}/{steps}  loss {run_loss / log_every:.4f}  "
                f"acc {run_acc / log_every:.3f}  {time.time() - t0:.0f} s")
            run_loss = run_acc = 0.0
    return net.eval(), time.time() - t0


def validate(onnx_bytes: bytes, data, lower_p=MASK_LOWER_P) -> dict:
    """On the held-out identities: frame AUC of fixed SBI pairs (VAL_REPEATS post-augmented pairs
    per frame, and one clean pair per frame), the
    real frames' logits, and clip AUC of real clips vs the same clips fully self-blended
    (every frame blended, no post-augmentation) for each aggregate rule."""
    va = data["val"]
    n = len(va["crops"])
    rep = {"val_identities": list(HELD_OUT), "val_frames": n,
           "val_clips": int(len(np.unique(va["clip"])))}
    idx = np.arange(n)
    lg, y = [], []
    for rep_i in range(VAL_REPEATS):
        xb, yb = make_batch(va["crops"], va["marks"], idx, (10 ** 6 + rep_i,), lower_p)
        lg.append(ort_logits(onnx_bytes, xb)[:, 0])
        y.append(yb)
    lg, y = np.concatenate(lg), np.concatenate(y)
    rep["frame_auc_sbi_postaug"] = auc(lg[y == 0], lg[y == 1])
    real, fake = [], []
    for i in idx:
        rng = np.random.default_rng([SEED, 2 * 10 ** 6, int(i)])
        r, f, _ = self_blend(va["crops"][i], va["marks"][i], rng, lower_p)
        real.append(r)
        fake.append(f)
    lr = ort_logits(onnx_bytes, to_input(np.stack(real)))[:, 0]
    lf = ort_logits(onnx_bytes, to_input(np.stack(fake)))[:, 0]
    l0 = ort_logits(onnx_bytes, to_input(va["crops"]))[:, 0]
    rep["frame_auc_sbi_clean"] = auc(lr, lf)
    rep["frame_auc_sbi_vs_untouched"] = auc(l0, lf)
    rep["val_real_frame_logit_mean"] = float(l0.mean())
    rep["val_real_frame_logit_p95"] = float(np.percentile(l0, 95))
    clips = va["clip"]
    for rule in ("mean", "tophalf", "median"):
        s0 = [aggregate(l0[clips == c], rule) for c in np.unique(clips)]
        s1 = [aggregate(lf[clips == c], rule) for c in np.unique(clips)]
        rep[f"clip_auc_sbi_{rule}"] = auc(s0, s1)
    return rep


# ---------------------------------------------------------------------------------------
# Reference vectors (synthetic faces only: nothing from the data sets enters the repository)


def reference_crops() -> np.ndarray:
    """4 synthetic 96x96 crops: two cartoon faces and each with its lower face self-blended (a
    colour-shifted, 2 px displaced copy through an elliptical soft mask)."""
    import cv2
    out = []
    for seed, scale in ((0, 1.0), (1, 0.9)):
        face = synth_image_u8(SIZE, SIZE, seed, cx=0.5, cy=0.5, scale=scale)
        src = np.clip(face.astype(np.float32) * np.array([1.08, 0.97, 0.92]) + 6.0, 0, 255)
        src = cv2.warpAffine(src, np.array([[1.0, 0, 2.0], [0, 1.0, 1.0]]), (SIZE, SIZE),
                             borderMode=cv2.BORDER_REFLECT_101)
        mask = np.zeros((SIZE, SIZE), np.float32)
        cv2.ellipse(mask, (48, 62), (22, 16), 0, 0, 360, 1.0, -1)
        mask = cv2.GaussianBlur(mask, (0, 0), 2.0)[..., None]
        blended = np.clip(np.rint(mask * src + (1 - mask) * face), 0, 255).astype(np.uint8)
        out += [face, blended]
    return np.stack(out)


# ---------------------------------------------------------------------------------------
# Build, write, check


def config(steps=STEPS, lower_p=MASK_LOWER_P) -> dict:
    return {"seed": SEED, "steps": steps, "batch_pairs": BATCH, "lr": LR,
            "weight_decay": WEIGHT_DECAY, "mask_lower_p": lower_p, "widths": list(WIDTHS),
            "train_sets": list(TRAIN_SETS), "held_out_identities": list(HELD_OUT),
            "opset": OPSET}


def build(crops_dir: Path, out: Path, steps=STEPS, lower_p=MASK_LOWER_P) -> dict:
    import torch

    data, sources, digest = load_training(crops_dir)
    tr = data["train"]
    ids, counts = np.unique(tr["identity"], return_counts=True)
    log(f"training frames {len(tr['crops'])} of {len(np.unique(tr['clip']))} clips, identities "
        + ", ".join(f"{i}:{c}" for i, c in zip(ids, counts))
        + f"; held out {len(data['val']['crops'])} frames of {list(HELD_OUT)}")
    net, seconds = train(data, steps=steps, lower_p=lower_p)
    fused = fuse(net)
    params = n_params(fused)
    meta = {"format": "vouch-face-blend-1", "input": "crops float32 [N,3,96,96] = RGB/255",
            "output": "logit float32 [N,1], higher = more likely blended",
            "training": "self-blended images from real GRID faces (CC BY 4.0) only",
            "recipe": json.dumps(config(steps, lower_p), sort_keys=True),
            "train_data_sha256": digest}
    for k, v in sources.items():
        meta[f"sha256:{k}"] = v
    onnx_bytes = export_onnx(fused, meta)
    (out / ONNX_NAME).write_bytes(onnx_bytes)
    ref = out / REF
    ref.mkdir(parents=True, exist_ok=True)
    crops = reference_crops()
    x = to_input(crops)
    with torch.no_grad():
        want = fused(torch.from_numpy(x)).numpy()
        unfused = net(torch.from_numpy(x)).numpy()
    got = ort_logits(onnx_bytes, x)
    diff = float(np.abs(got - want).max())
    diff_fuse = float(np.abs(unfused - want).max())
    if diff > TOL_LOGIT:
        raise SystemExit(f"onnxruntime differs from PyTorch by {diff} > {TOL_LOGIT}")
    (ref / "crops.u8").write_bytes(np.ascontiguousarray(crops).tobytes())
    (ref / "output.f32").write_bytes(np.ascontiguousarray(want, "<f4").tobytes())
    report = {"train_seconds": round(seconds, 1), "parameters": params,
              "onnx_bytes": len(onnx_bytes), "onnx_vs_torch_max_abs": diff,
              "fused_vs_unfused_max_abs": diff_fuse}
    report.update(validate(onnx_bytes, data, lower_p))
    write_json(ref / "reference.json", {
        "model": ONNX_NAME,
        "input": "crops.u8: 4 synthetic cartoon faces, u8 [4,96,96,3] RGB (faces 0 and 2, each "
                 "followed by its lower-face self-blended copy); the model input is "
                 "crops.transpose(0,3,1,2) / 255 as float32 [4,3,96,96]",
        "output": "output.f32: logit float32 [4,1], PyTorch (BatchNorm folded), little-endian",
        "tolerance": TOL_LOGIT,
        "onnxruntime_max_abs_diff": diff,
        "logits": [round(float(v), 6) for v in want[:, 0]],
        "recipe": config(steps, lower_p),
        "validation": {k: v for k, v in report.items() if k.startswith(("val_", "frame_", "clip_"))},
        "train_data_sha256": digest,
        "sources": sources,
        "parameters": params,
    })
    (out / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    for k, v in report.items():
        log(f"  {k:34s} {v:.4g}" if isinstance(v, float) else f"  {k:34s} {v}")
    return report


def study(crops_dir: Path, out: Path, steps: int, lower_p: float) -> None:
    out.mkdir(parents=True, exist_ok=True)
    build(crops_dir, out, steps=steps, lower_p=lower_p)
    log(f"wrote {out / ONNX_NAME} and {out / 'report.json'}")


# ---------------------------------------------------------------------------------------
# Self-test on synthetic arrays


def synthetic_marks(rng, n):
    """Fake 'landmarks': 468 points filling an ellipse where the cartoon face is (for tests)."""
    t = rng.uniform(0, 2 * np.pi, size=(n, 468))
    r = np.sqrt(rng.uniform(0, 1, size=(n, 468)))
    m = np.stack([48 + 24 * r * np.cos(t), 50 + 32 * r * np.sin(t)], -1).astype(np.float32)
    m[:, NOSE_BRIDGE] = (48, 44)
    m[:, SUBNASALE] = (48, 60)
    return m


def selftest() -> None:
    import torch

    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    crops = np.stack([synth_image_u8(SIZE, SIZE, s, cy=0.5, scale=rng.uniform(0.85, 1.05))
                      for s in range(8)])
    marks = synthetic_marks(rng, 8)
    # determinism of the generator
    x1, y1 = make_batch(crops, marks, np.arange(8), (3,))
    x2, y2 = make_batch(crops, marks, np.arange(8), (3,))
    assert np.array_equal(x1, x2) and np.array_equal(y1, y2)
    assert x1.shape == (16, 3, SIZE, SIZE) and x1.dtype == np.float32
    assert 0.0 <= x1.min() and x1.max() <= 1.0
    assert list(y1[:4]) == [0, 1, 0, 1]
    # masks: inside the face, peak = ratio, lower-face masks below the nose bridge
    for k in range(20):
        r = np.random.default_rng(k)
        m = blend_mask(marks[0], r, lower_p=0.0)
        assert m.shape == (SIZE, SIZE) and m.max() <= 1.0 + 1e-6 and m.max() >= 0.25 - 1e-6
        assert m[50, 48] > 0.2 and m[2, 2] < 1e-3 and m[93, 93] < 1e-3
        ml = blend_mask(marks[0], np.random.default_rng(k), lower_p=1.0)
        assert ml[:30].max() < 0.05, ml[:30].max()
    # blend: outside the mask the fake equals the target
    real, fake, mask = self_blend(crops[0], marks[0], np.random.default_rng(5))
    out = mask < 1e-3
    assert out.sum() > 1000 and np.abs(real.astype(int) - fake.astype(int))[out].max() <= 1
    assert np.abs(real.astype(int) - fake.astype(int))[mask > 0.5].mean() > 0.5
    # network size, fusion, export, onnxruntime
    net = build_net()
    assert n_params(net) < 300_000, n_params(net)
    opt = torch.optim.Adam(net.parameters(), 1e-3)
    for _ in range(3):
        loss = torch.nn.functional.binary_cross_entropy_with_logits(
            net(torch.from_numpy(x1))[:, 0], torch.from_numpy(y1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    net.eval()
    fused = fuse(net)
    ref = reference_crops()
    xr = to_input(ref)
    with torch.no_grad():
        a = net(torch.from_numpy(xr)).numpy()
        b = fused(torch.from_numpy(xr)).numpy()
    assert np.abs(a - b).max() < 1e-4, np.abs(a - b).max()
    onnx_bytes = export_onnx(fused, {"test": 1})
    c = ort_logits(onnx_bytes, xr)
    assert c.shape == (4, 1) and np.abs(c - b).max() < 1e-4
    c1 = ort_logits(onnx_bytes, xr[:1])        # dynamic batch
    assert np.abs(c1 - b[:1]).max() < 1e-4
    assert auc([0, 1], [2, 3]) == 1.0 and auc([0, 1], [1, 0]) == 0.5 and auc([3], [1]) == 0.0
    assert aggregate([1, 2, 3, 4], "tophalf") == 3.5
    w = sampling_weights(np.array(["a"] * 100 + ["b"] * 4))
    assert abs(w[:100].sum() - 10 / 12) < 1e-9
    print(f"selftest ok: {n_params(fused)} parameters, ONNX {len(onnx_bytes)} bytes")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--crops", type=Path, help="the face-crops dump (one folder per set)")
    ap.add_argument("--out", type=Path, help="where the ONNX, its reference and report go")
    ap.add_argument("--steps", type=int, default=STEPS)
    ap.add_argument("--lower-p", type=float, default=MASK_LOWER_P)
    ap.add_argument("--selftest", action="store_true")
    args = ap.parse_args()
    t0 = time.time()
    if args.selftest:
        selftest()
        return
    if args.crops is None or args.out is None:
        ap.error("--crops and --out are required")
    study(args.crops, args.out, args.steps, args.lower_p)
    log(f"done in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
