// Tensor facts for the ONNX importer: element types, reading and writing constant tensors, node attributes.
#include <cmath>
#include <cstring>
#include <limits>

#include "datasets/import/onnx_internal.h"

namespace devplace::onnx_import {

int64_t CheckedCount(const std::vector<int64_t>& dims, int64_t limit) {
  int64_t nonzero = 1;
  bool empty = false;
  for (int64_t d : dims) {
    if (d < 0) return -1;
    if (d == 0) {
      empty = true;
      continue;
    }
    if (nonzero > limit / d) return -1;
    nonzero *= d;
  }
  return empty ? 0 : nonzero;
}

namespace {

using onnx::TensorProto_DataType;


template <class T>
T LoadLittleEndian(const std::string& raw, int64_t index) {
  T value;
  std::memcpy(&value, raw.data() + index * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return value;
}

}  // namespace

bool ConstValue::is_int() const { return IsIntegralType(elem_type); }

int64_t ConstValue::size() const { return is_int() ? static_cast<int64_t>(ints.size()) : static_cast<int64_t>(reals.size()); }

bool TensorInfo::is_static() const {
  if (!has_shape) return false;
  for (int64_t d : dims)
    if (d < 0) return false;
  return true;
}

bool IsIntegralType(int32_t t) {
  switch (t) {
    case onnx::TensorProto_DataType_UINT8:
    case onnx::TensorProto_DataType_INT8:
    case onnx::TensorProto_DataType_UINT16:
    case onnx::TensorProto_DataType_INT16:
    case onnx::TensorProto_DataType_INT32:
    case onnx::TensorProto_DataType_INT64:
    case onnx::TensorProto_DataType_BOOL:
    case onnx::TensorProto_DataType_UINT32:
    case onnx::TensorProto_DataType_UINT64:
      return true;
    default:
      return false;
  }
}

std::string ElementTypeName(int32_t elem_type) {
  if (!onnx::TensorProto_DataType_IsValid(elem_type)) return "unknown (" + std::to_string(elem_type) + ")";
  return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(elem_type));
}

int64_t ElementBytes(int32_t t) {
  switch (t) {
    case onnx::TensorProto_DataType_UINT8:
    case onnx::TensorProto_DataType_INT8:
    case onnx::TensorProto_DataType_BOOL:
      return 1;
    case onnx::TensorProto_DataType_UINT16:
    case onnx::TensorProto_DataType_INT16:
    case onnx::TensorProto_DataType_FLOAT16:
    case onnx::TensorProto_DataType_BFLOAT16:
      return 2;
    case onnx::TensorProto_DataType_FLOAT:
    case onnx::TensorProto_DataType_INT32:
    case onnx::TensorProto_DataType_UINT32:
      return 4;
    case onnx::TensorProto_DataType_DOUBLE:
    case onnx::TensorProto_DataType_INT64:
    case onnx::TensorProto_DataType_UINT64:
      return 8;
    default:
      return 0;
  }
}

DType ToDType(int32_t t) {
  switch (t) {
    case onnx::TensorProto_DataType_FLOAT: return DType::kF32;
    case onnx::TensorProto_DataType_FLOAT16: return DType::kF16;
    case onnx::TensorProto_DataType_BFLOAT16: return DType::kBF16;
    case onnx::TensorProto_DataType_DOUBLE: return DType::kF64;
    case onnx::TensorProto_DataType_INT64:
    case onnx::TensorProto_DataType_UINT64: return DType::kI64;
    case onnx::TensorProto_DataType_INT32:
    case onnx::TensorProto_DataType_UINT32: return DType::kI32;
    case onnx::TensorProto_DataType_BOOL: return DType::kBool;
    case onnx::TensorProto_DataType_INT16:
    case onnx::TensorProto_DataType_UINT16: return DType::kF16;  // same size; devplace has no 16-bit integers
    default: return DType::kI8;
  }
}

Expected<bool> ReadTensor(const onnx::TensorProto& t, const std::string& source, ConstValue* out) {
  const std::string where = source + ": tensor '" + t.name() + "'";
  std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  const int64_t count = CheckedCount(dims, int64_t{1} << 42);
  if (count < 0) return Error{where + ": invalid or absurdly large dims"};
  if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) return false;  // weights kept in another file
  const int32_t type = t.data_type();
  const int64_t bytes = ElementBytes(type);
  if (!t.raw_data().empty()) {
    if (bytes == 0) return false;
    if (static_cast<int64_t>(t.raw_data().size()) != count * bytes)
      return Error{where + ": raw_data holds " + std::to_string(t.raw_data().size()) + " bytes, dims need " +
                   std::to_string(count * bytes)};
  } else {
    int64_t held = -1;
    switch (type) {
      case onnx::TensorProto_DataType_FLOAT: held = t.float_data_size(); break;
      case onnx::TensorProto_DataType_DOUBLE: held = t.double_data_size(); break;
      case onnx::TensorProto_DataType_INT64: held = t.int64_data_size(); break;
      case onnx::TensorProto_DataType_UINT32:
      case onnx::TensorProto_DataType_UINT64: held = t.uint64_data_size(); break;
      case onnx::TensorProto_DataType_STRING: held = t.string_data_size(); break;
      case onnx::TensorProto_DataType_COMPLEX64: held = t.float_data_size() / 2; break;
      case onnx::TensorProto_DataType_COMPLEX128: held = t.double_data_size() / 2; break;
      default: held = t.int32_data_size(); break;
    }
    if (held == 0 && count > 0) return false;  // no data: a weight whose values were not exported
    if (held != count)
      return Error{where + ": holds " + std::to_string(held) + " values, dims need " + std::to_string(count)};
  }
  if (CheckedCount(dims, kMaxFoldElements) < 0 || bytes == 0) return false;  // too large to fold
  const bool integral = IsIntegralType(type);
  if (!integral && type != onnx::TensorProto_DataType_FLOAT && type != onnx::TensorProto_DataType_DOUBLE)
    return false;  // 16-bit floats: never needed for shapes
  ConstValue v;
  v.elem_type = type;
  v.shape = dims;
  const std::string& raw = t.raw_data();
  for (int64_t i = 0; i < count; ++i) {
    if (integral) {
      int64_t x = 0;
      if (!raw.empty()) {
        switch (type) {
          case onnx::TensorProto_DataType_INT64: x = LoadLittleEndian<int64_t>(raw, i); break;
          case onnx::TensorProto_DataType_UINT64: {
            const uint64_t u = LoadLittleEndian<uint64_t>(raw, i);
            if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
            x = static_cast<int64_t>(u);
            break;
          }
          case onnx::TensorProto_DataType_INT32: x = LoadLittleEndian<int32_t>(raw, i); break;
          case onnx::TensorProto_DataType_UINT32: x = LoadLittleEndian<uint32_t>(raw, i); break;
          case onnx::TensorProto_DataType_INT16: x = LoadLittleEndian<int16_t>(raw, i); break;
          case onnx::TensorProto_DataType_UINT16: x = LoadLittleEndian<uint16_t>(raw, i); break;
          case onnx::TensorProto_DataType_INT8: x = LoadLittleEndian<int8_t>(raw, i); break;
          default: x = LoadLittleEndian<uint8_t>(raw, i); break;  // uint8, bool
        }
      } else if (type == onnx::TensorProto_DataType_INT64) {
        x = t.int64_data(static_cast<int>(i));
      } else if (type == onnx::TensorProto_DataType_UINT32 || type == onnx::TensorProto_DataType_UINT64) {
        const uint64_t u = t.uint64_data(static_cast<int>(i));
        if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
        x = static_cast<int64_t>(u);
      } else {
        x = t.int32_data(static_cast<int>(i));
      }
      if (type == onnx::TensorProto_DataType_BOOL) x = x != 0;
      v.ints.push_back(x);
    } else {
      double x = 0;
      if (type == onnx::TensorProto_DataType_FLOAT)
        x = raw.empty() ? t.float_data(static_cast<int>(i)) : LoadLittleEndian<float>(raw, i);
      else
        x = raw.empty() ? t.double_data(static_cast<int>(i)) : LoadLittleEndian<double>(raw, i);
      v.reals.push_back(x);
    }
  }
  *out = std::move(v);
  return true;
}

onnx::TensorProto WriteTensor(const ConstValue& value, const std::string& name) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(value.elem_type);
  for (int64_t d : value.shape) t.add_dims(d);
  switch (value.elem_type) {
    case onnx::TensorProto_DataType_INT64:
      for (int64_t x : value.ints) t.add_int64_data(x);
      break;
    case onnx::TensorProto_DataType_UINT32:
    case onnx::TensorProto_DataType_UINT64:
      for (int64_t x : value.ints) t.add_uint64_data(static_cast<uint64_t>(x));
      break;
    case onnx::TensorProto_DataType_FLOAT:
      for (double x : value.reals) t.add_float_data(static_cast<float>(x));
      break;
    case onnx::TensorProto_DataType_DOUBLE:
      for (double x : value.reals) t.add_double_data(x);
      break;
    default:
      for (int64_t x : value.ints) t.add_int32_data(static_cast<int32_t>(x));
      break;
  }
  return t;
}

namespace {

const onnx::AttributeProto* FindAttr(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

}  // namespace

bool HasAttr(const onnx::NodeProto& node, const std::string& name) { return FindAttr(node, name) != nullptr; }

int64_t AttrInt(const onnx::NodeProto& node, const std::string& name, int64_t fallback) {
  const onnx::AttributeProto* a = FindAttr(node, name);
  return a && a->type() == onnx::AttributeProto_AttributeType_INT ? a->i() : fallback;
}

std::string AttrString(const onnx::NodeProto& node, const std::string& name, const std::string& fallback) {
  const onnx::AttributeProto* a = FindAttr(node, name);
  return a && a->type() == onnx::AttributeProto_AttributeType_STRING ? a->s() : fallback;
}

std::vector<int64_t> AttrInts(const onnx::NodeProto& node, const std::string& name) {
  const onnx::AttributeProto* a = FindAttr(node, name);
  if (!a || a->type() != onnx::AttributeProto_AttributeType_INTS) return {};
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::vector<std::string> AttrStrings(const onnx::NodeProto& node, const std::string& name) {
  const onnx::AttributeProto* a = FindAttr(node, name);
  if (!a || a->type() != onnx::AttributeProto_AttributeType_STRINGS) return {};
  return std::vector<std::string>(a->strings().begin(), a->strings().end());
}

std::string Describe(const onnx::NodeProto& node) {
  return "node '" + node.name() + "' (" + node.op_type() + ")";
}

}  // namespace devplace::onnx_import
