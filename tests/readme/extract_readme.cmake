# Reads README.md's ```cpp blocks and writes what tests/readme compiles:
#
#   program_<line>.cpp   a block with `int main(`, as it stands: a whole
#                        program, which must compile on its own
#   fragments.cpp        every other block, each in a function of its own
#                        namespace inside the frame (fragment_frame.hpp),
#                        its #include lines moved to the top of the file
#
# `#line` directives point errors at README.md's own lines. Included by
# tests/readme/CMakeLists.txt at configure time; README.md is a configure
# dependency, so an edit of it regenerates these at the next build.
#
# In:  README (path), OUT_DIR. Out: README_PROGRAMS (the program files).

file(READ "${README}" _text)
# CMake lists split on ';' and treat brackets specially: mask both, then
# split the text into lines.
string(REPLACE ";" "@SEMI@" _text "${_text}")
string(REPLACE "[" "@LB@" _text "${_text}")
string(REPLACE "]" "@RB@" _text "${_text}")
string(REPLACE "\\" "@BS@" _text "${_text}")
string(REPLACE "\n" ";" _lines "${_text}")

function(_readme_unmask out text)
  string(REPLACE "@SEMI@" ";" text "${text}")
  string(REPLACE "@LB@" "[" text "${text}")
  string(REPLACE "@RB@" "]" text "${text}")
  string(REPLACE "@BS@" "\\" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# Writes `content` to `path` only if it differs, so an unchanged README
# rebuilds nothing.
function(_readme_write path content)
  if(EXISTS "${path}")
    file(READ "${path}" _old)
    if(_old STREQUAL content)
      return()
    endif()
  endif()
  file(WRITE "${path}" "${content}")
endfunction()

set(README_PROGRAMS "")
set(_fragments "")
set(_includes "")
set(_in_block FALSE)
set(_number 0)
foreach(_line IN LISTS _lines)
  math(EXPR _number "${_number} + 1")
  if(NOT _in_block)
    if(_line MATCHES "^```cpp *$")
      set(_in_block TRUE)
      math(EXPR _first "${_number} + 1")
      set(_body "")
      set(_block_includes "")
    endif()
    continue()
  endif()
  if(NOT _line MATCHES "^``` *$")
    _readme_unmask(_plain "${_line}")
    string(APPEND _body "${_plain}\n")
    if(_plain MATCHES "^#include ")
      string(APPEND _block_includes "${_plain}\n")
    endif()
    continue()
  endif()
  set(_in_block FALSE)
  if(_body MATCHES "int main\\(")
    set(_file "${OUT_DIR}/program_${_first}.cpp")
    _readme_write("${_file}" "#line ${_first} \"${README}\"\n${_body}")
    list(APPEND README_PROGRAMS "${_file}")
  else()
    string(APPEND _includes "${_block_includes}")
    # Includes were hoisted; a blank line keeps the line numbers right.
    string(REGEX REPLACE "(^|\n)#include [^\n]*" "\\1" _body "${_body}")
    string(APPEND _fragments
      "namespace readme_line_${_first} {\n"
      "using namespace readme_frame;\n"
      "[[maybe_unused]] void fragment(BUS_README_CONTEXT) {\n"
      "  {\n"
      "#line ${_first} \"${README}\"\n"
      "${_body}"
      "  }\n"
      "}\n"
      "} // namespace readme_line_${_first}\n\n")
  endif()
endforeach()
if(_in_block)
  message(FATAL_ERROR "${README}: a ```cpp block is never closed")
endif()

string(CONCAT _generated
  "// Generated from README.md by tests/readme/extract_readme.cmake: do not edit.\n"
  "#include \"fragment_frame.hpp\"\n"
  "${_includes}\n"
  "${_fragments}")
_readme_write("${OUT_DIR}/fragments.cpp" "${_generated}")
