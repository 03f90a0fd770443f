#!/usr/bin/env bash
# Builds the wire fuzzer with clang (libFuzzer, ASan, UBSan) from libbus's
# sources and runs it for a while on a scratch copy of the committed
# corpus. Exits non-zero if the fuzzer finds a crash.
#   run_fuzzer.sh SOURCE_DIR WORK_DIR SECONDS
set -euo pipefail
src=$1 work=$2 seconds=${3:-20}
mkdir -p "$work"
lib="$src/libbus/src"
clang++ -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I"$src/libbus/include" \
  "$src/tests/fuzz/wire_fuzzer.cpp" \
  "$lib/wire.cpp" "$lib/headers.cpp" "$lib/message_registry.cpp" "$lib/message_body.cpp" \
  "$lib/error.cpp" "$lib/time.cpp" "$lib/envelope.cpp" "$lib/fault.cpp" "$lib/exception_info.cpp" \
  "$lib/policy/exception_type.cpp" \
  -o "$work/wire_fuzzer"
rm -rf "$work/corpus" && cp -r "$src/tests/fuzz/corpus/wire" "$work/corpus"
cd "$work"
./wire_fuzzer -max_total_time="$seconds" -print_final_stats=1 corpus
