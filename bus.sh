#!/usr/bin/env bash
# The one entry point of the project.
#
#   ./bus.sh demo          build, then run the sample order topology
#   ./bus.sh demo --rabbitmq   the topology as four processes on a throwaway broker
#   ./bus.sh test          build, then run the whole test suite through ctest
#   ./bus.sh test --asan   the same under AddressSanitizer and UBSan (build-asan/)
#   ./bus.sh test --tsan   the same under ThreadSanitizer, CAF included (build-tsan/)
#   ./bus.sh bench         release build, benchmarks against the raw layers (--peer: also node-ts)
#   ./bus.sh build         install what is missing, configure and build only
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
          librabbitmq-dev libcurl4-openssl-dev rabbitmq-server openssl
          libsqlite3-dev libpq-dev libssl-dev postgresql-15
          prometheus-cpp-dev libcivetweb-dev curl
          clang libclang-rt-14-dev libxml2-utils
          chromium chromium-driver python3-selenium)

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

# A build takes 3-5 GB (more with a sanitizer) and ccache up to its 5 GB;
# a disk that fills up mid-build fails a compile with no message that says
# so (CI of 2026-11-28: a precompiled header, 170 MB, failed silently).
# Said before building, not enforced: the build may still fit.
warn_if_disk_low() {
  local free_gb
  free_gb=$(df -P -BG . | awk 'NR == 2 { sub("G", "", $4); print $4 }')
  if [[ -n ${free_gb} ]] && ((free_gb < 10)); then
    say "warning: ${free_gb} GB free on the disk of ${PWD}; a build with its ccache needs about 10"
  fi
}

build() {
  install_missing "${PACKAGES[@]}"
  warn_if_disk_low
  if [[ ${SANITIZER} == thread ]]; then
    # TSan only sees what is instrumented: CAF too (built once, cached).
    say "libcaf_core with ThreadSanitizer (scripts/build-caf-tsan.sh)"
    local caf_root
    caf_root=$(scripts/build-caf-tsan.sh | tail -n 1)
    set -- -DCAF_ROOT="${caf_root}" "$@"
  fi
  say "configuring ${BUILD_DIR} (${BUILD_TYPE})"
  cmake -S . -B "${BUILD_DIR}" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE}" \
    -DBUS_BUILD_TESTS=ON -DBUS_BUILD_SAMPLES=ON -DCMAKE_UNITY_BUILD="${UNITY}" "$@" >/dev/null
  say "building"
  cmake --build "${BUILD_DIR}" -j "${JOBS}"
}

# Sanitizer runs build apart, so a plain build stays as it is.
SANITIZER=""
UNITY=OFF
CTEST_ARGS=()
DEMO=in_memory
use_sanitizer() {
  SANITIZER=$1
  BUILD_DIR=build-${2}
  local supp="$PWD/scripts/sanitizers"
  export UBSAN_OPTIONS="suppressions=${supp}/ubsan.supp:print_stacktrace=1:halt_on_error=1"
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0"
  export TSAN_OPTIONS="suppressions=${supp}/tsan.supp:halt_on_error=1:second_deadlock_stack=1"
  # Not run, as nothing in them is for a sanitizer to judge: the package
  # test (it installs the bus and builds a consumer project against it,
  # which finds Debian's CAF, not TSan's; it checks packaging, which the
  # plain run does); the fuzz test (one thread parsing bytes, in a clang
  # build of its own with libFuzzer, ASan and UBSan that takes no flags of
  # this build, so it is the very run of ./bus.sh test). The three-node
  # cluster's tests are not even built under a sanitizer
  # (tests/transports/rabbitmq/tests.cmake).
  CTEST_ARGS+=(-E "^package:|^fuzz:")
  # A sanitizer build is mostly made whole (in CI, from nothing): compiled
  # as CMake's unity build (each target's sources in batches of 8, one
  # compile per batch) it takes under half the time (docs/tsan.md, "Unity
  # builds"), as a batch parses the headers and instantiates the templates
  # its files share once, not once per file. The plain build stays a file
  # per compile: an edit recompiles one file, and a file that misses an
  # include of its own fails there, not hidden by the file before it in a
  # batch. Names private to a file (in an anonymous namespace) must not
  # clash with another file's of the same target.
  UNITY=ON
}

cmd=${1:-help}
shift || true
args=()
for a in "$@"; do
  case "$a" in
    --asan) use_sanitizer address asan ;;
    --rabbitmq) DEMO=rabbitmq ;;
    --tsan)
      use_sanitizer thread tsan
      # Everything runs under TSan, actors on CAF's real threads included:
      # the build links a libcaf_core built with -fsanitize=thread
      # (scripts/build-caf-tsan.sh), so TSan sees CAF's own synchronisation
      # and judges every hand-off between actors.
      ;;
    *) args+=("$a") ;;
  esac
done
set -- "${args[@]+"${args[@]}"}"
[[ -n ${SANITIZER} ]] && set -- -DBUS_SANITIZER="${SANITIZER}" "$@"

case "${cmd}" in
  build)
    build "$@"
    ;;
  test)
    build "$@"
    say "testing${SANITIZER:+ under the ${SANITIZER} sanitizer}"
    # A test that hangs is a failure, not a stuck CI run.
    (cd "${BUILD_DIR}" && ctest -j "${JOBS}" --timeout 300 --output-on-failure "${CTEST_ARGS[@]}")
    ;;
  bench)
    install_missing "${PACKAGES[@]}"
    scripts/bench.sh "${args[@]+"${args[@]}"}"
    ;;
  demo)
    build "$@"
    if [[ ${DEMO} == rabbitmq ]]; then
      say "running the order topology as processes on a throwaway RabbitMQ broker"
      scripts/rabbitmq-demo.sh "${BUILD_DIR}/bin" 300
    else
      say "running the order topology"
      "${BUILD_DIR}/bin/order_topology"
    fi
    ;;
  *)
    sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
    [[ ${cmd} == help || ${cmd} == -h || ${cmd} == --help ]] || exit 2
    ;;
esac
