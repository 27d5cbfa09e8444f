// The sender's first-pass order 'interleave', in native code (part of hosts.transport._native;
// module.cpp registers it):
//   interleave(chunk_counts) -> list of chunk indices (into ChunkPlan.split's list) in the order
//   a sender first sends them: chunk k of a layer of c chunks at (k + 1/2) / c of the pass, ties
//   broken by layer, then by index.
// hosts/transport/chunking.py (send_order) keeps the Python reference, which sorts the tuples
// ((k + 0.5) / c, layer, index); this file sorts by the same float64 keys (the same IEEE
// operations) and the same ties, so the order is the same (tests/unit/hosts/test_native_setup.py).
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace {

struct Key {
  double at;
  uint32_t layer;
  uint32_t index;
  bool operator<(const Key& o) const {
    if (at != o.at) return at < o.at;
    if (layer != o.layer) return layer < o.layer;
    return index < o.index;
  }
};

PyObject* interleave(PyObject*, PyObject* arg) {
  PyObject* counts = PySequence_Fast(arg, "chunk_counts");
  if (!counts) return nullptr;
  Py_ssize_t layers = PySequence_Fast_GET_SIZE(counts);
  std::vector<Key> keys;
  uint64_t base = 0;
  for (Py_ssize_t layer = 0; layer < layers; ++layer) {
    long count = PyLong_AsLong(PySequence_Fast_GET_ITEM(counts, layer));
    if (count == -1 && PyErr_Occurred()) { Py_DECREF(counts); return nullptr; }
    if (count < 0 || base + static_cast<uint64_t>(count) > UINT32_MAX || layer >= UINT32_MAX) {
      Py_DECREF(counts);
      PyErr_SetString(PyExc_ValueError, "a chunk count is negative or the plan too large");
      return nullptr;
    }
    for (long seq = 0; seq < count; ++seq)
      keys.push_back({(static_cast<double>(seq) + 0.5) / static_cast<double>(count),
                      static_cast<uint32_t>(layer), static_cast<uint32_t>(base + seq)});
    base += static_cast<uint64_t>(count);
  }
  Py_DECREF(counts);
  std::sort(keys.begin(), keys.end());
  PyObject* out = PyList_New(static_cast<Py_ssize_t>(keys.size()));
  if (!out) return nullptr;
  for (size_t i = 0; i < keys.size(); ++i) {
    PyObject* v = PyLong_FromUnsignedLong(keys[i].index);
    if (!v) { Py_DECREF(out); return nullptr; }
    PyList_SET_ITEM(out, static_cast<Py_ssize_t>(i), v);
  }
  return out;
}

PyMethodDef methods[] = {
    {"interleave", interleave, METH_O,
     "interleave(chunk_counts) -> chunk indices in send_order's 'interleave' order."},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

int gradlane_add_send_order(PyObject* m) {
  return PyModule_AddFunctions(m, methods);
}
