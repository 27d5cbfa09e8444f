"""Build of gradlane's native transport core and batched socket I/O (native/): a CPython
extension, optional.

Everything else about the package is in pyproject.toml. The extension is compiled by
`pip install .` / `pip install -e .` (so by `make setup`) with the machine's g++ and Python
headers; when it cannot be built the install still succeeds and the agents run the Python
core (hosts/transport/core.py says so in one line).
"""
from setuptools import Extension, setup

setup(ext_modules=[Extension(
    "hosts.transport._native",
    sources=["native/module.cpp", "native/batch_io.cpp", "native/send_frames.cpp",
             "native/send_acks.cpp"],
    depends=["native/recv_core.h"],
    include_dirs=["native"],
    language="c++",
    # -ffp-contract=off: no fused multiply-add, so every float decision equals the Python core's
    extra_compile_args=["-std=c++17", "-O2", "-ffp-contract=off", "-fvisibility=hidden"],
    optional=True,
)])
