# Runs bus-scenario --explain and checks what it printed and drew: standard
# output must be EXPECTED (a file) and the timeline it wrote with --svg must
# be EXPECTED_SVG (a file) byte for byte, and well-formed SVG (xmllint).
# With BUS_UPDATE_GOLDEN set in the environment it writes both files
# instead (scripts/doc-pictures.sh).
#
#   cmake -DPROGRAM=bus-scenario "-DARGS=--explain;sales;...;file.json"
#         -DEXPECTED=x.explain.txt -DEXPECTED_SVG=x.explain.svg -DXMLLINT=xmllint
#         -DOUT_DIR=dir -P check_explain.cmake
get_filename_component(name ${EXPECTED_SVG} NAME)
set(svg ${OUT_DIR}/${name})
file(REMOVE ${svg})
execute_process(COMMAND ${PROGRAM} ${ARGS} --svg ${svg}
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "bus-scenario ${ARGS} exited with ${rc}\nstderr:\n${err}")
endif()
if(DEFINED ENV{BUS_UPDATE_GOLDEN})
  file(WRITE ${EXPECTED} "${out}")
  message(STATUS "wrote ${EXPECTED}")
endif()
file(READ ${EXPECTED} expected)
if(NOT out STREQUAL expected)
  message(FATAL_ERROR "bus-scenario ${ARGS} printed\n${out}\ninstead of (${EXPECTED})\n${expected}")
endif()
include(${CMAKE_CURRENT_LIST_DIR}/svg_golden.cmake)
check_svg_golden(${svg} ${EXPECTED_SVG} ${XMLLINT})
