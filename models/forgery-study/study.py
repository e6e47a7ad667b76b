# SPDX-License-Identifier: Apache-2.0 OR MIT
# Forgery-cue study: measures cheap, weight-free forensic video cues (POS rPPG pulse SNR,
# forehead/lower-face pulse coherence, lower/upper temporal flicker, blinks, lower/upper
# sharpness) on real and generated talking-head clips, then reports per-cue AUCs per set and per
# generator family, a BPCER<=5 % operating point and a leave-one-family-out logistic fusion.
# Face landmarks come from MediaPipe FaceMesh (the model ships inside the pip package).
# Usage: study.py DATA_DIR OUT_DIR   (OUT_DIR gets features.csv, per-clip series, tables.md)
import csv
import json
import os
import sys
import time

import cv2
import numpy as np
from scipy.ndimage import uniform_filter1d
from scipy.signal import butter, coherence, filtfilt
from scipy.stats import spearmanr
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GroupKFold

cv2.setNumThreads(1)

# MediaPipe FaceMesh landmark index sets (468-point topology).
FOREHEAD = [10, 109, 67, 103, 104, 69, 108, 151, 337, 299, 333, 332, 297, 338]
CHEEK_L = [117, 118, 101, 36, 205, 187, 123, 116]
CHEEK_R = [346, 347, 330, 266, 425, 411, 352, 345]
CHIN = [18, 83, 313, 201, 421, 208, 428, 171, 396, 175, 199, 200]
LOWCHEEK_L = [207, 214, 212, 216, 206, 192]
LOWCHEEK_R = [427, 434, 432, 436, 426, 416]
EYE_L = [33, 160, 158, 133, 153, 144]  # p1..p6 for the eye aspect ratio
EYE_R = [362, 385, 387, 263, 373, 380]
NO_PULSE_DB = -30.0  # SNR given when a clip has no chrominance signal at all (greyscale)
S = 128  # side of the eye-aligned canonical face crop (cues 3 and 5)
UPPER = (slice(int(0.02 * S), int(0.42 * S)), slice(int(0.15 * S), int(0.85 * S)))
LOWER = (slice(int(0.60 * S), int(0.98 * S)), slice(int(0.25 * S), int(0.75 * S)))

CUES = [
    ("pos_snr_full", "1' rPPG POS SNR over the whole clip (length-confounded, for reference)"),
    ("pos_snr", "1 rPPG POS SNR, forehead+cheeks (dB), median over 3 s windows"),
    ("pos_corr", "2a pulse corr forehead vs lower face (0.7-3 Hz)"),
    ("pos_msc", "2b pulse coherence forehead vs lower face (MSC 0.7-3 Hz)"),
    ("flicker_ratio", "3 temporal HF energy mouth/jaw / eyes/forehead"),
    ("blink_rate", "4a blinks per minute"),
    ("ear_cv", "4b eye-openness (EAR) std/median"),
    ("sharp_ratio", "5 Laplacian variance mouth/jaw / eyes/forehead"),
]


# ---------------------------------------------------------------- clip list

def clip_list(data):
    clips = []
    with open(os.path.join(data, "talking-real", "labels.csv")) as f:
        for r in csv.DictReader(f):
            fam = "real"
            if r["label"] == "fake":
                b = os.path.basename(r["file"])
                fam = ("hyperlips" if b.startswith("hyperlips") else
                       "wav2lip" if "wav2lip" in b else
                       "geneface" if b.startswith("geneface") else
                       "vasa1" if b.startswith("vasa1") else
                       "emo" if b.startswith("emo") else "other")
            clips.append(dict(set="talking-real", path=os.path.join(data, "talking-real", r["file"]),
                              name=r["file"], label=r["label"], family=fam, kind=r["kind"],
                              identity=r["identity"]))
    with open(os.path.join(data, "talking-more", "labels.csv")) as f:
        for r in csv.DictReader(f):
            clips.append(dict(set="talking-more", path=os.path.join(data, "talking-more", r["file"]),
                              name=r["file"], label=r["label"], family=r["family"],
                              kind=r["kind"], identity=r["identity"]))
    with open(os.path.join(data, "talking-grid", "clips.csv")) as f:
        for r in csv.DictReader(f):
            clips.append(dict(set="talking-grid", path=os.path.join(data, "talking-grid", r["mp4"]),
                              name=r["mp4"], label="real", family="real", kind="bona_fide",
                              identity=r["identity"]))
    gdir = os.path.join(data, "grid-train", "s1")
    names = sorted(n for n in os.listdir(gdir) if n.endswith(".mp4"))[::10][:30]
    for n in names:
        clips.append(dict(set="grid-train", path=os.path.join(gdir, n), name="s1/" + n,
                          label="real", family="real", kind="bona_fide", identity="GRID-s1"))
    return clips


# ---------------------------------------------------------------- per-frame extraction

def largest_face(res, w, h):
    if not res.multi_face_landmarks:
        return None
    best, area = None, -1.0
    for fl in res.multi_face_landmarks:
        p = np.array([(l.x * w, l.y * h) for l in fl.landmark[:468]], np.float32)
        a = np.ptp(p[:, 0]) * np.ptp(p[:, 1])
        if a > area:
            best, area = p, a
    return best


def hull_mask(shape, pts):
    m = np.zeros(shape, np.uint8)
    cv2.fillConvexPoly(m, cv2.convexHull(pts.astype(np.int32)), 1)
    return m.astype(bool)


def eye_transform(lm):
    el = lm[[33, 133, 159, 145]].mean(0)
    er = lm[[362, 263, 386, 374]].mean(0)
    if el[0] > er[0]:
        el, er = er, el
    src = np.array([el, er], np.float64)
    dst = np.array([[0.3 * S, 0.32 * S], [0.7 * S, 0.32 * S]])
    # similarity transform from two points
    sv, dv = src[1] - src[0], dst[1] - dst[0]
    scale = np.linalg.norm(dv) / max(np.linalg.norm(sv), 1e-6)
    ang = np.arctan2(dv[1], dv[0]) - np.arctan2(sv[1], sv[0])
    c, s = scale * np.cos(ang), scale * np.sin(ang)
    R = np.array([[c, -s], [s, c]])
    t = dst[0] - R @ src[0]
    return np.hstack([R, t[:, None]])


def ear(lm, idx):
    p = lm[idx]
    v = np.linalg.norm(p[1] - p[5]) + np.linalg.norm(p[2] - p[4])
    return v / (2.0 * max(np.linalg.norm(p[0] - p[3]), 1e-6))


def extract(clip, fm):
    cap = cv2.VideoCapture(clip["path"])
    fps = cap.get(cv2.CAP_PROP_FPS) or 25.0
    regions = {"fh": [FOREHEAD], "ck": [CHEEK_L, CHEEK_R], "lo": [CHIN, LOWCHEEK_L, LOWCHEEK_R]}
    rgb = {k: [] for k in regions}
    npx = {k: [] for k in regions}
    ears, crops, sharp_u, sharp_l, tracked, iods = [], [], [], [], [], []
    last_A = None
    while True:
        ok, frame = cap.read()
        if not ok:
            break
        h, w = frame.shape[:2]
        res = fm.process(cv2.cvtColor(frame, cv2.COLOR_BGR2RGB))
        lm = largest_face(res, w, h)
        tracked.append(lm is not None)
        if lm is None:
            for k in regions:
                rgb[k].append([np.nan] * 3)
                npx[k].append(0)
            ears.append(np.nan)
            if last_A is None:
                crops.append(None)
                continue
            A = last_A
        else:
            x0, y0 = np.maximum(np.floor(lm.min(0)).astype(int) - 2, 0)
            x1, y1 = np.minimum(np.ceil(lm.max(0)).astype(int) + 2, [w, h])
            sub = frame[y0:y1, x0:x1]
            loc = lm - [x0, y0]
            for k, polys in regions.items():
                m = np.zeros(sub.shape[:2], bool)
                for poly in polys:
                    m |= hull_mask(sub.shape[:2], loc[poly])
                n = int(m.sum())
                npx[k].append(n)
                rgb[k].append(sub[m][:, ::-1].mean(0) if n > 0 else [np.nan] * 3)
            ears.append(0.5 * (ear(lm, EYE_L) + ear(lm, EYE_R)))
            iods.append(np.linalg.norm(lm[[33, 133]].mean(0) - lm[[362, 263]].mean(0)))
            A = eye_transform(lm)
            last_A = A
        y = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
        c = cv2.warpAffine(y, A, (S, S), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
        crops.append(c)
        lap = cv2.Laplacian(c.astype(np.float32), cv2.CV_32F)
        sharp_u.append(lap[UPPER].var())
        sharp_l.append(lap[LOWER].var())
    cap.release()
    first = next((i for i, c in enumerate(crops) if c is not None), None)
    crops = np.stack([c for c in crops if c is not None]).astype(np.float32) if first is not None \
        else np.zeros((0, S, S), np.float32)
    return dict(fps=fps, n=len(tracked), tracked=np.array(tracked),
                rgb={k: np.array(v, float) for k, v in rgb.items()},
                npx={k: np.array(v) for k, v in npx.items()}, ear=np.array(ears, float),
                crops=crops, sharp_u=np.array(sharp_u), sharp_l=np.array(sharp_l),
                iod=float(np.median(iods)) if iods else np.nan)


# ---------------------------------------------------------------- cues

def interp_nan(x):
    x = np.array(x, float)
    if x.ndim == 2:
        return np.stack([interp_nan(x[:, j]) for j in range(x.shape[1])], 1)
    ok = np.isfinite(x)
    if ok.sum() < 2:
        return None
    i = np.arange(len(x))
    return np.interp(i, i[ok], x[ok])


def pos(rgb, fps):
    """POS (Wang et al. 2017): overlap-added projection of the temporally normalised RGB."""
    n = len(rgb)
    L = int(round(1.6 * fps))
    H = np.zeros(n)
    P = np.array([[0.0, 1.0, -1.0], [-2.0, 1.0, 1.0]])
    for e in range(L, n + 1):
        C = rgb[e - L:e].T
        Cn = C / np.maximum(C.mean(1, keepdims=True), 1e-6)
        Sg = P @ Cn
        h = Sg[0] + (Sg[0].std() / max(Sg[1].std(), 1e-9)) * Sg[1]
        H[e - L:e] += h - h.mean()
    return H


def bandpass(x, fps, lo, hi):
    b, a = butter(3, [lo / (fps / 2), min(hi / (fps / 2), 0.99)], btype="band")
    return filtfilt(b, a, x, padlen=min(len(x) - 1, 3 * max(len(a), len(b))))


def pulse_snr(sig, fps):
    """SNR (dB) of the dominant 0.7-3 Hz peak plus its first harmonic versus the rest of 0.5-5 Hz.
    Half-width of each signal window: max(0.1 Hz, 1/T) so short clips keep their main lobe."""
    x = bandpass(sig - sig.mean(), fps, 0.5, 5.0)
    n = len(x)
    nfft = max(1 << int(np.ceil(np.log2(n))), int(2 ** np.ceil(np.log2(60 * fps))))
    P = np.abs(np.fft.rfft(x * np.hanning(n), nfft)) ** 2
    f = np.fft.rfftfreq(nfft, 1 / fps)
    band = (f >= 0.5) & (f <= 5.0)
    if P[band].sum() < 1e-12:  # no chrominance variation at all (e.g. a greyscale clip: R=G=B)
        return NO_PULSE_DB, np.nan
    hr = (f >= 0.7) & (f <= 3.0)
    f0 = f[hr][np.argmax(P[hr])]
    hw = max(0.1, fps / n)
    sigm = (np.abs(f - f0) <= hw) | (np.abs(f - 2 * f0) <= hw)
    num = P[band & sigm].sum()
    den = P[band & ~sigm].sum()
    return 10 * np.log10(num / max(den, 1e-20)), f0


def cues_for(x, min_track=0.5):
    out = dict(n_frames=x["n"], fps=x["fps"], tracked_frac=float(x["tracked"].mean()) if x["n"] else 0.0)
    out.update({k: np.nan for k, _ in CUES})
    out["hr_hz"] = np.nan
    out["duration_s"] = x["n"] / x["fps"]
    out["iod_px"] = x["iod"]
    if x["n"] < 30 or out["tracked_frac"] < min_track:
        return out
    fps = x["fps"]
    # 1: POS on forehead + cheeks (pixel-weighted mean of the two regions' means)
    fh, ck, lo = (interp_nan(x["rgb"][k]) for k in ("fh", "ck", "lo"))
    # Pulse cues are computed on non-overlapping 3 s windows and the median is taken, so that
    # spectral resolution and coherence bias do not depend on clip length (GRID clips are 3 s,
    # the others 5-10 s); the whole-clip SNR is kept as pos_snr_full to show that confound.
    W = int(round(3.0 * fps))
    wins = [(s, s + W) for s in range(0, max(x["n"] - W, 0) + 1, W)] or [(0, x["n"])]
    if fh is not None and ck is not None:
        wf, wc = x["npx"]["fh"][:, None].astype(float), x["npx"]["ck"][:, None].astype(float)
        tot = np.maximum(wf + wc, 1)
        wf, wc = np.where(wf + wc > 0, wf / tot, 0.5), np.where(wf + wc > 0, wc / tot, 0.5)
        both = fh * wf + ck * wc
        out["pos_snr_full"], out["hr_hz"] = pulse_snr(pos(both, fps), fps)
        out["pos_snr"] = float(np.median([pulse_snr(pos(both[s:e], fps), fps)[0] for s, e in wins]))
    # 2: forehead vs lower face pulse agreement (per 3 s window, median)
    if fh is not None and lo is not None:
        cors, mscs = [], []
        nper = int(round(1.28 * fps))
        for s, e in wins:
            a, b = pos(fh[s:e], fps), pos(lo[s:e], fps)
            a_f, b_f = bandpass(a - a.mean(), fps, 0.7, 3.0), bandpass(b - b.mean(), fps, 0.7, 3.0)
            if min(a_f.std(), b_f.std()) < 1e-9:  # no pulse signal in a region: no agreement
                cors.append(0.0)
                mscs.append(0.0)
                continue
            cors.append(np.corrcoef(a_f, b_f)[0, 1])
            f, C = coherence(a - a.mean(), b - b.mean(), fs=fps, nperseg=nper, noverlap=nper // 2)
            mscs.append(C[(f >= 0.7) & (f <= 3.0)].mean())
        out["pos_corr"] = float(np.median(cors))
        out["pos_msc"] = float(np.median(mscs))
    # 3: temporal flicker, residual from a 5-frame centred moving average
    Y = x["crops"]
    if len(Y) >= 15:
        R = Y - uniform_filter1d(Y, size=5, axis=0, mode="nearest")
        R = R[2:-2]
        eu = float((R[:, UPPER[0], UPPER[1]] ** 2).mean())
        el = float((R[:, LOWER[0], LOWER[1]] ** 2).mean())
        out["flicker_ratio"] = el / max(eu, 1e-9)
    # 4: blinks from the eye aspect ratio
    e = x["ear"]
    ok = np.isfinite(e)
    if ok.sum() >= 15:
        med = float(np.median(e[ok]))
        out["ear_cv"] = float(np.std(e[ok]) / max(med, 1e-6))
        ee = interp_nan(e)
        below = ee < 0.7 * med
        # a blink: a run of frames below 70 % of the clip's median EAR, runs closer than 0.2 s merged
        starts, gap, inrun, last_end = 0, int(round(0.2 * fps)), False, -10 ** 9
        for i, bl in enumerate(below):
            if bl and not inrun:
                if i - last_end > gap:
                    starts += 1
                inrun = True
            elif not bl and inrun:
                inrun, last_end = False, i
        out["blink_rate"] = starts / (len(e) / fps) * 60.0
    # 5: spatial sharpness ratio, median over frames
    if len(x["sharp_u"]) >= 15:
        out["sharp_ratio"] = float(np.median(x["sharp_l"] / np.maximum(x["sharp_u"], 1e-6)))
    return out


# ---------------------------------------------------------------- evaluation

def auc(y, s):
    ok = np.isfinite(s)
    y, s = y[ok], s[ok]
    if len(set(y)) < 2:
        return np.nan
    return roc_auc_score(y, s)


def boot_ci(y, s, rng, reps=1000):
    ok = np.isfinite(s)
    y, s = y[ok], s[ok]
    pos_i, neg_i = np.where(y == 1)[0], np.where(y == 0)[0]
    vals = []
    for _ in range(reps):
        i = np.concatenate([rng.choice(pos_i, len(pos_i)), rng.choice(neg_i, len(neg_i))])
        vals.append(roc_auc_score(y[i], s[i]))
    return np.percentile(vals, [2.5, 97.5])


def bpcer_threshold(real_scores, bpcer=0.05):
    """Smallest threshold t (score > t flagged fake) with at most bpcer of real clips above it."""
    r = np.sort(real_scores[np.isfinite(real_scores)])
    k = int(np.floor(bpcer * len(r)))  # real clips allowed above
    return r[len(r) - k - 1], k, len(r)


def fmt(v, nd=2):
    return "n/a" if v is None or not np.isfinite(v) else f"{v:.{nd}f}"


def evaluate(rows, out_dir):
    rng = np.random.default_rng(0)
    y = np.array([1 if r["label"] == "fake" else 0 for r in rows])
    fam = np.array([r["family"] for r in rows])
    st = np.array([r["set"] for r in rows])
    real = y == 0
    nongrid_real = real & ~np.isin(st, ["talking-grid", "grid-train"])
    fams = sorted(set(fam[y == 1]), key=lambda f: (-(fam == f).sum(), f))
    X = {k: np.array([r[k] for r in rows], float) for k, _ in CUES}
    lines = []
    P = lines.append

    # direction chosen on pooled data (all fakes vs all reals)
    sign = {}
    for k, _ in CUES:
        a = auc(y, X[k])
        sign[k] = 1.0 if (not np.isfinite(a) or a >= 0.5) else -1.0
    S_ = {k: sign[k] * X[k] for k in X}

    kinds = np.array([r["kind"] for r in rows])

    def row(name, mask_pos, mask_neg):
        m = mask_pos | mask_neg
        cells = [fmt(auc(y[m], S_[k][m])) for k, _ in CUES]
        P(f"| {name} | {mask_pos.sum()} | " + " | ".join(cells) + " |")

    def table(title, reals, note):
        P(title + "\n")
        P(note + "\n")
        P("| set / family | n | " + " | ".join(k for k, _ in CUES) + " |")
        P("|" + "---|" * (len(CUES) + 2))
        P("| direction (pooled, all reals) | | " + " | ".join(
            ("higher=fake" if sign[k] > 0 else "higher=real") for k, _ in CUES) + " |")
        row("**pooled** (all fakes vs these reals)", y == 1, reals)
        ci = {k: boot_ci(y[(y == 1) | reals], S_[k][(y == 1) | reals], rng) for k, _ in CUES}
        P("| pooled 95 % bootstrap CI | | " +
          " | ".join(f"{ci[k][0]:.2f}-{ci[k][1]:.2f}" for k, _ in CUES) + " |")
        row("talking-more fakes vs these reals", (y == 1) & (st == "talking-more"), reals)
        row("talking-real fakes vs these reals", (y == 1) & (st == "talking-real"), reals)
        for kd in ["lipsync", "portrait_animation"]:
            row(f"kind {kd} (both sets)", (y == 1) & (kinds == kd), reals)
        for f in fams:
            sets = sorted(set(st[fam == f]))
            row(f"{f} ({', '.join(s.replace('talking-', 't-') for s in sets)})", fam == f, reals)
        P("")

    table("## Per-cue AUC, each family vs ALL %d real clips (fake = positive)" % real.sum(), real,
          "'n' = fake clips. Direction of every cue chosen on the pooled data (all fakes vs all "
          "reals) and kept fixed; AUC < 0.5 in a row means the cue points the other way there. "
          "All reals = talking-real 17 + talking-more 8 + talking-grid 11 + grid-train 30 (3 s GRID "
          "studio clips make up 41 of the 66).")
    table("## Per-cue AUC, each family vs the %d non-GRID real clips (talking-real + talking-more)"
          % nongrid_real.sum(), nongrid_real,
          "Same directions as above. These reals are in-the-wild talking heads like the fakes' "
          "sources, so this table is the less confounded one.")
    P("## Per-cue AUC within each set\n")
    P("| comparison | n fake | n real | " + " | ".join(k for k, _ in CUES) + " |")
    P("|" + "---|" * (len(CUES) + 3))
    for s_, lab in [("talking-real", "talking-real: lipsync fakes vs its reals"),
                    ("talking-more", "talking-more: fakes vs its reals")]:
        mp_, mn_ = (y == 1) & (st == s_), real & (st == s_)
        m = mp_ | mn_
        P(f"| {lab} | {mp_.sum()} | {mn_.sum()} | " +
          " | ".join(fmt(auc(y[m], S_[k][m])) for k, _ in CUES) + " |")
    P("")
    P("Real-clip cue medians per set (for context):\n")
    P("| set | n | " + " | ".join(k for k, _ in CUES) + " |")
    P("|" + "---|" * (len(CUES) + 2))
    for s in ["talking-real", "talking-more", "talking-grid", "grid-train"]:
        m = real & (st == s)
        P(f"| {s} real | {m.sum()} | " + " | ".join(fmt(np.nanmedian(X[k][m]), 3) for k, _ in CUES) + " |")
    for s in ["talking-real", "talking-more"]:
        m = (y == 1) & (st == s)
        P(f"| {s} fake | {m.sum()} | " + " | ".join(fmt(np.nanmedian(X[k][m]), 3) for k, _ in CUES) + " |")
    P("")

    # nuisance baselines: how well clip properties unrelated to forgery separate the classes
    P("## Nuisance baselines (not cues: dataset-bias controls)\n")
    P("AUC with fake = positive and higher value = fake (so < 0.5 means fakes are lower). A cue whose "
      "AUC is no better than these could be riding on the same dataset differences.\n")
    P("| property | pooled vs all reals | pooled vs non-GRID reals | talking-real within set | talking-more within set |")
    P("|---|---|---|---|---|")
    for k in ["duration_s", "iod_px", "fps"]:
        v = np.array([float(r[k]) for r in rows])
        m_ng = (y == 1) | nongrid_real
        m_tr = st == "talking-real"
        m_tm = st == "talking-more"
        P(f"| {k} | {fmt(auc(y, v))} | {fmt(auc(y[m_ng], v[m_ng]))} | {fmt(auc(y[m_tr], v[m_tr]))} | "
          f"{fmt(auc(y[m_tm], v[m_tm]))} |")
    iod = np.array([float(r["iod_px"]) for r in rows])
    P("\nSpearman correlation of each cue with face size (inter-ocular distance, px), over real / fake clips: " +
      "; ".join(f"{k} {spearmanr(X[k][real], iod[real], nan_policy='omit')[0]:+.2f} / "
                f"{spearmanr(X[k][y == 1], iod[y == 1], nan_policy='omit')[0]:+.2f}" for k, _ in CUES) + ".\n")

    # best single cue by pooled AUC (in its chosen direction)
    pooled = {k: auc(y, S_[k]) for k, _ in CUES if k != "pos_snr_full"}
    best = max(pooled, key=lambda k: pooled[k] if np.isfinite(pooled[k]) else -1)

    # fusion: logistic regression, leave-one-family-out, reals split by identity
    ident = np.array([r["set"] + ":" + r["identity"] for r in rows])
    FK = [k for k, _ in CUES if k != "pos_snr_full"]
    feats = np.stack([X[k] for k in FK], 1)
    real_idx = np.where(real)[0]
    gkf = GroupKFold(n_splits=5)
    folds = list(gkf.split(real_idx, groups=ident[real_idx]))
    fus = {}
    fus_real_scores = {}
    fus_fake_scores = {}
    coefs = []
    for f in fams:
        test_fake = np.where(fam == f)[0]
        train_fake = np.where((y == 1) & (fam != f))[0]
        real_sc = np.full(len(rows), np.nan)
        fake_sc = []
        for tr, te in folds:
            tr_i = np.concatenate([train_fake, real_idx[tr]])
            Xtr = feats[tr_i]
            med = np.nanmedian(Xtr, 0)
            Xtr = np.where(np.isfinite(Xtr), Xtr, med)
            mu, sd = Xtr.mean(0), Xtr.std(0) + 1e-9
            clf = LogisticRegression(C=1.0, class_weight="balanced", max_iter=1000)
            clf.fit((Xtr - mu) / sd, y[tr_i])
            coefs.append(clf.coef_[0])

            def score(ii):
                Z = feats[ii]
                Z = np.where(np.isfinite(Z), Z, med)
                return clf.decision_function((Z - mu) / sd)

            real_sc[real_idx[te]] = score(real_idx[te])
            fake_sc.append(score(test_fake))
        fsc = np.mean(fake_sc, 0)
        rs = real_sc[real_idx]
        yy = np.concatenate([np.ones(len(fsc)), np.zeros(len(rs))])
        fus[f] = roc_auc_score(yy, np.concatenate([fsc, rs]))
        fus_real_scores[f], fus_fake_scores[f] = rs, fsc

    P("## Fusion: logistic regression on the 7 cues (%s), leave-one-family-out\n" % ", ".join(FK))
    P("Train on all other families' fakes + 4/5 of the real identities (GroupKFold by identity, "
      "5 folds); each real clip is scored by the model that did not see its identity, the held-out "
      "family's fakes by the mean of the 5 fold models. Missing cue values imputed with the training "
      "median; features standardised on the training split; class_weight=balanced, C=1.\n")
    P("| held-out family | n | LOFO AUC vs all reals | LOFO AUC vs non-GRID reals | "
      "threshold (BPCER<=5 % on all reals) | real flagged | APCER | APCER at BPCER<=5 % of non-GRID reals |")
    P("|---|---|---|---|---|---|---|---|")
    ng = nongrid_real[real_idx]
    fus_ng = {}
    for f in fams:
        rs, fsc = fus_real_scores[f], fus_fake_scores[f]
        t, k, nr = bpcer_threshold(rs)
        fl = int((rs > t).sum())
        apcer = float((fsc <= t).mean())
        yy = np.concatenate([np.ones(len(fsc)), np.zeros(ng.sum())])
        fus_ng[f] = roc_auc_score(yy, np.concatenate([fsc, rs[ng]]))
        t2, _, _ = bpcer_threshold(rs[ng])
        P(f"| {f} | {(fam == f).sum()} | {fus[f]:.2f} | {fus_ng[f]:.2f} | {t:.2f} | {fl}/{nr} | "
          f"{apcer:.2f} | {float((fsc <= t2).mean()):.2f} |")
    allf = np.concatenate([fus_fake_scores[f] for f in fams])
    P(f"\nMean LOFO AUC over families (unweighted): {np.mean(list(fus.values())):.2f} vs all reals, "
      f"{np.mean(list(fus_ng.values())):.2f} vs non-GRID reals. "
      f"Mean standardised coefficients over all fold models: " +
      ", ".join(f"{k} {c:+.2f}" for k, c in zip(FK, np.mean(coefs, 0))) + ".\n")
    del allf

    # operating points: the best cue on pooled data vs all reals (the brief's choice) and the best
    # vs the non-GRID reals (less confounded by the 3 s GRID studio clips)
    pooled_ng = {k: auc(y[(y == 1) | nongrid_real], S_[k][(y == 1) | nongrid_real]) for k in pooled}
    best_ng = max(pooled_ng, key=lambda k: pooled_ng[k] if np.isfinite(pooled_ng[k]) else -1)
    for cue, why in [(best, "best pooled AUC vs all reals"), (best_ng, "best pooled AUC vs non-GRID reals")]:
        if cue == best_ng and why.endswith("non-GRID reals") and best_ng == best:
            continue
        t, k, nr = bpcer_threshold(S_[cue][real])
        flagged = int((S_[cue][real] > t).sum())
        op = "flag fake if %s %s " % (cue, ">" if sign[cue] > 0 else "<")
        P(f"## Single cue at BPCER <= 5 %: `{cue}` ({why}: {pooled[cue]:.2f} vs all reals, "
          f"{pooled_ng[cue]:.2f} vs non-GRID reals; {'higher=fake' if sign[cue] > 0 else 'higher=real'})\n")
        t2, k2, nr2 = bpcer_threshold(S_[cue][nongrid_real])
        fl2 = int((S_[cue][nongrid_real] > t2).sum())
        P(f"Threshold A (all {nr} reals): {op}{sign[cue] * t:.4g}; {flagged}/{nr} reals flagged "
          f"(BPCER {flagged / nr:.3f}). Threshold B (the {nr2} non-GRID reals): {op}{sign[cue] * t2:.4g}; "
          f"{fl2}/{nr2} of them flagged. Thresholds are set on the same real clips they are measured "
          "on (development data, optimistic).\n")
        P("| family | n | APCER at threshold A | APCER at threshold B |")
        P("|---|---|---|---|")
        for f in fams + ["**all fakes**"]:
            sc = S_[cue][(fam == f) if f in fams else (y == 1)]
            sc = sc[np.isfinite(sc)]
            P(f"| {f} | {len(sc)} | {float((sc <= t).mean()):.2f} | {float((sc <= t2).mean()):.2f} |")
        P("")

    # tracking problems
    P("## Face tracking\n")
    bad = [r for r in rows if r["tracked_frac"] < 0.95]
    if not bad:
        P("Every clip had a face in >= 95 % of its frames.")
    else:
        P("| clip | set | tracked frames | note |")
        P("|---|---|---|---|")
        for r in bad:
            note = "cues skipped (< 50 % tracked)" if r["tracked_frac"] < 0.5 else "gaps interpolated"
            P(f"| {r['name']} | {r['set']} | {r['tracked_frac']:.2f} | {note} |")
    P("")
    with open(os.path.join(out_dir, "tables.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    json.dump(dict(pooled=pooled, pooled_nongrid=pooled_ng, best_nongrid=best_ng, sign=sign, best=best, fusion_lofo=fus, fusion_lofo_nongrid=fus_ng),
              open(os.path.join(out_dir, "summary.json"), "w"), indent=1)
    print("\n".join(lines))


def main():
    data, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    feat_csv = os.path.join(out_dir, "features.csv")
    clips = clip_list(data)
    t0 = time.time()
    rows = []
    if os.path.exists(feat_csv) and os.environ.get("REUSE_FEATURES") == "1":
        with open(feat_csv) as f:
            for r in csv.DictReader(f):
                for k in r:
                    if k in ("n_frames", "fps", "tracked_frac", "hr_hz", "duration_s", "iod_px") or k in dict(CUES):
                        r[k] = float(r[k]) if r[k] not in ("", "nan") else np.nan
                rows.append(r)
    else:
        import mediapipe as mp
        fm = mp.solutions.face_mesh.FaceMesh(static_image_mode=False, max_num_faces=2,
                                             refine_landmarks=False, min_detection_confidence=0.5,
                                             min_tracking_confidence=0.5)
        for i, c in enumerate(clips):
            tc = time.time()
            x = extract(c, fm)
            cu = cues_for(x)
            r = dict(c)
            r.update(cu)
            del r["path"]
            rows.append(r)
            print(f"[{i + 1}/{len(clips)}] {c['set']} {c['name']} {c['label']}/{c['family']} "
                  f"frames={x['n']} tracked={cu['tracked_frac']:.2f} " +
                  " ".join(f"{k}={fmt(cu[k], 3)}" for k, _ in CUES) + f" ({time.time() - tc:.1f}s)",
                  flush=True)
        keys = list(rows[0].keys())
        with open(feat_csv, "w", newline="") as f:
            w = csv.DictWriter(f, keys)
            w.writeheader()
            w.writerows(rows)
    print(f"features: {len(rows)} clips in {time.time() - t0:.0f}s", flush=True)
    evaluate(rows, out_dir)


if __name__ == "__main__":
    main()
