# Installs the built bus into a scratch prefix and runs each of TOOLS from
# <prefix>/bin with --help: it must be there, run without the build tree
# (the build directory's bin/ is not on the way) and print its usage.
# Inputs: BUILD_DIR, TOOLS (a list), WORK_DIR.
foreach(required BUILD_DIR TOOLS WORK_DIR)
  if(NOT DEFINED ${required})
    message(FATAL_ERROR "check_tools.cmake needs -D${required}=...")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
execute_process(COMMAND ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${WORK_DIR}/prefix"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc}):\n${out}")
endif()
foreach(tool IN LISTS TOOLS)
  set(program "${WORK_DIR}/prefix/bin/${tool}")
  if(NOT EXISTS "${program}")
    message(FATAL_ERROR "cmake --install did not install ${tool}: no ${program}")
  endif()
  # From an empty directory, with PATH left as it is: only the installed
  # program is named.
  file(MAKE_DIRECTORY "${WORK_DIR}/elsewhere")
  execute_process(COMMAND "${program}" --help WORKING_DIRECTORY "${WORK_DIR}/elsewhere"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${program} --help exited with ${rc}:\n${out}${err}")
  endif()
  # Both tools print "usage:" and then command lines that start with their name.
  if(NOT out MATCHES "usage:" OR NOT out MATCHES "(^|[ \n])${tool} ")
    message(FATAL_ERROR "${program} --help did not print its usage:\n${out}${err}")
  endif()
  message(STATUS "installed ${tool} runs: ${program} --help")
endforeach()
