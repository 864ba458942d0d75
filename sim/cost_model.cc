#include "sim/cost_model.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <unordered_map>

#include "core/check.h"
#include "sim/partition.h"

namespace devplace {
namespace {

// Resolved roofline parameters for one (op type, device kind).
struct Roofline {
  double compute_efficiency, memory_efficiency, launch_overhead;
};

class AnalyticModel final : public CostModelImpl {
 public:
  explicit AnalyticModel(AnalyticCostOptions options) : options_(std::move(options)) {}

  PartCost Cost(const PartWork& work, const Device& device) const override {
    return {Seconds(work, device), false};
  }

  double Seconds(const PartWork& work, const Device& device) const {
    const Roofline r = Resolve(work.op->type, device.kind);
    const double compute = work.flops / (PeakFlops(device, work.op->dtype) * r.compute_efficiency);
    const double memory = static_cast<double>(work.bytes_accessed) / (device.memory_bandwidth * r.memory_efficiency);
    const double seconds = r.launch_overhead + std::max(compute, memory);
    // The simulator needs every task to take time; a zero-work op with no overhead still takes one nanosecond.
    return seconds > 0 ? seconds : 1e-9;
  }

  std::string Describe() const override {
    std::ostringstream out;
    out << "analytic roofline (compute efficiency " << options_.compute_efficiency << ", memory efficiency "
        << options_.memory_efficiency << ", launch overhead " << options_.launch_overhead * 1e6 << " us, "
        << options_.rules.size() << " override rules)";
    return out.str();
  }

 private:
  // Most specific rule wins: (type, kind) over type-only over kind-only over defaults; later rules win ties.
  Roofline Resolve(const std::string& type, const std::string& kind) const {
    Roofline r{options_.compute_efficiency, options_.memory_efficiency, options_.launch_overhead};
    if (options_.rules.empty()) return r;
    for (int specificity = 1; specificity <= 3; ++specificity) {
      for (const AnalyticCostOptions::Rule& rule : options_.rules) {
        const bool t = !rule.op_type.empty(), k = !rule.device_kind.empty();
        const int s = (t ? 2 : 0) + (k ? 1 : 0);
        if (s != specificity) continue;
        if ((t && rule.op_type != type) || (k && rule.device_kind != kind)) continue;
        if (rule.compute_efficiency >= 0) r.compute_efficiency = rule.compute_efficiency;
        if (rule.memory_efficiency >= 0) r.memory_efficiency = rule.memory_efficiency;
        if (rule.launch_overhead >= 0) r.launch_overhead = rule.launch_overhead;
      }
    }
    return r;
  }

  AnalyticCostOptions options_;
};

std::string SignatureKey(const std::string& kind, const std::string& type, OpRole role, DType dtype,
                         std::span<const int64_t> shape) {
  std::string key = kind;
  key += '|';
  key += type;
  key += '|';
  key += ToString(role);
  key += '|';
  key += ToString(dtype);
  for (int64_t d : shape) {
    key += '|';
    key += std::to_string(d);
  }
  return key;
}

class ProfiledModel final : public CostModelImpl {
 public:
  explicit ProfiledModel(CostTable table) : analytic_(table.analytic), num_entries_(table.entries.size()) {
    for (OpTiming& e : table.entries)
      table_[SignatureKey(e.device_kind, e.op_type, e.role, e.dtype, e.shape)].push_back({e.flops, e.seconds});
  }

  PartCost Cost(const PartWork& work, const Device& device) const override {
    auto it = table_.find(SignatureKey(device.kind, work.op->type, work.op->role, work.op->dtype, work.shape));
    if (it != table_.end()) {
      for (const Measured& m : it->second) {
        const double tolerance = 1e-6 * std::max(std::fabs(m.flops), std::fabs(work.flops));
        if (std::fabs(m.flops - work.flops) <= tolerance) return {m.seconds, false};
      }
    }
    return {analytic_.Seconds(work, device), true};
  }

  std::string Describe() const override {
    return "profiled table (" + std::to_string(num_entries_) + " entries), else " + analytic_.Describe();
  }

 private:
  struct Measured {
    double flops, seconds;
  };
  AnalyticModel analytic_;
  size_t num_entries_;
  std::unordered_map<std::string, std::vector<Measured>> table_;
};

}  // namespace

CostModel::CostModel() : impl_(std::make_shared<AnalyticModel>(AnalyticCostOptions{})) {}

CostModel::CostModel(std::shared_ptr<const CostModelImpl> impl) : impl_(std::move(impl)) {
  DEVPLACE_CHECK(impl_ != nullptr, "CostModel needs an implementation");
}

PartCost CostModel::ComputeCost(const Graph& graph, OpId op, const OpConfig& config, int part,
                                const Device& device) const {
  DEVPLACE_CHECK(part >= 0 && part < config.num_parts());
  std::vector<int64_t> shape;
  return impl_->Cost(sim::PartWorkOf(graph, op, config, part, &shape), device);
}

void CostModel::AddComputeTimes(const Graph& graph, OpId op, const OpConfig& config,
                                std::span<const Device* const> devices, double* seconds) const {
  DEVPLACE_CHECK(static_cast<int32_t>(devices.size()) == config.num_parts(), "one device per part");
  const bool alike = PartsAlike(graph, op, config);
  std::vector<int64_t> shape;
  PartWork work;
  for (size_t p = 0; p < devices.size(); ++p) {
    if (p == 0 || !alike) work = sim::PartWorkOf(graph, op, config, static_cast<int32_t>(p), &shape);
    seconds[p] += impl_->Cost(work, *devices[p]).seconds;
  }
}

Status ValidateAnalyticCostOptions(const AnalyticCostOptions& options) {
  auto efficiency_ok = [](double e) { return std::isfinite(e) && e > 0 && e <= 1; };
  auto overhead_ok = [](double o) { return std::isfinite(o) && o >= 0 && o < 1; };
  if (!efficiency_ok(options.compute_efficiency)) return Error{"analytic.compute_efficiency: must be in (0, 1]"};
  if (!efficiency_ok(options.memory_efficiency)) return Error{"analytic.memory_efficiency: must be in (0, 1]"};
  if (!overhead_ok(options.launch_overhead)) return Error{"analytic.launch_overhead: must be in [0, 1) seconds"};
  for (size_t i = 0; i < options.rules.size(); ++i) {
    const AnalyticCostOptions::Rule& r = options.rules[i];
    const std::string where = "analytic.rules[" + std::to_string(i) + "]";
    if (r.compute_efficiency >= 0 && !efficiency_ok(r.compute_efficiency))
      return Error{where + ".compute_efficiency: must be in (0, 1]"};
    if (r.memory_efficiency >= 0 && !efficiency_ok(r.memory_efficiency))
      return Error{where + ".memory_efficiency: must be in (0, 1]"};
    if (r.launch_overhead >= 0 && !overhead_ok(r.launch_overhead))
      return Error{where + ".launch_overhead: must be in [0, 1) seconds"};
  }
  return Status::Ok();
}

CostModel MakeAnalyticCostModel(const AnalyticCostOptions& options) {
  DEVPLACE_CHECK(ValidateAnalyticCostOptions(options).ok(), "invalid analytic cost options");
  return CostModel(std::make_shared<AnalyticModel>(options));
}

CostModel MakeProfiledCostModel(CostTable table) {
  DEVPLACE_CHECK(ValidateAnalyticCostOptions(table.analytic).ok(), "invalid analytic cost options");
  return CostModel(std::make_shared<ProfiledModel>(std::move(table)));
}

Expected<CostModel> ReadCostModelFile(const std::string& path) {
  Expected<CostTable> table = ReadCostTableFile(path);
  if (!table) return table.error();
  return MakeProfiledCostModel(std::move(table).value());
}

}  // namespace devplace
