// libFuzzer target, structure-aware: the input bytes choose a Kineto (torch.profiler Chrome) trace: events of
// every phase and category the importer reads or skips (GPU kernels, NCCL kernels, memcpy/memset, the CPU operators
// that launch them, flows, metadata), with names, streams, devices, External ids, times, durations and byte counts
// from the input, and fields sometimes missing or of the wrong JSON type. ImportChakraTrace must return a graph
// (one op per GPU activity, with its duration) or a one-line Error, never crash.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "datasets/import/importers.h"

namespace {

using nlohmann::json;

const char* const kCategories[] = {"kernel", "gpu_memcpy", "gpu_memset", "cpu_op", "cuda_runtime", "ac2g",
                                   "user_annotation", "Trace", "python_function"};
const char* const kNames[] = {"ncclKernel_AllReduce_RING_LL_Sum_float", "ncclKernel_SendRecv",
                              "ncclDevKernel_AllGather_RING_LL", "ncclKernel_ReduceScatter_RING_LL_Sum_float",
                              "ncclKernel_AllToAll", "Memcpy HtoD (Pinned -> Device)", "Memset (Device)",
                              "void gemmSN_TN_kernel<float>", "aten::mm", "aten::addmm",
                              "autograd::engine::evaluate_function: AddmmBackward0", "Optimizer.step#SGD.step",
                              "nccl:all_reduce", "cudaLaunchKernel", "process_name"};

// A number of the kind the field holds, or occasionally of the wrong JSON type.
json Number(FuzzedDataProvider& in, int64_t lo, int64_t hi) {
  switch (in.ConsumeIntegralInRange(0, 11)) {
    case 0: return nullptr;
    case 1: return in.ConsumeRandomLengthString(6);
    case 2: return in.ConsumeFloatingPoint<double>();
    case 3: return in.ConsumeIntegral<int64_t>();
    default: return in.ConsumeIntegralInRange<int64_t>(lo, hi);
  }
}

json Event(FuzzedDataProvider& in) {
  json e;
  e["ph"] = in.ConsumeIntegralInRange(0, 7) == 0 ? json(in.PickValueInArray({"f", "s", "M", "i", "B", "E"})) : json("X");
  if (in.ConsumeIntegralInRange(0, 15) != 0) e["cat"] = in.PickValueInArray(kCategories);
  if (in.ConsumeIntegralInRange(0, 15) != 0)
    e["name"] = in.ConsumeIntegralInRange(0, 9) == 0 ? json(in.ConsumeRandomLengthString(32)) : json(in.PickValueInArray(kNames));
  e["pid"] = Number(in, 0, 4);
  e["tid"] = Number(in, 0, 8);
  if (in.ConsumeIntegralInRange(0, 15) != 0) e["ts"] = Number(in, 0, 100000);
  if (in.ConsumeIntegralInRange(0, 15) != 0) e["dur"] = Number(in, -2, 5000);
  if (in.ConsumeIntegralInRange(0, 15) == 0) {
    e["args"] = Number(in, 0, 1);
    return e;
  }
  json args = json::object();
  for (const char* key : {"device", "stream", "External id", "correlation", "bytes"})
    if (in.ConsumeBool()) args[key] = Number(in, -1, key == std::string("bytes") ? 1 << 30 : 32);
  e["args"] = args;
  return e;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  json events = json::array();
  for (int n = in.ConsumeIntegralInRange(0, 64); n > 0 && in.remaining_bytes() > 0; --n) events.push_back(Event(in));
  json doc = {{"schemaVersion", 1}, {"traceEvents", events}};
  if (in.ConsumeIntegralInRange(0, 31) == 0) doc["traceEvents"] = json::object();
  devplace::Expected<devplace::ImportResult> result = devplace::ImportChakraTrace(
      doc.dump(-1, ' ', false, json::error_handler_t::replace), "fuzz.json", "fuzz");  // random strings: not UTF-8
  if (result.ok() && result->measured_seconds.size() != static_cast<size_t>(result->graph.num_ops())) __builtin_trap();
  if (!result.ok() && result.error().message.find('\n') != std::string::npos) __builtin_trap();
  return 0;
}
