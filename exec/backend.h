// Internal to exec/: LibTorch process and thread settings, device mapping and synchronisation.
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <string>

#include "core/graph.h"
#include "core/topology.h"
#include "exec/executor.h"

namespace devplace::exec {

// Process-wide LibTorch settings every executor, profiler and calibration needs before running kernels:
// one intra-op thread and single-threaded OpenBLAS (each worker owns one core), and freed memory kept for reuse
// (glibc's malloc tuned like a caching allocator). Idempotent and cheap.
void ConfigureTorch();

// Prepares the calling thread to run kernels on `device`: one intra-op thread, denormals flushed to zero (they
// slow CPU kernels down by orders of magnitude), pinned to core `core` when core >= 0, and on CUDA the device
// made current with a stream of its own from the pool.
void SetUpWorkerThread(const at::Device& device, int core);

// The LibTorch device of device `d` by backend.cuda_index (the CPU when empty; CHECKs a CUDA backend has the map).
at::Device TorchDevice(const BackendInfo& backend, DeviceId d);

// The core a CPU worker for device `d` is pinned to, or -1 when not pinned (GPU devices' workers are not).
int WorkerCore(const BackendInfo& backend, DeviceId d, bool pin);

// Blocks until the work this thread queued on `device` has finished (a no-op on the CPU).
void SyncDevice(const at::Device& device);

// Seconds on a monotonic clock.
double NowSeconds();

// Runs `work` (kernels queued on `device` by the calling thread) and returns how long it took, in seconds: on a CUDA
// device with CUDA events recorded around it on the thread's current stream (GPU time; the host's launch overhead
// is not in it) where the LibTorch has timing events (2.x), else on the monotonic clock around `work` and a
// SyncDevice. Either way the work has finished when it returns.
double TimeOnDevice(const at::Device& device, const std::function<void()>& work);

// The timer TimeOnDevice uses on `device`: "cuda-events" or "wall-clock".
std::string DeviceTimer(const at::Device& device);

// The process's settings that change a GPU kernel's speed and precision, as "name=value" words (TF32 in matmuls and
// cuDNN convolutions, float32 matmul precision); "" on the CPU.
std::string PrecisionSettings(const at::Device& device);

// The tensor element type of `dtype` on `device`. The CPU backend computes f16/bf16 ops in f32 (ATen's CPU
// convolution and matmul kernels lack half precision); integers and booleans map to themselves.
at::ScalarType TorchType(DType dtype, const at::Device& device);

}  // namespace devplace::exec
