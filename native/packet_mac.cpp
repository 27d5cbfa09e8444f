// The --packet-mac trailer in native code, part of the hosts.transport._native extension
// (module.cpp registers it): hosts.transport._native.MacKey(key) signs and verifies datagrams
// exactly as hosts/transport/packet_mac.py does (the reference; tests/unit/hosts/
// test_native_packet_mac.py holds the two to the same tags and decisions):
//   HMAC-SHA256 under `key` over the datagram without its telemetry bytes 24..31, truncated
//   to 16 bytes and appended; verify requires a datagram of at least header + tag bytes.
// HMAC's two keyed SHA-256 states (key ^ ipad, key ^ opad) are computed once per key and copied
// per datagram, so a tag costs the two hashes and no allocation. SHA-256 is OpenSSL's libcrypto
// (its SHA extensions where the CPU has them). Built only when the OpenSSL headers were found
// (setup.py defines GRADLANE_OPENSSL); otherwise the module has no MacKey and the Python
// reference signs (hosts/transport/mac_impl.py).
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#ifdef GRADLANE_OPENSSL

// The SHA256_* calls are deprecated in OpenSSL 3 but exported and unchanged; they are the one
// API whose state can be copied by value, which is what makes the precomputed key cheap.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "wire.h"

namespace {

constexpr Py_ssize_t TAG_BYTES = gradlane::MAC_TAG_BYTES;
constexpr Py_ssize_t HEADER_LEN = gradlane::HEADER_LEN;
constexpr Py_ssize_t TELE_START = 24;     // telemetry bytes 24..31: not covered
constexpr Py_ssize_t TELE_STOP = 32;
constexpr size_t BLOCK = 64;              // SHA-256 block size

struct MacKeyObject {
  PyObject_HEAD
  SHA256_CTX inner;   // after key ^ ipad
  SHA256_CTX outer;   // after key ^ opad
  bool ready;
};

// The 16-byte tag of `data[0:n]` (telemetry excluded) into `out`.
void tag_of(const MacKeyObject* self, const unsigned char* data, Py_ssize_t n, unsigned char* out) {
  SHA256_CTX c = self->inner;
  SHA256_Update(&c, data, static_cast<size_t>(std::min(n, TELE_START)));
  if (n > TELE_STOP) SHA256_Update(&c, data + TELE_STOP, static_cast<size_t>(n - TELE_STOP));
  unsigned char inner[SHA256_DIGEST_LENGTH];
  SHA256_Final(inner, &c);
  SHA256_CTX o = self->outer;
  SHA256_Update(&o, inner, sizeof(inner));
  unsigned char full[SHA256_DIGEST_LENGTH];
  SHA256_Final(full, &o);
  std::memcpy(out, full, TAG_BYTES);
}

// MacKey(key: bytes-like)
int mackey_init(MacKeyObject* self, PyObject* args, PyObject*) {
  Py_buffer key;
  if (!PyArg_ParseTuple(args, "y*", &key)) return -1;
  unsigned char k[BLOCK] = {0};
  if (static_cast<size_t>(key.len) > BLOCK) {   // HMAC: a long key is hashed first
    SHA256(static_cast<const unsigned char*>(key.buf), static_cast<size_t>(key.len), k);
  } else {
    std::memcpy(k, key.buf, static_cast<size_t>(key.len));
  }
  PyBuffer_Release(&key);
  unsigned char pad[BLOCK];
  for (size_t i = 0; i < BLOCK; ++i) pad[i] = k[i] ^ 0x36;
  SHA256_Init(&self->inner);
  SHA256_Update(&self->inner, pad, BLOCK);
  for (size_t i = 0; i < BLOCK; ++i) pad[i] = k[i] ^ 0x5c;
  SHA256_Init(&self->outer);
  SHA256_Update(&self->outer, pad, BLOCK);
  OPENSSL_cleanse(k, sizeof(k));
  OPENSSL_cleanse(pad, sizeof(pad));
  self->ready = true;
  return 0;
}

void mackey_dealloc(MacKeyObject* self) {
  OPENSSL_cleanse(&self->inner, sizeof(self->inner));
  OPENSSL_cleanse(&self->outer, sizeof(self->outer));
  Py_TYPE(self)->tp_free(reinterpret_cast<PyObject*>(self));
}

bool check_ready(const MacKeyObject* self) {
  if (self->ready) return true;
  PyErr_SetString(PyExc_RuntimeError, "MacKey is not initialised");
  return false;
}

// sign(datagram) -> datagram + tag
PyObject* mackey_sign(MacKeyObject* self, PyObject* arg) {
  if (!check_ready(self)) return nullptr;
  Py_buffer view;
  if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return nullptr;
  PyObject* out = PyBytes_FromStringAndSize(nullptr, view.len + TAG_BYTES);
  if (out) {
    auto* dst = reinterpret_cast<unsigned char*>(PyBytes_AS_STRING(out));
    std::memcpy(dst, view.buf, static_cast<size_t>(view.len));
    tag_of(self, dst, view.len, dst + view.len);
  }
  PyBuffer_Release(&view);
  return out;
}

// verify(data) -> the datagram without its trailer, or None (too short, or a wrong tag)
PyObject* mackey_verify(MacKeyObject* self, PyObject* arg) {
  if (!check_ready(self)) return nullptr;
  Py_buffer view;
  if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return nullptr;
  PyObject* out = nullptr;
  if (view.len < HEADER_LEN + TAG_BYTES) {
    out = Py_None;
    Py_INCREF(out);
  } else {
    const auto* data = static_cast<const unsigned char*>(view.buf);
    Py_ssize_t n = view.len - TAG_BYTES;
    unsigned char want[TAG_BYTES];
    tag_of(self, data, n, want);
    if (CRYPTO_memcmp(want, data + n, TAG_BYTES) == 0) {
      out = PyBytes_FromStringAndSize(static_cast<const char*>(view.buf), n);
    } else {
      out = Py_None;
      Py_INCREF(out);
    }
  }
  PyBuffer_Release(&view);
  return out;
}

PyMethodDef mackey_methods[] = {
    {"sign", reinterpret_cast<PyCFunction>(mackey_sign), METH_O,
     "sign(datagram) -> the datagram with its 16-byte trailer"},
    {"verify", reinterpret_cast<PyCFunction>(mackey_verify), METH_O,
     "verify(data) -> the datagram without its trailer, or None when missing or wrong"},
    {nullptr, nullptr, 0, nullptr}};

PyTypeObject MacKeyType = {PyVarObject_HEAD_INIT(nullptr, 0)};

}  // namespace

// 1 with `data[0:n]`'s tag written to `out` when `key` is a MacKey, 0 when it is not (no error
// set): SendQueue signs the DATA frames it builds with it (send_frames.cpp).
int gradlane_mac_tag(PyObject* key, const unsigned char* data, Py_ssize_t n, unsigned char* out) {
  if (!PyObject_TypeCheck(key, &MacKeyType)) return 0;
  auto* k = reinterpret_cast<MacKeyObject*>(key);
  if (!k->ready) return 0;
  tag_of(k, data, n, out);
  return 1;
}

// When `key` is a MacKey: 1 when `data[0:n]` ends in the right tag of what precedes it (and
// is at least a header and a tag long), else 0; -1 when `key` is not a MacKey (no error set).
// The routed receive path checks signed DATA with it (batch_io.cpp), as `verify` does.
int gradlane_mac_check(PyObject* key, const unsigned char* data, Py_ssize_t n) {
  if (!PyObject_TypeCheck(key, &MacKeyType)) return -1;
  auto* k = reinterpret_cast<MacKeyObject*>(key);
  if (!k->ready) return -1;
  if (n < HEADER_LEN + TAG_BYTES) return 0;
  unsigned char want[TAG_BYTES];
  tag_of(k, data, n - TAG_BYTES, want);
  return CRYPTO_memcmp(want, data + n - TAG_BYTES, TAG_BYTES) == 0 ? 1 : 0;
}

// Adds MacKey to the extension module `m`; -1 on error.
int gradlane_add_packet_mac(PyObject* m) {
  MacKeyType.tp_name = "hosts.transport._native.MacKey";
  MacKeyType.tp_basicsize = sizeof(MacKeyObject);
  MacKeyType.tp_flags = Py_TPFLAGS_DEFAULT;
  MacKeyType.tp_doc = "The --packet-mac trailer (HMAC-SHA256, 16 bytes) under one key.";
  MacKeyType.tp_new = PyType_GenericNew;
  MacKeyType.tp_init = reinterpret_cast<initproc>(mackey_init);
  MacKeyType.tp_dealloc = reinterpret_cast<destructor>(mackey_dealloc);
  MacKeyType.tp_methods = mackey_methods;
  if (PyType_Ready(&MacKeyType) < 0) return -1;
  Py_INCREF(&MacKeyType);
  if (PyModule_AddObject(m, "MacKey", reinterpret_cast<PyObject*>(&MacKeyType)) < 0) {
    Py_DECREF(&MacKeyType);
    return -1;
  }
  return 0;
}

#else   // no OpenSSL headers at build time: no MacKey, the Python reference signs

int gradlane_add_packet_mac(PyObject*) { return 0; }

int gradlane_mac_tag(PyObject*, const unsigned char*, Py_ssize_t, unsigned char*) { return 0; }

int gradlane_mac_check(PyObject*, const unsigned char*, Py_ssize_t) { return -1; }

#endif
