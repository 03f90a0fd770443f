# check_svg_golden(SVG EXPECTED_SVG XMLLINT): the picture a command drew
# must be EXPECTED_SVG byte for byte, and well-formed SVG. With
# BUS_UPDATE_GOLDEN set in the environment, it becomes EXPECTED_SVG instead
# (scripts/doc-pictures.sh). Included by the check_*.cmake scripts.
function(check_svg_golden svg expected_svg xmllint)
  if(DEFINED ENV{BUS_UPDATE_GOLDEN})
    file(COPY_FILE ${svg} ${expected_svg})
    message(STATUS "wrote ${expected_svg}")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${svg} ${expected_svg}
                  RESULT_VARIABLE different)
  if(different)
    message(FATAL_ERROR "the picture ${svg} is not ${expected_svg}")
  endif()
  execute_process(COMMAND ${xmllint} --noout --xpath "/*[local-name()='svg']" ${svg}
                  OUTPUT_QUIET ERROR_VARIABLE lint RESULT_VARIABLE bad)
  if(bad)
    message(FATAL_ERROR "${svg} is not well-formed SVG:\n${lint}")
  endif()
endfunction()
