// Shared pieces of the Python bindings (docs/python.md). Each Bind* function adds one part of the API to the
// module; errors from the libraries (Expected/Status) become Python ValueErrors carrying the one-line message.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace devplace::python {

namespace py = pybind11;

// The value of `expected`, or a ValueError with its message.
template <class T>
T Unwrap(Expected<T> expected) {
  if (!expected.ok()) throw py::value_error(expected.error().message);
  return std::move(expected).value();
}

// Nothing, or a ValueError with the status's message.
inline void Check(const Status& status) {
  if (!status.ok()) throw py::value_error(status.error().message);
}

// A new NumPy array holding a copy of `values`.
template <class T>
py::array_t<T> ToArray(const std::vector<T>& values) {
  py::array_t<T> array(static_cast<py::ssize_t>(values.size()));
  std::copy(values.begin(), values.end(), array.mutable_data());
  return array;
}

// Graph, Op, Topology, Strategy, CostModel, the graph sources (files, ONNX, zoo, families) and DOT export.
void BindGraph(py::module_& m);
// simulate() and its result, search() and the algorithm names.
void BindSim(py::module_& m);
// The Gymnasium-shaped environments: _PlacementEnv and _PlacementVecEnv (wrapped in devplace/__init__.py).
void BindEnv(py::module_& m);

}  // namespace devplace::python
