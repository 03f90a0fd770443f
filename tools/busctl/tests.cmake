# busctl's tests. Included from tests/CMakeLists.txt when the busctl target
# exists.
#
# busctl_unit_tests: the pure parts (command line, settings, selection and
# grouping, replay headers, output, AMQP field conversion); no broker.
# busctl_broker_tests: the built busctl program against the throwaway broker
# of the ctest fixture "rabbitmq" (tests/transports/rabbitmq/tests.cmake),
# next to a bus that dead-letters for real. They need the fixture: without
# a broker they fail, they are never skipped.
find_package(rabbitmq-c CONFIG REQUIRED) # imported targets are seen per directory
set(_busctl_tests "${PROJECT_SOURCE_DIR}/tools/busctl/tests")

bus_test_binary(busctl_unit_tests
  SOURCES ${_busctl_tests}/amqp_fields_test.cpp
          ${_busctl_tests}/command_line_test.cpp
          ${_busctl_tests}/connection_settings_test.cpp
          ${_busctl_tests}/render_test.cpp
          ${_busctl_tests}/replay_headers_test.cpp
          ${_busctl_tests}/selection_test.cpp
  LIBS bus_ctl_broker rabbitmq::rabbitmq)
target_include_directories(busctl_unit_tests PRIVATE "${_busctl_tests}"
                                                     "${PROJECT_SOURCE_DIR}/tools/busctl/src")
