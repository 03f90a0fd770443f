# Runs a scenario with bus-scenario --timeline and checks the picture of the
# run against EXPECTED_SVG (svg_golden.cmake: byte for byte, well-formed;
# BUS_UPDATE_GOLDEN writes it).
#
#   cmake -DPROGRAM=bus-scenario -DSCENARIO=file.json -DEXPECTED_SVG=x.run.svg
#         -DXMLLINT=xmllint -DOUT_DIR=dir -P check_timeline.cmake
get_filename_component(name ${EXPECTED_SVG} NAME)
set(svg ${OUT_DIR}/${name})
file(REMOVE ${svg})
execute_process(COMMAND ${PROGRAM} --timeline ${svg} ${SCENARIO}
                OUTPUT_QUIET ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "bus-scenario --timeline ${svg} ${SCENARIO} exited with ${rc}\n${err}")
endif()
include(${CMAKE_CURRENT_LIST_DIR}/svg_golden.cmake)
check_svg_golden(${svg} ${EXPECTED_SVG} ${XMLLINT})
