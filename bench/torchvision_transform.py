"""The other side of bench_image: torchvision's classic evaluation transform
(Resize(256) on a PIL image, CenterCrop(224), ToTensor, Normalize) as an
image service runs it, timed one request at a time on the bench's command so
that the two sides alternate round by round.

Protocol: argv are JPEG files; each is decoded once (PIL, convert('RGB')).
Then for each line "K" on stdin (K = the file's index) it transforms that
image once and prints the milliseconds. "ready" is printed once set up; exit
77 without PIL or torchvision. One torch thread, as the bench's side has.

usage: torchvision_transform.py FILE...
"""
import sys
import time

try:
    import torch
    from PIL import Image
    from torchvision import transforms
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"skip: {e}", file=sys.stderr)
    sys.exit(77)

torch.set_num_threads(1)
transform = transforms.Compose([
    transforms.Resize(256),
    transforms.CenterCrop(224),
    transforms.ToTensor(),
    transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
])
images = [Image.open(p).convert("RGB") for p in sys.argv[1:]]
for img in images:
    transform(img)  # warm-up, as the bench's side warms up
print("ready", flush=True)
for line in sys.stdin:
    img = images[int(line)]
    t0 = time.perf_counter()
    with torch.no_grad():
        transform(img)
    print(f"{(time.perf_counter() - t0) * 1e3:.4f}", flush=True)
