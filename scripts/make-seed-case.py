#!/usr/bin/env python3
"""Writes cases/tvd_prob-seed-000-self-distillation.safetensors: the bug report of
shared/seeds/000 as a divcheck case file (pure Python, no torch needed).

p = softmax of an (8, 512) row of standard normal draws (float32), q = p bitwise (step 0 of
self-distillation), reduction "batchmean", upstream gradient 1. The correct gradient with
respect to p is exactly 0 everywhere (sgn(0) = 0); the two-way select of the report gives
-0.5/8 = -0.0625 at every element. Deterministic: Python's random with a fixed seed.
"""
import json
import math
import random
import struct
import sys

def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]

def main(path):
    rng = random.Random(0)
    rows, vocab = 8, 512
    p = []
    for _ in range(rows):
        z = [rng.gauss(0.0, 1.0) for _ in range(vocab)]
        m = max(z)
        e = [math.exp(v - m) for v in z]
        s = sum(e)
        p.extend(f32(v / s) for v in e)
    data_p = struct.pack("<%df" % len(p), *p)
    grad = struct.pack("<f", 1.0)
    tensors = [("grad_output", "F32", [], grad), ("p", "F32", [rows, vocab], data_p),
               ("q", "F32", [rows, vocab], data_p)]
    header = {"__metadata__": {
        "divcheck.format": "1", "divcheck.version": "0.1.0", "divergence": "tvd_prob",
        "family": "exact_ties", "note": "shared/seeds/000: LigerTVDLoss gradient at p == q",
        "params": json.dumps({"reduction": "batchmean"}), "seed": "0",
        "wants_grad": json.dumps(["p"])}}
    offset, blobs = 0, []
    for name, dtype, shape, blob in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))

if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cases/tvd_prob-seed-000-self-distillation.safetensors")
