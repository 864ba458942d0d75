// libFuzzer target: strategy files in every form on arbitrary bytes, read as `devplace simulate -p` reads them:
// DetectStrategyForm, then StrategyFromJson (plain per-op configs, or the sharded form: a mesh and per-op specs
// lowered on it) or PipelinePlanFromJson (stages on submeshes, micro-batches, schedule), validated against the
// graph and machine of fuzz_inputs.h. An accepted plain or sharded strategy must write back to JSON that reads
// back to an equal strategy.
#include "core/pipeline_json.h"
#include "core/strategy_json.h"
#include "fuzz/fuzz_inputs.h"
#include "fuzz/reader_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace devplace;
  const fuzz::FuzzInputs& in = fuzz::Inputs();
  const std::string text = fuzz::Text(data, size);
  Expected<StrategyForm> form = DetectStrategyForm(text, "p.json");
  if (!fuzz::Check(form)) return 0;
  if (*form == StrategyForm::kPipeline) {
    fuzz::Check(PipelinePlanFromJson(text, "p.json", in.graph, in.topology));
    return 0;
  }
  Expected<Strategy> strategy = StrategyFromJson(text, "p.json", in.graph, in.topology);
  if (!fuzz::Check(strategy)) return 0;
  const std::string json = StrategyToJson(*strategy, in.graph, in.topology);
  Expected<Strategy> back = StrategyFromJson(json, "p-back.json", in.graph, in.topology);
  if (!back.ok() || StrategyToJson(*back, in.graph, in.topology) != json) __builtin_trap();
  return 0;
}
