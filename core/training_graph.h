// Derives a training graph (forward + backward + weight update) from a forward graph, as TensorFlow's
// autodiff does for Placeto's and GDP's graphs.
#pragma once

#include "core/graph.h"
#include "core/status.h"

namespace devplace {

// Options for DeriveTrainingGraph.
struct TrainingOptions {
  // FLOPs of the backward op relative to the forward op, for ops with parameters (input gradient plus
  // weight gradient, each about one forward pass) and for ops without (input gradient only).
  double backward_flops_ratio_with_params = 2.0;
  double backward_flops_ratio_without_params = 1.0;
  // FLOPs of the weight update per parameter element (Adam: about 10; plain SGD: 2).
  double update_flops_per_param = 10.0;
};

// Returns the training graph of `forward` (whose ops must all have role kForward):
// - every forward op f keeps its id and gains colocation group g(f) (its own group if set, else its name);
// - every forward op f that has parameters or a forward predecessor gets a backward op "f/grad" (role kBackward,
//   same shape/dtype/layer/dims as f, FLOPs = ratio x f's FLOPs, colocation g(f), forward_op = f);
// - for each forward edge u -> v (b bytes): a gradient edge grad(v) -> grad(u) (b bytes, the gradient of the
//   tensor) when grad(u) exists, and an activation edge u -> grad(v) (b bytes, the saved input);
// - f -> grad(f) with f's output bytes (the saved output, and the ordering forward before backward);
// - every op with param_bytes > 0 gets an update op "f/update" (role kUpdate, output = the updated weights as a
//   1-D tensor of the parameter elements, one parameter dim so it can be sharded, FLOPs = update_flops_per_param x
//   parameter elements, colocation g(f)), fed by grad(f) -> f/update carrying the weight gradient (param_bytes).
// Ids: forward ops first (unchanged), then backward ops in reverse topological order of their forward ops,
// then update ops in forward order. Errors if the input contains a non-forward op.
Expected<Graph> DeriveTrainingGraph(const Graph& forward, const TrainingOptions& options = {});

}  // namespace devplace
