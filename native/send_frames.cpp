// The send side's DATA frames, built in native code (part of hosts.transport._native; module.cpp
// registers it):
//   DataFrames(layers, chunk_elems, mag_classes, job_id, rank, round, policy_epoch) keeps one
//     round's gradient as big-endian float32 (copied once when the session opens, as the Python
//     sender's payload bytes are) and frames chunk `idx` of it: the 32-byte gradient header of a
//     DATA packet, then the chunk's values. frame(idx, flags) returns the bytes (for a sans-IO
//     port); size(idx) is the frame's length.
//   SendQueue() is the batch endpoint's queue of datagrams to send: add(data, addr, tos) takes a
//     finished datagram, add_data(frames, idx, flags, addr, tos[, mac]) builds a DATA frame straight
//     into the queue's own buffer (no Python object per datagram; with a MacKey, its --packet-mac
//     trailer after it, packet_mac.cpp), and flush(fd) puts everything out in
//     order with sendmmsg, each message with its own address and IP_TOS ancillary data, counted
//     as the per-datagram path counts it (sent, bytes, would block, other errors).
// hosts/transport/data_frames.py holds the Python reference of the frames; the differential test
// (tests/unit/hosts/test_native_send.py) holds both to the same bytes.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "wire.h"

int gradlane_to_sockaddr(PyObject* addr, sockaddr_in& out);   // batch_io.cpp
int gradlane_mac_tag(PyObject* key, const unsigned char* data, Py_ssize_t n,
                     unsigned char* out);                        // packet_mac.cpp

namespace {

constexpr unsigned BATCH = 256;   // messages per sendmmsg
using gradlane::HEADER_LEN;
using gradlane::KIND_DATA;
using gradlane::VERSION;
constexpr size_t TOS_SPACE = CMSG_SPACE(sizeof(int));
constexpr size_t TAG_BYTES = gradlane::MAC_TAG_BYTES;

struct ChunkInfo {
  uint16_t layer;
  uint32_t seq;
  uint32_t offset;   // in elements, within the layer
  uint32_t start;    // in bytes, within the frames' payload buffer
  uint16_t bytes;
  uint8_t mag;
};

struct FramesObject {
  PyObject_HEAD
  std::vector<uint8_t>* payload;   // every layer, big-endian float32, layer after layer
  std::vector<ChunkInfo>* chunks;
  uint16_t job;
  uint16_t rank;
  uint32_t round;
  uint8_t epoch;
};

void put16(uint8_t* p, uint32_t v) { p[0] = static_cast<uint8_t>(v >> 8); p[1] = static_cast<uint8_t>(v); }
void put32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24); p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8); p[3] = static_cast<uint8_t>(v);
}

// Writes chunk c's DATA frame (header and payload) at `out`; returns its length.
size_t write_frame(const FramesObject* f, const ChunkInfo& c, uint8_t flags, uint8_t* out) {
  out[0] = static_cast<uint8_t>((VERSION << 4) | KIND_DATA);
  out[1] = flags;
  put16(out + 2, f->job);
  put16(out + 4, f->rank);
  put16(out + 6, c.layer);
  put32(out + 8, f->round);
  out[12] = c.mag;
  out[13] = f->epoch;
  put16(out + 14, c.bytes);
  put32(out + 16, c.seq);
  put32(out + 20, c.offset);
  std::memset(out + 24, 0, 8);   // telemetry: the switches stamp it
  std::memcpy(out + HEADER_LEN, f->payload->data() + c.start, c.bytes);
  return HEADER_LEN + c.bytes;
}

void frames_dealloc(FramesObject* self) {
  delete self->payload;
  delete self->chunks;
  Py_TYPE(self)->tp_free(reinterpret_cast<PyObject*>(self));
}

bool in_range(long v, long hi, const char* what) {
  if (v >= 0 && v <= hi) return true;
  PyErr_Format(PyExc_ValueError, "%s %ld is outside 0..%ld", what, v, hi);
  return false;
}

// DataFrames(layers, chunk_elems, mag_classes, job_id, rank, round, policy_epoch): `layers` are
// C-contiguous float32 buffers, `chunk_elems` one chunk size per layer, `mag_classes` one byte
// per chunk (layer order, then offset, as ChunkPlan.split lists them).
int frames_init(FramesObject* self, PyObject* args, PyObject*) {
  PyObject *layers_o, *elems_o;
  Py_buffer mags;
  long job, rank, round, epoch;
  if (!PyArg_ParseTuple(args, "OOy*llll", &layers_o, &elems_o, &mags, &job, &rank, &round, &epoch))
    return -1;
  auto fail = [&mags]() { PyBuffer_Release(&mags); return -1; };
  if (!in_range(job, 0xffff, "job_id") || !in_range(rank, 0xffff, "rank") ||
      !in_range(round, 0xffffffffL, "round") || !in_range(epoch, 0xff, "policy_epoch"))
    return fail();
  PyObject* layers = PySequence_Fast(layers_o, "layers");
  if (!layers) return fail();
  PyObject* elems = PySequence_Fast(elems_o, "chunk_elems");
  if (!elems) { Py_DECREF(layers); return fail(); }
  Py_ssize_t n = PySequence_Fast_GET_SIZE(layers);
  auto payload = new std::vector<uint8_t>();
  auto chunks = new std::vector<ChunkInfo>();
  auto cleanup = [&]() {
    Py_DECREF(layers); Py_DECREF(elems); delete payload; delete chunks; return fail();
  };
  if (PySequence_Fast_GET_SIZE(elems) != n || n > 0x10000) {
    PyErr_SetString(PyExc_ValueError, "one chunk size per layer (at most 65536 layers)");
    return cleanup();
  }
  const uint8_t* mag = static_cast<const uint8_t*>(mags.buf);
  for (Py_ssize_t i = 0; i < n; ++i) {
    long size = PyLong_AsLong(PySequence_Fast_GET_ITEM(elems, i));
    if (size == -1 && PyErr_Occurred()) return cleanup();
    if (size < 1 || size > 0xffff / 4) {
      PyErr_SetString(PyExc_ValueError, "a chunk size is outside 1..16383 elements");
      return cleanup();
    }
    Py_buffer view;
    if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(layers, i), &view,
                           PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
      return cleanup();
    if (view.itemsize != 4 || !view.format || std::strcmp(view.format, "f") != 0) {
      PyBuffer_Release(&view);
      PyErr_SetString(PyExc_TypeError, "a layer is not a float32 buffer");
      return cleanup();
    }
    size_t count = static_cast<size_t>(view.len) / 4;
    size_t base = payload->size();
    payload->resize(base + 4 * count);
    const uint8_t* src = static_cast<const uint8_t*>(view.buf);
    uint8_t* dst = payload->data() + base;
    for (size_t e = 0; e < count; ++e) {   // to big-endian, as astype(">f4") does
      uint32_t w;
      std::memcpy(&w, src + 4 * e, 4);
      put32(dst + 4 * e, w);
    }
    PyBuffer_Release(&view);
    for (size_t off = 0, seq = 0; off < count; off += static_cast<size_t>(size), ++seq) {
      if (chunks->size() >= static_cast<size_t>(mags.len)) {
        PyErr_SetString(PyExc_ValueError, "fewer magnitude classes than chunks");
        return cleanup();
      }
      size_t len = std::min(count - off, static_cast<size_t>(size));
      chunks->push_back({static_cast<uint16_t>(i), static_cast<uint32_t>(seq),
                         static_cast<uint32_t>(off), static_cast<uint32_t>(base + 4 * off),
                         static_cast<uint16_t>(4 * len), mag[chunks->size()]});
    }
  }
  if (chunks->size() != static_cast<size_t>(mags.len)) {
    PyErr_SetString(PyExc_ValueError, "more magnitude classes than chunks");
    return cleanup();
  }
  Py_DECREF(layers);
  Py_DECREF(elems);
  PyBuffer_Release(&mags);
  delete self->payload;   // __init__ called again
  delete self->chunks;
  self->payload = payload;
  self->chunks = chunks;
  self->job = static_cast<uint16_t>(job);
  self->rank = static_cast<uint16_t>(rank);
  self->round = static_cast<uint32_t>(round);
  self->epoch = static_cast<uint8_t>(epoch);
  return 0;
}

// The chunk `idx` names and the flags byte, from Python ints; nullptr with an error set.
const ChunkInfo* chunk_arg(FramesObject* f, PyObject* idx_o, PyObject* flags_o, uint8_t& flags) {
  if (!f->chunks) {
    PyErr_SetString(PyExc_RuntimeError, "DataFrames is not initialised");
    return nullptr;
  }
  Py_ssize_t idx = PyLong_AsSsize_t(idx_o);
  if (idx == -1 && PyErr_Occurred()) return nullptr;
  if (idx < 0 || static_cast<size_t>(idx) >= f->chunks->size()) {
    PyErr_SetString(PyExc_IndexError, "no such chunk");
    return nullptr;
  }
  long fl = PyLong_AsLong(flags_o);
  if (fl == -1 && PyErr_Occurred()) return nullptr;
  if (!in_range(fl, 0xff, "flags")) return nullptr;
  flags = static_cast<uint8_t>(fl);
  return &(*f->chunks)[static_cast<size_t>(idx)];
}

// frame(idx, flags) -> bytes
PyObject* frames_frame(FramesObject* self, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "frame(idx, flags)");
    return nullptr;
  }
  uint8_t flags;
  const ChunkInfo* c = chunk_arg(self, args[0], args[1], flags);
  if (!c) return nullptr;
  PyObject* out = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(HEADER_LEN + c->bytes));
  if (!out) return nullptr;
  write_frame(self, *c, flags, reinterpret_cast<uint8_t*>(PyBytes_AS_STRING(out)));
  return out;
}

PyObject* frames_size(FramesObject* self, PyObject* arg) {
  uint8_t flags;
  PyObject* zero = PyLong_FromLong(0);
  const ChunkInfo* c = chunk_arg(self, arg, zero, flags);
  Py_DECREF(zero);
  if (!c) return nullptr;
  return PyLong_FromSize_t(HEADER_LEN + c->bytes);
}

Py_ssize_t frames_len(FramesObject* self) {
  return self->chunks ? static_cast<Py_ssize_t>(self->chunks->size()) : 0;
}

PyMethodDef frames_methods[] = {
    {"frame", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(frames_frame)),
     METH_FASTCALL, "frame(idx, flags) -> the DATA datagram of chunk idx"},
    {"size", reinterpret_cast<PyCFunction>(frames_size), METH_O, "size(idx) -> its length in bytes"},
    {nullptr, nullptr, 0, nullptr}};

PySequenceMethods frames_sequence = {};

PyTypeObject FramesType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// ---- the batch endpoint's queue

struct Entry {
  PyObject* data;    // a finished datagram (a reference held until flush), or nullptr
  size_t start;      // else: the frame's place in the queue's arena
  size_t len;
  sockaddr_in addr;
  int tos;
};

struct QueueObject {
  PyObject_HEAD
  std::vector<Entry>* entries;
  std::vector<uint8_t>* arena;
  PyObject* last_addr;   // the (host, port) of the last entry, and its sockaddr_in
  sockaddr_in last_sa;
  long long unresolved;  // datagrams whose host did not resolve: errors at the next flush
};

void queue_clear(QueueObject* self) {
  for (Entry& e : *self->entries) Py_XDECREF(e.data);
  self->entries->clear();
  self->arena->clear();
}

void queue_dealloc(QueueObject* self) {
  if (self->entries) { queue_clear(self); delete self->entries; }
  delete self->arena;
  Py_XDECREF(self->last_addr);
  Py_TYPE(self)->tp_free(reinterpret_cast<PyObject*>(self));
}

int queue_init(QueueObject* self, PyObject* args, PyObject*) {
  if (!PyArg_ParseTuple(args, "")) return -1;
  if (!self->entries) {
    self->entries = new std::vector<Entry>();
    self->entries->reserve(BATCH);
    self->arena = new std::vector<uint8_t>();
    self->arena->reserve(BATCH * 1500);
  }
  return 0;
}

// The sockaddr_in of `addr` into `out` (the last one's again when it is the same object):
// 1 resolved, 0 a host that does not resolve, -1 a Python error.
int queue_address(QueueObject* self, PyObject* addr, sockaddr_in& out) {
  if (addr == self->last_addr) { out = self->last_sa; return 1; }
  int ok = gradlane_to_sockaddr(addr, out);
  if (ok == 1) {
    Py_INCREF(addr);
    Py_XSETREF(self->last_addr, addr);
    self->last_sa = out;
  }
  return ok;
}

bool queue_ready(QueueObject* self) {
  if (self->entries) return true;
  PyErr_SetString(PyExc_RuntimeError, "SendQueue is not initialised");
  return false;
}

bool tos_arg(PyObject* o, int& tos) {
  long t = PyLong_AsLong(o);
  if (t == -1 && PyErr_Occurred()) return false;
  tos = static_cast<int>(t);
  return true;
}

// add(data, addr, tos): a finished datagram (any bytes-like object)
PyObject* queue_add(QueueObject* self, PyObject* const* args, Py_ssize_t nargs) {
  if (!queue_ready(self)) return nullptr;
  if (nargs != 3) {
    PyErr_SetString(PyExc_TypeError, "add(data, addr, tos)");
    return nullptr;
  }
  Entry e{};
  if (!tos_arg(args[2], e.tos)) return nullptr;
  if (!PyObject_CheckBuffer(args[0])) {
    PyErr_SetString(PyExc_TypeError, "a datagram is a bytes-like object");
    return nullptr;
  }
  int ok = queue_address(self, args[1], e.addr);
  if (ok < 0) return nullptr;
  if (ok == 0) { ++self->unresolved; Py_RETURN_NONE; }
  Py_INCREF(args[0]);
  e.data = args[0];
  self->entries->push_back(e);
  Py_RETURN_NONE;
}

// add_data(frames, idx, flags, addr, tos[, mac]) -> the frame's length (before a trailer): chunk idx's DATA
// frame, built in the queue's buffer; with `mac` (a MacKey) its --packet-mac trailer appended
PyObject* queue_add_data(QueueObject* self, PyObject* const* args, Py_ssize_t nargs) {
  if (!queue_ready(self)) return nullptr;
  if ((nargs != 5 && nargs != 6) || !PyObject_TypeCheck(args[0], &FramesType)) {
    PyErr_SetString(PyExc_TypeError, "add_data(frames: DataFrames, idx, flags, addr, tos[, mac])");
    return nullptr;
  }
  PyObject* mac = nargs == 6 && args[5] != Py_None ? args[5] : nullptr;
  auto* f = reinterpret_cast<FramesObject*>(args[0]);
  uint8_t flags;
  const ChunkInfo* c = chunk_arg(f, args[1], args[2], flags);
  if (!c) return nullptr;
  Entry e{};
  if (!tos_arg(args[4], e.tos)) return nullptr;
  size_t frame = HEADER_LEN + c->bytes;
  size_t len = frame + (mac ? TAG_BYTES : 0);
  int ok = queue_address(self, args[3], e.addr);
  if (ok < 0) return nullptr;
  if (ok == 0) { ++self->unresolved; return PyLong_FromSize_t(frame); }
  e.start = self->arena->size();
  e.len = len;
  self->arena->resize(e.start + len);
  uint8_t* out = self->arena->data() + e.start;
  write_frame(f, *c, flags, out);
  if (mac && !gradlane_mac_tag(mac, out, static_cast<Py_ssize_t>(frame), out + frame)) {
    self->arena->resize(e.start);
    PyErr_SetString(PyExc_TypeError, "add_data's mac is not an initialised MacKey");
    return nullptr;
  }
  self->entries->push_back(e);
  return PyLong_FromSize_t(frame);
}

// flush(fd) -> (sent, bytes_sent, blocked, errors): every queued datagram, in order
PyObject* queue_flush(QueueObject* self, PyObject* arg) {
  if (!queue_ready(self)) return nullptr;
  int fd = PyLong_AsLong(arg);
  if (fd == -1 && PyErr_Occurred()) return nullptr;
  std::vector<Entry>& entries = *self->entries;
  size_t m = entries.size();
  long long sent = 0, bytes = 0, blocked = 0, errors = self->unresolved;
  self->unresolved = 0;
  std::vector<mmsghdr> msgs(m);
  std::vector<iovec> iovs(m);
  std::vector<char> control(m * TOS_SPACE, 0);
  std::vector<Py_buffer> views;
  views.reserve(m);
  auto release = [&]() {
    for (Py_buffer& v : views) PyBuffer_Release(&v);
    queue_clear(self);
  };
  for (size_t i = 0; i < m; ++i) {
    Entry& e = entries[i];
    if (e.data) {
      Py_buffer view;
      if (PyObject_GetBuffer(e.data, &view, PyBUF_SIMPLE) < 0) { release(); return nullptr; }
      views.push_back(view);
      iovs[i] = {view.buf, static_cast<size_t>(view.len)};
    } else {
      iovs[i] = {self->arena->data() + e.start, e.len};
    }
    msghdr& h = msgs[i].msg_hdr;
    std::memset(&h, 0, sizeof(h));
    h.msg_name = &e.addr;
    h.msg_namelen = sizeof(sockaddr_in);
    h.msg_iov = &iovs[i];
    h.msg_iovlen = 1;
    h.msg_control = &control[i * TOS_SPACE];
    h.msg_controllen = TOS_SPACE;
    cmsghdr* c = CMSG_FIRSTHDR(&h);
    c->cmsg_level = IPPROTO_IP;
    c->cmsg_type = IP_TOS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &e.tos, sizeof(int));
  }
  size_t i = 0;   // the GIL stays held: the socket does not block
  while (i < m) {
    unsigned len = static_cast<unsigned>(std::min<size_t>(m - i, BATCH));
    int rc = sendmmsg(fd, &msgs[i], len, 0);
    if (rc > 0) {
      for (int j = 0; j < rc; ++j) bytes += static_cast<long long>(iovs[i + j].iov_len);
      sent += rc;
      i += static_cast<size_t>(rc);
    } else if (rc < 0 && errno == EINTR) {
      continue;
    } else {   // the datagram at i failed: counted as the one-call path counts it, go on
      if (rc < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) ++blocked; else ++errors;
      ++i;
    }
  }
  release();
  return Py_BuildValue("LLLL", sent, bytes, blocked, errors);
}

// queued datagrams, those whose host did not resolve included (they count at the flush)
Py_ssize_t queue_len(QueueObject* self) {
  return self->entries ? static_cast<Py_ssize_t>(self->entries->size() + self->unresolved) : 0;
}

PyMethodDef queue_methods[] = {
    {"add", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(queue_add)), METH_FASTCALL,
     "add(data, addr, tos): queue a finished datagram"},
    {"add_data", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(queue_add_data)),
     METH_FASTCALL, "add_data(frames, idx, flags, addr, tos[, mac]) -> length: queue a DATA frame, signed with mac"},
    {"flush", reinterpret_cast<PyCFunction>(queue_flush), METH_O,
     "flush(fd) -> (sent, bytes, blocked, errors)"},
    {nullptr, nullptr, 0, nullptr}};

PySequenceMethods queue_sequence = {};

PyTypeObject QueueType = {PyVarObject_HEAD_INIT(nullptr, 0)};

}  // namespace

// Adds DataFrames and SendQueue to the extension module `m`; -1 on error.
int gradlane_add_send_frames(PyObject* m) {
  frames_sequence.sq_length = reinterpret_cast<lenfunc>(frames_len);
  FramesType.tp_name = "hosts.transport._native.DataFrames";
  FramesType.tp_basicsize = sizeof(FramesObject);
  FramesType.tp_flags = Py_TPFLAGS_DEFAULT;
  FramesType.tp_doc = "One round's DATA frames, built from the gradient's values.";
  FramesType.tp_new = PyType_GenericNew;
  FramesType.tp_init = reinterpret_cast<initproc>(frames_init);
  FramesType.tp_dealloc = reinterpret_cast<destructor>(frames_dealloc);
  FramesType.tp_methods = frames_methods;
  FramesType.tp_as_sequence = &frames_sequence;
  queue_sequence.sq_length = reinterpret_cast<lenfunc>(queue_len);
  QueueType.tp_name = "hosts.transport._native.SendQueue";
  QueueType.tp_basicsize = sizeof(QueueObject);
  QueueType.tp_flags = Py_TPFLAGS_DEFAULT;
  QueueType.tp_doc = "Datagrams waiting for one sendmmsg, DATA frames built in place.";
  QueueType.tp_new = PyType_GenericNew;
  QueueType.tp_init = reinterpret_cast<initproc>(queue_init);
  QueueType.tp_dealloc = reinterpret_cast<destructor>(queue_dealloc);
  QueueType.tp_methods = queue_methods;
  QueueType.tp_as_sequence = &queue_sequence;
  PyTypeObject* types[] = {&FramesType, &QueueType};
  const char* names[] = {"DataFrames", "SendQueue"};
  for (int i = 0; i < 2; ++i) {
    if (PyType_Ready(types[i]) < 0) return -1;
    Py_INCREF(types[i]);
    if (PyModule_AddObject(m, names[i], reinterpret_cast<PyObject*>(types[i])) < 0) {
      Py_DECREF(types[i]);
      return -1;
    }
  }
  return 0;
}
