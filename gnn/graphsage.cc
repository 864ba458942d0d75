#include "gnn/graphsage.h"

#include <cmath>
#include <string>

#include "core/check.h"
#include "gnn/torch_warnings.h"

namespace devplace {

namespace F = torch::nn::functional;

namespace {

// LibTorch 1.13 warns, once per process and through glog, that scatter_reduce is in beta; the warning would land
// in the output of every command that runs a policy. While installed (LibTorch keeps one handler per process;
// the guard restores the previous one) this handler drops exactly that message and passes any other on.
class ScatterReduceBetaFilter : public torch_warnings::MessageHandler {
 public:
  using MessageHandler::MessageHandler;

 protected:
  bool Keep(const std::string& message) override {
    return message.find("scatter_reduce() is in beta") == std::string::npos;
  }
};

}  // namespace

SageGraph MakeSageGraph(std::span<const float> features, int64_t num_nodes, int64_t dim,
                        std::span<const int32_t> edge_src, std::span<const int32_t> edge_dst) {
  DEVPLACE_CHECK(static_cast<int64_t>(features.size()) == num_nodes * dim, "feature size mismatch");
  DEVPLACE_CHECK(edge_src.size() == edge_dst.size(), "edge lists differ in length");
  SageGraph g;
  g.x = torch::from_blob(const_cast<float*>(features.data()), {num_nodes, dim}, torch::kFloat32).clone();
  const int64_t e = static_cast<int64_t>(edge_src.size());
  g.src = torch::from_blob(const_cast<int32_t*>(edge_src.data()), {e}, torch::kInt32).to(torch::kInt64);
  g.dst = torch::from_blob(const_cast<int32_t*>(edge_dst.data()), {e}, torch::kInt32).to(torch::kInt64);
  return g;
}

SageGraph RepeatEdges(torch::Tensor stacked_features, const torch::Tensor& src, const torch::Tensor& dst,
                      int64_t copies, int64_t num_nodes) {
  DEVPLACE_CHECK(stacked_features.size(0) == copies * num_nodes, "stacked feature rows mismatch");
  torch::Tensor offsets = (torch::arange(copies, torch::kInt64) * num_nodes).unsqueeze(1);  // [C, 1]
  SageGraph g;
  g.x = std::move(stacked_features);
  g.src = (src.unsqueeze(0) + offsets).reshape({-1});
  g.dst = (dst.unsqueeze(0) + offsets).reshape({-1});
  return g;
}

SageLayerImpl::SageLayerImpl(int64_t in_dim, int64_t out_dim) {
  pool_ = register_module("pool", torch::nn::Linear(in_dim, out_dim));
  combine_ = register_module("combine", torch::nn::Linear(in_dim + 2 * out_dim, out_dim));
}

torch::Tensor SageLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& src, const torch::Tensor& dst) {
  torch::Tensor pooled = torch::relu(pool_(x));  // >= 0, so a zero start makes max over no neighbours 0
  const int64_t h = pooled.size(1);
  torch::Tensor zeros = torch::zeros_like(pooled);
  ScatterReduceBetaFilter filter(torch_warnings::Current());
  torch_warnings::Guard quiet(&filter);
  torch::Tensor from_pred = zeros.scatter_reduce(0, dst.unsqueeze(1).expand({-1, h}), pooled.index_select(0, src),
                                                 "amax", /*include_self=*/true);
  torch::Tensor from_succ = zeros.scatter_reduce(0, src.unsqueeze(1).expand({-1, h}), pooled.index_select(0, dst),
                                                 "amax", /*include_self=*/true);
  torch::Tensor out = torch::relu(combine_(torch::cat({x, from_pred, from_succ}, 1)));
  return F::normalize(out, F::NormalizeFuncOptions().p(2).dim(1).eps(1e-6));
}

GraphSageImpl::GraphSageImpl(int64_t in_dim, int64_t hidden, int64_t layers) : hidden_(hidden) {
  DEVPLACE_CHECK(layers >= 1, "GraphSAGE needs at least one layer");
  for (int64_t k = 0; k < layers; ++k)
    layers_.push_back(register_module("layer" + std::to_string(k), SageLayer(k == 0 ? in_dim : hidden, hidden)));
}

torch::Tensor GraphSageImpl::forward(const SageGraph& graph) {
  torch::Tensor x = graph.x;
  for (SageLayer& layer : layers_) x = layer->forward(x, graph.src, graph.dst);
  return x;
}

double UniformUnit(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

void InitParameters(torch::nn::Module& module, std::mt19937_64& rng) {
  torch::NoGradGuard no_grad;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) {
    torch::Tensor p = item.value();
    const std::string& name = item.key();
    torch::Tensor values = torch::empty(p.sizes(), torch::kFloat64);
    double* v = values.data_ptr<double>();
    const int64_t n = values.numel();
    if (p.dim() >= 2) {
      const int64_t fan_out = p.size(0);
      const int64_t fan_in = n / fan_out;
      const double bound = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
      for (int64_t i = 0; i < n; ++i) v[i] = (2.0 * UniformUnit(rng) - 1.0) * bound;
    } else {
      const bool gain = name.size() >= 6 && name.compare(name.size() - 6, 6, "weight") == 0;
      for (int64_t i = 0; i < n; ++i) v[i] = gain ? 1.0 : 0.0;
    }
    p.copy_(values.to(p.dtype()));
  }
}

}  // namespace devplace
