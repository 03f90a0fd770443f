#!/usr/bin/env bash
# The one entry point of the project.
#
#   ./bus.sh demo     build, then run the sample order topology
#   ./bus.sh test     build, then run the whole test suite through ctest
#   ./bus.sh build    install what is missing, configure and build only
#
# Each command first installs the Debian packages it needs that are not
# there yet (quick when all are), then builds into build/ (programs in
# build/bin/).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

BUILD_DIR=${BUS_BUILD_DIR:-build}
BUILD_TYPE=${BUS_BUILD_TYPE:-Debug}
JOBS=${BUS_JOBS:-$(nproc)}

# Everything the build and the tests need, from Debian's packages.
PACKAGES=(cmake ninja-build g++ ccache git
          libcaf-dev nlohmann-json3-dev libspdlog-dev catch2
          librabbitmq-dev rabbitmq-server)

say() { printf '==> %s\n' "$*"; }

install_missing() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]} == 0)) && return 0
  say "installing ${missing[*]}"
  local sudo=()
  [[ $(id -u) -eq 0 ]] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
}

build() {
  install_missing "${PACKAGES[@]}"
  say "configuring ${BUILD_DIR} (${BUILD_TYPE})"
  cmake -S . -B "${BUILD_DIR}" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE}" \
    -DBUS_BUILD_TESTS=ON -DBUS_BUILD_SAMPLES=ON "$@" >/dev/null
  say "building"
  cmake --build "${BUILD_DIR}" -j "${JOBS}"
}

cmd=${1:-help}
shift || true
case "${cmd}" in
  build)
    build "$@"
    ;;
  test)
    build "$@"
    say "testing"
    # A test that hangs is a failure, not a stuck CI run.
    (cd "${BUILD_DIR}" && ctest -j "${JOBS}" --timeout 300 --output-on-failure)
    ;;
  demo)
    build "$@"
    say "running the order topology"
    "${BUILD_DIR}/bin/order_topology"
    ;;
  *)
    sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
    [[ ${cmd} == help || ${cmd} == -h || ${cmd} == --help ]] || exit 2
    ;;
esac
