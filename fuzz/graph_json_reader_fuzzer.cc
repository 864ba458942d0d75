// libFuzzer target: GraphFromJson (graph files) on arbitrary bytes; a graph it accepts must write back to JSON
// that reads back to the same JSON.
#include "core/graph_json.h"
#include "fuzz/reader_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace devplace;
  Expected<Graph> graph = GraphFromJson(fuzz::Text(data, size), "fuzz.json");
  if (!fuzz::Check(graph)) return 0;
  const std::string json = GraphToJson(*graph);
  Expected<Graph> back = GraphFromJson(json, "fuzz-back.json");
  if (!back.ok() || GraphToJson(*back) != json) __builtin_trap();
  return 0;
}
