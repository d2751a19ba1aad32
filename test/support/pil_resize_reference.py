"""Independent reference for src/image/resample.cpp: Pillow's Image.resize.

Each case is five arguments: a raw file of interleaved 8-bit pixels, its
"WIDTHxHEIGHTxCHANNELS", the output "WIDTHxHEIGHT", a filter name (nearest,
box, bilinear, hamming, bicubic, lanczos) and the raw output file to write.
Exit 77 when PIL is missing (the test then skips).

usage: pil_resize_reference.py IN SIZE OUT_SIZE FILTER OUT [IN SIZE OUT_SIZE FILTER OUT ...]
"""
import sys

try:
    from PIL import Image
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"skip: {e}", file=sys.stderr)
    sys.exit(77)

# RGBX, not RGBA: Pillow resizes RGBA premultiplied, and inferprof never resizes alpha.
MODES = {1: "L", 3: "RGB", 4: "RGBX"}
FILTERS = {
    "nearest": Image.NEAREST, "box": Image.BOX, "bilinear": Image.BILINEAR,
    "hamming": Image.HAMMING, "bicubic": Image.BICUBIC, "lanczos": Image.LANCZOS,
}
args = sys.argv[1:]
for i in range(0, len(args), 5):
    src, size, out_size, name, dst = args[i:i + 5]
    w, h, c = (int(v) for v in size.split("x"))
    ow, oh = (int(v) for v in out_size.split("x"))
    with open(src, "rb") as f:
        img = Image.frombytes(MODES[c], (w, h), f.read())
    with open(dst, "wb") as f:
        f.write(img.resize((ow, oh), FILTERS[name]).tobytes())
