// GraphSAGE (Hamilton et al. 2017) with the max-pool aggregator, run separately over each node's
// predecessors and successors, as Placeto and GDP embed computation graphs. LibTorch; include only from
// translation units that already pay for <torch/torch.h>.
//
// Layer k:  p_u = relu(W_pool x_u + b)                                  (per neighbour)
//           a_v^pred = max_{u -> v} p_u,  a_v^succ = max_{v -> u} p_u     (0 when there is no such neighbour)
//           x_v' = l2_normalise(relu(W [x_v || a_v^pred || a_v^succ]))
// Inputs are normalised features (env/observation.h documents them); the output rows have unit norm.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include <torch/torch.h>

namespace devplace {

// A graph as tensors: node features [N, F] (float) and directed edges src[k] -> dst[k] (int64, [E]).
// Several graphs can be stacked into one disjoint union (StackGraphs) and embedded in one call.
struct SageGraph {
  torch::Tensor x;
  torch::Tensor src, dst;
  int64_t num_nodes() const { return x.size(0); }
};

// Copies row-major features [num_nodes x dim] and an edge list into a SageGraph. Preconditions: sizes match,
// edge ends in [0, num_nodes).
SageGraph MakeSageGraph(std::span<const float> features, int64_t num_nodes, int64_t dim,
                        std::span<const int32_t> edge_src, std::span<const int32_t> edge_dst);
// The disjoint union of `copies` graphs with the same edges and node count: features [copies * N, F] (given),
// edges repeated with node offsets. Used to embed many states of one game in one call.
SageGraph RepeatEdges(torch::Tensor stacked_features, const torch::Tensor& src, const torch::Tensor& dst,
                      int64_t copies, int64_t num_nodes);

class SageLayerImpl : public torch::nn::Module {
 public:
  SageLayerImpl(int64_t in_dim, int64_t out_dim);
  // [N, in_dim] -> [N, out_dim], rows of unit L2 norm (zero rows stay zero).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& src, const torch::Tensor& dst);

 private:
  torch::nn::Linear pool_{nullptr}, combine_{nullptr};
};
TORCH_MODULE(SageLayer);

class GraphSageImpl : public torch::nn::Module {
 public:
  // `layers` >= 1 layers: in_dim -> hidden -> ... -> hidden.
  GraphSageImpl(int64_t in_dim, int64_t hidden, int64_t layers);
  // Node embeddings [N, hidden].
  torch::Tensor forward(const SageGraph& graph);
  int64_t hidden() const { return hidden_; }

 private:
  std::vector<SageLayer> layers_;
  int64_t hidden_;
};
TORCH_MODULE(GraphSage);

// Re-initialises every parameter of `module` from `rng` (never LibTorch's global generator), so a model is a
// deterministic, platform-independent function of the seed: matrices (dim >= 2) uniform in
// +-sqrt(6 / (fan_in + fan_out)) (Glorot), vectors named "*weight" (normalisation gains) 1, other vectors 0.
void InitParameters(torch::nn::Module& module, std::mt19937_64& rng);

// A uniform double in [0, 1) from 53 bits of `rng` (identical on every platform).
double UniformUnit(std::mt19937_64& rng);

}  // namespace devplace
