"""A small MNIST in MNIST's own files (the IDX format of yann.lecun.com/exdb/mnist, which
torchvision's datasets.MNIST reads from ROOT/MNIST/raw/), learnable in a few steps: the image of
digit d is noise with a bright 6x6 square at a place of its own."""

import struct
from pathlib import Path

import numpy as np

FILES = {True: ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
         False: ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}


def write(root, train_count, test_count, seed=0):
    raw = Path(root) / "MNIST" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    generator = np.random.default_rng(seed)
    for train, count in ((True, train_count), (False, test_count)):
        labels = np.arange(count, dtype=np.uint8) % 10
        generator.shuffle(labels)
        images = generator.integers(0, 60, size=(count, 28, 28), dtype=np.uint8)
        for image, label in zip(images, labels, strict=True):
            row, column = 3 + 8 * (label // 4), 2 + 7 * (label % 4)
            image[row:row + 6, column:column + 6] = 255
        images_file, labels_file = FILES[train]
        (raw / images_file).write_bytes(struct.pack(">IIII", 2051, count, 28, 28) + images.tobytes())
        (raw / labels_file).write_bytes(struct.pack(">II", 2049, count) + labels.tobytes())
