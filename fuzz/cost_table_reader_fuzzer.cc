// libFuzzer target: CostTableFromJson (profiled cost tables) on arbitrary bytes; a table it accepts must write
// back to JSON that reads back to the same JSON.
#include "fuzz/reader_fuzz.h"
#include "sim/cost_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace devplace;
  Expected<CostTable> table = CostTableFromJson(fuzz::Text(data, size), "fuzz.costs.json");
  if (!fuzz::Check(table)) return 0;
  const std::string json = CostTableToJson(*table);
  Expected<CostTable> back = CostTableFromJson(json, "fuzz-back.json");
  if (!back.ok() || CostTableToJson(*back) != json) __builtin_trap();
  return 0;
}
