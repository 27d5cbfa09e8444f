// Batched UDP I/O for the agents' endpoint (hosts/transport/endpoint.py), part of the
// hosts.transport._native extension (module.cpp registers it):
//   to_sockaddr resolves (host, port) for send_frames.cpp's SendQueue, which puts the
//     endpoint's datagrams on the socket with sendmmsg, each with its own IP_TOS and address;
//   Receiver(fd, slots) drains a socket with recvmmsg into preallocated buffers and returns
//     (data, (host, port), tos) per datagram, the TOS from its IP_TOS ancillary data (the socket
//     has IP_RECVTOS set).
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
#include <unordered_map>
#include <vector>

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

// recv(most) -> ([(data, addr, tos), ...], errno): what waits, up to `most` datagrams; errno 0
// when it stopped because nothing more waited, else the error that stopped it
PyObject* receiver_recv(ReceiverObject* self, PyObject* arg) {
  if (!self->msgs) {
    PyErr_SetString(PyExc_RuntimeError, "Receiver is not initialised");
    return nullptr;
  }
  long most = PyLong_AsLong(arg);
  if (most == -1 && PyErr_Occurred()) return nullptr;
  PyObject* out = PyList_New(0);
  if (!out) return nullptr;
  int err = 0;
  auto& msgs = *self->msgs;
  while (most > 0) {
    unsigned len = static_cast<unsigned>(std::min<long>(most, self->slots));
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
    if (rc < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK) err = errno;
      break;
    }
    for (int i = 0; i < rc; ++i) {
      msghdr& h = msgs[i].msg_hdr;
      int tos = 0;
      for (cmsghdr* c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(&h, c))
        if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS && c->cmsg_len > CMSG_LEN(0))
          tos = *reinterpret_cast<unsigned char*>(CMSG_DATA(c));
      PyObject* data = PyBytes_FromStringAndSize(static_cast<const char*>((*self->iovs)[i].iov_base),
                                                 static_cast<Py_ssize_t>(msgs[i].msg_len));
      PyObject* addr = data ? address_of(self, (*self->addrs)[i]) : nullptr;
      PyObject* t = addr ? Py_BuildValue("(NNi)", data, addr, tos) : nullptr;
      if (!t) { Py_XDECREF(data); Py_DECREF(out); return nullptr; }
      if (PyList_Append(out, t) < 0) { Py_DECREF(t); Py_DECREF(out); return nullptr; }
      Py_DECREF(t);
    }
    most -= rc;
    if (static_cast<unsigned>(rc) < len) break;   // the socket is drained
  }
  return Py_BuildValue("(Ni)", out, err);
}

PyMethodDef receiver_methods[] = {
    {"recv", reinterpret_cast<PyCFunction>(receiver_recv), METH_O,
     "recv(most) -> ([(data, addr, tos), ...], errno)"},
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
  if (PyType_Ready(&ReceiverType) < 0) return -1;
  Py_INCREF(&ReceiverType);
  if (PyModule_AddObject(m, "Receiver", reinterpret_cast<PyObject*>(&ReceiverType)) < 0) {
    Py_DECREF(&ReceiverType);
    return -1;
  }
  return 0;
}
