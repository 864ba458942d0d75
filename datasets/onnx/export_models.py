#!/usr/bin/python3
"""Exports the ONNX models devplace's importer is tested on, and an independent FLOP count of each.

Run with Debian's python3-torch, python3-torchvision and python3-onnx (see docs/importers.md):
    /usr/bin/python3 datasets/onnx/export_models.py [--out datasets/onnx] [--only NAME ...]

Every model is exported as a training graph (TrainingMode.TRAINING: batch norm in training mode, dropout kept,
no conv/batch-norm fusion) without weights (export_params=False: parameters become graph inputs), with a
symbolic batch dimension "batch" on the data inputs, at opset 17.

Beside each model.onnx goes model.reference.json with:
  - forward_flops: the forward FLOPs of one batch-1 step, counted from PyTorch itself and not from the ONNX file:
    forward hooks on the leaf modules apply per-layer formulas to the module attributes (kernel sizes, features,
    hidden sizes, heads) and the runtime tensor shapes. Conventions match devplace (2 FLOPs per multiply-add;
    element-wise costs as datasets/layers.h). Functional element-wise work outside modules (residual additions,
    torch.cat, the squeeze-excite scaling, the activation inside nn.TransformerEncoderLayer) is not counted, so the
    reference is a slight undercount.
  - param_count: trainable parameters (sum of p.numel()).
"""
import argparse
import json
import math
import os

import onnx
import torch
import torch.nn as nn
import torchvision

# FLOPs per element, as datasets/layers.h and datasets/import/onnx_ops.cc.
RELU, SIGMOID, TANH, HARDSIGMOID, HARDSWISH, GELU = 1, 4, 4, 3, 4, 8
SOFTMAX, LAYER_NORM, BATCH_NORM, DROPOUT = 5, 8, 6, 2


class Seq2SeqGRU(nn.Module):
    """A GRU encoder-decoder (teacher forcing) with an output projection."""

    def __init__(self, vocab=1000, emb=128, hidden=256):
        super().__init__()
        self.src_embed = nn.Embedding(vocab, emb)
        self.tgt_embed = nn.Embedding(vocab, emb)
        self.encoder = nn.GRU(emb, hidden, batch_first=True)
        self.decoder = nn.GRU(emb, hidden, batch_first=True)
        self.proj = nn.Linear(hidden, vocab)

    def forward(self, src, tgt):
        _, h = self.encoder(self.src_embed(src))
        y, _ = self.decoder(self.tgt_embed(tgt), h)
        return self.proj(y)


class LstmLM(nn.Module):
    """A two-layer LSTM language model."""

    def __init__(self, vocab=2000, emb=128, hidden=256):
        super().__init__()
        self.embed = nn.Embedding(vocab, emb)
        self.lstm = nn.LSTM(emb, hidden, num_layers=2, batch_first=True)
        self.drop = nn.Dropout(0.2)
        self.proj = nn.Linear(hidden, vocab)

    def forward(self, tokens):
        y, _ = self.lstm(self.embed(tokens))
        return self.proj(self.drop(y))


class SmallTransformer(nn.Module):
    """A two-layer Transformer encoder classifier over token ids, with a learned positional embedding."""

    def __init__(self, vocab=1000, width=128, heads=4, layers=2, ff=512, seq=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.pos = nn.Parameter(torch.zeros(1, seq, width))
        layer = nn.TransformerEncoderLayer(width, heads, ff, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(width, vocab)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens) + self.pos))


def numel(shape):
    return math.prod(shape)


def rnn_flops(module, x):
    """FLOPs of nn.GRU / nn.LSTM over input x, matching onnx_ops.cc's recurrent formula."""
    gates, elementwise = (4, 24) if isinstance(module, nn.LSTM) else (3, 17)
    n, t = (x.shape[0], x.shape[1]) if module.batch_first else (x.shape[1], x.shape[0])
    h = module.hidden_size
    total = 0
    for layer in range(module.num_layers):
        i = module.input_size if layer == 0 else h * (2 if module.bidirectional else 1)
        per_step = 2 * (i + h) * gates * h + (2 * gates * h if module.bias else 0) + elementwise * h
        total += (2 if module.bidirectional else 1) * t * n * per_step
    return total


def attention_flops(module, q, k):
    """nn.MultiheadAttention (self-attention, packed in-projection): projections, scaled scores, softmax, context."""
    n, l, e = q.shape if module.batch_first else (q.shape[1], q.shape[0], q.shape[2])
    s = k.shape[1] if module.batch_first else k.shape[0]
    proj = 3 * (2 * n * l * e * e + n * l * e) + (2 * n * l * e * e + n * l * e)  # in (with bias) and out projections
    scale = n * l * e  # q * scaling
    scores = 2 * n * l * s * e
    softmax = SOFTMAX * n * module.num_heads * l * s
    drop = DROPOUT * n * module.num_heads * l * s if module.training and module.dropout > 0 else 0
    context = 2 * n * l * s * e
    return proj + scale + scores + softmax + drop + context


def module_flops(m, inputs, output):
    """FLOPs of one call of a leaf module (None: the module is not counted)."""
    x = inputs[0] if inputs else None
    out = output[0] if isinstance(output, tuple) else output
    if isinstance(m, nn.Conv2d):
        per_out = 2 * (m.in_channels // m.groups) * m.kernel_size[0] * m.kernel_size[1]
        return numel(out.shape) * per_out + (numel(out.shape) if m.bias is not None else 0)
    if isinstance(m, nn.Linear):
        rows = numel(x.shape[:-1])
        return 2 * rows * m.in_features * m.out_features + (rows * m.out_features if m.bias is not None else 0)
    if isinstance(m, nn.BatchNorm2d):
        return BATCH_NORM * numel(out.shape)
    if isinstance(m, nn.LayerNorm):
        return LAYER_NORM * numel(out.shape)
    if isinstance(m, (nn.ReLU, nn.ReLU6)):
        return RELU * numel(out.shape) * (2 if isinstance(m, nn.ReLU6) else 1)  # ReLU6 is a Clip (2 per element)
    if isinstance(m, nn.Hardswish):
        return HARDSWISH * numel(out.shape)
    if isinstance(m, nn.Hardsigmoid):
        return HARDSIGMOID * numel(out.shape)
    if isinstance(m, nn.Sigmoid):
        return SIGMOID * numel(out.shape)
    if isinstance(m, nn.Tanh):
        return TANH * numel(out.shape)
    if isinstance(m, nn.GELU):
        return GELU * numel(out.shape)
    if isinstance(m, nn.Softmax):
        return SOFTMAX * numel(out.shape)
    if isinstance(m, nn.Dropout):
        return DROPOUT * numel(out.shape) if m.training and m.p > 0 else 0
    if isinstance(m, (nn.MaxPool2d, nn.AvgPool2d)):
        k = m.kernel_size if isinstance(m.kernel_size, tuple) else (m.kernel_size, m.kernel_size)
        return k[0] * k[1] * numel(out.shape)
    if isinstance(m, nn.AdaptiveAvgPool2d):
        if tuple(out.shape[-2:]) == (1, 1):
            return numel(x.shape)  # a global average pool
        kh, kw = x.shape[-2] // out.shape[-2], x.shape[-1] // out.shape[-1]
        return kh * kw * numel(out.shape)
    if isinstance(m, nn.Embedding):
        return numel(out.shape)  # one copy per element
    if isinstance(m, (nn.GRU, nn.LSTM)):
        return rnn_flops(m, x)
    if isinstance(m, nn.MultiheadAttention):
        return attention_flops(m, x, inputs[1])
    if isinstance(m, (nn.Flatten, nn.Identity)):
        return 0
    return None


def count_flops(model, args):
    """Forward FLOPs from hooks on leaf modules (MultiheadAttention counted as a whole)."""
    total, uncounted = [0], set()
    leaves = [m for m in model.modules() if not list(m.children()) or isinstance(m, nn.MultiheadAttention)]
    inside_attention = {id(c) for m in leaves if isinstance(m, nn.MultiheadAttention) for c in m.modules() if c is not m}

    def hook(m, inputs, output):
        flops = module_flops(m, inputs, output)
        if flops is None:
            uncounted.add(type(m).__name__)
        else:
            total[0] += flops

    handles = [m.register_forward_hook(hook) for m in leaves if id(m) not in inside_attention]
    with torch.no_grad():
        model(*args)
    for h in handles:
        h.remove()
    return total[0], sorted(uncounted)


def models():
    torch.manual_seed(0)
    image = (torch.randn(1, 3, 224, 224),)
    return {
        "resnet18": (torchvision.models.resnet18(), image, ["input"]),
        "alexnet": (torchvision.models.alexnet(), image, ["input"]),
        "squeezenet1_0": (torchvision.models.squeezenet1_0(), image, ["input"]),
        "densenet121": (torchvision.models.densenet121(), image, ["input"]),
        "mobilenet_v3_small": (torchvision.models.mobilenet_v3_small(), image, ["input"]),
        # The CNNs of issue 19's ONNX target (placed zero-shot on dgx1-v100, docs/results.md).
        "resnet50": (torchvision.models.resnet50(), image, ["input"]),
        "vgg16": (torchvision.models.vgg16(), image, ["input"]),
        "mobilenet_v2": (torchvision.models.mobilenet_v2(), image, ["input"]),
        "inception_v3": (torchvision.models.inception_v3(aux_logits=False, init_weights=False),
                         (torch.randn(1, 3, 299, 299),), ["input"]),
        "gru_seq2seq": (Seq2SeqGRU(), (torch.randint(0, 1000, (1, 20)), torch.randint(0, 1000, (1, 16))),
                        ["src", "tgt"]),
        "lstm_lm": (LstmLM(), (torch.randint(0, 2000, (1, 35)),), ["tokens"]),
        "transformer_small": (SmallTransformer(), (torch.randint(0, 1000, (1, 32)),), ["tokens"]),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--only", nargs="*", help="export only these models (default: all)")
    args = parser.parse_args()
    for name, (model, inputs, input_names) in models().items():
        if args.only and name not in args.only:
            continue
        model.train()
        path = os.path.join(args.out, name + ".onnx")
        dynamic = {n: {0: "batch"} for n in input_names + ["output"]}
        torch.onnx.export(model, inputs, path, export_params=False, opset_version=17,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                          input_names=input_names, output_names=["output"], dynamic_axes=dynamic)
        onnx.checker.check_model(onnx.load(path))
        flops, uncounted = count_flops(model, inputs)
        reference = {
            "model": name,
            "batch": 1,
            "inputs": {n: list(t.shape) for n, t in zip(input_names, inputs)},
            "forward_flops": flops,
            "param_count": sum(p.numel() for p in model.parameters() if p.requires_grad),
            "uncounted_modules": uncounted,
            "method": "forward hooks on leaf modules, per-layer formulas (datasets/onnx/export_models.py)",
        }
        with open(os.path.join(args.out, name + ".reference.json"), "w") as f:
            json.dump(reference, f, indent=2)
            f.write("\n")
        print(f"{name}: {os.path.getsize(path)} bytes, {flops / 1e9:.3f} GFLOPs, {reference['param_count']} params"
              + (f", not counted: {uncounted}" if uncounted else ""))


if __name__ == "__main__":
    main()
