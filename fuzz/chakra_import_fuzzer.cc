// libFuzzer target: ImportChakraTrace on arbitrary text (Chakra JSON in its layouts, PyTorch execution traces, Kineto
// traces: it routes all three) must return a graph or a one-line Error, never crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "datasets/import/importers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  devplace::Expected<devplace::ImportResult> result = devplace::ImportChakraTrace(text, "fuzz.json", "fuzz");
  if (result.ok() && result->measured_seconds.size() != static_cast<size_t>(result->graph.num_ops())) __builtin_trap();
  if (!result.ok() && result.error().message.find('\n') != std::string::npos) __builtin_trap();
  return 0;
}
