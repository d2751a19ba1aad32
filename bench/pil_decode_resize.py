"""PIL's decode + resize (shorter side 256, bilinear, antialiased: what
torchvision's Resize(256) does on a PIL image) of the given JPEGs, min and
median of RUNS, printed like bench_image. Exit 1 without PIL.

usage: pil_decode_resize.py RUNS FILE...
"""
import statistics
import sys
import time

try:
    from PIL import Image
except ImportError:
    sys.exit(1)

runs = int(sys.argv[1])
for path in sys.argv[2:]:
    decode, both = [], []
    for i in range(runs + 1):
        t0 = time.perf_counter()
        img = Image.open(path).convert("RGB")
        img.load()
        t1 = time.perf_counter()
        img2 = Image.open(path).convert("RGB")
        w, h = img2.size
        short, long = min(w, h), max(w, h)
        new_long = int(256 * long / short)
        size = (new_long, 256) if w >= h else (256, new_long)
        img2.resize(size, Image.BILINEAR)
        t2 = time.perf_counter()
        if i:
            decode.append((t1 - t0) * 1e3)
            both.append((t2 - t1) * 1e3)
    w, h = img.size
    mp = w * h / 1e6
    print(f"PIL {w}x{h}: decode ms {min(decode):.2f} / {statistics.median(decode):.2f}, "
          f"decode+resize ms {min(both):.2f} / {statistics.median(both):.2f}, "
          f"MP/s {mp / (min(both) / 1e3):.1f} / {mp / (statistics.median(both) / 1e3):.1f}  (PIL {Image.__version__})")
