// The constant evaluator of the ONNX importer: computes the small tensors of shape computations
// (Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains and the like) so that shape inference can resolve
// the shapes that depend on them, and so that those subgraphs fold out of the placement graph.
// Every operation checks its inputs and gives up (returns false) rather than guess.
#include <algorithm>
#include <cmath>
#include <limits>

#include "datasets/import/onnx_internal.h"

namespace devplace::onnx_import {

namespace {

using Shape = std::vector<int64_t>;

// Number of elements, or -1 when an extent is negative or the product of the non-zero extents exceeds
// kMaxFoldElements.
int64_t Count(const Shape& shape) { return CheckedCount(shape, kMaxFoldElements); }

// Row-major strides.
Shape Strides(const Shape& shape) {
  Shape s(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * shape[i + 1];
  return s;
}

// Normalises a possibly negative axis; false if out of [0, rank).
bool NormAxis(int64_t axis, int64_t rank, int64_t* out) {
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return false;
  *out = axis;
  return true;
}

// Numpy broadcasting of two shapes.
bool BroadcastShapes(const Shape& a, const Shape& b, Shape* out) {
  const size_t rank = std::max(a.size(), b.size());
  Shape r(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    r[i] = da == 1 ? db : da;
  }
  if (Count(r) < 0) return false;
  *out = std::move(r);
  return true;
}

// Flat index into a tensor of `shape` broadcast to `out` shape, for output flat index `i`.
int64_t BroadcastIndex(const Shape& shape, const Shape& out, int64_t i) {
  const Shape out_strides = Strides(out);
  const Shape in_strides = Strides(shape);
  const size_t offset = out.size() - shape.size();
  int64_t index = 0;
  for (size_t d = 0; d < out.size(); ++d) {
    const int64_t coord = (i / out_strides[d]) % out[d];
    if (d >= offset && shape[d - offset] != 1) index += coord * in_strides[d - offset];
  }
  return index;
}

// Value of element `i` as an int64 (reals must be integral and in range), or false.
bool IntAt(const ConstValue& v, int64_t i, int64_t* out) {
  if (v.is_int()) {
    *out = v.ints[i];
    return true;
  }
  const double x = v.reals[i];
  if (!std::isfinite(x) || std::abs(x) > 9e15) return false;
  *out = static_cast<int64_t>(x);
  return true;
}

double RealAt(const ConstValue& v, int64_t i) {
  return v.is_int() ? static_cast<double>(v.ints[i]) : v.reals[i];
}

// A 1-D integer value as a vector (e.g. a shape or axes input).
bool IntList(const ConstValue& v, std::vector<int64_t>* out) {
  if (v.shape.size() > 1) return false;
  out->clear();
  for (int64_t i = 0; i < v.size(); ++i) {
    int64_t x;
    if (!IntAt(v, i, &x)) return false;
    out->push_back(x);
  }
  return true;
}

ConstValue MakeInts(int32_t type, Shape shape, std::vector<int64_t> ints) {
  ConstValue v;
  v.elem_type = type;
  v.shape = std::move(shape);
  v.ints = std::move(ints);
  return v;
}

// Copies element `src` of `from` to the end of `to` (same kind of storage).
void Append(const ConstValue& from, int64_t src, ConstValue* to) {
  if (from.is_int())
    to->ints.push_back(from.ints[src]);
  else
    to->reals.push_back(from.reals[src]);
}

bool EvalBinary(const std::string& op, const ConstValue& a, const ConstValue& b, ConstValue* out) {
  Shape shape;
  if (!BroadcastShapes(a.shape, b.shape, &shape)) return false;
  const bool compare = op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" ||
                       op == "GreaterOrEqual";
  const bool logical = op == "And" || op == "Or" || op == "Xor";
  const bool integral = a.is_int() && b.is_int();
  if (!compare && !logical && a.elem_type != b.elem_type) return false;
  ConstValue r;
  r.elem_type = (compare || logical) ? onnx::TensorProto_DataType_BOOL : a.elem_type;
  r.shape = shape;
  const int64_t n = Count(shape);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t ia = BroadcastIndex(a.shape, shape, i), ib = BroadcastIndex(b.shape, shape, i);
    if (integral) {
      const int64_t x = a.ints[ia], y = b.ints[ib];
      int64_t z = 0;
      constexpr int64_t kBig = int64_t{1} << 40;  // shape arithmetic never gets near this; refuse rather than overflow
      if (std::abs(x) > kBig || std::abs(y) > kBig) return false;
      if (op == "Add") z = x + y;
      else if (op == "Sub") z = x - y;
      else if (op == "Mul") {
        if (x != 0 && std::abs(y) > kBig / std::abs(x)) return false;
        z = x * y;
      } else if (op == "Div") {
        if (y == 0) return false;
        z = x / y;  // ONNX integer division truncates
      } else if (op == "Max") z = std::max(x, y);
      else if (op == "Min") z = std::min(x, y);
      else if (op == "Equal") z = x == y;
      else if (op == "Less") z = x < y;
      else if (op == "Greater") z = x > y;
      else if (op == "LessOrEqual") z = x <= y;
      else if (op == "GreaterOrEqual") z = x >= y;
      else if (op == "And") z = (x != 0) && (y != 0);
      else if (op == "Or") z = (x != 0) || (y != 0);
      else if (op == "Xor") z = (x != 0) != (y != 0);
      else return false;
      r.ints.push_back(z);
    } else {
      const double x = RealAt(a, ia), y = RealAt(b, ib);
      if (compare) {
        bool z = false;
        if (op == "Equal") z = x == y;
        else if (op == "Less") z = x < y;
        else if (op == "Greater") z = x > y;
        else if (op == "LessOrEqual") z = x <= y;
        else z = x >= y;
        r.ints.push_back(z ? 1 : 0);
        continue;
      }
      double z = 0;
      if (op == "Add") z = x + y;
      else if (op == "Sub") z = x - y;
      else if (op == "Mul") z = x * y;
      else if (op == "Div") z = x / y;
      else if (op == "Pow") z = std::pow(x, y);
      else if (op == "Max") z = std::max(x, y);
      else if (op == "Min") z = std::min(x, y);
      else return false;
      r.reals.push_back(z);
    }
  }
  *out = std::move(r);
  return true;
}

bool EvalUnary(const std::string& op, const ConstValue& a, ConstValue* out) {
  ConstValue r;
  r.elem_type = a.elem_type;
  r.shape = a.shape;
  for (int64_t i = 0; i < a.size(); ++i) {
    if (a.is_int()) {
      const int64_t x = a.ints[i];
      if (x == std::numeric_limits<int64_t>::min()) return false;
      if (op == "Neg") r.ints.push_back(-x);
      else if (op == "Abs") r.ints.push_back(std::abs(x));
      else if (op == "Not") r.ints.push_back(x == 0 ? 1 : 0);
      else if (op == "Identity") r.ints.push_back(x);
      else return false;
    } else {
      const double x = a.reals[i];
      if (op == "Neg") r.reals.push_back(-x);
      else if (op == "Abs") r.reals.push_back(std::abs(x));
      else if (op == "Sqrt") r.reals.push_back(std::sqrt(x));
      else if (op == "Reciprocal") r.reals.push_back(1.0 / x);
      else if (op == "Floor") r.reals.push_back(std::floor(x));
      else if (op == "Ceil") r.reals.push_back(std::ceil(x));
      else if (op == "Identity") r.reals.push_back(x);
      else return false;
    }
  }
  *out = std::move(r);
  return true;
}

bool EvalCast(const ConstValue& a, int64_t to, ConstValue* out) {
  if (to > std::numeric_limits<int32_t>::max() || to < 0) return false;
  const auto type = static_cast<int32_t>(to);
  ConstValue r;
  r.elem_type = type;
  r.shape = a.shape;
  if (IsIntegralType(type)) {
    for (int64_t i = 0; i < a.size(); ++i) {
      int64_t x;
      if (!IntAt(a, i, &x)) return false;
      r.ints.push_back(type == onnx::TensorProto_DataType_BOOL ? (x != 0) : x);
    }
  } else if (type == onnx::TensorProto_DataType_FLOAT || type == onnx::TensorProto_DataType_DOUBLE) {
    for (int64_t i = 0; i < a.size(); ++i) r.reals.push_back(RealAt(a, i));
  } else {
    return false;
  }
  *out = std::move(r);
  return true;
}

bool EvalGather(const ConstValue& data, const ConstValue& indices, int64_t axis_attr, ConstValue* out) {
  const auto rank = static_cast<int64_t>(data.shape.size());
  int64_t axis;
  if (rank == 0 || !NormAxis(axis_attr, rank, &axis) || !indices.is_int()) return false;
  Shape shape(data.shape.begin(), data.shape.begin() + axis);
  shape.insert(shape.end(), indices.shape.begin(), indices.shape.end());
  shape.insert(shape.end(), data.shape.begin() + axis + 1, data.shape.end());
  if (Count(shape) < 0) return false;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= data.shape[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= data.shape[d];
  const int64_t extent = data.shape[axis];
  ConstValue r;
  r.elem_type = data.elem_type;
  r.shape = shape;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t idx : indices.ints) {
      if (idx < 0) idx += extent;
      if (idx < 0 || idx >= extent) return false;
      for (int64_t k = 0; k < inner; ++k) Append(data, (o * extent + idx) * inner + k, &r);
    }
  }
  *out = std::move(r);
  return true;
}

bool EvalConcat(const std::vector<const ConstValue*>& xs, int64_t axis_attr, ConstValue* out) {
  if (xs.empty()) return false;
  const auto rank = static_cast<int64_t>(xs[0]->shape.size());
  int64_t axis;
  if (!NormAxis(axis_attr, rank, &axis)) return false;
  Shape shape = xs[0]->shape;
  shape[axis] = 0;
  for (const ConstValue* x : xs) {
    if (static_cast<int64_t>(x->shape.size()) != rank || x->elem_type != xs[0]->elem_type) return false;
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && x->shape[d] != shape[d]) return false;
    shape[axis] += x->shape[axis];
  }
  if (Count(shape) < 0) return false;
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
  ConstValue r;
  r.elem_type = xs[0]->elem_type;
  r.shape = shape;
  for (int64_t o = 0; o < outer; ++o) {
    for (const ConstValue* x : xs) {
      int64_t block = 1;
      for (int64_t d = axis; d < rank; ++d) block *= x->shape[d];
      for (int64_t k = 0; k < block; ++k) Append(*x, o * block + k, &r);
    }
  }
  *out = std::move(r);
  return true;
}

// ONNX Slice on one or more axes (starts/ends clamped as the spec says).
bool EvalSlice(const ConstValue& data, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
               std::vector<int64_t> axes, std::vector<int64_t> steps, ConstValue* out) {
  const auto rank = static_cast<int64_t>(data.shape.size());
  if (starts.size() != ends.size()) return false;
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size()) return false;
  std::vector<int64_t> first(rank, 0), step(rank, 1), count = data.shape;
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis;
    if (!NormAxis(axes[i], rank, &axis) || steps[i] == 0) return false;
    const int64_t dim = data.shape[axis];
    const int64_t s = steps[i];
    auto clamp = [&](int64_t x, bool is_start) {
      if (x < 0) x = x < -dim ? -1 : x + dim;
      if (s > 0) return std::clamp<int64_t>(x, 0, dim);
      if (x >= dim) return dim - 1;
      return std::max<int64_t>(x, is_start ? 0 : -1);
    };
    const int64_t b = clamp(starts[i], true), e = clamp(ends[i], false);
    const int64_t n = s > 0 ? (e > b ? (e - b + s - 1) / s : 0) : (b > e ? (b - e - s - 1) / (-s) : 0);
    first[axis] = b;
    step[axis] = s;
    count[axis] = n;
  }
  const int64_t total = Count(count);
  if (total < 0) return false;
  const Shape in_strides = Strides(data.shape), out_strides = Strides(count);
  ConstValue r;
  r.elem_type = data.elem_type;
  r.shape = count;
  for (int64_t i = 0; i < total; ++i) {
    int64_t src = 0;
    for (int64_t d = 0; d < rank; ++d) src += (first[d] + ((i / out_strides[d]) % count[d]) * step[d]) * in_strides[d];
    Append(data, src, &r);
  }
  *out = std::move(r);
  return true;
}

// The output shape of Reshape (0 copies an input extent unless allowzero, one -1 is inferred).
bool ReshapeTarget(const Shape& in, const std::vector<int64_t>& target, bool allowzero, Shape* out) {
  const int64_t total = Count(in);
  if (total < 0) return false;
  Shape shape;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t d = target[i];
    if (d == 0 && !allowzero) {
      if (i >= in.size()) return false;
      d = in[i];
    }
    if (d == -1) {
      if (infer >= 0) return false;
      infer = static_cast<int64_t>(i);
      shape.push_back(1);
      continue;
    }
    if (d < 0 || (d != 0 && known > kMaxFoldElements / d)) return false;
    known *= d;
    shape.push_back(d);
  }
  if (infer >= 0) {
    if (known == 0 || total % known != 0) return false;
    shape[infer] = total / known;
  } else if (known != total) {
    return false;
  }
  *out = std::move(shape);
  return true;
}

}  // namespace

bool EvaluateNode(const onnx::NodeProto& node, const ValueMap& values, const InfoMap& infos,
                  std::vector<ConstValue>* outputs) {
  const std::string& op = node.op_type();
  if (!node.domain().empty() && node.domain() != "ai.onnx") return false;
  // Present inputs by position (nullptr when absent or unknown).
  std::vector<const ConstValue*> in;
  for (const std::string& name : node.input()) {
    auto it = name.empty() ? values.end() : values.find(name);
    in.push_back(it == values.end() ? nullptr : &it->second);
  }
  auto have = [&](size_t i) { return i < in.size() && in[i] != nullptr; };
  ConstValue r;

  if (op == "Constant") {
    for (const auto& a : node.attribute()) {
      if (a.name() == "value" && a.has_t()) {
        Expected<bool> read = ReadTensor(a.t(), "", &r);
        if (!read.ok() || !*read) return false;
      } else if (a.name() == "value_int") {
        r = MakeInts(onnx::TensorProto_DataType_INT64, {}, {a.i()});
      } else if (a.name() == "value_ints") {
        r = MakeInts(onnx::TensorProto_DataType_INT64, {a.ints_size()}, {a.ints().begin(), a.ints().end()});
      } else if (a.name() == "value_float") {
        r.elem_type = onnx::TensorProto_DataType_FLOAT;
        r.reals = {a.f()};
      } else if (a.name() == "value_floats") {
        r.elem_type = onnx::TensorProto_DataType_FLOAT;
        r.shape = {a.floats_size()};
        r.reals.assign(a.floats().begin(), a.floats().end());
      } else {
        return false;
      }
    }
    if (r.elem_type == 0 || r.size() > kMaxFoldElements) return false;
  } else if (op == "Shape" || op == "Size") {
    if (node.input_size() < 1) return false;
    auto it = infos.find(node.input(0));
    if (it == infos.end() || !it->second.is_static()) return false;
    const Shape& dims = it->second.dims;
    if (op == "Size") {
      int64_t n = 1;
      for (int64_t d : dims) {
        if (d != 0 && n > (int64_t{1} << 42) / d) return false;
        n *= d;
      }
      r = MakeInts(onnx::TensorProto_DataType_INT64, {}, {n});
    } else {
      const auto rank = static_cast<int64_t>(dims.size());
      int64_t start = AttrInt(node, "start", 0), end = AttrInt(node, "end", rank);
      if (start < 0) start += rank;
      if (end < 0) end += rank;
      start = std::clamp<int64_t>(start, 0, rank);
      end = std::clamp<int64_t>(end, start, rank);
      r = MakeInts(onnx::TensorProto_DataType_INT64, {end - start}, {dims.begin() + start, dims.begin() + end});
    }
  } else if (op == "Identity" || op == "Neg" || op == "Abs" || op == "Not" || op == "Sqrt" || op == "Reciprocal" ||
             op == "Floor" || op == "Ceil") {
    if (!have(0) || !EvalUnary(op, *in[0], &r)) return false;
  } else if (op == "Cast") {
    if (!have(0) || !EvalCast(*in[0], AttrInt(node, "to", 0), &r)) return false;
  } else if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow" || op == "Equal" ||
             op == "Less" || op == "Greater" || op == "LessOrEqual" || op == "GreaterOrEqual" || op == "And" ||
             op == "Or" || op == "Xor") {
    if (!have(0) || !have(1) || !EvalBinary(op, *in[0], *in[1], &r)) return false;
  } else if (op == "Max" || op == "Min") {
    if (in.empty() || !have(0)) return false;
    r = *in[0];
    for (size_t i = 1; i < in.size(); ++i) {
      ConstValue next;
      if (!have(i) || !EvalBinary(op, r, *in[i], &next)) return false;
      r = std::move(next);
    }
  } else if (op == "Where") {
    if (!have(0) || !have(1) || !have(2) || !in[0]->is_int() || in[1]->elem_type != in[2]->elem_type) return false;
    Shape s01, shape;
    if (!BroadcastShapes(in[0]->shape, in[1]->shape, &s01) || !BroadcastShapes(s01, in[2]->shape, &shape)) return false;
    r.elem_type = in[1]->elem_type;
    r.shape = shape;
    for (int64_t i = 0; i < Count(shape); ++i) {
      const bool c = in[0]->ints[BroadcastIndex(in[0]->shape, shape, i)] != 0;
      const ConstValue& src = c ? *in[1] : *in[2];
      Append(src, BroadcastIndex(src.shape, shape, i), &r);
    }
  } else if (op == "Gather") {
    if (!have(0) || !have(1) || !EvalGather(*in[0], *in[1], AttrInt(node, "axis", 0), &r)) return false;
  } else if (op == "Concat") {
    std::vector<const ConstValue*> xs;
    for (size_t i = 0; i < in.size(); ++i) {
      if (!have(i)) return false;
      xs.push_back(in[i]);
    }
    if (!HasAttr(node, "axis") || !EvalConcat(xs, AttrInt(node, "axis", 0), &r)) return false;
  } else if (op == "Unsqueeze" || op == "Squeeze") {
    if (!have(0)) return false;
    std::vector<int64_t> axes = AttrInts(node, "axes");
    if (node.input_size() > 1 && !node.input(1).empty() && (!have(1) || !IntList(*in[1], &axes))) return false;
    r = *in[0];
    Shape& shape = r.shape;
    if (op == "Unsqueeze") {
      const auto rank = static_cast<int64_t>(shape.size() + axes.size());
      std::vector<char> inserted(rank, 0);
      for (int64_t a : axes) {
        int64_t axis;
        if (!NormAxis(a, rank, &axis) || inserted[axis]) return false;
        inserted[axis] = 1;
      }
      Shape next;
      size_t k = 0;
      for (int64_t d = 0; d < rank; ++d) next.push_back(inserted[d] ? 1 : shape[k++]);
      shape = next;
    } else {
      const auto rank = static_cast<int64_t>(shape.size());
      std::vector<char> removed(rank, 0);
      for (int64_t a : axes) {
        int64_t axis;
        if (!NormAxis(a, rank, &axis) || shape[axis] != 1) return false;
        removed[axis] = 1;
      }
      Shape next;
      for (int64_t d = 0; d < rank; ++d)
        if (!(axes.empty() ? shape[d] == 1 : removed[d])) next.push_back(shape[d]);
      shape = next;
    }
  } else if (op == "Reshape") {
    std::vector<int64_t> target;
    if (!have(0) || !have(1) || !IntList(*in[1], &target)) return false;
    r = *in[0];
    if (!ReshapeTarget(in[0]->shape, target, AttrInt(node, "allowzero", 0) != 0, &r.shape)) return false;
  } else if (op == "Slice") {
    if (!have(0)) return false;
    std::vector<int64_t> starts = AttrInts(node, "starts"), ends = AttrInts(node, "ends"), axes = AttrInts(node, "axes"),
                         steps;
    if (node.input_size() > 1) {
      if (!have(1) || !have(2) || !IntList(*in[1], &starts) || !IntList(*in[2], &ends)) return false;
      if (node.input_size() > 3 && !node.input(3).empty() && (!have(3) || !IntList(*in[3], &axes))) return false;
      if (node.input_size() > 4 && !node.input(4).empty() && (!have(4) || !IntList(*in[4], &steps))) return false;
    }
    if (!EvalSlice(*in[0], starts, ends, axes, steps, &r)) return false;
  } else if (op == "ConstantOfShape") {
    std::vector<int64_t> shape;
    if (!have(0) || !IntList(*in[0], &shape) || Count(shape) < 0) return false;
    ConstValue fill = MakeInts(onnx::TensorProto_DataType_FLOAT, {}, {});
    fill.reals = {0.0};
    for (const auto& a : node.attribute()) {
      if (a.name() != "value" || !a.has_t()) continue;
      Expected<bool> read = ReadTensor(a.t(), "", &fill);
      if (!read.ok() || !*read || fill.size() != 1) return false;
    }
    r.elem_type = fill.elem_type;
    r.shape = shape;
    for (int64_t i = 0; i < Count(shape); ++i) Append(fill, 0, &r);
  } else if (op == "Range") {
    if (!have(0) || !have(1) || !have(2) || in[0]->size() != 1 || in[1]->size() != 1 || in[2]->size() != 1)
      return false;
    const double start = RealAt(*in[0], 0), limit = RealAt(*in[1], 0), delta = RealAt(*in[2], 0);
    if (delta == 0 || !std::isfinite(start) || !std::isfinite(limit) || !std::isfinite(delta)) return false;
    const double n = std::max(std::ceil((limit - start) / delta), 0.0);
    if (n > kMaxFoldElements) return false;
    r.elem_type = in[0]->elem_type;
    r.shape = {static_cast<int64_t>(n)};
    for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) {
      const double x = start + static_cast<double>(i) * delta;
      if (r.is_int())
        r.ints.push_back(static_cast<int64_t>(x));
      else
        r.reals.push_back(x);
    }
  } else if (op == "Expand") {
    std::vector<int64_t> target;
    Shape shape;
    if (!have(0) || !have(1) || !IntList(*in[1], &target) || !BroadcastShapes(in[0]->shape, target, &shape))
      return false;
    r.elem_type = in[0]->elem_type;
    r.shape = shape;
    for (int64_t i = 0; i < Count(shape); ++i) Append(*in[0], BroadcastIndex(in[0]->shape, shape, i), &r);
  } else {
    return false;
  }
  if (node.output_size() != 1 || Count(r.shape) != r.size()) return false;
  outputs->assign(1, std::move(r));
  return true;
}

}  // namespace devplace::onnx_import
