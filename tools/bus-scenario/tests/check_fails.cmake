# The control for check_scenario.cmake: run it with a summary that is wrong
# on purpose, and require it to fail and say what differs. A comparison
# that cannot fail would let every scenario test pass.
#
#   cmake -DPROGRAM=... -DSCENARIO=... -DEXPECTED=wrong.expected.json
#         -DCHECK=check_scenario.cmake "-DMUST_SAY=text" -P check_fails.cmake
execute_process(COMMAND ${CMAKE_COMMAND} -DPROGRAM=${PROGRAM} -DSCENARIO=${SCENARIO}
                        -DEXPECTED=${EXPECTED} -P ${CHECK}
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(rc EQUAL 0)
  message(FATAL_ERROR "check_scenario.cmake accepted the wrong summary ${EXPECTED}")
endif()
string(FIND "${err}" "${MUST_SAY}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "check_scenario.cmake failed, but without saying\n  ${MUST_SAY}\n${err}")
endif()
