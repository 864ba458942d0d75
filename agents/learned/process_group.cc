// Built with USE_C10D_GLOO (agents/learned/CMakeLists.txt): Debian's LibTorch has Gloo, but its header hides
// ProcessGroupGloo without the macro.
#include "agents/learned/process_group.h"

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <exception>
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

}  // namespace

struct ProcessGroup::Impl {
  DistributedConfig config;
  std::chrono::milliseconds timeout{0};
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group;

  std::string Who() const {
    return "rank " + std::to_string(config.rank) + " of " + std::to_string(config.world_size);
  }
  Error Lost(const std::string& what, const std::exception& e) const {
    return Error{Who() + ": lost contact with the group during " + what + " (a peer died, or stalled longer " +
                 "than the " + Seconds(config.timeout_seconds) + " timeout): " + FirstLine(e)};
  }
  // Starts a collective and waits for it; an exception (a peer closed its connections, the timeout passed)
  // becomes the group's error.
  template <class Start>
  Status Run(Start start, const std::string& what) {
    try {
      c10::intrusive_ptr<c10d::Work> work = start();
      work->wait(timeout);
      return Status::Ok();
    } catch (const std::exception& e) {
      return Lost(what, e);
    }
  }
};

ProcessGroup::ProcessGroup(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ProcessGroup::~ProcessGroup() = default;

int32_t ProcessGroup::rank() const { return impl_->config.rank; }
int32_t ProcessGroup::size() const { return impl_->config.world_size; }

Expected<std::unique_ptr<ProcessGroup>> ProcessGroup::Connect(const DistributedConfig& config) {
  DEVPLACE_CHECK(config.world_size >= 2 && config.rank >= 0 && config.rank < config.world_size,
                 "a process group has at least two ranks");
  DEVPLACE_CHECK(config.timeout_seconds > 0, "the group timeout is positive");
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  impl->timeout = std::chrono::milliseconds(static_cast<int64_t>(config.timeout_seconds * 1000.0));
  const std::string where = config.master_addr + ":" + std::to_string(config.master_port);
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
    auto options = c10d::ProcessGroupGloo::Options::create(impl->timeout);
    if (!config.interface.empty())
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(config.interface));
    else if (IsLoopback(config.master_addr))
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    else
      options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    impl->group = c10::make_intrusive<c10d::ProcessGroupGloo>(impl->store, config.rank, config.world_size, options);
  } catch (const std::exception& e) {
    return Error{impl->Who() + ": cannot connect to the other ranks (rendezvous at " + where + ", timeout " +
                 Seconds(config.timeout_seconds) + "): " + FirstLine(e)};
  }
  return std::unique_ptr<ProcessGroup>(new ProcessGroup(std::move(impl)));
}

Status ProcessGroup::AllReduceSum(torch::Tensor& tensor, const std::string& what) {
  DEVPLACE_CHECK(tensor.is_contiguous() && tensor.device().is_cpu(), "all-reduce of a contiguous CPU tensor");
  std::vector<at::Tensor> tensors{tensor};
  return impl_->Run([&] { return impl_->group->allreduce(tensors); }, what);
}

Expected<std::string> ProcessGroup::BroadcastBytes(const std::string& bytes, int32_t root_rank,
                                                   const std::string& what) {
  DEVPLACE_CHECK(root_rank >= 0 && root_rank < size(), "the broadcast root is a rank of the group");
  c10d::BroadcastOptions root;
  root.rootRank = root_rank;
  std::vector<at::Tensor> size{torch::tensor({static_cast<int64_t>(bytes.size())}, torch::kInt64)};
  if (Status s = impl_->Run([&] { return impl_->group->broadcast(size, root); }, what); !s) return s.error();
  const int64_t n = size[0].item<int64_t>();
  if (n == 0) return std::string();
  std::vector<at::Tensor> data{torch::empty({n}, torch::kUInt8)};
  if (rank() == root_rank) std::memcpy(data[0].data_ptr<uint8_t>(), bytes.data(), static_cast<size_t>(n));
  if (Status s = impl_->Run([&] { return impl_->group->broadcast(data, root); }, what); !s) return s.error();
  return std::string(reinterpret_cast<const char*>(data[0].data_ptr<uint8_t>()), static_cast<size_t>(n));
}

}  // namespace devplace
