#!/usr/bin/python3
# Writes the minimal ONNX reproducers beside this file (python3-onnx 1.12 from Debian; the files are committed):
#   opset18_ir9.onnx              IR 9 / opset 18 (newer than libonnx 1.12): Pad, Conv, Split(num_outputs),
#                                 ReduceMean(axes as an input), Mul, Resize(new default attributes), Cast
#   squeeze_no_axes_opset11.onnx  Squeeze without axes at opset 11 (squeezes every extent of 1)
#   lstm_without_y.onnx           an LSTM whose first output (Y) is omitted, only Y_h used
#   baked_batch.onnx              a static batch 1 spelled out in a Reshape target: Conv -> Reshape([1, -1]) -> Relu
#   conv_rank_mismatch.onnx       a Conv of a rank-3 input with a rank-4 weight (libonnx 1.12's inference reads out of
#                                 bounds on it; found by the ONNX fuzzer)
import os
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

here = os.path.dirname(os.path.abspath(__file__))


def save(model, ir, name):
    model.ir_version = ir
    with open(os.path.join(here, name), "wb") as f:
        f.write(model.SerializeToString())


inits = [numpy_helper.from_array(np.array([2, 3], np.int64), "axes"),
         numpy_helper.from_array(np.ones((8, 8, 3, 3), np.float32), "W"),
         numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"),
         numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads")]
nodes = [
    helper.make_node("Pad", ["x", "pads"], ["xp"], name="pad", mode="constant"),
    helper.make_node("Conv", ["xp", "W"], ["c"], name="conv"),
    helper.make_node("Split", ["c"], ["c0", "c1"], name="split", axis=1, num_outputs=2),
    helper.make_node("ReduceMean", ["c0", "axes"], ["m"], name="mean", keepdims=1),
    helper.make_node("Mul", ["c1", "m"], ["g"], name="gate"),
    helper.make_node("Resize", ["g", "", "scales"], ["r"], name="up", mode="nearest", antialias=0,
                     keep_aspect_ratio_policy="stretch"),
    helper.make_node("Cast", ["r"], ["y"], name="cast", to=TensorProto.FLOAT),
]
g = helper.make_graph(nodes, "opset18", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8, 4, 4])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4, 8, 8])], inits)
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], producer_name="devplace reproducer"), 9,
     "opset18_ir9.onnx")

nodes = [helper.make_node("Squeeze", ["x"], ["s"], name="sq"),
         helper.make_node("Unsqueeze", ["s"], ["y"], name="unsq", axes=[0])]
g = helper.make_graph(nodes, "sq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 5, 1, 3])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5, 3])])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)]), 6, "squeeze_no_axes_opset11.onnx")

W = numpy_helper.from_array(np.ones((1, 16, 3), np.float32), "W")
R = numpy_helper.from_array(np.ones((1, 16, 4), np.float32), "R")
nodes = [helper.make_node("LSTM", ["x", "W", "R"], ["", "h"], name="lstm", hidden_size=4),
         helper.make_node("Relu", ["h"], ["y"], name="relu")]
g = helper.make_graph(nodes, "lstm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [7, 2, 3])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4])], [W, R])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]), 7, "lstm_without_y.onnx")

W = numpy_helper.from_array(np.ones((2, 3, 1, 1), np.float32), "W")
target = numpy_helper.from_array(np.array([1, -1], np.int64), "target")
nodes = [helper.make_node("Conv", ["x", "W"], ["c"], name="conv"),
         helper.make_node("Reshape", ["c", "target"], ["f"], name="flatten"),
         helper.make_node("Relu", ["f"], ["y"], name="relu")]
g = helper.make_graph(nodes, "baked", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32])], [W, target])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), 7, "baked_batch.onnx")

# The fuzzer's finding, minimised: baked_batch.onnx with the input's rank cut to 3.
g = helper.make_graph(nodes, "conv_rank", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 4])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32])], [W, target])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), 7, "conv_rank_mismatch.onnx")
