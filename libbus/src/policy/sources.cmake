# The recoverability policy library (issue 3): included from
# libbus/CMakeLists.txt right after bus_core is declared.
target_sources(bus_core PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/action.cpp
  ${CMAKE_CURRENT_LIST_DIR}/backoff.cpp
  ${CMAKE_CURRENT_LIST_DIR}/config.cpp
  ${CMAKE_CURRENT_LIST_DIR}/decide.cpp
  ${CMAKE_CURRENT_LIST_DIR}/exception_type.cpp
  ${CMAKE_CURRENT_LIST_DIR}/explain.cpp
  ${CMAKE_CURRENT_LIST_DIR}/explain_svg.cpp
  ${CMAKE_CURRENT_LIST_DIR}/json.cpp
  ${CMAKE_CURRENT_LIST_DIR}/rule.cpp
  ${CMAKE_CURRENT_LIST_DIR}/rule_set.cpp
  ${CMAKE_CURRENT_LIST_DIR}/schedule.cpp
  ${CMAKE_CURRENT_LIST_DIR}/scopes.cpp
  ${CMAKE_CURRENT_LIST_DIR}/validate.cpp
  ${CMAKE_CURRENT_LIST_DIR}/retry_budget.cpp
  ${CMAKE_CURRENT_LIST_DIR}/deadline.cpp)
