#include "exec/process_transport.h"

#include <algorithm>
#include <chrono>

#include "core/check.h"
#include "core/tensor_sharing.h"

namespace devplace::exec {

namespace {

constexpr int32_t kHeaderTag = 1;  // the message id, type and shape (int64) of the tensor that follows
constexpr int32_t kDataTag = 2;    // the tensor

std::string SecondsText(double s) {
  std::string text = std::to_string(s);
  text.erase(text.find_last_not_of('0') + 1);
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text + " s";
}

}  // namespace

int64_t ProcessTransport::NowTicks() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace {

constexpr int64_t kMaxRank = 8;  // header: id, scalar type, rank, then up to kMaxRank extents

std::vector<ProcessTransport::Message> EdgeMessages(const Graph& graph, const Plan& plan,
                                                    const std::vector<int32_t>& rank_of_op,
                                                    const std::vector<at::Device>& device_of_op) {
  // An op's place is its (rank, device): edges carrying one tensor to one place share a message
  // (core/tensor_sharing.h, the rule the simulator counts transfers by); messages within a rank are not sent.
  std::vector<std::pair<int32_t, at::Device>> places;
  std::vector<int32_t> place(static_cast<size_t>(graph.num_ops()));
  for (OpId o = 0; o < graph.num_ops(); ++o) {
    const std::pair<int32_t, at::Device> at{rank_of_op[o], device_of_op[o]};
    const auto it = std::find(places.begin(), places.end(), at);
    place[o] = static_cast<int32_t>(it - places.begin());
    if (it == places.end()) places.push_back(at);
  }
  const std::vector<int32_t> carrier = CarrierEdges(graph, place);
  std::vector<ProcessTransport::Message> messages;
  for (int32_t e = 0; e < graph.num_edges(); ++e) {
    const Edge& edge = graph.edge(e);
    messages.push_back({rank_of_op[edge.src], rank_of_op[edge.dst], device_of_op[edge.dst], plan.edges[e].shape,
                        "'" + graph.op(edge.src).name + "'"});
    if (messages.back().from != messages.back().to && carrier[e] >= 0 && carrier[e] != e)
      messages.back().carried_by = carrier[e];
  }
  return messages;
}

}  // namespace

ProcessTransport::ProcessTransport(ProcessGroup& group, const Graph& graph, const Plan& plan,
                                   std::vector<int32_t> rank_of_op, const std::vector<at::Device>& device_of_op,
                                   Fail fail)
    : ProcessTransport(group, EdgeMessages(graph, plan, rank_of_op, device_of_op), std::move(fail)) {
  rank_of_op_ = std::move(rank_of_op);
}

ProcessTransport::ProcessTransport(ProcessGroup& group, std::vector<Message> messages, Fail fail)
    : group_(group), messages_(std::move(messages)), fail_(std::move(fail)) {
  const int32_t me = group_.rank();
  std::vector<std::unique_ptr<Receiver>> by_peer(group_.size());
  riders_.resize(messages_.size());
  for (int32_t m = 0; m < static_cast<int32_t>(messages_.size()); ++m) {
    const int32_t from = messages_[m].from;
    if (messages_[m].carried_by >= 0) riders_[messages_[m].carried_by].push_back(m);
    if (messages_[m].to != me || from == me || messages_[m].carried_by >= 0) continue;
    if (!by_peer[from]) {
      by_peer[from] = std::make_unique<Receiver>();
      by_peer[from]->peer = from;
    }
    by_peer[from]->messages.push_back(m);
  }
  for (int32_t r = 0; r < group_.size(); ++r) send_mu_.push_back(std::make_unique<std::mutex>());
  for (auto& r : by_peer)
    if (r) receivers_.push_back(std::move(r));
  for (auto& r : receivers_) r->thread = std::thread(&ProcessTransport::ReceiverMain, this, r.get());
  watchdog_ = std::thread(&ProcessTransport::WatchdogMain, this);
}

ProcessTransport::~ProcessTransport() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;  // failures of the aborted receives below are not reported
  }
  Abort();
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutdown_ = true;
  }
  cv_.notify_all();
  for (auto& r : receivers_) r->thread.join();
  watchdog_.join();
}

void ProcessTransport::Failed(const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!error_.empty() || closing_) return;
    error_ = message;
  }
  fail_(message);
}

void ProcessTransport::Abort() {
  std::lock_guard<std::mutex> lock(mu_);
  aborted_ = true;
  for (auto& r : receivers_) r->current.Abort();
  for (PendingTransfer& t : sends_) t.Abort();
}

Status ProcessTransport::BeginStep(int32_t step, Deliver deliver) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (aborted_) return Error{group_.Who() + ": an earlier failure stopped this group"};
  }
  if (Status s = group_.Barrier("the start of step " + std::to_string(step)); !s) return s;
  received_.store(0);
  received_bytes_.store(0);
  Progress();
  {
    std::lock_guard<std::mutex> lock(mu_);
    step_ = step;
    deliver_ = std::move(deliver);
    running_ = static_cast<int32_t>(receivers_.size());
    in_step_ = true;
    ++generation_;
  }
  cv_.notify_all();
  return Status::Ok();
}

Status ProcessTransport::Send(int32_t message, const at::Tensor& tensor) {
  const Message& spec = messages_[message];
  if (spec.carried_by >= 0) return Status::Ok();
  const int32_t peer = spec.to;
  const bool nccl = group_.backend() == ProcessGroup::Backend::kNccl;
  at::Tensor data = nccl ? tensor.contiguous() : tensor.to(at::kCPU).contiguous();
  DEVPLACE_CHECK(spec.shape.empty() || data.sizes().vec() == spec.shape, "a cross-process tensor has its shape");
  DEVPLACE_CHECK(data.dim() <= kMaxRank, "a cross-process tensor has at most 8 axes");
  std::vector<int64_t> head = {message, static_cast<int64_t>(data.scalar_type()), data.dim()};
  for (int64_t a = 0; a < kMaxRank; ++a) head.push_back(a < data.dim() ? data.size(a) : 0);
  at::Tensor header = at::tensor(head, at::kLong).to(data.device());
  const std::string what = "sending " + spec.name + " to rank " + std::to_string(peer);
  std::lock_guard<std::mutex> order(*send_mu_[peer]);
  Expected<PendingTransfer> h = group_.Send(header, peer, kHeaderTag, what);
  if (!h) return h.error();
  Expected<PendingTransfer> d = group_.Send(data, peer, kDataTag, what);
  if (!d) return d.error();
  Progress();
  std::lock_guard<std::mutex> lock(mu_);
  sends_.push_back(*h);
  sends_.push_back(*d);
  if (aborted_) {
    sends_[sends_.size() - 2].Abort();
    sends_.back().Abort();
  }
  return Status::Ok();
}

Status ProcessTransport::ReceiveOne(Receiver* r) {
  const bool nccl = group_.backend() == ProcessGroup::Backend::kNccl;
  const std::string what = "receiving from rank " + std::to_string(r->peer) + " in step " + std::to_string(step_);
  // Posts a receive, registers it for Abort and waits for it.
  auto receive = [&](at::Tensor& into, int32_t tag) -> Status {
    Expected<PendingTransfer> t = group_.Recv(into, r->peer, tag, what);
    if (!t) return t.error();
    {
      std::lock_guard<std::mutex> lock(mu_);
      r->current = *t;
      if (aborted_) r->current.Abort();
    }
    return t->Wait();
  };
  const at::Device wire = nccl ? messages_[r->messages[0]].device : at::Device(at::kCPU);
  at::Tensor header = at::empty({3 + kMaxRank}, at::TensorOptions().dtype(at::kLong).device(wire));
  if (Status s = receive(header, kHeaderTag); !s) return s;
  header = header.to(at::kCPU);
  const int64_t* head = header.data_ptr<int64_t>();
  const int32_t message = static_cast<int32_t>(head[0]);
  const std::vector<int64_t> shape(head + 3, head + 3 + std::clamp<int64_t>(head[2], 0, kMaxRank));
  if (!std::binary_search(r->messages.begin(), r->messages.end(), message) ||
      (!messages_[message].shape.empty() && shape != messages_[message].shape))
    return Error{group_.Who() + ": rank " + std::to_string(r->peer) + " sent a tensor (message " +
                 std::to_string(message) + ") it does not send here (do all ranks run the same graph and "
                 "strategy?)"};
  at::Tensor data =
      at::empty(shape, at::TensorOptions().dtype(static_cast<at::ScalarType>(head[1])).device(wire));
  if (Status s = receive(data, kDataTag); !s) return s;
  const at::Device& device = messages_[message].device;
  if (data.device() != device) data = data.to(device);
  received_.fetch_add(1);
  received_bytes_.fetch_add(static_cast<int64_t>(data.nbytes()));
  Progress();
  for (int32_t rider : riders_[message]) deliver_(rider, data);
  deliver_(message, std::move(data));
  return Status::Ok();
}

void ProcessTransport::ReceiverMain(Receiver* r) {
  int64_t seen = 0;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return shutdown_ || generation_ != seen; });
      if (shutdown_) return;
      seen = generation_;
    }
    for (size_t i = 0; i < r->messages.size(); ++i) {
      Status s = Status::Ok();
      try {
        s = ReceiveOne(r);
      } catch (const std::exception& e) {  // allocation of the received tensor
        s = Error{group_.Who() + ": receiving from rank " + std::to_string(r->peer) + ": " + e.what()};
      }
      if (!s) {
        Failed(s.error().message);
        break;
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (--running_ == 0) cv_.notify_all();
  }
}

Status ProcessTransport::EndStep() {
  std::vector<PendingTransfer> sends;
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return running_ == 0; });
    sends.swap(sends_);
  }
  for (PendingTransfer& t : sends)
    if (Status s = t.Wait(); !s) {
      Failed(s.error().message);
      break;
    }
  std::lock_guard<std::mutex> lock(mu_);
  in_step_ = false;
  if (!error_.empty()) return Error{error_};
  return Status::Ok();
}

void ProcessTransport::WatchdogMain() {
  const int64_t limit = static_cast<int64_t>(group_.timeout_seconds() * 1000.0);
  std::unique_lock<std::mutex> lock(mu_);
  while (!shutdown_) {
    cv_.wait_for(lock, std::chrono::milliseconds(100));
    if (shutdown_ || !in_step_ || !error_.empty()) continue;
    if (NowTicks() - last_progress_.load(std::memory_order_relaxed) <= limit) continue;
    const std::string message = group_.Who() + ": no progress in step " + std::to_string(step_) + " for " +
                                SecondsText(group_.timeout_seconds()) + " (a peer died or stalled)";
    lock.unlock();
    Failed(message);
    lock.lock();
  }
}

}  // namespace devplace::exec
