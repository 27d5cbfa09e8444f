#!/usr/bin/env bash
# Install everything gradlane needs on a Debian 12 machine, idempotently:
# Debian packages (only when one is missing), a virtualenv in .venv, pinned pip packages.
set -euo pipefail
cd "$(dirname "$0")/.."

# Concurrent `make` invocations (parallel test runs, helpers) must not build the venv twice.
exec 9>.setup.lock
flock 9

# g++ and python3-dev: the native transport core (native/, built by `pip install -e .` below)
APT_PACKAGES=(mininet iputils-ping bridge-utils ethtool libpcap0.8 tcpdump iproute2 iperf3 psmisc procps
              g++ python3-dev)
# Installed with the rest as root; without root, a missing one is a warning, not a stop.
# libssl-dev: OpenSSL's headers and libcrypto for the native packet MAC (setup.py builds the
# extension without it where missing, and the Python MAC signs)
OPTIONAL_APT_PACKAGES=(libssl-dev)
VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}

# Another apt-get or unattended-upgrades may hold the package manager's locks (fcntl locks, which
# flock(1) cannot see): wait for them, bounded, instead of failing.
APT_LOCK_WAIT=${APT_LOCK_WAIT:-300}
APT_LOCKS=(/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock /var/cache/apt/archives/lock)
package_manager_busy() {
  "$PYTHON" - "${APT_LOCKS[@]}" <<'PY'
import fcntl, os, sys
for path in sys.argv[1:]:
    if not os.path.exists(path):
        continue
    with open(path, "a") as lock:
        try:
            fcntl.lockf(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            print(path)
            sys.exit(0)
sys.exit(1)
PY
}
wait_for_package_manager() {
  local held waited=0
  while held=$(package_manager_busy); do
    if [ "$waited" -eq 0 ]; then
      echo "setup: the package manager is busy ($held held by another process); waiting up to ${APT_LOCK_WAIT} s"
    fi
    if [ "$waited" -ge "$APT_LOCK_WAIT" ]; then
      echo "setup: $held still held after ${APT_LOCK_WAIT} s; set APT_LOCK_WAIT to wait longer" >&2
      exit 1
    fi
    sleep 2
    waited=$((waited + 2))
  done
  if [ "$waited" -gt 0 ]; then
    echo "setup: the package manager is free after ${waited} s"
  fi
}

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  installed "$pkg" || missing+=("$pkg")
done
if [ "$(id -u)" -ne 0 ]; then
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: missing Debian packages (${missing[*]}); run as root or install them" >&2
    exit 1
  fi
  for pkg in "${OPTIONAL_APT_PACKAGES[@]}"; do
    installed "$pkg" || echo "setup: $pkg is not installed (not root): the native packet MAC is left out, the Python one signs" >&2
  done
else
  for pkg in "${OPTIONAL_APT_PACKAGES[@]}"; do
    installed "$pkg" || missing+=("$pkg")
  done
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  wait_for_package_manager
  # The lock may be taken again between the wait and the call: apt itself waits the rest.
  apt-get -o DPkg::Lock::Timeout="$APT_LOCK_WAIT" update -qq
  apt-get -o DPkg::Lock::Timeout="$APT_LOCK_WAIT" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

stamp="$VENV/.gradlane-stamp"
# the native core's sources count: an edit rebuilds the extension
want=$(cat requirements.txt requirements-dev.txt pyproject.toml setup.py native/*.h native/*.cpp | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$VENV/bin/python" ]; then
  exit 0
fi
if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating virtualenv $VENV"
  "$PYTHON" -m venv "$VENV"
fi
echo "setup: installing Python packages into $VENV"
pip_install() {
  local log
  log=$(mktemp)
  if ! "$VENV/bin/pip" install -q --disable-pip-version-check "$@" >"$log" 2>&1; then
    grep -v '^WARNING: Location' "$log" >&2
    rm -f "$log"
    echo "setup: pip install $* failed" >&2
    exit 1
  fi
  rm -f "$log"
}
pip_install -r requirements.txt -r requirements-dev.txt
pip_install -e .
"$VENV/bin/python" -c "import p4.v1.p4runtime_pb2, grpc, scapy, mininet, p4target" \
  || { echo "setup: Python environment is incomplete" >&2; exit 1; }
echo "$want" > "$stamp"
