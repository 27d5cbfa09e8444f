// The sender's pass over one ACK's entries, in native code (part of hosts.transport._native;
// module.cpp registers it). hosts/transport/sender.py (SendSession._on_ack) keeps the Python
// reference; both update the session's per-chunk arrays the same way and return the same sums:
//   apply_ack(payload, base, counts, arrived, outstanding, not_ect, resent, sent_at, tx)
//     -> (newly, marked, not_ect_count, latest_send, highest, entries_applied, error)
// payload: the ACK's 8-byte entries (layer_id, marks, chunk_seq, big-endian); base / counts:
// int64 per layer, the first chunk index and the chunk count; arrived, outstanding, not_ect,
// resent: bool per chunk; sent_at: float64 per chunk; tx: int64 per chunk. Each entry in turn
// marks its chunk arrived and no longer outstanding; a chunk newly arrived counts in `newly`,
// its CE echo in `marked`, a Not-ECT send in `not_ect_count`, and, when sent once only, its send
// time in `latest_send` (the latest); `highest` is the largest transmission number acknowledged.
// An entry naming no chunk of the plan stops the pass there (the entries before it stay
// applied, as in the reference): error 1 = its layer is out of range, 2 = its chunk; a payload
// that is not whole entries is error 3 before any entry. The caller raises PacketError on error.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cmath>
#include <cstdint>
#include <cstring>

namespace {

constexpr uint16_t ACK_MARK_CE = 1;

struct Views {
  Py_buffer v[9];
  int n = 0;
  ~Views() { for (int i = 0; i < n; ++i) PyBuffer_Release(&v[i]); }
};

// One buffer argument of `itemsize` bytes per item (`items` of them, or any count when -1).
bool view_of(Views& views, PyObject* obj, Py_ssize_t itemsize, Py_ssize_t items, bool writable) {
  Py_buffer& b = views.v[views.n];
  if (PyObject_GetBuffer(obj, &b, (writable ? PyBUF_WRITABLE : 0) | PyBUF_C_CONTIGUOUS) < 0)
    return false;
  ++views.n;
  if (itemsize > 1 && (b.len % itemsize) != 0) {
    PyErr_SetString(PyExc_ValueError, "apply_ack: a buffer of the wrong item size");
    return false;
  }
  if (items >= 0 && b.len != items * itemsize) {
    PyErr_SetString(PyExc_ValueError, "apply_ack: a per-chunk buffer of the wrong length");
    return false;
  }
  return true;
}

PyObject* apply_ack(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 9) {
    PyErr_SetString(PyExc_TypeError,
                    "apply_ack(payload, base, counts, arrived, outstanding, not_ect, resent, sent_at, tx)");
    return nullptr;
  }
  Views views;
  if (!view_of(views, args[0], 1, -1, false) || !view_of(views, args[1], 8, -1, false)) return nullptr;
  Py_ssize_t layers = views.v[1].len / 8;
  if (!view_of(views, args[2], 8, layers, false) || !view_of(views, args[3], 1, -1, true)) return nullptr;
  Py_ssize_t chunks = views.v[3].len;
  if (!view_of(views, args[4], 1, chunks, true) || !view_of(views, args[5], 1, chunks, false) ||
      !view_of(views, args[6], 1, chunks, false) || !view_of(views, args[7], 8, chunks, false) ||
      !view_of(views, args[8], 8, chunks, false))
    return nullptr;
  const auto* p = static_cast<const uint8_t*>(views.v[0].buf);
  Py_ssize_t len = views.v[0].len;
  const auto* base = static_cast<const int64_t*>(views.v[1].buf);
  const auto* counts = static_cast<const int64_t*>(views.v[2].buf);
  auto* arrived = static_cast<uint8_t*>(views.v[3].buf);
  auto* outstanding = static_cast<uint8_t*>(views.v[4].buf);
  const auto* not_ect = static_cast<const uint8_t*>(views.v[5].buf);
  const auto* resent = static_cast<const uint8_t*>(views.v[6].buf);
  const auto* sent_at = static_cast<const double*>(views.v[7].buf);
  const auto* tx = static_cast<const int64_t*>(views.v[8].buf);
  long newly = 0, marked = 0, not_ect_count = 0, applied = 0;
  int error = 0;
  double latest = -HUGE_VAL;
  long long highest = 0;
  if (len % 8) {
    error = 3;
  } else {
    for (Py_ssize_t off = 0; off < len; off += 8, ++applied) {
      uint32_t layer = (static_cast<uint32_t>(p[off]) << 8) | p[off + 1];
      uint32_t marks = (static_cast<uint32_t>(p[off + 2]) << 8) | p[off + 3];
      uint32_t seq = (static_cast<uint32_t>(p[off + 4]) << 24) | (static_cast<uint32_t>(p[off + 5]) << 16) |
                     (static_cast<uint32_t>(p[off + 6]) << 8) | p[off + 7];
      if (layer >= static_cast<uint32_t>(layers)) { error = 1; break; }
      if (static_cast<int64_t>(seq) >= counts[layer]) { error = 2; break; }
      int64_t idx = base[layer] + seq;
      if (idx < 0 || idx >= chunks) {
        PyErr_SetString(PyExc_ValueError, "apply_ack: base and counts do not match the arrays");
        return nullptr;
      }
      if (!arrived[idx]) {
        ++newly;
        marked += (marks & ACK_MARK_CE) ? 1 : 0;
        not_ect_count += not_ect[idx] ? 1 : 0;
        if (!resent[idx] && sent_at[idx] > latest) latest = sent_at[idx];
      }
      arrived[idx] = 1;
      outstanding[idx] = 0;
      if (tx[idx] > highest) highest = tx[idx];
    }
  }
  return Py_BuildValue("llldLli", newly, marked, not_ect_count, latest, highest, applied, error);
}

PyMethodDef functions[] = {
    {"apply_ack", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(apply_ack)),
     METH_FASTCALL, "One ACK's entries applied to a sender's per-chunk arrays (send_acks.cpp)."},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

// Adds apply_ack to the extension module `m`; -1 on error.
int gradlane_add_send_acks(PyObject* m) { return PyModule_AddFunctions(m, functions); }
