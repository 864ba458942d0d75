// libFuzzer target: ImportOnnxModel on arbitrary bytes must return a graph or a one-line Error, never crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "datasets/import/importers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  devplace::ImportOptions options;
  options.batch = 2;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  devplace::Expected<devplace::ImportResult> result = devplace::ImportOnnxModel(bytes, "fuzz.onnx", "fuzz", options);
  if (!result.ok() && result.error().message.find('\n') != std::string::npos) __builtin_trap();
  return 0;
}
