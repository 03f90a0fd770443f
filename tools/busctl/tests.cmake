# busctl's tests. Included from tests/CMakeLists.txt when the busctl target
# exists.
#
# busctl_unit_tests: the pure parts (command line, settings, selection and
# grouping, replay headers, output, messages read through the admin seam),
# and `busctl outbox` end to end on real SQLite files; no broker.
# busctl_broker_tests: the built busctl program against the throwaway broker
# of the ctest fixture "rabbitmq" (tests/transports/rabbitmq/tests.cmake),
# next to a bus that dead-letters for real. They need the fixture: without
# a broker they fail, they are never skipped.
find_package(rabbitmq-c CONFIG REQUIRED) # imported targets are seen per directory
set(_busctl_tests "${PROJECT_SOURCE_DIR}/tools/busctl/tests")

bus_test_binary(busctl_unit_tests
  SOURCES ${_busctl_tests}/command_line_test.cpp
          ${_busctl_tests}/connection_settings_test.cpp
          ${_busctl_tests}/queued_message_test.cpp
          ${_busctl_tests}/render_test.cpp
          ${_busctl_tests}/replay_headers_test.cpp
          ${_busctl_tests}/selection_test.cpp
          ${_busctl_tests}/leader_move_test.cpp
          ${_busctl_tests}/outbox_report_test.cpp
          ${_busctl_tests}/outbox_command_test.cpp
  LIBS bus_ctl_broker)
target_include_directories(busctl_unit_tests PRIVATE "${_busctl_tests}"
                                                     "${PROJECT_SOURCE_DIR}/tools/busctl/src")

set(_busctl_broker_dir "${CMAKE_BINARY_DIR}/tests/transports/rabbitmq-broker")
add_executable(busctl_broker_tests
  ${_busctl_tests}/broker_commands_test.cpp
  ${_busctl_tests}/broker_errors_test.cpp
  ${_busctl_tests}/replay_on_bus_test.cpp
  ${_busctl_tests}/replay_delivery_limit_test.cpp
  $<TARGET_OBJECTS:bus_catch_main>)
target_link_libraries(busctl_broker_tests PRIVATE Catch2::Catch2 bus_flags bus::runtime
                      bus::rabbitmq bus::sample_exceptions nlohmann_json::nlohmann_json
                      rabbitmq::rabbitmq) # the raw consumer of replay_delivery_limit_test
target_include_directories(busctl_broker_tests PRIVATE "${_busctl_tests}"
                           "${PROJECT_SOURCE_DIR}/tests"
                           "${PROJECT_SOURCE_DIR}/tests/transports/rabbitmq")
# The tests run the program itself, as an operator or a script would.
target_compile_definitions(busctl_broker_tests PRIVATE CATCH_CONFIG_ENABLE_CHRONO_STRINGMAKER
                           BUSCTL_PROGRAM="$<TARGET_FILE:busctl>")
add_dependencies(busctl_broker_tests busctl)
set_source_files_properties(${_busctl_tests}/broker_commands_test.cpp
                            ${_busctl_tests}/broker_errors_test.cpp
                            ${_busctl_tests}/replay_delivery_limit_test.cpp
                            PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
target_precompile_headers(busctl_broker_tests REUSE_FROM bus_caf_pch)
catch_discover_tests(busctl_broker_tests EXTRA_ARGS --warn NoTests TEST_PREFIX "busctl_broker_tests: "
  PROPERTIES FIXTURES_REQUIRED rabbitmq
             ENVIRONMENT "BUS_TEST_BROKER_DIR=${_busctl_broker_dir}"
             TIMEOUT 120)
