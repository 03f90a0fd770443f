#!/usr/bin/env bash
# Draws the documentation's pictures again with the project's own commands,
# after a deliberate change of what they draw: the explained policies in
# docs/images/*.explain.svg (bus-scenario --explain, with the text it prints
# beside its test), the scenario runs in docs/images/*.run.svg
# (bus-scenario --timeline), the golden timelines of the policy library's
# tests, and the picture of the bus's page (docs/images/dashboard.png: a
# bus with traffic and failed messages, seen in headless Chromium after a
# minute).
# The tests compare the files with what the commands draw today; look at
# the pictures (git diff, a browser) before committing them.
#
#   scripts/doc-pictures.sh [BUILD_DIR]     default: build (./bus.sh's)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=${1:-build}
cmake --build "${build}" --target bus-scenario core_tests dashboard_host
BUS_UPDATE_GOLDEN=1 ctest --test-dir "${build}" --output-on-failure \
  -R '^(scenario: (explained|drawn)|core_tests: .*drawn)'
/usr/bin/python3 tests/dashboard/page_test.py "${build}/bin/dashboard_host" docs/images picture
git status --short docs/images tools/bus-scenario/tests tests/libbus/policy/golden
