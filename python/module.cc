// The extension module devplace._devplace; devplace/__init__.py re-exports it (docs/python.md).
#include "python/bindings.h"

PYBIND11_MODULE(_devplace, m) {
  m.doc() = "devplace: device placement of deep-learning training graphs (C++ core)";
  devplace::python::BindGraph(m);
  devplace::python::BindSim(m);
  devplace::python::BindEnv(m);
}
