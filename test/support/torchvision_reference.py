"""Independent reference for the image-classification-jpeg profile.

Decodes IMAGE with PIL and applies torchvision's classic ImageNet evaluation
transform; writes the decoded RGB pixels (H*W*3 uint8) and the float32
[3, 224, 224] tensor as raw little-endian bytes for the unit test to compare.
Exit 77 when PIL or torchvision is missing (the test then skips).

usage: torchvision_reference.py IMAGE PIXELS_OUT TENSOR_OUT [IMAGE PIXELS_OUT TENSOR_OUT ...]
"""
import sys

try:
    from PIL import Image
    import numpy as np
    import torch
    from torchvision import transforms
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"skip: {e}", file=sys.stderr)
    sys.exit(77)

transform = transforms.Compose([
    transforms.Resize(256),  # bilinear, antialiased (PIL)
    transforms.CenterCrop(224),
    transforms.ToTensor(),
    transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
])
args = sys.argv[1:]
for i in range(0, len(args), 3):
    image_path, pixels_out, tensor_out = args[i:i + 3]
    img = Image.open(image_path).convert("RGB")
    np.asarray(img, dtype=np.uint8).tofile(pixels_out)
    with torch.no_grad():
        transform(img).contiguous().numpy().astype("<f4").tofile(tensor_out)
