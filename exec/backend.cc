#include "exec/backend.h"

#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>

#include <ATen/Parallel.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/core/Event.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/version.h>

#include <chrono>
#include <string>
#include <vector>

#include "core/check.h"

namespace devplace {

namespace {

// Cores this process may run on, in increasing order.
std::vector<int> AllowedCores() {
  std::vector<int> cores;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cores.push_back(c);
  }
  if (cores.empty()) cores.push_back(0);
  return cores;
}

int CudaDeviceCount() {
  if (!at::globalContext().hasCUDA()) return 0;
  return at::detail::getCUDAHooks().getNumGPUs();
}

}  // namespace

Status ValidateExecOptions(const ExecOptions& options) {
  if (options.warmup_steps < 0) return Error{"exec options: warmup_steps must be >= 0"};
  if (options.timed_steps < 1) return Error{"exec options: timed_steps must be >= 1"};
  if (options.backend != "auto" && options.backend != "cpu" && options.backend != "cuda")
    return Error{"exec options: backend '" + options.backend + "' is not one of auto, cpu, cuda"};
  return Status::Ok();
}

Expected<BackendInfo> ResolveBackend(const std::string& backend, const Topology& topology) {
  if (backend != "auto" && backend != "cpu" && backend != "cuda")
    return Error{"backend '" + backend + "' is not one of auto, cpu, cuda"};
  BackendInfo info;
  info.cpu_cores = static_cast<int32_t>(AllowedCores().size());
  info.cuda_devices = CudaDeviceCount();
  int32_t gpus = 0;
  for (const Device& d : topology.devices()) gpus += d.kind != "cpu";
  const bool want_cuda = backend == "cuda" || (backend == "auto" && gpus > 0);
  info.name = "cpu";
  if (want_cuda && (info.cuda_devices == 0 || gpus == 0)) {
    if (backend == "cuda")
      info.note = info.cuda_devices == 0
                      ? "CUDA is not available to this LibTorch build (CPU-only); running on the CPU backend"
                      : "topology '" + topology.name() + "' has no GPU device; running on the CPU backend";
    return info;
  }
  if (!want_cuda) return info;
  if (info.cuda_devices < gpus)
    return Error{"topology '" + topology.name() + "' has " + std::to_string(gpus) + " GPU devices but only " +
                 std::to_string(info.cuda_devices) + " CUDA devices are visible"};
  int32_t next = 0;
  for (const Device& d : topology.devices()) info.cuda_index.push_back(d.kind != "cpu" ? next++ : -1);
  info.name = gpus == topology.num_devices() ? "cuda" : "cuda+cpu";
  return info;
}

namespace exec {

void ConfigureTorch() {
  at::set_num_threads(1);
  // Keep freed memory for reuse instead of returning it to the kernel, as a caching allocator does: otherwise every
  // large tensor of every step is a fresh mmap whose pages fault in on first touch (milliseconds for a few MiB),
  // and how often that happens depends on glibc's adaptive thresholds rather than on the op.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's maximum
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  // OpenBLAS (Debian's pthread build) keeps its own pool; ATen's setting does not reach it.
  using SetThreads = void (*)(int);
  if (void* f = dlsym(RTLD_DEFAULT, "openblas_set_num_threads")) reinterpret_cast<SetThreads>(f)(1);
}

void SetUpWorkerThread(const at::Device& device, int core) {
  at::set_num_threads(1);
  at::globalContext().setFlushDenormal(true);
  if (core >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);  // best effort: an unpinned worker still runs
  }
  if (device.is_cuda()) {
    c10::impl::VirtualGuardImpl impl(device.type());
    impl.setDevice(device);
    impl.exchangeStream(impl.getStreamFromGlobalPool(device));
  }
}

at::Device TorchDevice(const BackendInfo& backend, DeviceId d) {
  if (backend.cuda_index.empty()) {
    DEVPLACE_CHECK(backend.name.rfind("cuda", 0) != 0,
                   "a CUDA backend without its device map (BackendInfo::cuda_index)");
    return at::Device(at::kCPU);
  }
  DEVPLACE_CHECK(d >= 0 && static_cast<size_t>(d) < backend.cuda_index.size(), "device id outside the backend's map");
  const int32_t index = backend.cuda_index[d];
  return index >= 0 ? at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(index)) : at::Device(at::kCPU);
}

int WorkerCore(const BackendInfo& backend, DeviceId d, bool pin) {
  if (!pin || TorchDevice(backend, d).is_cuda()) return -1;
  const std::vector<int> cores = AllowedCores();
  return cores[static_cast<size_t>(d) % cores.size()];
}

void SyncDevice(const at::Device& device) {
  if (!device.is_cuda()) return;
  c10::impl::VirtualGuardImpl impl(device.type());
  impl.getStream(device).synchronize();
}

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double TimeOnDevice(const at::Device& device, const std::function<void()>& work) {
#if TORCH_VERSION_MAJOR >= 2
  if (device.is_cuda()) {
    c10::impl::VirtualGuardImpl impl(device.type());
    const c10::Stream stream = impl.getStream(device);
    c10::Event start(device.type(), c10::EventFlag::BACKEND_DEFAULT);
    c10::Event end(device.type(), c10::EventFlag::BACKEND_DEFAULT);
    start.record(stream);
    work();
    end.record(stream);
    end.synchronize();
    return start.elapsedTime(end) * 1e-3;  // milliseconds, as cudaEventElapsedTime
  }
#endif
  const double t0 = NowSeconds();
  work();
  SyncDevice(device);
  return NowSeconds() - t0;
}

std::string DeviceTimer(const at::Device& device) {
#if TORCH_VERSION_MAJOR >= 2
  if (device.is_cuda()) return "cuda-events";
#endif
  (void)device;
  return "wall-clock";
}

std::string PrecisionSettings(const at::Device& device) {
  if (!device.is_cuda()) return "";
  const at::Context& context = at::globalContext();
  const char* precision = "highest";
  switch (context.float32MatmulPrecision()) {
    case at::Float32MatmulPrecision::HIGHEST: precision = "highest"; break;
    case at::Float32MatmulPrecision::HIGH: precision = "high"; break;
    case at::Float32MatmulPrecision::MEDIUM: precision = "medium"; break;
  }
  return std::string("tf32_matmul=") + (context.allowTF32CuBLAS() ? "on" : "off") +
         " tf32_cudnn=" + (context.allowTF32CuDNN() ? "on" : "off") + " float32_matmul_precision=" + precision;
}

at::ScalarType TorchType(DType dtype, const at::Device& device) {
  switch (dtype) {
    case DType::kF32: return at::kFloat;
    case DType::kF16: return device.is_cuda() ? at::kHalf : at::kFloat;
    case DType::kBF16: return device.is_cuda() ? at::kBFloat16 : at::kFloat;
    case DType::kF64: return at::kDouble;
    case DType::kI64: return at::kLong;
    case DType::kI32: return at::kInt;
    case DType::kI8: return at::kChar;
    case DType::kBool: return at::kBool;
  }
  return at::kFloat;
}

}  // namespace exec
}  // namespace devplace
