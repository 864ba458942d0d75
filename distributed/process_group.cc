// Built with USE_C10D_GLOO (distributed/CMakeLists.txt): Debian's LibTorch has Gloo, but its header hides
// ProcessGroupGloo without the macro; USE_C10D_NCCL is defined where the LibTorch found has CUDA and NCCL.
#include "distributed/process_group.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#ifdef DEVPLACE_HAVE_GLOG
#include <glog/logging.h>
#endif

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

#include "core/check.h"

namespace devplace {

namespace {

// The first line of an exception's message (c10 errors append a backtrace).
std::string FirstLine(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  std::string text = c10_error != nullptr ? c10_error->what_without_backtrace() : e.what();
  if (const size_t end = text.find('\n'); end != std::string::npos) text.resize(end);
  return text;
}

bool IsLoopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

std::string Seconds(double s) {
  std::string text = std::to_string(s);
  text.erase(text.find_last_not_of('0') + 1);
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text + " s";
}

// Waits until something accepts TCP connections at host:port, or `timeout` passes. c10d's store client sleeps a
// whole second after a refused connection; polling here first saves that on every start-up race with rank 0.
void WaitForListener(const std::string& host, int32_t port, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return;  // the store reports it
  for (bool connected = false; !connected && std::chrono::steady_clock::now() < deadline;) {
    for (addrinfo* a = found; a != nullptr && !connected; a = a->ai_next) {
      const int fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
      if (fd < 0) continue;
      connected = ::connect(fd, a->ai_addr, a->ai_addrlen) == 0;
      ::close(fd);
    }
    if (!connected) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::freeaddrinfo(found);
}

// While alive, c10d's own log lines (glog on stderr: connection retries, "the client socket has timed out") are
// held back, so a failed rendezvous reads as the one line Connect returns. Restores the level when it goes.
class QuietC10dLog {
 public:
#ifdef DEVPLACE_HAVE_GLOG
  QuietC10dLog() : saved_(FLAGS_minloglevel) { FLAGS_minloglevel = google::GLOG_FATAL; }
  ~QuietC10dLog() { FLAGS_minloglevel = saved_; }

 private:
  int32_t saved_;
#endif
};

}  // namespace

struct PendingTransfer::Impl {
  c10::intrusive_ptr<c10d::Work> work;
  std::chrono::milliseconds timeout{0};
  std::string error_prefix;  // "rank R of N: <what>"
  double timeout_seconds = 0.0;
  std::atomic<bool> aborted{false};
  std::atomic<bool> done{false};
  ~Impl() {
    if (done.load() || !work) return;
    try {
      work->abort();  // the last handle is gone: nobody will wait for it
    } catch (const std::exception&) {
    }
  }
};

PendingTransfer::PendingTransfer() = default;

PendingTransfer PendingTransfer::Done() {
  PendingTransfer done;
  done.impl_ = std::make_shared<Impl>();
  done.impl_->done.store(true);
  return done;
}

Status PendingTransfer::Wait() {
  DEVPLACE_CHECK(impl_ != nullptr, "Wait on a transfer that was started");
  Impl& t = *impl_;
  if (!t.work) return Status::Ok();  // Done()
  try {
    const bool completed = t.work->wait(t.timeout);
    t.done.store(true);
    if (!completed || t.aborted.load())
      return Error{t.error_prefix + ": aborted (another failure on this rank stopped it)"};
    return Status::Ok();
  } catch (const std::exception& e) {
    t.done.store(true);
    if (t.aborted.load()) return Error{t.error_prefix + ": aborted (another failure on this rank stopped it)"};
    return Error{t.error_prefix + ": lost contact with the peer (it died, or stalled longer than the " +
                 Seconds(t.timeout_seconds) + " timeout): " + FirstLine(e)};
  }
}

void PendingTransfer::Abort() {
  if (!impl_) return;
  impl_->aborted.store(true);
  if (!impl_->work) return;
  try {
    impl_->work->abort();
  } catch (const std::exception&) {  // backends without abort (NCCL's point-to-point work): the timeout ends Wait
  }
}

struct ProcessGroup::Impl {
  DistributedConfig config;
  Backend backend = Backend::kGloo;
  std::chrono::milliseconds timeout{0};
  c10::intrusive_ptr<c10d::Store> store;
  // One of them. They are held by their own types: LibTorch 1.13 derives both from c10d::ProcessGroup, 2.x from
  // c10d::Backend, and the calls below compile against either.
  c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo;
#ifdef USE_C10D_NCCL
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> nccl;
#endif
  // f(group) on the group in use; f returns the started c10d::Work.
  template <class F>
  c10::intrusive_ptr<c10d::Work> Call(F f) {
#ifdef USE_C10D_NCCL
    if (nccl) return f(*nccl);
#endif
    return f(*gloo);
  }

  std::string who;  // a subgroup's: its members in the parent's terms (else "rank R of N")
  std::mutex sub_mu;
  std::map<std::vector<int32_t>, int32_t> subgroups_made;  // by member ranks: SubGroup calls so far

  std::string Who() const {
    if (!who.empty()) return who;
    return "rank " + std::to_string(config.rank) + " of " + std::to_string(config.world_size);
  }
  // Starts the backend over `store` as config.rank of config.world_size (a rendezvous of every member).
  void StartBackend() {
#ifdef USE_C10D_NCCL
    if (backend == Backend::kNccl) {
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = timeout;
      nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, config.rank, config.world_size, options);
    }
#endif
    if (backend == Backend::kGloo) {
      auto options = c10d::ProcessGroupGloo::Options::create(timeout);
      if (!config.interface.empty())
        options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(config.interface));
      else if (IsLoopback(config.master_addr))
        options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
      else
        options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
      gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(store, config.rank, config.world_size, options);
    }
  }
  Error Lost(const std::string& what, const std::exception& e) const {
    return Error{Who() + ": lost contact with the group during " + what + " (a peer died, or stalled longer " +
                 "than the " + Seconds(config.timeout_seconds) + " timeout): " + FirstLine(e)};
  }
  // Starts a collective (start(group) returns its work) and waits for it; an exception (a peer closed its
  // connections, the timeout passed) becomes the group's error.
  template <class Start>
  Status Run(Start start, const std::string& what) {
    try {
      c10::intrusive_ptr<c10d::Work> work = Call(start);
      work->wait(timeout);
      return Status::Ok();
    } catch (const std::exception& e) {
      return Lost(what, e);
    }
  }
  // Starts a point-to-point transfer (start(group) returns its work).
  template <class Start>
  Expected<PendingTransfer> Post(Start start, const std::string& what) {
    PendingTransfer pending;
    pending.impl_ = std::make_shared<PendingTransfer::Impl>();
    pending.impl_->timeout = timeout;
    pending.impl_->timeout_seconds = config.timeout_seconds;
    pending.impl_->error_prefix = Who() + ": " + what;
    try {
      pending.impl_->work = Call(start);
    } catch (const std::exception& e) {
      pending.impl_->done.store(true);
      return Lost(what, e);
    }
    return pending;
  }
};

ProcessGroup::ProcessGroup(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ProcessGroup::~ProcessGroup() = default;

int32_t ProcessGroup::rank() const { return impl_->config.rank; }
int32_t ProcessGroup::size() const { return impl_->config.world_size; }
ProcessGroup::Backend ProcessGroup::backend() const { return impl_->backend; }
double ProcessGroup::timeout_seconds() const { return impl_->config.timeout_seconds; }
std::string ProcessGroup::Who() const { return impl_->Who(); }

bool ProcessGroup::NcclAvailable() {
#ifdef USE_C10D_NCCL
  return true;
#else
  return false;
#endif
}

Expected<std::unique_ptr<ProcessGroup>> ProcessGroup::Connect(const DistributedConfig& config, Backend backend) {
  DEVPLACE_CHECK(config.world_size >= 2 && config.rank >= 0 && config.rank < config.world_size,
                 "a process group has at least two ranks");
  DEVPLACE_CHECK(config.timeout_seconds > 0, "the group timeout is positive");
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  impl->backend = backend;
  impl->timeout = std::chrono::milliseconds(static_cast<int64_t>(config.timeout_seconds * 1000.0));
  if (backend == Backend::kNccl && !NcclAvailable())
    return Error{impl->Who() + ": the NCCL backend needs a LibTorch built with CUDA and NCCL (this one has neither)"};
  const std::string where = config.master_addr + ":" + std::to_string(config.master_port);
  QuietC10dLog quiet;
  if (config.rank != 0) WaitForListener(config.master_addr, config.master_port, impl->timeout);
  try {
    c10d::TCPStoreOptions store_options;
    store_options.port = static_cast<uint16_t>(config.master_port);
    store_options.isServer = config.rank == 0;
    store_options.numWorkers = static_cast<size_t>(config.world_size);
    store_options.waitWorkers = true;
    store_options.timeout = impl->timeout;
    impl->store = c10::make_intrusive<c10d::TCPStore>(config.master_addr, store_options);
  } catch (const std::exception& e) {
    return Error{impl->Who() + ": cannot " + (config.rank == 0 ? "host" : "reach") + " the rendezvous store at " +
                 where + " (MASTER_ADDR:MASTER_PORT) with all " + std::to_string(config.world_size) +
                 " ranks within " + Seconds(config.timeout_seconds) + ": " + FirstLine(e)};
  }
  try {
    impl->StartBackend();
  } catch (const std::exception& e) {
    return Error{impl->Who() + ": cannot connect to the other ranks (rendezvous at " + where + ", timeout " +
                 Seconds(config.timeout_seconds) + "): " + FirstLine(e)};
  }
  return std::unique_ptr<ProcessGroup>(new ProcessGroup(std::move(impl)));
}

Expected<std::unique_ptr<ProcessGroup>> ProcessGroup::SubGroup(const std::vector<int32_t>& ranks) {
  std::string name = "subgroup";
  // (Appended piece by piece: GCC 12 warns, wrongly, of an overlapping copy in `"-" + std::to_string(r)` here.)
  for (int32_t r : ranks) name.append("-").append(std::to_string(r));
  std::string listed;  // "0, 2, 3"
  for (int32_t r : ranks) listed.append(listed.empty() ? "" : ", ").append(std::to_string(r));
  if (ranks.empty()) listed = "none";
  if (ranks.size() < 2 || !std::is_sorted(ranks.begin(), ranks.end()) ||
      std::adjacent_find(ranks.begin(), ranks.end()) != ranks.end() || ranks.front() < 0 || ranks.back() >= size())
    return Error{Who() + ": a subgroup needs at least two distinct ranks of the group's " + std::to_string(size()) +
                 ", sorted; got ranks " + listed};
  const auto me = std::find(ranks.begin(), ranks.end(), rank());
  if (me == ranks.end()) return Error{Who() + ": not among the subgroup's ranks " + listed};
  {
    std::lock_guard<std::mutex> lock(impl_->sub_mu);
    name.append("/").append(std::to_string(impl_->subgroups_made[ranks]++));
  }
  auto impl = std::make_unique<Impl>();
  impl->config = impl_->config;
  impl->config.rank = static_cast<int32_t>(me - ranks.begin());
  impl->config.world_size = static_cast<int32_t>(ranks.size());
  impl->backend = impl_->backend;
  impl->timeout = impl_->timeout;
  impl->who = Who() + " (in the subgroup of ranks " + listed + ")";
  impl->store = c10::make_intrusive<c10d::PrefixStore>(name, impl_->store);
  try {
    impl->StartBackend();
  } catch (const std::exception& e) {
    return Error{impl->Who() + ": cannot connect to the subgroup's other ranks (timeout " +
                 Seconds(impl->config.timeout_seconds) + "): " + FirstLine(e)};
  }
  return std::unique_ptr<ProcessGroup>(new ProcessGroup(std::move(impl)));
}

Status ProcessGroup::AllReduce(at::Tensor& tensor, Reduce op, const std::string& what) {
  DEVPLACE_CHECK(tensor.is_contiguous(), "all-reduce of a contiguous tensor");
  c10d::AllreduceOptions options;
  options.reduceOp = op == Reduce::kSum   ? c10d::ReduceOp::SUM
                     : op == Reduce::kMin ? c10d::ReduceOp::MIN
                                          : c10d::ReduceOp::MAX;
  // NCCL reduces device tensors only: a CPU tensor is staged through this rank's GPU (cuda:LOCAL_RANK).
  const bool staged = impl_->backend == Backend::kNccl && tensor.device().is_cpu();
  std::vector<at::Tensor> tensors{staged ? tensor.to(at::Device(at::kCUDA, impl_->config.local_rank)) : tensor};
  Status s = impl_->Run([&](auto& g) { return g.allreduce(tensors, options); }, what);
  if (s && staged) tensor.copy_(tensors[0]);
  return s;
}

Expected<at::Tensor> ProcessGroup::AllGather(const at::Tensor& input, const std::string& what) {
  DEVPLACE_CHECK(input.is_contiguous(), "all-gather of a contiguous tensor");
  std::vector<int64_t> shape{size()};
  for (int64_t d : input.sizes()) shape.push_back(d);
  at::Tensor out = at::empty(shape, input.options());
  std::vector<std::vector<at::Tensor>> outputs(1);
  for (int32_t r = 0; r < size(); ++r) outputs[0].push_back(out[r]);
  std::vector<at::Tensor> inputs{input};
  if (Status s = impl_->Run([&](auto& g) { return g.allgather(outputs, inputs); }, what); !s) return s.error();
  return out;
}

Expected<PendingTransfer> ProcessGroup::StartAllReduceSum(at::Tensor& tensor, const std::string& what) {
  DEVPLACE_CHECK(tensor.is_contiguous(), "a started all-reduce of a contiguous tensor");
  if (impl_->backend != Backend::kGloo) {  // NCCL stages CPU tensors through the device: the blocking call
    if (Status s = AllReduceSum(tensor, what); !s) return s.error();
    return PendingTransfer::Done();
  }
  std::vector<at::Tensor> tensors{tensor};
  c10d::AllreduceOptions options;
  options.reduceOp = c10d::ReduceOp::SUM;
  return impl_->Post([&](auto& g) { return g.allreduce(tensors, options); }, what);
}

Expected<PendingTransfer> ProcessGroup::StartAllToAll(at::Tensor& output, const at::Tensor& input,
                                                      const std::vector<int64_t>& out_splits,
                                                      const std::vector<int64_t>& in_splits, const std::string& what) {
  DEVPLACE_CHECK(input.is_contiguous() && output.is_contiguous() && input.dim() == 1 && output.dim() == 1,
                 "a started all-to-all of flat contiguous tensors");
  if (impl_->backend != Backend::kGloo) {  // the blocking call (see StartAllReduceSum)
    if (Status s = AllToAll(output, input, out_splits, in_splits, what); !s) return s.error();
    return PendingTransfer::Done();
  }
  std::vector<int64_t> out(out_splits), in(in_splits);
  at::Tensor o = output;
  at::Tensor i = input;
  return impl_->Post([&](auto& g) { return g.alltoall_base(o, i, out, in); }, what);
}

Status ProcessGroup::AllToAll(at::Tensor& output, const at::Tensor& input, const std::vector<int64_t>& out_splits,
                              const std::vector<int64_t>& in_splits, const std::string& what) {
  DEVPLACE_CHECK(input.is_contiguous() && output.is_contiguous() && input.dim() == 1 && output.dim() == 1,
                 "all-to-all of flat contiguous tensors");
  DEVPLACE_CHECK(static_cast<int32_t>(out_splits.size()) == size() && static_cast<int32_t>(in_splits.size()) == size(),
                 "one piece per rank");
  std::vector<int64_t> out(out_splits), in(in_splits);
  at::Tensor o = output;
  at::Tensor i = input;
  return impl_->Run([&](auto& g) { return g.alltoall_base(o, i, out, in); }, what);
}

Status ProcessGroup::Barrier(const std::string& what) {
  c10d::BarrierOptions options;
  options.timeout = impl_->timeout;
  return impl_->Run([&](auto& g) { return g.barrier(options); }, what);
}

Expected<std::string> ProcessGroup::BroadcastBytes(const std::string& bytes, int32_t root_rank,
                                                   const std::string& what) {
  DEVPLACE_CHECK(root_rank >= 0 && root_rank < size(), "the broadcast root is a rank of the group");
  c10d::BroadcastOptions root;
  root.rootRank = root_rank;
  std::vector<at::Tensor> size{at::tensor({static_cast<int64_t>(bytes.size())}, at::kLong)};
  if (Status s = impl_->Run([&](auto& g) { return g.broadcast(size, root); }, what); !s) return s.error();
  const int64_t n = size[0].item<int64_t>();
  if (n == 0) return std::string();
  std::vector<at::Tensor> data{at::empty({n}, at::kByte)};
  if (rank() == root_rank) std::memcpy(data[0].data_ptr<uint8_t>(), bytes.data(), static_cast<size_t>(n));
  if (Status s = impl_->Run([&](auto& g) { return g.broadcast(data, root); }, what); !s) return s.error();
  return std::string(reinterpret_cast<const char*>(data[0].data_ptr<uint8_t>()), static_cast<size_t>(n));
}

Expected<PendingTransfer> ProcessGroup::Send(const at::Tensor& tensor, int32_t peer, int32_t tag,
                                             const std::string& what) {
  DEVPLACE_CHECK(tensor.is_contiguous() && peer >= 0 && peer < size() && peer != rank() && tag >= 0,
                 "a send of a contiguous tensor to another rank");
  std::vector<at::Tensor> tensors{tensor};
  return impl_->Post([&](auto& g) { return g.send(tensors, peer, tag); }, what);
}

Expected<PendingTransfer> ProcessGroup::Recv(at::Tensor& tensor, int32_t peer, int32_t tag,
                                             const std::string& what) {
  DEVPLACE_CHECK(tensor.is_contiguous() && peer >= 0 && peer < size() && peer != rank() && tag >= 0,
                 "a receive into a contiguous tensor from another rank");
  std::vector<at::Tensor> tensors{tensor};
  return impl_->Post([&](auto& g) { return g.recv(tensors, peer, tag); }, what);
}

}  // namespace devplace
