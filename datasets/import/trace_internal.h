// Internal to the trace importers (Chakra JSON and binary, PyTorch execution traces): JSON parsing with a depth
// limit, the mapping of operator names to op types and dtypes, and the entry points behind ImportChakraTrace.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/graph.h"
#include "core/status.h"
#include "datasets/import/importers.h"

namespace devplace::import_detail {

// Parses `text` as one or more concatenated JSON documents (chakra_jsonizer writes a stream of objects).
// Nesting deeper than 64 is rejected before parsing; errors are one line naming `source`.
Expected<std::vector<nlohmann::json>> ParseJsonDocuments(std::string_view text, const std::string& source);

// The devplace op type of an operator name: "aten::addmm" -> "addmm",
// "autograd::engine::evaluate_function: AddmmBackward0" -> "addmmbackward0"; "compute" when nothing is left.
std::string OpTypeFromName(const std::string& name);

// The dtype of a PyTorch/Chakra type name ("Tensor(float)", "c10::Half", "long int", ...); false if unknown.
bool DTypeFromName(std::string name, DType* dtype);

// The devplace collective of a communication op's name ("nccl:all_reduce", "c10d::allreduce_",
// "ncclKernel_Broadcast_RING_LL_Sum_int8_t", "allgather_into_tensor_coalesced"), or "" if none is recognised.
std::string CollectiveFromName(const std::string& name);

// True when `doc` is a PyTorch ExecutionTraceObserver document (a "schema" version such as "1.0.1" or
// "1.1.1-chakra.0.0.4" with a "nodes" array, or nodes in its layout: no "type", a scalar parent).
bool IsPyTorchExecutionTrace(const nlohmann::json& doc);

// Imports a PyTorch execution trace document (docs/importers.md, "PyTorch execution traces").
Expected<ImportResult> ImportPyTorchExecutionTrace(const nlohmann::json& doc, const std::string& source,
                                                   const std::string& graph_name);

// True when `doc` is a Kineto (torch.profiler Chrome trace) document: an object with "traceEvents".
bool IsKinetoTrace(const nlohmann::json& doc);

// Imports a Kineto trace's GPU activities as a timed graph (format "kineto"; docs/importers.md).
Expected<ImportResult> ImportKinetoTrace(const nlohmann::json& doc, const std::string& source,
                                         const std::string& graph_name);

// Imports Chakra nodes (JSON objects with et_def.proto's field names or protobuf's JSON names), whatever file
// layout they came from; `format` is recorded in the result.
Expected<ImportResult> ImportChakraNodes(std::vector<nlohmann::json> nodes, const std::string& source,
                                         const std::string& graph_name, const std::string& format);

}  // namespace devplace::import_detail
