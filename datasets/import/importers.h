// Importers of users' own models: ONNX models (any framework's export), Chakra execution traces (the
// MLCommons format that distributed-training simulators exchange, JSON or binary .et) and PyTorch execution traces
// (torch.profiler's ExecutionTraceObserver). Mapping rules, FLOP conventions and
// limitations are documented in docs/importers.md.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph.h"
#include "core/status.h"
#include "core/training_graph.h"

namespace devplace {

// Settings of an import.
struct ImportOptions {
  // ONNX: > 0 sets the batch dimension of the data inputs (their symbolic batch dimension, or axis 0 when the
  // model has no symbolic dimension); 0 keeps the model's static batch (a symbolic batch then becomes 1, with a
  // warning).
  int64_t batch = 0;
  // ONNX: sizes of other symbolic input dimensions, by their dim_param name (e.g. {"seq": 128}).
  std::map<std::string, int64_t> dims;
  // ONNX: the directory that external data locations are relative to (ImportModelFile sets the model file's
  // directory; empty means the working directory).
  std::string model_dir;
  // ONNX: return the training graph (DeriveTrainingGraph of the imported forward graph) rather than the
  // forward graph. Chakra traces are already whole training steps and are never derived.
  bool derive_training = true;
  TrainingOptions training;
};

// An imported graph.
struct ImportResult {
  Graph graph;
  std::string format;                  // "onnx", "chakra" or "pytorch_et"
  std::vector<std::string> warnings;   // one line each (unknown operators, assumed sizes, ...)
  // Traces: the recorded runtime in seconds of every op, indexed by OpId, 0 where none is recorded (PyTorch
  // execution traces record none); empty for ONNX.
  std::vector<double> measured_seconds;
};

// Imports a file, choosing the format from its content: gzip is inflated first; JSON text is a trace
// (ImportChakraTrace), a name ending in .et (before any .gz) a binary Chakra trace, anything else an ONNX model
// (a binary protobuf). Errors are one line naming the file (and node, tensor or field).
Expected<ImportResult> ImportModelFile(const std::string& path, const ImportOptions& options = {});

// Imports a serialized ONNX ModelProto. `source` names the input in messages and `graph_name` names the graph.
// Maps every node to an op (unknown operators: zero FLOPs and a warning), folds shape-only and weight-only
// subgraphs away, counts parameters from initializers and weight inputs, then derives the training graph.
Expected<ImportResult> ImportOnnxModel(std::string_view bytes, const std::string& source,
                                       const std::string& graph_name, const ImportOptions& options = {});

// Imports an execution trace in JSON. Chakra: one object with a "nodes" array, an array of nodes, the stream of
// objects chakra_jsonizer writes (global metadata, then one object per node), or chakra's feeder layout
// ({"workload_graph": [...]}); compute nodes become ops with their recorded runtimes, communication nodes
// communication ops, and dependencies that cannot be honoured are dropped with a warning. A PyTorch
// ExecutionTraceObserver trace (a "schema" such as "1.0.1" or "1.1.1-chakra.0.0.4") becomes one op per outermost
// operator with dependencies through the tensors (format "pytorch_et"). See docs/importers.md.
Expected<ImportResult> ImportChakraTrace(std::string_view text, const std::string& source,
                                         const std::string& graph_name, const ImportOptions& options = {});

// Imports a binary Chakra trace (.et): length-delimited protobuf messages of et_def.proto, a GlobalMetadata and
// then the Nodes, mapped as ImportChakraTrace maps their JSON form.
Expected<ImportResult> ImportChakraBinaryTrace(std::string_view bytes, const std::string& source,
                                               const std::string& graph_name, const ImportOptions& options = {});

}  // namespace devplace
