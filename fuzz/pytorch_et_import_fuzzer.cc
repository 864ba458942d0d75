// libFuzzer target, structure-aware: the input bytes choose a PyTorch ExecutionTraceObserver trace (schema 1.0.1's
// flat layout or 1.0.2-1.1.1-chakra.0.0.4's inputs/outputs objects and attrs list): node ids, names (aten ops with
// FLOP formulas, labels, iterations, optimizer steps, collectives, anything), parents, tensor tuples, shapes and
// types, with fields sometimes missing or of the wrong JSON type. ImportChakraTrace must return a graph or a
// one-line Error, never crash. Random bytes alone rarely get past the JSON parser; this reaches the op tree, FLOPs,
// tensor edges, parameters and communication sizes.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "datasets/import/importers.h"

namespace {

using nlohmann::json;

const char* const kSchemas[] = {"1.0.1", "1.0.2-chakra.0.0.4", "1.0.3-chakra.0.0.4", "1.1.0-chakra.0.0.4",
                                "1.1.1-chakra.0.0.4", "2.0"};
const char* const kNames[] = {"[pytorch|profiler|execution_trace|process]", "[pytorch|profiler|execution_trace|thread]",
                              "ProfilerStep#1", "ProfilerStep#2", "aten::linear", "aten::addmm", "aten::mm",
                              "aten::bmm", "aten::matmul", "aten::conv2d", "aten::convolution", "aten::relu",
                              "aten::add_", "aten::t", "aten::embedding_bag", "aten::batch_norm", "aten::softmax",
                              "autograd::engine::evaluate_function: AddmmBackward0", "Optimizer.step#SGD.step",
                              "record_param_comms", "c10d::allreduce_", "nccl:all_reduce", "nccl:all_to_all",
                              "fbgemm::split_embedding_codegen_lookup_adagrad_function", "triton_poi_fused_0"};
const char* const kTypes[] = {"Tensor(float)", "Tensor(c10::Half)", "Tensor(long int)", "Tensor(bool)", "Int",
                              "Float", "Bool", "String", "None", "GenericList[Tensor(float)]", "GenericList[Int]"};

// Occasionally a value of the wrong JSON type instead of `v`.
json Maybe(FuzzedDataProvider& in, json v) {
  switch (in.ConsumeIntegralInRange(0, 15)) {
    case 0: return nullptr;
    case 1: return in.ConsumeIntegral<int64_t>();
    case 2: return in.ConsumeRandomLengthString(8);
    default: return v;
  }
}

json Value(FuzzedDataProvider& in, int depth = 0) {
  switch (in.ConsumeIntegralInRange(0, 5)) {
    case 0: return in.ConsumeIntegralInRange<int64_t>(-4, 1 << 20);
    case 1: return in.PickValueInArray({"<None>", "allreduce", "all_to_all", "wait", "float"});
    case 2:
      if (depth < 2) {
        json list = json::array();
        for (int k = in.ConsumeIntegralInRange(0, 3); k > 0; --k) list.push_back(Value(in, depth + 1));
        return list;
      }
      [[fallthrough]];
    default: {  // a tensor: [tensor id, storage id, offset, elements, element bytes, device]
      json t = {in.ConsumeIntegralInRange(0, 24), in.ConsumeIntegralInRange(0, 24), in.ConsumeIntegralInRange(0, 8),
                in.ConsumeBool() ? in.ConsumeIntegralInRange<int64_t>(0, 1 << 16) : in.ConsumeIntegral<int64_t>(),
                in.ConsumeIntegralInRange(0, 16), "cuda:0"};
      if (in.ConsumeIntegralInRange(0, 7) == 0) t.erase(t.size() - 1 - in.ConsumeIntegralInRange(0, 5));
      return t;
    }
  }
}

json Shape(FuzzedDataProvider& in) {
  json shape = json::array();
  for (int k = in.ConsumeIntegralInRange(0, 4); k > 0; --k)
    shape.push_back(in.ConsumeBool() ? in.ConsumeIntegralInRange<int64_t>(-1, 64) : in.ConsumeIntegral<int64_t>());
  return shape;
}

json Node(FuzzedDataProvider& in, bool flat) {
  json node;
  node["id"] = Maybe(in, in.ConsumeIntegralInRange<int64_t>(-1, 48));
  node["name"] = in.ConsumeIntegralInRange(0, 9) == 0 ? json(in.ConsumeRandomLengthString(24)) : json(in.PickValueInArray(kNames));
  node[flat ? "parent" : "ctrl_deps"] = Maybe(in, in.ConsumeIntegralInRange<int64_t>(-1, 48));
  for (const char* side : {"inputs", "outputs"}) {
    json values = json::array(), shapes = json::array(), types = json::array();
    for (int k = in.ConsumeIntegralInRange(0, 4); k > 0; --k) {
      values.push_back(Value(in));
      shapes.push_back(Shape(in));
      types.push_back(in.PickValueInArray(kTypes));
    }
    const std::string prefix = std::string(side).substr(0, std::string(side).size() - 1);  // "input", "output"
    if (flat) {
      node[side] = Maybe(in, values);
      node[prefix + "_shapes"] = Maybe(in, shapes);
      node[prefix + "_types"] = Maybe(in, types);
    } else {
      node[side] = Maybe(in, json{{"values", values}, {"shapes", Maybe(in, shapes)}, {"types", types}});
    }
  }
  const std::string op_schema = in.ConsumeBool() ? node["name"].get<std::string>() + "(Tensor self) -> Tensor" : "";
  if (flat) {
    node["op_schema"] = op_schema;
    return node;
  }
  json attrs = json::array({{{"name", "op_schema"}, {"type", "string"}, {"value", op_schema}}});
  for (int k = in.ConsumeIntegralInRange(0, 3); k > 0; --k)
    attrs.push_back({{"name", in.PickValueInArray({"rf_id", "in_msg_nelems", "out_msg_nelems", "dtype", "pg_name",
                                                   "in_split_size", "tid"})},
                     {"type", in.PickValueInArray({"uint64", "int64", "string", "int64_list"})},
                     {"value", Value(in)}});
  node["attrs"] = Maybe(in, attrs);
  return node;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const std::string schema = in.PickValueInArray(kSchemas);
  json doc = {{"schema", schema}, {"pid", 7}};
  json nodes = json::array();
  for (int n = in.ConsumeIntegralInRange(0, 40); n > 0 && in.remaining_bytes() > 0; --n)
    nodes.push_back(Node(in, schema == "1.0.1"));
  doc["nodes"] = nodes;
  devplace::Expected<devplace::ImportResult> result = devplace::ImportChakraTrace(
      doc.dump(-1, ' ', false, json::error_handler_t::replace), "fuzz.json", "fuzz");  // random strings: not UTF-8
  if (result.ok() && result->measured_seconds.size() != static_cast<size_t>(result->graph.num_ops())) __builtin_trap();
  if (!result.ok() && result.error().message.find('\n') != std::string::npos) __builtin_trap();
  return 0;
}
