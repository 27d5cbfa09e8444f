"""Build of gradlane's native transport core, batched socket I/O and packet MAC (native/): a
CPython extension, optional.

Everything else about the package is in pyproject.toml. The extension is compiled by
`pip install .` / `pip install -e .` (so by `make setup`) with the machine's g++ and Python
headers; when it cannot be built the install still succeeds and the agents run the Python
core (hosts/transport/core.py says so in one line). The packet MAC (native/packet_mac.cpp)
needs OpenSSL's libcrypto and its headers (Debian: libssl-dev); where a test program against
them does not compile and link, the extension is built without it and the Python reference
signs (hosts/transport/mac_impl.py).
"""
import os
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

_PROBE = """#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/crypto.h>
#include <openssl/sha.h>
int main(void) { SHA256_CTX c; SHA256_Init(&c); unsigned char a[1] = {0};
  return CRYPTO_memcmp(a, a, 1); }
"""


def _openssl_builds(compiler) -> bool:  # noqa: ANN001
    """True when a program using libcrypto's SHA-256 compiles and links here."""
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "probe.c")
        with open(src, "w") as f:
            f.write(_PROBE)
        try:
            objects = compiler.compile([src], output_dir=tmp)
            compiler.link_executable(objects, os.path.join(tmp, "probe"), libraries=["crypto"])
        except Exception:   # CompileError, LinkError: no headers or no library
            return False
    return True


class _BuildExt(build_ext):
    """build_ext that links the packet MAC against libcrypto where it is found."""

    def build_extensions(self) -> None:
        if _openssl_builds(self.compiler):
            for ext in self.extensions:
                ext.define_macros.append(("GRADLANE_OPENSSL", "1"))
                ext.libraries.append("crypto")
        else:
            print("gradlane: OpenSSL's libcrypto headers not found (libssl-dev); building the "
                  "native extension without the packet MAC")
        super().build_extensions()


setup(cmdclass={"build_ext": _BuildExt}, ext_modules=[Extension(
    "hosts.transport._native",
    sources=["native/module.cpp", "native/batch_io.cpp", "native/send_frames.cpp",
             "native/send_acks.cpp", "native/mag_classes.cpp", "native/send_order.cpp",
             "native/send_run.cpp",
             "native/packet_mac.cpp"],
    depends=["native/recv_core.h", "native/wire.h"],
    include_dirs=["native"],
    language="c++",
    # -ffp-contract=off: no fused multiply-add, so every float decision equals the Python core's
    extra_compile_args=["-std=c++17", "-O2", "-ffp-contract=off", "-fvisibility=hidden"],
    optional=True,
)])
