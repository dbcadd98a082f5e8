#!/usr/bin/env python3
"""PyTorch's gradient throughput on gradcode's MLP, CNN and ResNet, for scripts/bench-nn.sh.

The same networks as gradcode's `model.kind = "mlp"` (784-512-512-10),
`"cnn"` (004 §VIII's LeNet-style network: conv 1->10 5x5, max-pool 2, ReLU,
conv 10->20 5x5, max-pool 2, ReLU, 320->50, ReLU, dropout, 50->10) and
`"resnet"` with `resnet_blocks = [2, 2]`, `resnet_width = 16` (a 3x3 stem,
basic blocks of two 3x3 convolutions without bias, batch normalisation on
the batch's statistics, 1x1 projection shortcuts where the shape changes,
global average pooling, a linear layer: crates/core/src/learn/model/resnet.rs), one
mini-batch of random 28x28 images, softmax cross-entropy summed over the batch,
forward and backward; one thread (as one MPI rank per core). Prints one JSON
line per model: samples per second per core (best of the repetitions).

Needs python3-torch (Debian) and libopenblas0-pthread; not a dependency of
gradcode, only of this comparison.
"""
import argparse
import json
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 10, 5)
        self.conv2 = nn.Conv2d(10, 20, 5)
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2(x), 2))
        x = F.relu(self.fc1(x.flatten(1)))
        x = F.dropout(x, 0.5, self.training)
        return self.fc2(x)


def conv_bn(cin, cout, kernel, stride, padding):
    return nn.Sequential(nn.Conv2d(cin, cout, kernel, stride, padding, bias=False),
                         nn.BatchNorm2d(cout, eps=1e-5, track_running_stats=False))


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = conv_bn(cin, cout, 3, stride, 1)
        self.conv2 = conv_bn(cout, cout, 3, 1, 1)
        self.shortcut = conv_bn(cin, cout, 1, stride, 0) if stride != 1 or cin != cout else None

    def forward(self, x):
        h = self.conv2(F.relu(self.conv1(x)))
        return F.relu(h + (self.shortcut(x) if self.shortcut is not None else x))


class Resnet(nn.Module):
    def __init__(self, blocks=(2, 2), width=16, channels=1, classes=10):
        super().__init__()
        self.stem = conv_bn(channels, width, 3, 1, 1)
        layers, cin = [], width
        for s, count in enumerate(blocks):
            cout = width << s
            for b in range(count):
                layers.append(Block(cin, cout, 2 if s > 0 and b == 0 else 1))
                cin = cout
        self.blocks = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        h = self.blocks(F.relu(self.stem(x)))
        return self.fc(h.mean((2, 3)))


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512),
                         nn.ReLU(), nn.Linear(512, 10))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--repetitions", type=int, default=30)
    ap.add_argument("--precision", choices=["f64", "f32"], default="f64")
    args = ap.parse_args()
    torch.set_num_threads(1)
    dtype = torch.float64 if args.precision == "f64" else torch.float32
    torch.manual_seed(0)
    x = torch.randn(args.batch, 1, 28, 28, dtype=dtype)
    y = torch.randint(0, 10, (args.batch,))
    for name, model in (("mlp", mlp()), ("cnn", Cnn()), ("resnet", Resnet())):
        model = model.to(dtype)
        model.train()
        best = float("inf")
        for rep in range(args.repetitions + 3):
            start = time.perf_counter()
            model.zero_grad()
            loss = F.cross_entropy(model(x), y, reduction="sum")
            loss.backward()
            elapsed = time.perf_counter() - start
            if rep >= 3:
                best = min(best, elapsed)
        print(json.dumps({"model": name, "precision": args.precision, "batch": args.batch,
                          "step_ms": best * 1e3, "samples_per_s": args.batch / best,
                          "torch": torch.__version__}))


if __name__ == "__main__":
    main()
