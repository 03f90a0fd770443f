# Runs a command that must be refused: exit code 2 (or EXIT_CODE) and every
# text of EXPECTED (a list) in its standard error.
#
#   cmake -DPROGRAM=bus-scenario "-DARGS=file.json" "-DEXPECTED=text one;text two"
#         [-DEXIT_CODE=2] -P check_refused.cmake
if(NOT DEFINED EXIT_CODE)
  set(EXIT_CODE 2)
endif()
execute_process(COMMAND ${PROGRAM} ${ARGS}
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc STREQUAL EXIT_CODE)
  message(FATAL_ERROR "bus-scenario ${ARGS} exited with ${rc}, expected ${EXIT_CODE}\n"
                      "stderr:\n${err}\nstdout:\n${out}")
endif()
foreach(text IN LISTS EXPECTED)
  string(FIND "${err}" "${text}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "bus-scenario ${ARGS}: standard error lacks\n  ${text}\nstderr:\n${err}")
  endif()
endforeach()
