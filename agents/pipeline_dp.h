// pipeline-dp: an Alpa-style inter-operator pass (Zheng et al., "Alpa", OSDI 2022, section 5). The graph's forward
// layers (core/pipeline.h ForwardLayerOrder) are grouped into at most `max_clusters` contiguous clusters of similar
// FLOPs, cut only where a pipeline cut is legal; the machine's submesh shapes are whole hosts (1..H) or a
// power-of-two share of one host. Every (cluster range, submesh) is priced by the simulator: the range's ops as a
// graph of their own on the submesh's first devices, under each intra-stage candidate (data parallel: every op split
// along its samples; Megatron tensor parallelism: configs/sharding/megatron.yaml's annotations propagated by
// core/sharding_propagation.h, when the graph has such ops), its step time / M taken as the stage's time per
// micro-batch. A dynamic program then picks the contiguous stages and submeshes that cover every device and
// minimise the pipeline latency Σ t_i + (M - 1) max t_i, for each candidate max in turn (Alpa's enumeration).
// Stages are packed onto the hosts (largest first) and returned as a PipelinePlan with the requested schedule and
// micro-batches; the caller simulates it for real (sim/pipeline.h). docs/baselines.md, "pipeline-dp".
#pragma once

#include <cstdint>
#include <string>

#include "agents/search.h"
#include "core/pipeline.h"

namespace devplace {

struct PipelineDpOptions {
  int32_t microbatches = 4;                                  // M, >= 1
  PipelineSchedule schedule = PipelineSchedule::kOneFOneB;   // written into the plan (the DP's formula is the same)
  int32_t max_clusters = 16;                                 // layer clusters the DP runs over, >= 1
};

// The search. Its SearchResult carries the plan in `pipeline` and, in `strategy`, the plan's per-op form: every op on
// its stage's devices with the stage's intra-stage configs (whole batch, no micro-batching); colocated ops that the
// plan puts in different stages (tied embeddings) all run whole on the first device of the earliest one's stage.
// Errors: a graph whose ops cannot be cut into stages (a backward op without its forward op), hosts of different
// sizes, no cover of the devices whose stages fit the batch (M x a stage's devices <= the batch), or a budget too
// small to price the seed cover (priced first: the largest submesh size that fits the batch, the clusters cut into
// N / size stages of similar FLOPs). Each stage simulation counts as one evaluation; the search stops pricing when the
// budget is spent and plans over what it priced.
class PipelineDpSearch final : public SearchAlgorithm {
 public:
  explicit PipelineDpSearch(PipelineDpOptions options = {}) : options_(options) {}
  std::string name() const override { return "pipeline-dp"; }

 protected:
  Expected<SearchResult> DoSearch(const SearchProblem& problem, const SearchRequest& request) const override;

 private:
  PipelineDpOptions options_;
};

}  // namespace devplace
