# The recoverability policy library's tests (issue 3), included from
# tests/libbus/CMakeLists.txt before the core_tests binary is created.
list(APPEND BUS_CORE_TEST_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/action_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/backoff_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/decide_cost_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/decide_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/exception_type_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/explain_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/explain_svg_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/json_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/masstransit_vocabulary_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/resilience_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/rule_set_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/schedule_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/scopes_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/validate_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/retry_budget_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/deadline_test.cpp)

# Compile checks of the DSL: invalid chains must not compile. Each check
# compiles one file with nothing but libbus's headers on the include path
# (no CAF), and passes only on the compiler error that the invalid chain
# must cause, so a typo in a check file cannot pass as "fails to compile".
# LC_ALL=C keeps GCC's quotes ASCII for the patterns.
#
# The checks have sentence names with spaces and parentheses, which
# add_test() garbles under the project's policy level (CMP0110 is OLD for
# cmake_minimum_required 3.18, and an include() cannot change that for its
# directory). So they are written to a CTest script that ctest includes,
# the same way catch_discover_tests() adds the Catch2 test cases.
get_filename_component(_bus_policy_include "${CMAKE_CURRENT_LIST_DIR}/../../../libbus/include" ABSOLUTE)
set(_bus_policy_flags -std=c++17 -fsyntax-only "-I${_bus_policy_include}")
if(TARGET nlohmann_json::nlohmann_json)
  get_target_property(_bus_policy_json_dirs nlohmann_json::nlohmann_json INTERFACE_INCLUDE_DIRECTORIES)
  foreach(_bus_policy_dir IN LISTS _bus_policy_json_dirs)
    # A system directory passed again can break #include_next in the
    # standard library's headers, so only the others are added.
    if(_bus_policy_dir AND NOT _bus_policy_dir IN_LIST CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES)
      list(APPEND _bus_policy_flags -isystem "${_bus_policy_dir}")
    endif()
  endforeach()
endif()
set(_bus_policy_checks "${CMAKE_CURRENT_LIST_DIR}/compile_fail")
set(_bus_policy_script "")

# _bus_policy_check(NAME FILE REGEX [FLAG...]): the test "policy: NAME"
# compiles FILE with the flags above and FLAG...; it passes when the
# output matches REGEX, or, with an empty REGEX, when the compiler succeeds.
function(_bus_policy_check name file regex)
  set(command "[==[${CMAKE_CXX_COMPILER}]==]")
  foreach(arg IN LISTS _bus_policy_flags ARGN)
    string(APPEND command " [==[${arg}]==]")
  endforeach()
  string(APPEND command " [==[${_bus_policy_checks}/${file}]==]")
  set(test "[==[policy: ${name}]==]")
  set(properties "ENVIRONMENT LC_ALL=C")
  if(regex)
    string(APPEND properties " PASS_REGULAR_EXPRESSION [==[${regex}]==]")
  endif()
  set(_bus_policy_script "${_bus_policy_script}add_test(${test} ${command})\nset_tests_properties(${test} PROPERTIES ${properties})\n" PARENT_SCOPE)
endfunction()

# FILE fails because the stage type STAGE has no member MEMBER (GCC's or
# Clang's wording).
function(_bus_policy_no_member name file stage member)
  _bus_policy_check("${name} does not compile" ${file}
    "bus::${stage}[^']*' has no member named '${member}'|no member named '${member}' in 'bus::${stage}")
  set(_bus_policy_script "${_bus_policy_script}" PARENT_SCOPE)
endfunction()

# FILE fails on the DSL's own static_assert, whose text contains MESSAGE.
function(_bus_policy_static_assert name file message)
  _bus_policy_check("${name} does not compile" ${file} "static.assert[^\n]*${message}")
  set(_bus_policy_script "${_bus_policy_script}" PARENT_SCOPE)
endfunction()

# The positive control: every valid chain compiles, warning-free.
_bus_policy_check("every valid chain compiles" valid_chains.cpp "" -Wall -Wextra -Wpedantic -Werror)
_bus_policy_no_member("redeliver().then_redeliver()" redeliver_then_redeliver.cpp
  redelivery_stage then_redeliver)
_bus_policy_no_member("a retry after then_redeliver()" retry_after_then_redeliver.cpp
  redelivery_stage retry)
_bus_policy_no_member("retry().retry()" retry_then_retry.cpp retry_stage retry)
_bus_policy_no_member("a retry after dead_letter()" retry_after_dead_letter.cpp chain_end retry)
_bus_policy_no_member("then_redeliver() after discard()" then_redeliver_after_discard.cpp
  chain_end then_redeliver)
_bus_policy_no_member("anything after then_dead_letter()" anything_after_then_dead_letter.cpp
  chain_end then_dead_letter)
_bus_policy_static_assert("a predicate over another type" predicate_of_another_type.cpp
  "the predicate of on<E>\\(predicate\\) is called as predicate\\(const E&\\) -> bool, on a const predicate")
_bus_policy_static_assert("a bare number as a delay" delay_function_of_another_type.cpp
  "a delay function is called as f\\(const E& exception, int attempt\\)")
_bus_policy_static_assert("a delay function that returns a number" delay_function_returning_a_number.cpp
  "a delay function returns a std::chrono duration")
_bus_policy_static_assert("a rule on a reference type" rule_on_a_reference_type.cpp
  "an exception rule names an object type")

file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/bus_policy_compile_checks.cmake" "${_bus_policy_script}")
set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES
  "${CMAKE_CURRENT_BINARY_DIR}/bus_policy_compile_checks.cmake")
