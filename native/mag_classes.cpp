// The magnitude classes of one round's chunks, in native code (part of hosts.transport._native;
// module.cpp registers it):
//   mag_classes(layers, chunk_elems) -> bytes, one class (0..7) per chunk in ChunkPlan.split's
//   order (layer order, then offset); `layers` are C-contiguous float32 buffers, `chunk_elems`
//   one chunk size per layer. For the differential test, its two halves alone:
//   chunk_means(layer, chunk_elems) -> (layer mean, [chunk means]) and mag_class(mean, layer_mean).
// hosts/transport/chunking.py (ChunkPlan.split) keeps the Python reference, which takes numpy's
// float32 means. To give the same class for every input, this file computes the same float32
// numbers in the same order and decides the class from them exactly:
//  - a float32 sum is numpy's pairwise summation of the |values| (the order of numpy's
//    `pairwise_sum` for float: below 8 elements one by one from 0; up to 128 eight running sums
//    combined as ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)) and the rest added after; above that the
//    two halves, the first a multiple of 8 long, summed alike and added). numpy reduces a layer,
//    and each row of its (chunks x chunk size) view, in one such call, added to its identity 0;
//  - a mean is that sum divided by the element count in float64, rounded to float32 (numpy 2's
//    mean divides a float32 sum by its count, an intp, in float64; a float32 division, should an
//    older numpy's casting rules pick one, gives the same float32 for any count up to 2^24, as
//    float64 has more than twice float32's precision);
//  - the class is floor(log2(mean / layer mean)) + 4 clamped to 0..7, with the ratio a float64
//    as in the reference, and floor(log2(ratio)) read off the ratio's binary exponent, exactly.
//    The reference's np.log2 gives the same floor for every ratio of two positive float32: such
//    a ratio is a power of two (log2 exact) or at least a relative 2^-25 away from one, so its
//    log2 is at least 2^-25 / ln 2 away from an integer, far beyond log2's error
//    (tests/unit/hosts/test_native_setup.py checks both sides at every power of two and
//    beside it).
// Build with -ffp-contract=off and without -ffast-math (setup.py): every float operation here
// is the one written, in the order written.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

constexpr int NUM_CLASSES = 8;
constexpr int CLASS_MID = 4;   // the class of a chunk whose mean |value| is its layer's
constexpr size_t BLOCK = 128;  // numpy's PW_BLOCKSIZE

// The float32 sum of |a[0..n)| in numpy's pairwise order.
float pairwise_abs_sum(const float* a, size_t n) {
  if (n < 8) {
    float res = 0.0f;
    for (size_t i = 0; i < n; ++i) res += std::fabs(a[i]);
    return res;
  }
  if (n <= BLOCK) {
    float r[8];
    for (size_t j = 0; j < 8; ++j) r[j] = std::fabs(a[j]);
    size_t i = 8;
    for (; i < n - (n % 8); i += 8)
      for (size_t j = 0; j < 8; ++j) r[j] += std::fabs(a[i + j]);
    float res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += std::fabs(a[i]);
    return res;
  }
  size_t n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise_abs_sum(a, n2) + pairwise_abs_sum(a + n2, n - n2);
}

// numpy's float32 mean of |a[0..n)|, n > 0, as a double (the reference's float()).
double mean_abs(const float* a, size_t n) {
  float sum = 0.0f + pairwise_abs_sum(a, n);
  return static_cast<double>(static_cast<float>(static_cast<double>(sum) / static_cast<double>(n)));
}

// chunking._class_of_mean, exactly.
uint8_t class_of_mean(double mean, double layer_mean) {
  if (mean <= 0.0 || !std::isfinite(mean)) return 0;
  if (layer_mean <= 0.0 || !std::isfinite(layer_mean)) return CLASS_MID;
  int exp;
  std::frexp(mean / layer_mean, &exp);   // ratio = m * 2^exp, 0.5 <= m < 1: floor(log2) = exp - 1
  int cls = exp - 1 + CLASS_MID;
  if (cls < 0) cls = 0;
  if (cls > NUM_CLASSES - 1) cls = NUM_CLASSES - 1;
  return static_cast<uint8_t>(cls);
}

struct Layers {
  std::vector<Py_buffer> views;
  ~Layers() { for (Py_buffer& v : views) PyBuffer_Release(&v); }
};

PyObject* mag_classes(PyObject*, PyObject* args) {
  PyObject *layers_o, *elems_o;
  if (!PyArg_ParseTuple(args, "OO", &layers_o, &elems_o)) return nullptr;
  PyObject* layers = PySequence_Fast(layers_o, "layers");
  if (!layers) return nullptr;
  PyObject* elems = PySequence_Fast(elems_o, "chunk_elems");
  if (!elems) { Py_DECREF(layers); return nullptr; }
  Py_ssize_t n = PySequence_Fast_GET_SIZE(layers);
  Layers held;
  std::vector<size_t> sizes;
  size_t total = 0;
  auto fail = [&]() -> PyObject* { Py_DECREF(layers); Py_DECREF(elems); return nullptr; };
  if (PySequence_Fast_GET_SIZE(elems) != n) {
    PyErr_SetString(PyExc_ValueError, "one chunk size per layer");
    return fail();
  }
  held.views.reserve(static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    long size = PyLong_AsLong(PySequence_Fast_GET_ITEM(elems, i));
    if (size == -1 && PyErr_Occurred()) return fail();
    if (size < 1) {
      PyErr_SetString(PyExc_ValueError, "a chunk size is not positive");
      return fail();
    }
    Py_buffer view;
    if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(layers, i), &view,
                           PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
      return fail();
    held.views.push_back(view);
    if (view.itemsize != 4 || !view.format || std::strcmp(view.format, "f") != 0) {
      PyErr_SetString(PyExc_TypeError, "a layer is not a float32 buffer");
      return fail();
    }
    size_t count = static_cast<size_t>(view.len) / 4;
    if (count == 0) {
      PyErr_SetString(PyExc_ValueError, "a layer is empty");
      return fail();
    }
    sizes.push_back(static_cast<size_t>(size));
    total += (count + sizes.back() - 1) / sizes.back();
  }
  Py_DECREF(layers);
  Py_DECREF(elems);
  PyObject* out = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(total));
  if (!out) return nullptr;
  auto* cls = reinterpret_cast<uint8_t*>(PyBytes_AS_STRING(out));
  Py_BEGIN_ALLOW_THREADS
  for (size_t i = 0; i < held.views.size(); ++i) {
    const float* a = static_cast<const float*>(held.views[i].buf);
    size_t count = static_cast<size_t>(held.views[i].len) / 4;
    size_t size = sizes[i];
    double layer_mean = mean_abs(a, count);
    for (size_t off = 0; off < count; off += size)
      *cls++ = class_of_mean(mean_abs(a + off, std::min(size, count - off)), layer_mean);
  }
  Py_END_ALLOW_THREADS
  return out;
}

// chunk_means(layer, chunk_elems) -> (layer mean, [chunk means]): the float32 means of |value|
// the classes are made of (for the differential test: chunking._chunk_means and np.mean).
PyObject* chunk_means(PyObject*, PyObject* args) {
  PyObject* layer;
  Py_ssize_t size;
  if (!PyArg_ParseTuple(args, "On", &layer, &size)) return nullptr;
  Py_buffer view;
  if (PyObject_GetBuffer(layer, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return nullptr;
  Layers held;
  held.views.push_back(view);
  if (view.itemsize != 4 || !view.format || std::strcmp(view.format, "f") != 0) {
    PyErr_SetString(PyExc_TypeError, "the layer is not a float32 buffer");
    return nullptr;
  }
  size_t count = static_cast<size_t>(view.len) / 4;
  if (count == 0 || size < 1) {
    PyErr_SetString(PyExc_ValueError, "an empty layer or a chunk size that is not positive");
    return nullptr;
  }
  const float* a = static_cast<const float*>(view.buf);
  size_t step = static_cast<size_t>(size);
  PyObject* means = PyList_New(0);
  if (!means) return nullptr;
  for (size_t off = 0; off < count; off += step) {
    PyObject* m = PyFloat_FromDouble(mean_abs(a + off, std::min(step, count - off)));
    if (!m || PyList_Append(means, m) < 0) { Py_XDECREF(m); Py_DECREF(means); return nullptr; }
    Py_DECREF(m);
  }
  return Py_BuildValue("dN", mean_abs(a, count), means);
}

// mag_class(mean, layer_mean) -> the class of a chunk of mean |value| `mean` in a layer of
// mean |value| `layer_mean` (chunking._class_of_mean's rule, for the differential test).
PyObject* mag_class(PyObject*, PyObject* args) {
  double mean, layer_mean;
  if (!PyArg_ParseTuple(args, "dd", &mean, &layer_mean)) return nullptr;
  return PyLong_FromLong(class_of_mean(mean, layer_mean));
}

PyMethodDef methods[] = {
    {"mag_classes", mag_classes, METH_VARARGS,
     "mag_classes(layers, chunk_elems) -> bytes: every chunk's magnitude class, as "
     "ChunkPlan.split gives them."},
    {"mag_class", mag_class, METH_VARARGS,
     "mag_class(mean, layer_mean) -> the class of a chunk of that mean |value| in its layer."},
    {"chunk_means", chunk_means, METH_VARARGS,
     "chunk_means(layer, chunk_elems) -> (layer mean, [chunk means]) of |value|, float32."},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

int gradlane_add_mag_classes(PyObject* m) {
  return PyModule_AddFunctions(m, methods);
}
