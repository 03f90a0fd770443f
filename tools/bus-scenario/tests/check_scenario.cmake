# Runs bus-scenario on a scenario and compares its summary with the expected
# one, as JSON values (key order and spacing do not matter).
#
#   cmake -DPROGRAM=bus-scenario -DSCENARIO=x.json -DEXPECTED=x.expected.json
#         [-DEXPECTED_EVENTS=x.expected-events.jsonl]  also every event line, in order
#         [-DEXPECTED_LINES=y.jsonl]                   also these lines, each somewhere
#         [-DARGS=--real-time]                         more arguments for bus-scenario
#         [-DREPEAT=ON]                                run twice: the outputs must be identical
#         -P check_scenario.cmake
cmake_minimum_required(VERSION 3.19) # string(JSON)

foreach(required PROGRAM SCENARIO EXPECTED)
  if(NOT DEFINED ${required})
    message(FATAL_ERROR "check_scenario.cmake needs -D${required}=...")
  endif()
endforeach()

function(run_scenario out_var)
  execute_process(COMMAND ${PROGRAM} ${ARGS} ${SCENARIO}
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "bus-scenario ${ARGS} ${SCENARIO} exited with ${rc}:\n${err}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

# The lines of `text` as a list. Semicolons separate CMake list items, and
# the bus's texts contain some: they travel as a placeholder.
function(split_lines text out_var)
  string(REPLACE ";" "<semicolon>" text "${text}")
  string(REGEX REPLACE "\n$" "" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(${out_var} "${lines}" PARENT_SCOPE)
endfunction()

function(unescape text out_var)
  string(REPLACE "<semicolon>" ";" text "${text}")
  set(${out_var} "${text}" PARENT_SCOPE)
endfunction()

run_scenario(output)
if(REPEAT)
  run_scenario(second)
  if(NOT output STREQUAL second)
    message(FATAL_ERROR "two runs of ${SCENARIO} printed different output:\n"
                        "--- first\n${output}--- second\n${second}")
  endif()
endif()

split_lines("${output}" lines)
list(LENGTH lines count)
if(count EQUAL 0)
  message(FATAL_ERROR "bus-scenario printed nothing for ${SCENARIO}")
endif()
list(POP_BACK lines summary)
unescape("${summary}" summary)

file(READ ${EXPECTED} expected)
string(JSON same ERROR_VARIABLE json_error EQUAL "${expected}" "${summary}")
if(json_error)
  message(FATAL_ERROR "cannot compare the summary of ${SCENARIO}: ${json_error}\n"
                      "summary line: ${summary}")
endif()
if(NOT same)
  # Name what differs: each part of the summary in turn.
  set(report "")
  string(JSON keys LENGTH "${expected}" summary)
  math(EXPR last "${keys} - 1")
  foreach(i RANGE ${last})
    string(JSON key MEMBER "${expected}" summary ${i})
    string(JSON want GET "${expected}" summary ${key})
    string(JSON got ERROR_VARIABLE missing GET "${summary}" summary ${key})
    if(missing)
      string(APPEND report "  ${key}: missing from the output\n")
      continue()
    endif()
    string(JSON equal EQUAL "${want}" "${got}")
    if(NOT equal)
      string(APPEND report "  ${key}:\n    expected ${want}\n    actual   ${got}\n")
    endif()
  endforeach()
  message(FATAL_ERROR "the summary of ${SCENARIO} differs from ${EXPECTED}:\n${report}"
                      "whole summary: ${summary}")
endif()

if(DEFINED EXPECTED_EVENTS)
  file(READ ${EXPECTED_EVENTS} expected_text)
  split_lines("${expected_text}" expected_lines)
  list(LENGTH expected_lines want_count)
  list(LENGTH lines got_count)
  if(NOT want_count EQUAL got_count)
    message(FATAL_ERROR "${SCENARIO} printed ${got_count} events, ${EXPECTED_EVENTS} expects "
                        "${want_count}:\n${output}")
  endif()
  math(EXPR last "${want_count} - 1")
  foreach(i RANGE ${last})
    list(GET expected_lines ${i} want)
    list(GET lines ${i} got)
    unescape("${want}" want)
    unescape("${got}" got)
    string(JSON equal EQUAL "${want}" "${got}")
    if(NOT equal)
      math(EXPR line "${i} + 1")
      message(FATAL_ERROR "event ${line} of ${SCENARIO} differs from ${EXPECTED_EVENTS}:\n"
                          "  expected ${want}\n  actual   ${got}")
    endif()
  endforeach()
endif()

if(DEFINED EXPECTED_LINES)
  file(READ ${EXPECTED_LINES} wanted_text)
  split_lines("${wanted_text}" wanted_lines)
  foreach(want IN LISTS wanted_lines)
    unescape("${want}" want)
    set(found FALSE)
    foreach(got IN LISTS lines)
      unescape("${got}" got)
      string(JSON equal ERROR_VARIABLE not_json EQUAL "${want}" "${got}")
      if(NOT not_json AND equal)
        set(found TRUE)
        break()
      endif()
    endforeach()
    if(NOT found)
      message(FATAL_ERROR "${SCENARIO} printed no line equal to\n  ${want}\n"
                          "(from ${EXPECTED_LINES}); it printed:\n${output}")
    endif()
  endforeach()
endif()
