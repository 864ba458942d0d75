// Internal to exec/: the executable form of a whole graph. Every op gets a Kernel on its device: graph inputs
// (seeded data), forward ops (their reconstructed computation or a stand-in), backward ops (the real backward of
// the forward computation) and Adam updates. Weights live in one flat buffer per owning op, on its device.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/status.h"

namespace devplace::exec {

// What travels on an edge: the producer's output (or the gradient / weight gradient it sends), or, for an edge
// carrying fewer bytes than that, its leading elements as a 1-D tensor.
struct EdgeTensor {
  std::vector<int64_t> shape;
  at::ScalarType type = at::kFloat;
  int64_t index_bound = 2;  // integer tensors: exclusive upper bound of the values the consumer accepts
};

// Adam (Kingma and Ba; lr 1e-3, betas 0.9 and 0.999, eps 1e-8) at step `step` (0-based) from gradient `g`:
// m' = b1 m + (1 - b1) g, v' = b2 v + (1 - b2) g^2, w' = w - lr_t m' / (sqrt(v') + eps), lr_t bias-corrected.
void AdamStep(const at::Tensor& g, const at::Tensor& w, const at::Tensor& m, const at::Tensor& v, int64_t step,
              at::Tensor* next_w, at::Tensor* next_m, at::Tensor* next_v);

// The weights of one op and its Adam state. The update op writes next_*; Commit makes them current after the
// step, so every op of a step reads the weights the step started with, whatever the schedule.
struct ParamSlot {
  at::Tensor weights, m, v;
  at::Tensor next_weights, next_m, next_v;
  int64_t step = 0;
  void Commit();
};

// The tensors one execution of a kernel consumes and produces.
struct KernelIo {
  std::vector<at::Tensor> inputs;    // one per in-edge, in graph.in_edges(op) order
  std::vector<at::Tensor> outputs;   // one per out-edge, in graph.out_edges(op) order (filled by Run)
  std::vector<at::Tensor> produced;  // every tensor the op computed (filled by Run; undefined entries allowed)
};

// One op's executable form. Run by one thread at a time.
class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void Run(KernelIo& io) = 0;
  // The shapes `produced` must have (parallel to it); entries of undefined tensors are not checked.
  const std::vector<std::vector<int64_t>>& expected_shapes() const { return expected_; }
  bool stand_in() const { return stand_in_; }

 protected:
  std::vector<std::vector<int64_t>> expected_;
  bool stand_in_ = false;
};

class OpImpl;

// Kernels for a graph whose op i runs on device_of_op[i].
struct Plan {
  std::vector<std::unique_ptr<Kernel>> kernels;    // by OpId
  std::vector<EdgeTensor> edges;                   // by edge id
  std::vector<std::unique_ptr<ParamSlot>> params;  // by OpId of the owning forward op; null where none
  std::vector<OpId> owner;                         // by forward OpId: the op whose weights it uses, or -1
  std::vector<std::shared_ptr<const OpImpl>> impls;  // by forward OpId with inputs or weights: its computation
  std::vector<char> stand_in;                      // by OpId: 1 when impls[op] is a stand-in
  // Makes the weights the update ops wrote in the last step current.
  void CommitUpdates();
};

// Builds the plan. Errors name the op (e.g. an op sharing weights with an op on another device).
Expected<Plan> BuildPlan(const Graph& graph, const std::vector<at::Device>& device_of_op, uint64_t seed);

// Seeded tensors for the in-edges of `op` as the plan would deliver them (integer tensors within the bounds the
// consumers need), for timing the op's kernel on its own.
std::vector<at::Tensor> SyntheticInputs(const Graph& graph, const Plan& plan, OpId op, const at::Device& device,
                                        uint64_t seed);

// The tensor to send on an edge of type `edge` from the produced tensor `t` (itself, or its leading elements).
at::Tensor ForEdge(const at::Tensor& t, const EdgeTensor& edge);

}  // namespace devplace::exec
