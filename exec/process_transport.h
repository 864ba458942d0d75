// Internal to exec/: the cross-process edges of a multi-process execution (docs/executor.md, "Multi-process
// runs"). Every process runs the devices its rank owns; an edge whose consumer lives on another rank is sent there
// over the c10d process group (distributed/process_group.h) and delivered to the consumer by a receiving thread,
// one per peer that sends to this rank; partitioned execution sends boxes of its slots the same way (messages).
// Messages from one peer arrive in the order that peer posted them: a header (the message id, type and shape) and
// then the tensor, under two tags. A watchdog fails the step when nothing progresses
// (no op finishes, no tensor arrives) for the group's timeout, so a dead or stalled peer never hangs a rank.
#pragma once

#include <ATen/ATen.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/graph.h"
#include "core/status.h"
#include "distributed/process_group.h"
#include "exec/executor.h"
#include "exec/kernels.h"

namespace devplace::exec {

class ProcessTransport {
 public:
  // Hands a received tensor (already on its message's device) to the runtime: message id and tensor.
  using Deliver = std::function<void(int32_t, at::Tensor)>;
  // Reports a failure of this rank's transport (once per step at most); the runtime stops its step.
  using Fail = std::function<void(const std::string&)>;

  // One tensor sent from rank `from` to rank `to` once per step, identified by its index in the transport's list.
  // The header that precedes it carries its id, type and shape; `shape`, when not empty, is checked.
  struct Message {
    int32_t from = 0, to = 0;
    at::Device device{at::kCPU};  // where the receiver needs it
    std::vector<int64_t> shape;
    std::string name;             // what is sent, for errors
    // -1: sent on its own; else the message that carries the same tensor to the same rank (sent once, delivered
    // as both): one transfer per (tensor, destination rank).
    int32_t carried_by = -1;
  };

  // A transport for `messages` (each rank passes the same list). `group` must outlive the transport.
  ProcessTransport(ProcessGroup& group, std::vector<Message> messages, Fail fail);
  // The plain executor's: one message per edge whose producer and consumer run on different ranks (message id =
  // edge id); edges carrying one tensor to one (rank, device) share the message of their carrier edge, by the
  // simulator's rule (core/tensor_sharing.h: forward producers, not into update ops, the same bytes).
  // `rank_of_op[op]`: the rank running op; `device_of_op`: where received tensors must end up.
  ProcessTransport(ProcessGroup& group, const Graph& graph, const Plan& plan, std::vector<int32_t> rank_of_op,
                   const std::vector<at::Device>& device_of_op, Fail fail);
  ~ProcessTransport();
  ProcessTransport(const ProcessTransport&) = delete;
  ProcessTransport& operator=(const ProcessTransport&) = delete;

  ProcessGroup& group() { return group_; }
  bool IsLocal(OpId op) const { return rank_of_op_[op] == group_.rank(); }

  // Starts a step: waits for every rank at a barrier (an error when a peer does not arrive), then starts the
  // receiving threads, which deliver each tensor through `deliver` as it arrives.
  Status BeginStep(int32_t step, Deliver deliver);
  // Starts sending `tensor` as message `message` (the plain executor: the producer's output on that edge); a
  // message carried by another is not sent (its carrier delivers it).
  Status Send(int32_t message, const at::Tensor& tensor);
  // Something progressed (an op finished): resets the watchdog.
  void Progress() { last_progress_.store(NowTicks(), std::memory_order_relaxed); }
  // Waits until this step's tensors have all arrived and all sends have completed; the first error otherwise.
  Status EndStep();
  // Stops everything under way (another failure on this rank): blocked receives and sends return at once.
  void Abort();

  // Per step: tensors and bytes this rank received.
  int32_t received() const { return received_.load(); }
  int64_t received_bytes() const { return received_bytes_.load(); }

 private:
  struct Receiver {
    int32_t peer = 0;
    std::vector<int32_t> messages;  // the messages this peer sends here, sorted (validation of headers)
    std::thread thread;
    PendingTransfer current;    // the receive under way (guarded by mu_)
  };
  static int64_t NowTicks();
  void ReceiverMain(Receiver* r);
  Status ReceiveOne(Receiver* r);
  void WatchdogMain();
  void Failed(const std::string& message);

  ProcessGroup& group_;
  std::vector<Message> messages_;
  std::vector<std::vector<int32_t>> riders_;  // per message: the messages it carries besides itself
  std::vector<int32_t> rank_of_op_;  // the plain executor's (IsLocal)
  Fail fail_;
  std::vector<std::unique_ptr<Receiver>> receivers_;
  std::vector<std::unique_ptr<std::mutex>> send_mu_;  // by peer: a header and its tensor are posted together

  std::mutex mu_;
  std::condition_variable cv_;
  int64_t generation_ = 0;
  int32_t step_ = 0;
  int32_t running_ = 0;      // receivers still receiving this step
  bool shutdown_ = false;
  bool closing_ = false;     // the destructor runs
  bool in_step_ = false;
  bool aborted_ = false;
  std::string error_;
  Deliver deliver_;
  std::vector<PendingTransfer> sends_;  // this step's
  std::atomic<int64_t> last_progress_{0};
  std::atomic<int32_t> received_{0};
  std::atomic<int64_t> received_bytes_{0};
  std::thread watchdog_;
};

// Completes a rank's result with the other ranks' parts: each step's time is the longest over the ranks; per-op
// and per-device numbers, copies and checksums are the running rank's (the others hold zeros there).
Status MergeRanks(ProcessGroup& group, ExecResult* result);

}  // namespace devplace::exec
