// ImportModelFile: reads a file, inflates gzip, and dispatches on its content (JSON text: a trace; a .et name: a
// binary Chakra trace; otherwise ONNX).
#include <filesystem>

#include <zlib.h>

#include "core/atomic_file.h"
#include "core/format.h"
#include "datasets/import/importers.h"

namespace devplace {

namespace {


// The first byte that is not white space, or 0.
char FirstSignificant(const std::string& text) {
  for (char c : text)
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return c;
  return 0;
}

bool IsGzip(const std::string& bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f && static_cast<unsigned char>(bytes[1]) == 0x8b;
}

// The size the last gzip member declares (its trailer's ISIZE: the inflated size modulo 2^32).
uint32_t DeclaredSize(const std::string& bytes) {
  uint32_t size = 0;
  for (size_t i = 0; i < 4; ++i) size |= uint32_t{static_cast<unsigned char>(bytes[bytes.size() - 4 + i])} << (8 * i);
  return size;
}

// The inflated content of a gzip file (concatenated members included). Content larger than the limit on input
// files (a decompression bomb) is refused: at once when the trailer declares it, else as soon as inflating passes it.
Expected<std::string> Gunzip(const std::string& bytes, const std::string& path) {
  const auto too_large = [&]() {
    return Error{path + ": gzip: inflates to more than the " + FormatBytes(static_cast<double>(kMaxInputFileBytes)) +
                 " limit on input files"};
  };
  if (bytes.size() >= 18 && DeclaredSize(bytes) > kMaxInputFileBytes) return too_large();
  z_stream z{};
  if (inflateInit2(&z, 15 + 32) != Z_OK) return Error{path + ": gzip: cannot initialise zlib"};
  std::string out;
  char buffer[1 << 16];
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  int rc = Z_OK;
  while (true) {
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof(buffer);
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buffer, sizeof(buffer) - z.avail_out);
    if (static_cast<int64_t>(out.size()) > kMaxInputFileBytes) rc = Z_MEM_ERROR;
    if (rc == Z_STREAM_END && z.avail_in > 0) rc = inflateReset(&z);  // another gzip member follows
    else if (rc == Z_STREAM_END) break;
    if (rc != Z_OK || (z.avail_in == 0 && z.avail_out != 0)) break;
  }
  inflateEnd(&z);
  if (rc == Z_STREAM_END) return out;
  if (rc == Z_MEM_ERROR) return too_large();
  return Error{path + ": gzip: corrupt or truncated compressed data"};
}

}  // namespace

Expected<ImportResult> ImportModelFile(const std::string& path, const ImportOptions& options) {
  Expected<std::string> text = ReadFile(path);
  if (!text.ok()) return text.error();
  if (text->empty()) return Error{path + ": the file is empty"};
  std::filesystem::path name(path);
  if (IsGzip(*text)) {
    text = Gunzip(*text, path);
    if (!text.ok()) return text.error();
    if (text->empty()) return Error{path + ": the file is empty once inflated"};
    if (name.extension() == ".gz") name = name.stem();
  }
  std::string stem = name.stem().string();
  if (name.extension() == ".json" && std::filesystem::path(stem).extension() == ".et") stem = std::filesystem::path(stem).stem().string();
  const char first = FirstSignificant(*text);
  if (first == '{' || first == '[') return ImportChakraTrace(*text, path, stem, options);
  const std::string ext = name.extension().string();
  if (ext == ".json") return Error{path + ": not a JSON document (a trace starts with '{' or '[')"};
  if (ext == ".et") return ImportChakraBinaryTrace(*text, path, stem, options);
  ImportOptions onnx_options = options;
  if (onnx_options.model_dir.empty()) onnx_options.model_dir = std::filesystem::path(path).parent_path().string();
  return ImportOnnxModel(*text, path, stem.empty() ? "model" : stem, onnx_options);
}

}  // namespace devplace
