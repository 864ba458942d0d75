// Internal to the PyTorch execution-trace importer: FLOPs of ATen operators from their recorded argument shapes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace devplace::import_detail {

// One recorded argument of an operator: its shape when it is a tensor (a list of tensors is one argument of shape
// {total elements}), and its recorded value.
struct EtArg {
  bool is_tensor = false;
  std::vector<int64_t> shape;
  const nlohmann::json* value = nullptr;
  size_t tensors = 0;  // recorded tensors it holds (list elements included)
};

// FLOPs of one execution of `op` (the name without its namespace and without an in-place '_' suffix, e.g.
// "addmm", "convolution_backward") from its inputs and outputs in argument order (docs/importers.md lists the
// formulas). Returns 0 for operators known to do no arithmetic (views, copies, allocations) and nullopt for
// operators without a formula.
std::optional<double> AtenFlops(const std::string& op, const std::vector<EtArg>& inputs,
                                const std::vector<EtArg>& outputs);

}  // namespace devplace::import_detail
