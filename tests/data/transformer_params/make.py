#!/usr/bin/python3
"""Writes the two ONNX exports of one small Transformer that tests/agents/imported_models_test.cc compares
(run once with Debian's python3-torch 1.13 and python3-onnx 1.12; the files are committed):

    /usr/bin/python3 tests/data/transformer_params/make.py

  transformer_weights.onnx     torch.onnx.export's defaults (eval mode, constant folding): weights are initializers,
                               some of them transposed by the folding
  transformer_no_weights.onnx  the same module and call with export_params=False: weights are graph inputs
  reference.json               param_count: sum(p.numel()) over the module's trainable parameters

The model has the layout of datasets/onnx/export_models.py's SmallTransformer (embedding, learned positions,
nn.TransformerEncoder, linear head), smaller: vocab 100, width 32, 2 heads, 2 layers, feed-forward 64, 8 tokens;
opset 17, with a symbolic "batch" axis on the tokens.
"""
import json
import os

import torch
import torch.nn as nn

here = os.path.dirname(os.path.abspath(__file__))


class Transformer(nn.Module):
    def __init__(self, vocab=100, width=32, heads=2, layers=2, ff=64, seq=8):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.pos = nn.Parameter(torch.zeros(1, seq, width))
        layer = nn.TransformerEncoderLayer(width, heads, ff, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(width, vocab)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens) + self.pos))


torch.manual_seed(0)
model = Transformer().eval()
# nn.TransformerEncoder deep-copies its layer and biases start at zero: torch.onnx.export merges initializers with
# equal values (with or without export_params), which would tie the layers' weights in the file. Perturbed, every
# parameter is its own tensor, as in a trained model.
with torch.no_grad():
    for p in model.parameters():
        p.add_(0.02 * torch.randn_like(p))
tokens = torch.randint(0, 100, (2, 8))
for name, params in (("transformer_weights.onnx", True), ("transformer_no_weights.onnx", False)):
    torch.onnx.export(model, (tokens,), os.path.join(here, name), export_params=params, opset_version=17,
                      input_names=["tokens"], output_names=["logits"],
                      dynamic_axes={"tokens": {0: "batch"}, "logits": {0: "batch"}})
count = sum(p.numel() for p in model.parameters() if p.requires_grad)
with open(os.path.join(here, "reference.json"), "w") as f:
    json.dump({"param_count": count}, f)
    f.write("\n")
print("param_count", count)
