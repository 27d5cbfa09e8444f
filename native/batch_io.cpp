// Batched UDP I/O for the agents' endpoint (hosts/transport/endpoint.py), part of the
// hosts.transport._native extension (module.cpp registers it):
//   to_sockaddr resolves (host, port) for send_frames.cpp's SendQueue, which puts the
//     endpoint's datagrams on the socket with sendmmsg, each with its own IP_TOS and address;
//   Receiver(fd, slots) drains a socket with recvmmsg into preallocated buffers and returns
//     (data, (host, port), tos) per datagram, the TOS from its IP_TOS ancillary data (the socket
//     has IP_RECVTOS set); or, with `route`, hands each DATA datagram of an open native receive
//     session straight to its RecvCore (module.cpp) and returns only the rest, one at a time.
// Each datagram meets the outcome the one-call-per-datagram path gives it (sent, would block,
// or another error), so the counters and the wire are the same; only the number of system
// calls differs.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <arpa/inet.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <ctime>
#include <unordered_map>
#include <vector>

#include "recv_core.h"

bool gradlane_is_recv_core(PyObject* obj);   // module.cpp
int gradlane_core_deliver(PyObject* obj, const gradlane::Data& d, PyObject* addr, double now,
                          PyObject** frame);
int gradlane_mac_check(PyObject* key, const unsigned char* data, Py_ssize_t n);   // packet_mac.cpp

namespace {

constexpr unsigned BATCH = 256;          // messages per sendmmsg / most per recvmmsg
constexpr size_t MAX_DATAGRAM = 65535;   // what the per-datagram path's buffer holds
constexpr size_t TOS_SPACE = CMSG_SPACE(sizeof(int));

// (host, port) -> sockaddr_in, as Python's socket module resolves an AF_INET address:
// numeric first, "" any, "<broadcast>" broadcast, else a name lookup. 1: resolved; 0: a name
// that does not resolve (the datagram fails, as socket.gaierror would); -1: a Python error.
int to_sockaddr(PyObject* addr, sockaddr_in& out) {
  const char* host;
  int port;
  if (!PyTuple_Check(addr) || !PyArg_ParseTuple(addr, "si", &host, &port)) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "address must be (host, port)");
    return -1;
  }
  if (port < 0 || port > 0xffff) {
    PyErr_SetString(PyExc_OverflowError, "port must be 0-65535");
    return -1;
  }
  std::memset(&out, 0, sizeof(out));
  out.sin_family = AF_INET;
  out.sin_port = htons(static_cast<uint16_t>(port));
  if (host[0] == '\0') { out.sin_addr.s_addr = htonl(INADDR_ANY); return 1; }
  if (std::strcmp(host, "<broadcast>") == 0) { out.sin_addr.s_addr = htonl(INADDR_BROADCAST); return 1; }
  if (inet_pton(AF_INET, host, &out.sin_addr) == 1) return 1;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = getaddrinfo(host, nullptr, &hints, &res);
  Py_END_ALLOW_THREADS
  if (rc != 0 || !res) return 0;
  out.sin_addr = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr;
  freeaddrinfo(res);
  return 1;
}

struct ReceiverObject {
  PyObject_HEAD
  int fd;
  unsigned slots;
  std::vector<mmsghdr>* msgs;
  std::vector<iovec>* iovs;
  std::vector<sockaddr_in>* addrs;
  std::vector<char>* control;
  char* data;   // slots x MAX_DATAGRAM, not zeroed: a page is touched when a datagram fills it
  std::unordered_map<uint64_t, PyObject*>* names;   // (ip, port) -> the (host, port) tuple
  unsigned head, count;   // slots [head, count) hold datagrams received and not yet handed out
};

void receiver_clear_names(ReceiverObject* self) {
  for (auto& kv : *self->names) Py_DECREF(kv.second);
  self->names->clear();
}

void receiver_dealloc(ReceiverObject* self) {
  if (self->names) { receiver_clear_names(self); delete self->names; }
  delete self->msgs; delete self->iovs; delete self->addrs; delete self->control; delete[] self->data;
  Py_TYPE(self)->tp_free(reinterpret_cast<PyObject*>(self));
}

// Receiver(fd, slots=64)
int receiver_init(ReceiverObject* self, PyObject* args, PyObject*) {
  int fd, slots = 64;
  if (!PyArg_ParseTuple(args, "i|i", &fd, &slots)) return -1;
  if (slots < 1 || slots > static_cast<int>(BATCH)) {
    PyErr_Format(PyExc_ValueError, "slots must be 1-%u", BATCH);
    return -1;
  }
  if (self->msgs) {   // __init__ called again
    receiver_clear_names(self);
    delete self->names; delete self->msgs; delete self->iovs; delete self->addrs;
    delete self->control; delete[] self->data;
  }
  self->fd = fd;
  self->slots = static_cast<unsigned>(slots);
  self->msgs = new std::vector<mmsghdr>(self->slots);
  self->iovs = new std::vector<iovec>(self->slots);
  self->addrs = new std::vector<sockaddr_in>(self->slots);
  self->control = new std::vector<char>(self->slots * TOS_SPACE);
  self->data = new char[self->slots * MAX_DATAGRAM];
  self->names = new std::unordered_map<uint64_t, PyObject*>();
  self->head = self->count = 0;
  return 0;
}

PyObject* address_of(ReceiverObject* self, const sockaddr_in& a) {
  uint64_t key = (static_cast<uint64_t>(a.sin_addr.s_addr) << 16) | a.sin_port;
  auto it = self->names->find(key);
  if (it != self->names->end()) { Py_INCREF(it->second); return it->second; }
  char text[INET_ADDRSTRLEN];
  if (!inet_ntop(AF_INET, &a.sin_addr, text, sizeof(text))) return PyErr_SetFromErrno(PyExc_OSError);
  PyObject* t = Py_BuildValue("(si)", text, static_cast<int>(ntohs(a.sin_port)));
  if (!t) return nullptr;
  if (self->names->size() >= 4096) receiver_clear_names(self);   // bounded: spoofed sources
  Py_INCREF(t);
  (*self->names)[key] = t;
  return t;
}

bool initialised(ReceiverObject* self) {
  if (self->msgs) return true;
  PyErr_SetString(PyExc_RuntimeError, "Receiver is not initialised");
  return false;
}

// One pass of handing out datagrams: at most `budget` of them, one recvmmsg per `slots` once
// those received earlier are handed out, and none after the socket was found drained.
struct Pass {
  long budget;
  bool drained = false;
  int err = 0;   // the error that stopped recvmmsg, 0 when it stopped because nothing waited
};

// The slot of the next datagram, or -1 when the pass is over.
int next_slot(ReceiverObject* self, Pass& pass) {
  if (pass.budget <= 0) return -1;
  if (self->head == self->count) {
    if (pass.drained) return -1;
    auto& msgs = *self->msgs;
    unsigned len = static_cast<unsigned>(std::min<long>(pass.budget, self->slots));
    for (unsigned i = 0; i < len; ++i) {
      (*self->iovs)[i] = {self->data + i * MAX_DATAGRAM, MAX_DATAGRAM};
      msghdr& h = msgs[i].msg_hdr;
      h.msg_name = &(*self->addrs)[i];
      h.msg_namelen = sizeof(sockaddr_in);
      h.msg_iov = &(*self->iovs)[i];
      h.msg_iovlen = 1;
      h.msg_control = &(*self->control)[i * TOS_SPACE];
      h.msg_controllen = TOS_SPACE;
      h.msg_flags = 0;
    }
    int rc;   // the GIL stays held: MSG_DONTWAIT, and the buffers are this object's
    do { rc = recvmmsg(self->fd, msgs.data(), len, MSG_DONTWAIT, nullptr); } while (rc < 0 && errno == EINTR);
    if (rc <= 0) {
      if (rc < 0 && errno != EAGAIN && errno != EWOULDBLOCK) pass.err = errno;
      pass.drained = true;
      return -1;
    }
    if (static_cast<unsigned>(rc) < len) pass.drained = true;
    self->head = 0;
    self->count = static_cast<unsigned>(rc);
  }
  pass.budget--;
  return static_cast<int>(self->head++);
}

int tos_of(ReceiverObject* self, int slot) {
  msghdr& h = (*self->msgs)[slot].msg_hdr;
  int tos = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(&h, c))
    if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS && c->cmsg_len > CMSG_LEN(0))
      tos = *reinterpret_cast<unsigned char*>(CMSG_DATA(c));
  return tos;
}

const uint8_t* data_of(ReceiverObject* self, int slot) {
  return reinterpret_cast<const uint8_t*>(self->data) + static_cast<size_t>(slot) * MAX_DATAGRAM;
}

// (data, addr, tos) of the datagram in `slot`, its address tuple `addr` stolen
PyObject* datagram_tuple(ReceiverObject* self, int slot, PyObject* addr) {
  PyObject* data = PyBytes_FromStringAndSize(reinterpret_cast<const char*>(data_of(self, slot)),
                                             static_cast<Py_ssize_t>((*self->msgs)[slot].msg_len));
  if (!data) { Py_DECREF(addr); return nullptr; }
  return Py_BuildValue("(NNi)", data, addr, tos_of(self, slot));
}

// recv(most) -> ([(data, addr, tos), ...], errno): what waits, up to `most` datagrams; errno 0
// when it stopped because nothing more waited, else the error that stopped it
PyObject* receiver_recv(ReceiverObject* self, PyObject* arg) {
  if (!initialised(self)) return nullptr;
  long most = PyLong_AsLong(arg);
  if (most == -1 && PyErr_Occurred()) return nullptr;
  PyObject* out = PyList_New(0);
  if (!out) return nullptr;
  Pass pass{most};
  for (int slot; (slot = next_slot(self, pass)) >= 0;) {
    PyObject* addr = address_of(self, (*self->addrs)[slot]);
    PyObject* t = addr ? datagram_tuple(self, slot, addr) : nullptr;
    if (!t) { Py_DECREF(out); return nullptr; }
    if (PyList_Append(out, t) < 0) { Py_DECREF(t); Py_DECREF(out); return nullptr; }
    Py_DECREF(t);
  }
  return Py_BuildValue("(Ni)", out, pass.err);
}

uint16_t be16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
uint32_t be32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) << 24 | static_cast<uint32_t>(p[1]) << 16 |
         static_cast<uint32_t>(p[2]) << 8 | p[3];
}

// The gradient header's fields the route needs (hosts/wire.py HEADER: "!BBHHHIBBHIIHHI", wire.h)
using gradlane::FLAG_PULL;
using gradlane::HEADER_LEN;
using gradlane::MAC_TAG_BYTES;
using gradlane::VERSION;

struct Route {       // an open native receive session: (round, pull) -> its core and send
  uint32_t round;
  bool pull;
  PyObject* core;    // borrowed from the routes list for the call
  PyObject* send;
};

// EV bits counted by route, in the order of its counts tuple after packets and bytes
constexpr int EV_BITS[] = {gradlane::EV_FOREIGN_RANK, gradlane::EV_CORRUPT, gradlane::EV_NONFINITE,
                           gradlane::EV_LATE, gradlane::EV_RETX, gradlane::EV_DUPLICATE};
constexpr size_t N_COUNTS = 2 + sizeof(EV_BITS) / sizeof(EV_BITS[0]);

double monotonic_now() {   // time.monotonic()'s clock
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// route(most, job_id, peer, routes, rank_addrs, mac) -> (sends, other, taken, errno, counts)
//
// Hands out up to `most` datagrams. One that is DATA of job `job_id` with a well-formed header
// (and, when `mac` is a MacKey, with its right trailer, which is then cut off as Port.parse cuts
// it),
// from `peer` (when not None), from the address `rank_addrs[rank]` (when not None), whose
// (round, PULL flag) is one of `routes` ([(round, pull, core, send), ...], each core a RecvCore)
// goes to that core at the clock's time, as RecvSession.on_packet would take it after
// Port.parse and Router.dispatch; a frame it asks to send is appended to `sends` as
// (send, frame) for the caller to send in order. The first datagram that is not such DATA ends
// the call as `other` = (data, addr, tos) (None when the pass ended), before any datagram after
// it is looked at: the caller dispatches it and calls again. `counts`: packets and bytes of the
// routed DATA, then how many had each event bit EV_FOREIGN_RANK .. EV_DUPLICATE.
PyObject* receiver_route(ReceiverObject* self, PyObject* args) {
  long most;
  unsigned job_id;
  PyObject *peer, *routes_o, *rank_addrs, *mac;
  if (!initialised(self) ||
      !PyArg_ParseTuple(args, "lIOOOO", &most, &job_id, &peer, &routes_o, &rank_addrs, &mac))
    return nullptr;
  if (mac != Py_None && gradlane_mac_check(mac, nullptr, 0) < 0) {
    PyErr_SetString(PyExc_TypeError, "route's mac must be an initialised MacKey or None");
    return nullptr;
  }
  if (rank_addrs != Py_None && !PyDict_Check(rank_addrs)) {
    PyErr_SetString(PyExc_TypeError, "rank_addrs must be a dict or None");
    return nullptr;
  }
  PyObject* fast = PySequence_Fast(routes_o, "routes must be a sequence");
  if (!fast) return nullptr;
  std::vector<Route> routes;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fast); ++i) {
    Route r;
    int pull;
    if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fast, i), "IpOO", &r.round, &pull, &r.core,
                          &r.send)) {
      Py_DECREF(fast);
      return nullptr;
    }
    if (!gradlane_is_recv_core(r.core)) {
      Py_DECREF(fast);
      PyErr_SetString(PyExc_TypeError, "a route's core must be a RecvCore");
      return nullptr;
    }
    r.pull = pull != 0;
    routes.push_back(r);
  }
  PyObject* sends = PyList_New(0);
  if (!sends) { Py_DECREF(fast); return nullptr; }
  PyObject* other = nullptr;
  unsigned long long counts[N_COUNTS] = {};
  long taken = 0;
  Pass pass{most};
  auto fail = [&]() -> PyObject* { Py_DECREF(sends); Py_DECREF(fast); return nullptr; };
  for (int slot; (slot = next_slot(self, pass)) >= 0;) {
    ++taken;
    const uint8_t* p = data_of(self, slot);
    const size_t received = (*self->msgs)[slot].msg_len;
    size_t n = received;
    PyObject* addr = address_of(self, (*self->addrs)[slot]);
    if (!addr) return fail();
    bool signed_ok = true;
    if (mac != Py_None) {   // Port.parse's check first: a wrong or missing tag is its drop
      signed_ok = n > 0 && (p[0] & 0xf) == gradlane::KIND_DATA &&
                  gradlane_mac_check(mac, p, static_cast<Py_ssize_t>(n)) == 1;
      if (signed_ok) n -= MAC_TAG_BYTES;
    }
    const Route* route = nullptr;
    if (signed_ok && n >= HEADER_LEN && (p[0] >> 4) == VERSION &&
        (p[0] & 0xf) == gradlane::KIND_DATA &&
        be16(p + 14) == n - HEADER_LEN && be16(p + 2) == job_id) {
      uint32_t round = be32(p + 8);
      bool pull = (p[1] & FLAG_PULL) != 0;
      for (const Route& r : routes)
        if (r.round == round && r.pull == pull) { route = &r; break; }
    }
    if (route && peer != Py_None) {
      int eq = PyObject_RichCompareBool(addr, peer, Py_EQ);
      if (eq < 0) { Py_DECREF(addr); return fail(); }
      if (!eq) route = nullptr;
    }
    if (route && rank_addrs != Py_None) {
      PyObject* rank = PyLong_FromLong(be16(p + 4));
      PyObject* bound = rank ? PyDict_GetItemWithError(rank_addrs, rank) : nullptr;
      Py_XDECREF(rank);
      if (!bound && PyErr_Occurred()) { Py_DECREF(addr); return fail(); }
      int eq = bound ? PyObject_RichCompareBool(bound, addr, Py_EQ) : 0;
      if (eq < 0) { Py_DECREF(addr); return fail(); }
      if (!eq) route = nullptr;
    }
    if (!route) {
      other = datagram_tuple(self, slot, addr);
      if (!other) return fail();
      break;
    }
    counts[0]++;
    counts[1] += received;
    gradlane::Data d{be16(p + 4), be16(p + 6), be32(p + 16), be32(p + 20), p[1],
                     tos_of(self, slot), be16(p + 24), be32(p + 28), be16(p + 26),
                     p + HEADER_LEN, n - HEADER_LEN};
    PyObject* frame = nullptr;
    int ev = gradlane_core_deliver(route->core, d, addr, monotonic_now(), &frame);
    Py_DECREF(addr);
    if (ev < 0) return fail();
    for (size_t b = 0; b < N_COUNTS - 2; ++b)
      if (ev & EV_BITS[b]) counts[2 + b]++;
    if (frame) {
      PyObject* item = Py_BuildValue("(ON)", route->send, frame);
      if (!item || PyList_Append(sends, item) < 0) { Py_XDECREF(item); return fail(); }
      Py_DECREF(item);
    }
  }
  Py_DECREF(fast);
  PyObject* tally = PyTuple_New(N_COUNTS);
  if (!tally) { Py_DECREF(sends); Py_XDECREF(other); return nullptr; }
  for (size_t i = 0; i < N_COUNTS; ++i)
    PyTuple_SET_ITEM(tally, static_cast<Py_ssize_t>(i), PyLong_FromUnsignedLongLong(counts[i]));
  return Py_BuildValue("(NNliN)", sends, other ? other : (Py_INCREF(Py_None), Py_None), taken,
                       pass.err, tally);
}

PyObject* receiver_pending(ReceiverObject* self, void*) {
  return PyLong_FromUnsignedLong(self->count - self->head);
}

PyGetSetDef receiver_getset[] = {
    {"pending", reinterpret_cast<getter>(receiver_pending), nullptr,
     "Datagrams received from the socket and not yet handed out.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyMethodDef receiver_methods[] = {
    {"recv", reinterpret_cast<PyCFunction>(receiver_recv), METH_O,
     "recv(most) -> ([(data, addr, tos), ...], errno)"},
    {"route", reinterpret_cast<PyCFunction>(receiver_route), METH_VARARGS,
     "route(most, job_id, peer, routes, rank_addrs, mac) -> (sends, other, taken, errno, counts)"},
    {nullptr, nullptr, 0, nullptr}};

PyTypeObject ReceiverType = {PyVarObject_HEAD_INIT(nullptr, 0)};

}  // namespace

// to_sockaddr for send_frames.cpp's queue
int gradlane_to_sockaddr(PyObject* addr, sockaddr_in& out) { return to_sockaddr(addr, out); }

// Adds Receiver to the extension module `m`; -1 on error.
int gradlane_add_batch_io(PyObject* m) {
  ReceiverType.tp_name = "hosts.transport._native.Receiver";
  ReceiverType.tp_basicsize = sizeof(ReceiverObject);
  ReceiverType.tp_flags = Py_TPFLAGS_DEFAULT;
  ReceiverType.tp_doc = "Drains a UDP socket with recvmmsg into preallocated buffers.";
  ReceiverType.tp_new = PyType_GenericNew;
  ReceiverType.tp_init = reinterpret_cast<initproc>(receiver_init);
  ReceiverType.tp_dealloc = reinterpret_cast<destructor>(receiver_dealloc);
  ReceiverType.tp_methods = receiver_methods;
  ReceiverType.tp_getset = receiver_getset;
  if (PyType_Ready(&ReceiverType) < 0) return -1;
  Py_INCREF(&ReceiverType);
  if (PyModule_AddObject(m, "Receiver", reinterpret_cast<PyObject*>(&ReceiverType)) < 0) {
    Py_DECREF(&ReceiverType);
    return -1;
  }
  return 0;
}
