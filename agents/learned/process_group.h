// ProcessGroup: the collectives data-parallel training needs, on LibTorch's c10d with the Gloo backend (TCP
// rendezvous store on rank 0, Gloo pairs between every two ranks). Every collective has the group's timeout: a
// peer that died (its connections close) or stalls makes the call return an Error naming this rank and the
// step instead of hanging. Every rank must make the same calls in the same order. Internal to devplace_learn.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <torch/torch.h>

#include "agents/learned/distributed.h"
#include "core/status.h"

namespace devplace {

class ProcessGroup {
 public:
  // Joins the group `config` describes (world_size >= 2); waits up to config.timeout_seconds for every rank.
  // Errors: the store cannot be started or reached, a rank does not arrive in time.
  static Expected<std::unique_ptr<ProcessGroup>> Connect(const DistributedConfig& config);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int32_t rank() const;
  int32_t size() const;

  // Element-wise sum over the ranks, in place. `tensor`: contiguous CPU float32/float64, same shape on every
  // rank. `what` names the step in errors ("gradient all-reduce").
  Status AllReduceSum(torch::Tensor& tensor, const std::string& what);
  // Rank `root`'s `bytes` on every rank (the argument is ignored elsewhere).
  Expected<std::string> BroadcastBytes(const std::string& bytes, int32_t root, const std::string& what);

 private:
  struct Impl;
  explicit ProcessGroup(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace devplace
