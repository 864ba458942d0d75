// ProcessGroup: c10d (LibTorch's distributed runtime) for devplace's multi-process modes - data-parallel training
// (agents/learned) and the multi-process executor (exec/multiprocess*) - with one rendezvous through a TCP store on
// rank 0 and Gloo pairs between every two ranks (NCCL instead, for CUDA tensors, where the LibTorch found has it).
// Every blocking call has the group's timeout: a peer that died (its connections close) or stalls makes the call
// return an Error naming this rank and the step instead of hanging. Every rank must make the same collective
// calls in the same order; point-to-point sends and receives pair up by (peer, tag) in posting order.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "distributed/config.h"

namespace devplace {

// A send or receive under way: a shared handle (copies refer to the same transfer, so one thread may Abort what
// another waits for). When the last handle of a transfer that was never waited for to the end goes, it is aborted.
class PendingTransfer {
 public:
  PendingTransfer();
  // A transfer that has completed already (its Wait returns Ok at once).
  static PendingTransfer Done();
  // Blocks until the transfer completed (Ok), failed (a peer closed its connections), timed out (the group's
  // timeout) or was aborted; the error names `what`.
  Status Wait();
  // Makes a blocked or later Wait return an error at once. Safe from any thread while another waits.
  void Abort();

 private:
  friend class ProcessGroup;
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

class ProcessGroup {
 public:
  // Which c10d backend carries the group's tensors.
  enum class Backend { kGloo, kNccl };
  // Joins the group `config` describes (world_size >= 2); waits up to config.timeout_seconds for every rank.
  // kNccl errors unless this LibTorch has NCCL (NcclAvailable). Errors: the store cannot be started or reached,
  // a rank does not arrive in time.
  static Expected<std::unique_ptr<ProcessGroup>> Connect(const DistributedConfig& config,
                                                         Backend backend = Backend::kGloo);
  // Whether this build has c10d's NCCL backend (a CUDA LibTorch with NCCL).
  static bool NcclAvailable();
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int32_t rank() const;
  int32_t size() const;
  Backend backend() const;
  double timeout_seconds() const;
  // "rank R of N", for messages.
  std::string Who() const;

  // AllReduce (sum) and AllToAll started without waiting: the returned transfer's Wait ends when the collective has
  // (they take their place in the sequence of collectives when called). `tensor`, `output` and `input` must stay
  // alive until then. On NCCL (CPU tensors staged through the device) they block and return a completed transfer.
  Expected<PendingTransfer> StartAllReduceSum(at::Tensor& tensor, const std::string& what);
  Expected<PendingTransfer> StartAllToAll(at::Tensor& output, const at::Tensor& input,
                                          const std::vector<int64_t>& out_splits,
                                          const std::vector<int64_t>& in_splits, const std::string& what);

  // A group of the ranks `ranks` of this group (sorted, distinct, at least two, this rank among them) over the
  // same rendezvous store, for collectives among them only. Every rank in `ranks` must call it (a rendezvous of
  // them, bounded by the timeout); ranks that make several subgroups make them in one order (e.g. sorted).
  // Errors name this rank and the subgroup (also when `ranks` is not such a list, before any rendezvous).
  Expected<std::unique_ptr<ProcessGroup>> SubGroup(const std::vector<int32_t>& ranks);

  // Element-wise reduction over the ranks, in place. `tensor`: contiguous, same shape and type on every rank
  // (CPU for Gloo; with NCCL a CPU tensor is staged through cuda:LOCAL_RANK). `what` names the step in errors.
  enum class Reduce { kSum, kMin, kMax };
  Status AllReduce(at::Tensor& tensor, Reduce op, const std::string& what);
  Status AllReduceSum(at::Tensor& tensor, const std::string& what) { return AllReduce(tensor, Reduce::kSum, what); }
  // Every rank's `input` (same shape everywhere) concatenated along a new first dimension in rank order.
  Expected<at::Tensor> AllGather(const at::Tensor& input, const std::string& what);
  // Every rank sends piece r of `input` (flat, contiguous; pieces of in_splits[r] elements along dimension 0, in
  // rank order) to rank r and receives rank r's piece for it into piece r of `output` (out_splits[r] elements).
  // Every rank must call it in the same place of its sequence of collectives.
  Status AllToAll(at::Tensor& output, const at::Tensor& input, const std::vector<int64_t>& out_splits,
                  const std::vector<int64_t>& in_splits, const std::string& what);
  // Waits until every rank has called Barrier.
  Status Barrier(const std::string& what);
  // Rank `root`'s `bytes` on every rank (the argument is ignored elsewhere).
  Expected<std::string> BroadcastBytes(const std::string& bytes, int32_t root, const std::string& what);

  // Starts sending `tensor` (contiguous; kept alive until done) to rank `peer` under `tag` (>= 0); the matching
  // Recv on `peer` names this rank and the same tag. Sends and receives with the same (peer, tag) pair up in the
  // order they were posted.
  Expected<PendingTransfer> Send(const at::Tensor& tensor, int32_t peer, int32_t tag, const std::string& what);
  // Starts receiving into `tensor` (contiguous, the sent size) from rank `peer` under `tag`.
  Expected<PendingTransfer> Recv(at::Tensor& tensor, int32_t peer, int32_t tag, const std::string& what);

 private:
  struct Impl;
  explicit ProcessGroup(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace devplace
