// The executor's and the profiler's CUDA path (issue 22). Each test is reported as SKIPPED where LibTorch sees no
// CUDA device (Debian's CPU-only LibTorch, CI); on a GPU machine built with scripts/build-cuda.sh they check that a
// placed training step runs on cuda:0 and computes what the CPU computes, and that the profiler times ops there.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>

#include "core/strategy.h"
#include "core/topology_yaml.h"
#include "exec/executor.h"
#include "exec/profiler.h"
#include "tests/testing/exec_graphs.h"

namespace devplace {
namespace {

using testing::ConvTrainingGraph;
using testing::CpuLocal;
using testing::SequenceTrainingGraph;

// One GPU of the H100/H200 class; the figures only matter to the simulator, not to what the executor runs.
Topology OneGpu() {
  const std::string path = ::testing::TempDir() + "/devplace-one-gpu.yaml";
  std::ofstream(path) << "name: one-gpu\n"
                         "devices:\n"
                         "  - {name: gpu0, kind: gpu, host: localhost, peak_tflops: 60, memory_bandwidth_gbs: 3000,"
                         " memory_gib: 80}\n"
                         "switches: []\nlinks: []\n";
  return ReadTopologyFile(path).value();
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

}  // namespace
}  // namespace devplace
