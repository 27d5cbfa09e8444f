// The sender's send loop over its queue, in native code (part of hosts.transport._native;
// module.cpp registers it). hosts/transport/sender.py (SendSession.tick) keeps the Python
// reference and calls this on the native core when no pps pacing is in force; both take the same chunks in the same order, with the same flags, and leave the
// session's per-chunk arrays the same:
//   send_run(queue, pos, sent, burst, in_flight, cwnd, tx_count, now, sink, frames, addr,
//            pacer, arrived, queued, sent_once, resent, fast, lost, outstanding, tx, sent_at,
//            flags, tos)
//     -> (pos, sent, in_flight, tx_count, stop, idx, retransmissions, fast_resends, packets,
//         bytes, probe_due, free_at, paced)
// queue: the session's list of chunk indices, from `pos`; `sent` DATA already sent in this
// tick, at most `burst`; `in_flight` chunks outstanding; `cwnd` the window's whole packets (-1:
// no window); `tx_count` the last transmission number. Each chunk taken leaves the queue
// (queued[idx] = 0); one that arrived meanwhile is skipped; the others go out through
// sink(frames, idx, flags, addr, tos) -> the frame's length (the port's send_data, or a batch
// endpoint's SendQueue.add_data) with the chunk's flags (RETX when sent before, ACK_NOW when
// it is the queue's last or fills the window) and TOS. `pacer`: None, or the port's budget
// (hosts/transport/port_pacer.py) as (rate_bps, depth_s, free_at, slack_s, overhead_bytes):
// a chunk goes out only while the port's virtual queue holds less than depth_s, and each one
// sent adds its wire time (free_at returns the queue's new end). Stops: 0 the queue is done,
// 1 `burst` reached, 2 the window is full, 3 chunk `idx` was taken with nothing in flight: the
// caller sends it itself (the window's idle decay comes first), 4 the port's queue is full
// until `paced`. probe_due: the last chunk of the queue was sent (the caller schedules its
// probe). Per-chunk arrays: bool (arrived .. outstanding), int64 tx, float64 sent_at, uint8
// flags and tos.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <algorithm>
#include <cstdint>

#include "wire.h"

namespace {

constexpr uint8_t FLAG_RETX = gradlane::FLAG_RETX;
constexpr uint8_t FLAG_ACK_NOW = gradlane::FLAG_ACK_NOW;
enum Stop : int { END = 0, BURST = 1, WINDOW = 2, IDLE = 3, PACED = 4 };
constexpr int N_SCALARS = 12;   // the arguments before the per-chunk arrays
constexpr int N_ARRAYS = 11;

struct Views {
  Py_buffer v[N_ARRAYS];
  int n = 0;
  ~Views() { for (int i = 0; i < n; ++i) PyBuffer_Release(&v[i]); }
};

// Per-chunk arrays: arrived, queued, sent_once, resent, fast, lost, outstanding (bool), tx
// (int64), sent_at (float64), flags, tos (uint8), every one `chunks` long.
constexpr Py_ssize_t ITEMSIZE[N_ARRAYS] = {1, 1, 1, 1, 1, 1, 1, 8, 8, 1, 1};

bool views_of(Views& views, PyObject* const* arrays, Py_ssize_t& chunks) {
  for (int i = 0; i < N_ARRAYS; ++i) {
    Py_buffer& b = views.v[i];
    if (PyObject_GetBuffer(arrays[i], &b, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) return false;
    ++views.n;
    if (i == 0) chunks = b.len;
    if (b.len != chunks * ITEMSIZE[i]) {
      PyErr_SetString(PyExc_ValueError, "send_run: a per-chunk array of the wrong length");
      return false;
    }
  }
  return true;
}

PyObject* send_run(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != N_SCALARS + N_ARRAYS) {
    PyErr_SetString(PyExc_TypeError,
                    "send_run(queue, pos, sent, burst, in_flight, cwnd, tx_count, now, sink, "
                    "frames, addr, pacer, arrived, queued, sent_once, resent, fast, lost, "
                    "outstanding, tx, sent_at, flags, tos)");
    return nullptr;
  }
  PyObject* queue = args[0];
  if (!PyList_Check(queue)) {
    PyErr_SetString(PyExc_TypeError, "send_run: the queue is a list");
    return nullptr;
  }
  Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
  long sent = PyLong_AsLong(args[2]);
  long burst = PyLong_AsLong(args[3]);
  long long in_flight = PyLong_AsLongLong(args[4]);
  long long cwnd = PyLong_AsLongLong(args[5]);
  long long tx_count = PyLong_AsLongLong(args[6]);
  double now = PyFloat_AsDouble(args[7]);
  if (PyErr_Occurred()) return nullptr;
  PyObject *sink = args[8], *frames = args[9], *addr = args[10];
  const bool paced_port = args[11] != Py_None;
  double rate_bps = 0, depth_s = 0, free_at = 0, slack_s = 0;
  long long overhead = 0;
  if (paced_port && !PyArg_ParseTuple(args[11], "ddddL", &rate_bps, &depth_s, &free_at, &slack_s,
                                      &overhead))
    return nullptr;
  Views views;
  Py_ssize_t chunks = 0;
  if (!views_of(views, args + N_SCALARS, chunks)) return nullptr;
  auto* arrived = static_cast<uint8_t*>(views.v[0].buf);
  auto* queued = static_cast<uint8_t*>(views.v[1].buf);
  auto* sent_once = static_cast<uint8_t*>(views.v[2].buf);
  auto* resent = static_cast<uint8_t*>(views.v[3].buf);
  auto* fast = static_cast<uint8_t*>(views.v[4].buf);
  auto* lost = static_cast<uint8_t*>(views.v[5].buf);
  auto* outstanding = static_cast<uint8_t*>(views.v[6].buf);
  auto* tx = static_cast<int64_t*>(views.v[7].buf);
  auto* sent_at = static_cast<double*>(views.v[8].buf);
  auto* flags = static_cast<uint8_t*>(views.v[9].buf);
  auto* tos = static_cast<uint8_t*>(views.v[10].buf);
  const bool windowed = cwnd >= 0;
  Stop stop = END;
  long idx = -1;
  long long retx = 0, fast_resends = 0, packets = 0, bytes = 0;
  bool probe_due = false;
  double paced = 0;
  while (pos < PyList_GET_SIZE(queue)) {
    if (sent >= burst) { stop = BURST; break; }
    if (paced_port && !(free_at - now < depth_s - slack_s)) {   // PortPacer.ready_at
      paced = free_at - depth_s / 2.0;
      if (paced > now) { stop = PACED; break; }
    }
    long long out = windowed ? in_flight : 0;
    if (windowed && !(out < cwnd)) { stop = WINDOW; break; }
    idx = PyLong_AsLong(PyList_GET_ITEM(queue, pos));
    if (idx == -1 && PyErr_Occurred()) return nullptr;
    if (idx < 0 || idx >= chunks) {
      PyErr_SetString(PyExc_IndexError, "send_run: a queued chunk outside the plan");
      return nullptr;
    }
    ++pos;
    queued[idx] = 0;
    if (arrived[idx]) continue;
    if (windowed && out == 0) { stop = IDLE; break; }
    uint8_t f = flags[idx];
    if (pos == PyList_GET_SIZE(queue) || (windowed && !(out + 1 < cwnd))) f |= FLAG_ACK_NOW;
    if (sent_once[idx]) {
      f |= FLAG_RETX;
      resent[idx] = 1;
      ++retx;
      if (fast[idx]) ++fast_resends;
    }
    fast[idx] = 0;
    PyObject* call[5] = {frames, PyLong_FromLong(idx), PyLong_FromLong(f), addr,
                         PyLong_FromLong(tos[idx])};
    PyObject* length = (call[1] && call[2] && call[4])
                           ? PyObject_Vectorcall(sink, call, 5, nullptr) : nullptr;
    Py_XDECREF(call[1]);
    Py_XDECREF(call[2]);
    Py_XDECREF(call[4]);
    if (!length) return nullptr;
    long long n = PyLong_AsLongLong(length);
    Py_DECREF(length);
    if (n == -1 && PyErr_Occurred()) return nullptr;
    sent_once[idx] = 1;
    lost[idx] = 0;
    if (!outstanding[idx]) ++in_flight;
    outstanding[idx] = 1;
    tx[idx] = ++tx_count;
    sent_at[idx] = now;
    ++packets;
    bytes += n;
    if (paced_port)   // PortPacer.spend
      free_at = std::max(free_at, now) + static_cast<double>((n + overhead) * 8) / rate_bps;
    ++sent;
    probe_due = pos == PyList_GET_SIZE(queue);
  }
  return Py_BuildValue("nlLLilLLLLOdd", pos, sent, in_flight, tx_count, static_cast<int>(stop),
                       stop == IDLE ? idx : -1L, retx, fast_resends, packets, bytes,
                       probe_due ? Py_True : Py_False, free_at, paced);
}

PyMethodDef methods[] = {
    {"send_run", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(send_run)),
     METH_FASTCALL,
     "send_run(queue, pos, sent, burst, in_flight, cwnd, tx_count, now, sink, frames, addr, "
     "pacer, arrived, queued, sent_once, resent, fast, lost, outstanding, tx, sent_at, flags, "
     "tos) -> (pos, sent, in_flight, tx_count, stop, idx, retransmissions, fast_resends, "
     "packets, bytes, probe_due, free_at, paced)"},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

// Adds send_run to the extension module `m`; -1 on error.
int gradlane_add_send_run(PyObject* m) { return PyModule_AddFunctions(m, methods); }
