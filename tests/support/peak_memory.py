"""Run a module as ``python -m MODULE ARGS`` would, then write this process's peak RSS (kB).

Usage: python tests/support/peak_memory.py PEAK_FILE MODULE [ARGS ...]

The peak is VmHWM of /proc/self/status, the high-water mark of this program's own memory since
exec. (A child's rusage ru_maxrss is no good here: Linux carries the forking parent's resident
size over exec, so a child of a large test process would report the parent's size.)
"""
import atexit
import runpy
import sys


def _write_peak(path: str) -> None:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                with open(path, "w") as out:
                    out.write(line.split()[1])
                return


if __name__ == "__main__":
    peak_file, module = sys.argv[1], sys.argv[2]
    atexit.register(_write_peak, peak_file)
    sys.argv = [module, *sys.argv[3:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)
