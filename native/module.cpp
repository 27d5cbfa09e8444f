// CPython binding of the native receive core (recv_core.h): hosts.transport._native.RecvCore
// (and, from batch_io.cpp, the endpoint's batched socket I/O, which hands DATA straight to a
// RecvCore through gradlane_core_deliver: Receiver; from
// packet_mac.cpp, the --packet-mac trailer: MacKey; from mag_classes.cpp, the chunks'
// magnitude classes: mag_classes; from send_order.cpp, the first pass's order: interleave;
// from send_run.cpp, the sender's send loop: send_run).
// hosts/transport/native_receiver.py wraps it behind RecvSession's interface. The binding
// reads the fields of a parsed packet (hosts.transport.port.Received), writes chunks straight
// into the numpy arrays the session owns (no copy per datagram besides the byte swap into
// place), and returns the frames to send as tuples the wrapper frames through its Port.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <memory>
#include <vector>

#include "recv_core.h"

namespace {

using gradlane::RecvCore;
using gradlane::Send;

constexpr int EV_NOT_DATA = 128;   // not a DATA packet of a known sender: the wrapper's part

PyObject *s_header, *s_payload, *s_addr, *s_tos, *s_kind, *s_worker_rank, *s_layer_id,
    *s_chunk_seq, *s_elem_offset, *s_flags, *s_tele_max_qdepth, *s_tele_qdelay_us, *s_tele_hops;

struct CoreObject {
  PyObject_HEAD
  RecvCore* core;
  std::vector<Py_buffer>* views;
  std::vector<PyObject*>* addrs;   // per sender: the address of its last valid packet, or NULL
  Send* last;
};

bool get_long(PyObject* obj, PyObject* name, long& out) {
  PyObject* v = PyObject_GetAttr(obj, name);
  if (!v) return false;
  out = PyLong_AsLong(v);
  Py_DECREF(v);
  return !(out == -1 && PyErr_Occurred());
}

void core_dealloc(CoreObject* self) {
  if (self->views) {
    for (Py_buffer& v : *self->views) PyBuffer_Release(&v);
    delete self->views;
  }
  if (self->addrs) {
    for (PyObject* a : *self->addrs) Py_XDECREF(a);
    delete self->addrs;
  }
  delete self->core;
  delete self->last;
  Py_TYPE(self)->tp_free(reinterpret_cast<PyObject*>(self));
}

template <typename T>
bool seq_to_vector(PyObject* seq, std::vector<T>& out, const char* what) {
  PyObject* fast = PySequence_Fast(seq, what);
  if (!fast) return false;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PySequence_Fast_GET_ITEM(fast, i);
    if constexpr (std::is_floating_point<T>::value) {
      double v = PyFloat_AsDouble(item);
      if (v == -1.0 && PyErr_Occurred()) { Py_DECREF(fast); return false; }
      out.push_back(static_cast<T>(v));
    } else {
      long v = PyLong_AsLong(item);
      if (v == -1 && PyErr_Occurred()) { Py_DECREF(fast); return false; }
      out.push_back(static_cast<T>(v));
    }
  }
  Py_DECREF(fast);
  return true;
}

// RecvCore(layer_sizes, chunk_elems, required, ranks, arrays, opened, deadline, absent_timeout,
//          ack_every, ack_delay, tensor_scope); arrays[k][i] = (values, delivered, chunks) of
// sender k's layer i: writable C-contiguous float32 / bool / bool buffers.
int core_init(CoreObject* self, PyObject* args, PyObject*) {
  PyObject *sizes_o, *chunk_o, *req_o, *ranks_o, *arrays_o;
  double opened, deadline, absent, ack_delay;
  int ack_every, tensor_scope;
  if (!PyArg_ParseTuple(args, "OOOOOdddidp", &sizes_o, &chunk_o, &req_o, &ranks_o, &arrays_o,
                        &opened, &deadline, &absent, &ack_every, &ack_delay, &tensor_scope))
    return -1;
  std::vector<uint32_t> sizes, chunks;
  std::vector<double> required;
  std::vector<int> ranks;
  if (!seq_to_vector(sizes_o, sizes, "layer_sizes") || !seq_to_vector(chunk_o, chunks, "chunk_elems") ||
      !seq_to_vector(req_o, required, "required") || !seq_to_vector(ranks_o, ranks, "ranks"))
    return -1;
  if (sizes.empty() || chunks.size() != sizes.size() || required.size() != sizes.size()) {
    PyErr_SetString(PyExc_ValueError, "one chunk size and one required fraction per layer");
    return -1;
  }
  for (size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i] == 0 || chunks[i] == 0) {
      PyErr_SetString(PyExc_ValueError, "layer and chunk sizes must be positive");
      return -1;
    }
  RecvCore::Options opt;
  opt.deadline = deadline;
  opt.absent_timeout = absent;
  opt.ack_every = ack_every;
  opt.ack_delay = ack_delay;
  opt.tensor_scope = tensor_scope != 0;
  auto core = std::make_unique<RecvCore>(sizes, chunks, required, opt, ranks, opened);
  auto views = std::make_unique<std::vector<Py_buffer>>();
  views->reserve(ranks.size() * sizes.size() * 3);
  auto release = [&views]() { for (Py_buffer& v : *views) PyBuffer_Release(&v); };
  PyObject* fast = PySequence_Fast(arrays_o, "arrays");
  if (!fast) return -1;
  if (static_cast<size_t>(PySequence_Fast_GET_SIZE(fast)) != ranks.size()) {
    Py_DECREF(fast);
    PyErr_SetString(PyExc_ValueError, "one set of arrays per sender");
    return -1;
  }
  for (size_t k = 0; k < ranks.size(); ++k) {
    PyObject* per = PySequence_Fast(PySequence_Fast_GET_ITEM(fast, k), "arrays of a sender");
    if (!per || static_cast<size_t>(PySequence_Fast_GET_SIZE(per)) != sizes.size()) {
      Py_XDECREF(per);
      Py_DECREF(fast);
      release();
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "one array triple per layer");
      return -1;
    }
    for (size_t i = 0; i < sizes.size(); ++i) {
      PyObject* triple = PySequence_Fast_GET_ITEM(per, i);
      const Py_ssize_t want[3] = {static_cast<Py_ssize_t>(4) * sizes[i],
                                  static_cast<Py_ssize_t>(sizes[i]),
                                  static_cast<Py_ssize_t>(core->chunk_count(i))};
      void* ptr[3];
      for (int j = 0; j < 3; ++j) {
        PyObject* arr = PySequence_GetItem(triple, j);
        if (!arr) { Py_DECREF(per); Py_DECREF(fast); release(); return -1; }
        Py_buffer view;
        int rc = PyObject_GetBuffer(arr, &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS);
        Py_DECREF(arr);
        if (rc < 0) { Py_DECREF(per); Py_DECREF(fast); release(); return -1; }
        if (view.len != want[j]) {
          PyBuffer_Release(&view);
          Py_DECREF(per); Py_DECREF(fast); release();
          PyErr_SetString(PyExc_ValueError, "an array's size does not match the plan");
          return -1;
        }
        views->push_back(view);
        ptr[j] = view.buf;
      }
      core->sender(k).layers[i] = {static_cast<float*>(ptr[0]), static_cast<uint8_t*>(ptr[1]),
                                   static_cast<uint8_t*>(ptr[2])};
    }
    Py_DECREF(per);
  }
  Py_DECREF(fast);
  if (self->core) {   // __init__ called again: drop the old state
    for (Py_buffer& v : *self->views) PyBuffer_Release(&v);
    for (PyObject* a : *self->addrs) Py_XDECREF(a);
    delete self->core; delete self->views; delete self->addrs; delete self->last;
  }
  self->addrs = new std::vector<PyObject*>(ranks.size(), nullptr);
  self->core = core.release();
  self->views = views.release();
  self->last = new Send();
  return 0;
}

bool ready(CoreObject* self) {
  if (self->core) return true;
  PyErr_SetString(PyExc_RuntimeError, "RecvCore is not initialised");
  return false;
}

// (kind, addr, payload, qdepth, qdelay_us, stop_reason) of one frame to send
PyObject* send_tuple(CoreObject* self, const Send& s) {
  PyObject* addr = (*self->addrs)[s.sender];
  PyObject* payload;
  if (s.kind == gradlane::KIND_ACK) {
    payload = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(8 * s.entries.size()));
    if (!payload) return nullptr;
    auto* p = reinterpret_cast<uint8_t*>(PyBytes_AS_STRING(payload));
    for (const auto& e : s.entries) {
      uint16_t marks = e.ce ? 1 : 0;
      p[0] = e.layer >> 8; p[1] = e.layer & 0xff;
      p[2] = marks >> 8; p[3] = marks & 0xff;
      p[4] = e.seq >> 24; p[5] = (e.seq >> 16) & 0xff; p[6] = (e.seq >> 8) & 0xff; p[7] = e.seq & 0xff;
      p += 8;
    }
  } else {
    payload = PyBytes_FromStringAndSize("", 0);
    if (!payload) return nullptr;
  }
  return Py_BuildValue("iONIIi", s.kind, addr ? addr : Py_None, payload, s.qdepth, s.qdelay_us,
                       s.stop_reason);
}

PyObject* maybe_send(CoreObject* self, bool sent, const Send& s) {
  if (!sent) Py_RETURN_NONE;
  return send_tuple(self, s);
}

// One DATA packet of a known job for the core: its event bits (EV_SEND: *self->last holds the
// frame). The sender's address becomes `addr` (borrowed) unless the payload was refused, so a
// STOP or ACK this packet triggers goes to it.
int deliver(CoreObject* self, const gradlane::Data& d, PyObject* addr, double now) {
  RecvCore& core = *self->core;
  int k = core.index_of(d.rank);
  if (k < 0) return gradlane::EV_FOREIGN_RANK;
  PyObject* prev = (*self->addrs)[k];
  Py_INCREF(addr);
  (*self->addrs)[k] = addr;
  int ev = core.on_data(d, now, *self->last);
  if (ev & (gradlane::EV_CORRUPT | gradlane::EV_NONFINITE)) {
    (*self->addrs)[k] = prev;
    Py_DECREF(addr);
  } else {
    Py_XDECREF(prev);
  }
  return ev;
}

// on_packet(pkt, now) -> event bits (EV_SEND: take_send() has the frame; EV_NOT_DATA: a
// packet of a known sender that is not DATA, for the wrapper)
PyObject* core_on_packet(CoreObject* self, PyObject* const* args, Py_ssize_t nargs) {
  if (!ready(self)) return nullptr;
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "on_packet(pkt, now)");
    return nullptr;
  }
  PyObject* pkt = args[0];
  double now = PyFloat_AsDouble(args[1]);
  if (now == -1.0 && PyErr_Occurred()) return nullptr;
  PyObject* hdr = PyObject_GetAttr(pkt, s_header);
  if (!hdr) return nullptr;
  long rank, kind, layer, seq, offset, flags, qdepth, qdelay, hops, tos;
  if (!get_long(hdr, s_worker_rank, rank)) { Py_DECREF(hdr); return nullptr; }
  RecvCore& core = *self->core;
  int k = core.index_of(static_cast<int>(rank));
  if (k < 0) { Py_DECREF(hdr); return PyLong_FromLong(gradlane::EV_FOREIGN_RANK); }
  if (!get_long(hdr, s_kind, kind)) { Py_DECREF(hdr); return nullptr; }
  if (kind != gradlane::KIND_DATA) { Py_DECREF(hdr); return PyLong_FromLong(EV_NOT_DATA); }
  bool ok = get_long(hdr, s_layer_id, layer) && get_long(hdr, s_chunk_seq, seq) &&
            get_long(hdr, s_elem_offset, offset) && get_long(hdr, s_flags, flags) &&
            get_long(hdr, s_tele_max_qdepth, qdepth) && get_long(hdr, s_tele_qdelay_us, qdelay) &&
            get_long(hdr, s_tele_hops, hops) && get_long(pkt, s_tos, tos);
  Py_DECREF(hdr);
  if (!ok) return nullptr;
  PyObject* payload = PyObject_GetAttr(pkt, s_payload);
  if (!payload) return nullptr;
  Py_buffer view;
  if (PyObject_GetBuffer(payload, &view, PyBUF_SIMPLE) < 0) { Py_DECREF(payload); return nullptr; }
  gradlane::Data d{static_cast<int>(rank), static_cast<int>(layer), static_cast<uint32_t>(seq),
                   static_cast<uint32_t>(offset), static_cast<int>(flags), static_cast<int>(tos),
                   static_cast<uint32_t>(qdepth), static_cast<uint32_t>(qdelay),
                   static_cast<uint32_t>(hops), static_cast<const uint8_t*>(view.buf),
                   static_cast<size_t>(view.len)};
  PyObject* addr = PyObject_GetAttr(pkt, s_addr);
  int ev = addr ? deliver(self, d, addr, now) : -1;
  Py_XDECREF(addr);
  PyBuffer_Release(&view);
  Py_DECREF(payload);
  return ev < 0 ? nullptr : PyLong_FromLong(ev);
}

PyObject* core_take_send(CoreObject* self, PyObject*) {
  if (!ready(self)) return nullptr;
  return send_tuple(self, *self->last);
}

bool sender_arg(CoreObject* self, long k) {
  if (k >= 0 && static_cast<size_t>(k) < self->core->num_senders()) return true;
  PyErr_SetString(PyExc_IndexError, "no such sender");
  return false;
}

// heard(k, addr, now): a valid packet other than DATA from sender k
PyObject* core_heard(CoreObject* self, PyObject* args) {
  long k;
  PyObject* addr;
  double now;
  if (!ready(self) || !PyArg_ParseTuple(args, "lOd", &k, &addr, &now) || !sender_arg(self, k))
    return nullptr;
  Py_INCREF(addr);
  Py_XSETREF((*self->addrs)[k], addr);
  self->core->heard(self->core->sender(k), now);
  Py_RETURN_NONE;
}

PyObject* core_flush(CoreObject* self, PyObject* args) {
  long k;
  double now;
  if (!ready(self) || !PyArg_ParseTuple(args, "ld", &k, &now) || !sender_arg(self, k)) return nullptr;
  Send s;
  return maybe_send(self, self->core->flush(static_cast<int>(k), now, s), s);
}

PyObject* core_stop(CoreObject* self, PyObject* args) {
  long k;
  double now;
  int force;
  if (!ready(self) || !PyArg_ParseTuple(args, "ldp", &k, &now, &force) || !sender_arg(self, k))
    return nullptr;
  Send s;
  return maybe_send(self, self->core->send_stop(static_cast<int>(k), now, force, s), s);
}

// close(k, why_code, now): why_code 1..3 bound/complete/deadline, 4 another reason
PyObject* core_close(CoreObject* self, PyObject* args) {
  long k;
  int why;
  double now;
  if (!ready(self) || !PyArg_ParseTuple(args, "lid", &k, &why, &now) || !sender_arg(self, k))
    return nullptr;
  if (why < gradlane::BOUND || why > gradlane::OTHER) {
    PyErr_SetString(PyExc_ValueError, "close reason out of range");
    return nullptr;
  }
  if (self->core->sender(k).closed != gradlane::OPEN) Py_RETURN_NONE;
  Send s;
  return maybe_send(self, self->core->close(static_cast<int>(k), why, now, s), s);
}

// tick(now) -> (wake, [frames], index of a sender silent past absent_timeout or -1)
PyObject* core_tick(CoreObject* self, PyObject* arg) {
  if (!ready(self)) return nullptr;
  double now = PyFloat_AsDouble(arg);
  if (now == -1.0 && PyErr_Occurred()) return nullptr;
  std::vector<Send> sends;
  int timeout;
  double wake = self->core->tick(now, sends, timeout);
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(sends.size()));
  if (!list) return nullptr;
  for (size_t i = 0; i < sends.size(); ++i) {
    PyObject* t = send_tuple(self, sends[i]);
    if (!t) { Py_DECREF(list); return nullptr; }
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), t);
  }
  return Py_BuildValue("dNi", wake, list, timeout);
}

PyObject* opt_time(bool has, double t) {
  if (!has) Py_RETURN_NONE;
  return PyFloat_FromDouble(t);
}

// state(k) -> (closed code, first_data, closed_at, last_heard, flags_seen, duplicates,
//              [delivered elements per layer], addr, pending entries)
PyObject* core_state(CoreObject* self, PyObject* arg) {
  if (!ready(self)) return nullptr;
  long k = PyLong_AsLong(arg);
  if (k == -1 && PyErr_Occurred()) return nullptr;
  if (!sender_arg(self, k)) return nullptr;
  const gradlane::SenderState& s = self->core->sender(k);
  PyObject* elems = PyList_New(static_cast<Py_ssize_t>(s.delivered_elems.size()));
  if (!elems) return nullptr;
  for (size_t i = 0; i < s.delivered_elems.size(); ++i)
    PyList_SET_ITEM(elems, static_cast<Py_ssize_t>(i), PyLong_FromUnsignedLongLong(s.delivered_elems[i]));
  PyObject* addr = (*self->addrs)[k];
  return Py_BuildValue("iNNNiKNOn", s.closed, opt_time(s.has_first, s.first_data),
                       opt_time(s.has_closed_at, s.closed_at), opt_time(s.has_heard, s.last_heard),
                       s.flags_seen, static_cast<unsigned long long>(s.duplicates), elems,
                       addr ? addr : Py_None, static_cast<Py_ssize_t>(s.pending.size()));
}

PyObject* core_index(CoreObject* self, PyObject* arg) {
  if (!ready(self)) return nullptr;
  long rank = PyLong_AsLong(arg);
  if (rank == -1 && PyErr_Occurred()) return nullptr;
  return PyLong_FromLong(self->core->index_of(static_cast<int>(rank)));
}

// telemetry() -> (packets, max_qdepth, max_qdelay_us, max_hops)
PyObject* core_telemetry(CoreObject* self, PyObject*) {
  if (!ready(self)) return nullptr;
  const RecvCore& c = *self->core;
  return Py_BuildValue("KIII", static_cast<unsigned long long>(c.tele_packets), c.tele_max_qdepth,
                       c.tele_max_qdelay_us, c.tele_max_hops);
}

PyObject* core_done(CoreObject* self, void*) {
  if (!ready(self)) return nullptr;
  return PyBool_FromLong(self->core->done());
}

PyObject* core_finished(CoreObject* self, void*) {
  if (!ready(self)) return nullptr;
  return opt_time(self->core->has_finished(), self->core->finished());
}

PyMethodDef core_methods[] = {
    {"on_packet", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(core_on_packet)),
     METH_FASTCALL, "One parsed packet at `now`: event bits."},
    {"take_send", reinterpret_cast<PyCFunction>(core_take_send), METH_NOARGS,
     "The frame the last on_packet asked to send."},
    {"heard", reinterpret_cast<PyCFunction>(core_heard), METH_VARARGS, "A valid non-DATA packet."},
    {"flush", reinterpret_cast<PyCFunction>(core_flush), METH_VARARGS, "Flush a sender's ACK."},
    {"stop", reinterpret_cast<PyCFunction>(core_stop), METH_VARARGS, "A STOP to a sender."},
    {"close", reinterpret_cast<PyCFunction>(core_close), METH_VARARGS, "Close a sender."},
    {"tick", reinterpret_cast<PyCFunction>(core_tick), METH_O, "Timers at `now`."},
    {"state", reinterpret_cast<PyCFunction>(core_state), METH_O, "One sender's state."},
    {"index", reinterpret_cast<PyCFunction>(core_index), METH_O, "A rank's sender index or -1."},
    {"telemetry", reinterpret_cast<PyCFunction>(core_telemetry), METH_NOARGS,
     "The round's telemetry maxima."},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef core_getset[] = {
    {"done", reinterpret_cast<getter>(core_done), nullptr, "Every sender closed.", nullptr},
    {"finished", reinterpret_cast<getter>(core_finished), nullptr, "When the last closed.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyTypeObject CoreType = {PyVarObject_HEAD_INIT(nullptr, 0)};

PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "hosts.transport._native",
                          "The native receive core of gradlane's transport.", -1, nullptr};

}  // namespace

// For batch_io.cpp's routed receive (Receiver.route): whether `obj` is a RecvCore, and one
// DATA datagram for it whose header the caller validated (this job's, kind DATA, its payload's
// length): on_packet's work without a parsed packet. Event bits, or -1 with a Python error;
// with EV_SEND, *frame is a new reference to the frame (take_send's tuple).
bool gradlane_is_recv_core(PyObject* obj) { return PyObject_TypeCheck(obj, &CoreType); }

int gradlane_core_deliver(PyObject* obj, const gradlane::Data& d, PyObject* addr, double now,
                          PyObject** frame) {
  auto* self = reinterpret_cast<CoreObject*>(obj);
  *frame = nullptr;
  if (!ready(self)) return -1;
  int ev = deliver(self, d, addr, now);
  if (ev & gradlane::EV_SEND) {
    *frame = send_tuple(self, *self->last);
    if (!*frame) return -1;
  }
  return ev;
}

int gradlane_add_batch_io(PyObject* m);   // batch_io.cpp: Receiver
int gradlane_add_send_frames(PyObject* m);   // send_frames.cpp: DataFrames, SendQueue
int gradlane_add_send_acks(PyObject* m);     // send_acks.cpp: apply_ack
int gradlane_add_mag_classes(PyObject* m);   // mag_classes.cpp: mag_classes
int gradlane_add_send_order(PyObject* m);    // send_order.cpp: interleave
int gradlane_add_send_run(PyObject* m);      // send_run.cpp: send_run
int gradlane_add_packet_mac(PyObject* m);   // packet_mac.cpp: MacKey (where OpenSSL was found)

PyMODINIT_FUNC PyInit__native(void) {
  const char* names[] = {"header", "payload", "addr", "tos", "kind", "worker_rank", "layer_id",
                         "chunk_seq", "elem_offset", "flags", "tele_max_qdepth",
                         "tele_qdelay_us", "tele_hops"};
  PyObject** slots[] = {&s_header, &s_payload, &s_addr, &s_tos, &s_kind, &s_worker_rank,
                        &s_layer_id, &s_chunk_seq, &s_elem_offset, &s_flags,
                        &s_tele_max_qdepth, &s_tele_qdelay_us, &s_tele_hops};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); ++i) {
    *slots[i] = PyUnicode_InternFromString(names[i]);
    if (!*slots[i]) return nullptr;
  }
  CoreType.tp_name = "hosts.transport._native.RecvCore";
  CoreType.tp_basicsize = sizeof(CoreObject);
  CoreType.tp_flags = Py_TPFLAGS_DEFAULT;
  CoreType.tp_doc = "The receive side of one round (native/recv_core.h).";
  CoreType.tp_new = PyType_GenericNew;
  CoreType.tp_init = reinterpret_cast<initproc>(core_init);
  CoreType.tp_dealloc = reinterpret_cast<destructor>(core_dealloc);
  CoreType.tp_methods = core_methods;
  CoreType.tp_getset = core_getset;
  if (PyType_Ready(&CoreType) < 0) return nullptr;
  PyObject* m = PyModule_Create(&module_def);
  if (!m) return nullptr;
  Py_INCREF(&CoreType);
  if (PyModule_AddObject(m, "RecvCore", reinterpret_cast<PyObject*>(&CoreType)) < 0) {
    Py_DECREF(&CoreType);
    Py_DECREF(m);
    return nullptr;
  }
  if (gradlane_add_batch_io(m) < 0 || gradlane_add_send_frames(m) < 0 ||
      gradlane_add_send_acks(m) < 0 || gradlane_add_mag_classes(m) < 0 ||
      gradlane_add_send_order(m) < 0 || gradlane_add_send_run(m) < 0) {
    Py_DECREF(m);
    return nullptr;
  }
  if (gradlane_add_packet_mac(m) < 0) {
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
