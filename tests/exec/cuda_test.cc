// The executor's and the profiler's CUDA path (issue 22). Each test is reported as SKIPPED where LibTorch sees no
// CUDA device (Debian's CPU-only LibTorch, CI); on a GPU machine built with scripts/build-cuda.sh they check that a
// placed training step runs on cuda:0 and computes what the CPU computes, and that the profiler times ops there.
#include <gtest/gtest.h>
#include <torch/version.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/strategy.h"
#include "core/topology_yaml.h"
#include "exec/backend.h"
#include "exec/executor.h"
#include "exec/profiler.h"
#include "tests/testing/exec_graphs.h"

namespace devplace {
namespace {

using testing::ConvTrainingGraph;
using testing::CpuLocal;
using testing::SequenceTrainingGraph;

// One GPU of the H100/H200 class; the figures only matter to the simulator, not to what the executor runs.
const char kGpuDevice[] =
    "  - {name: gpu0, kind: gpu, host: localhost, peak_tflops: 60, memory_bandwidth_gbs: 3000, memory_gib: 80}\n";

Topology OneGpu() {
  return TopologyFromYaml(std::string("name: one-gpu\ndevices:\n") + kGpuDevice + "switches: []\nlinks: []\n",
                          "one-gpu.yaml")
      .value();
}

// The GPU and one CPU core of its host, joined by PCIe: GPU+CPU placements move tensors between the two.
Topology GpuAndCpu() {
  return TopologyFromYaml(std::string("name: gpu-and-cpu\ndevices:\n") + kGpuDevice +
                              "  - {name: cpu0, kind: cpu, host: localhost, peak_tflops: 0.08, memory_bandwidth_gbs: 10,"
                              " memory_gib: 8}\n"
                              "switches: []\n"
                              "links:\n"
                              "  - {between: [gpu0, cpu0], bandwidth_gbs: 25, latency_us: 10, kind: pcie}\n",
                          "gpu-and-cpu.yaml")
      .value();
}

int32_t VisibleCudaDevices() { return ResolveBackend("cuda", CpuLocal()).value().cuda_devices; }

ExecOptions OneStep(const std::string& backend) {
  ExecOptions options;
  options.warmup_steps = 0;
  options.timed_steps = 1;
  options.backend = backend;
  options.record_checksums = true;
  return options;
}

// The same step on cuda:0 and on a CPU core: inputs and weights are made on the CPU from the same seeds, so every
// op's checksum agrees up to the kernels' rounding (cuDNN may use TF32 for convolutions: a loose bound).
void ExpectCudaMatchesCpu(const Graph& g) {
  const Topology gpu = OneGpu();
  Expected<ExecResult> on_gpu = ExecuteStrategy(g, gpu, Strategy::AllOn(g.num_ops(), 0), OneStep("cuda"));
  ASSERT_TRUE(on_gpu.ok()) << on_gpu.error().message;
  EXPECT_EQ(on_gpu->backend.name, "cuda");
  EXPECT_EQ(on_gpu->stand_in_ops, 0);
  EXPECT_GT(on_gpu->median_step, 0.0);
  Expected<ExecResult> on_cpu = ExecuteStrategy(g, CpuLocal(), Strategy::AllOn(g.num_ops(), 0), OneStep("cpu"));
  ASSERT_TRUE(on_cpu.ok()) << on_cpu.error().message;
  ASSERT_EQ(on_gpu->op_checksums.size(), on_cpu->op_checksums.size());
  for (OpId op = 0; op < g.num_ops(); ++op) {
    const double a = on_gpu->op_checksums[op], b = on_cpu->op_checksums[op];
    EXPECT_LE(std::abs(a - b), 2e-2 * std::max(1.0, std::abs(b))) << g.op(op).name;
  }
}

TEST(Cuda, APlacedTrainingStepRunsOnTheGpuAndMatchesTheCpu) {
  if (VisibleCudaDevices() == 0) GTEST_SKIP() << "no CUDA device visible to this LibTorch";
  ExpectCudaMatchesCpu(ConvTrainingGraph());
  ExpectCudaMatchesCpu(SequenceTrainingGraph());
}

// GPU devices run on cuda:k and CPU devices on pinned CPU workers of the same process (backend "cuda+cpu").
TEST(Cuda, GpuAndCpuDevicesOfOneTopologyResolveToCudaAndCpuWorkers) {
  const Topology t = GpuAndCpu();
  Expected<BackendInfo> backend = ResolveBackend("cuda", t);
  ASSERT_TRUE(backend.ok()) << backend.error().message;
  if (backend->cuda_devices == 0) {
    EXPECT_EQ(backend->name, "cpu");
    EXPECT_TRUE(backend->cuda_index.empty());
    GTEST_SKIP() << "no CUDA device visible to this LibTorch";
  }
  EXPECT_EQ(backend->name, "cuda+cpu");
  EXPECT_EQ(backend->cuda_index, (std::vector<int32_t>{0, -1}));
  Expected<BackendInfo> automatic = ResolveBackend("auto", t);
  ASSERT_TRUE(automatic.ok());
  EXPECT_EQ(automatic->name, "cuda+cpu");
}

// TorchDevice follows the backend's device map and nothing else: a CUDA backend without one (what a launcher's
// result carried before its ranks reported `cuda_index`) is a bug, not cuda:d. Needs no GPU (devices are values).
TEST(Cuda, TorchDeviceFollowsTheDeviceMap) {
  BackendInfo cpu;
  cpu.name = "cpu";
  EXPECT_EQ(exec::TorchDevice(cpu, 3), at::Device(at::kCPU));
  BackendInfo mixed;
  mixed.name = "cuda+cpu";
  mixed.cuda_index = {1, -1, 0};
  EXPECT_EQ(exec::TorchDevice(mixed, 0), at::Device(at::kCUDA, 1));
  EXPECT_EQ(exec::TorchDevice(mixed, 1), at::Device(at::kCPU));
  EXPECT_EQ(exec::TorchDevice(mixed, 2), at::Device(at::kCUDA, 0));
  EXPECT_THROW(exec::TorchDevice(mixed, 3), InternalError);
  BackendInfo unmapped;
  unmapped.name = "cuda";
  EXPECT_THROW(exec::TorchDevice(unmapped, 0), InternalError);
}

// A step with the ops alternating between the GPU and a CPU core (tensors cross PCIe both ways) computes what the
// same step computes on the CPU alone.
TEST(Cuda, AGpuAndCpuPlacementMatchesTheCpu) {
  if (VisibleCudaDevices() == 0) GTEST_SKIP() << "no CUDA device visible to this LibTorch";
  const Graph g = SequenceTrainingGraph();
  const Topology mixed = GpuAndCpu();
  std::vector<DeviceId> device_of_op(g.num_ops());
  std::map<std::string, DeviceId> device_of_group;  // a colocation group stays on the device of its first op
  for (OpId op = 0; op < g.num_ops(); ++op) {
    const std::string& group = g.op(op).colocation;
    device_of_op[op] = (op / 3) % 2;
    if (!group.empty()) device_of_op[op] = device_of_group.emplace(group, device_of_op[op]).first->second;
  }
  Expected<ExecResult> split = ExecuteStrategy(g, mixed, Strategy::FromPlacement(device_of_op), OneStep("cuda"));
  ASSERT_TRUE(split.ok()) << split.error().message;
  EXPECT_EQ(split->backend.name, "cuda+cpu");
  EXPECT_GT(split->num_copies, 0);
  Expected<ExecResult> on_cpu = ExecuteStrategy(g, CpuLocal(), Strategy::AllOn(g.num_ops(), 0), OneStep("cpu"));
  ASSERT_TRUE(on_cpu.ok()) << on_cpu.error().message;
  for (OpId op = 0; op < g.num_ops(); ++op) {
    const double a = split->op_checksums[op], b = on_cpu->op_checksums[op];
    EXPECT_LE(std::abs(a - b), 2e-2 * std::max(1.0, std::abs(b))) << g.op(op).name;
  }
}

TEST(Cuda, TheProfilerTimesEveryOpSignatureOnTheGpu) {
  if (VisibleCudaDevices() == 0) GTEST_SKIP() << "no CUDA device visible to this LibTorch";
  const Graph g = ConvTrainingGraph();
  ProfileOptions options;
  options.backend = "cuda";
  options.warmup_runs = 1;
  options.timed_runs = 3;
  Expected<ProfileResult> profile = ProfileGraph(g, OneGpu(), options);
  ASSERT_TRUE(profile.ok()) << profile.error().message;
  EXPECT_EQ(profile->backend.name, "cuda");
  ASSERT_FALSE(profile->entries.empty());
  for (const OpTiming& entry : profile->entries) EXPECT_GT(entry.seconds, 0.0) << entry.op_type;
}

// Isolated on a GPU, op times come from CUDA events (LibTorch 2.x) and the precision settings are recorded.
TEST(Cuda, TheIsolatedProfilerTimesGpuKernelsWithCudaEvents) {
  if (VisibleCudaDevices() == 0) GTEST_SKIP() << "no CUDA device visible to this LibTorch";
  ProfileOptions options;
  options.mode = ProfileMode::kIsolated;
  options.backend = "cuda";
  options.warmup_runs = 1;
  options.timed_runs = 3;
  Expected<ProfileResult> profile = ProfileGraph(SequenceTrainingGraph(), OneGpu(), options);
  ASSERT_TRUE(profile.ok()) << profile.error().message;
  ASSERT_EQ(profile->kind_settings.size(), 1u);
  EXPECT_NE(profile->kind_settings[0].find("tf32_matmul="), std::string::npos) << profile->kind_settings[0];
#if TORCH_VERSION_MAJOR >= 2
  EXPECT_NE(profile->kind_settings[0].find("timer=cuda-events"), std::string::npos) << profile->kind_settings[0];
#endif
  for (const OpTiming& entry : profile->entries) EXPECT_GT(entry.seconds, 0.0) << entry.op_type;
}

}  // namespace
}  // namespace devplace
