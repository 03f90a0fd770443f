# The RabbitMQ transport's tests (issue 6). Included from
# tests/transports/CMakeLists.txt when bus::rabbitmq exists.
#
# Most of them run against a real broker: a throwaway node that the ctest
# fixture "rabbitmq" starts before them (in the build tree, on free ports,
# under its own node name) and stops after them. If it cannot start, the
# setup test fails and every test that needs it is reported as not run, a
# failure: nothing is skipped for want of a broker.
find_package(rabbitmq-c CONFIG REQUIRED) # the raw client some tests publish with

set(bus_rabbitmq_broker_dir "${CMAKE_CURRENT_BINARY_DIR}/rabbitmq-broker")
set(bus_rabbitmq_broker_script "${PROJECT_SOURCE_DIR}/scripts/rabbitmq-test-broker.sh")

add_test(NAME "rabbitmq: start a throwaway broker"
         COMMAND "${bus_rabbitmq_broker_script}" start "${bus_rabbitmq_broker_dir}")
set_tests_properties("rabbitmq: start a throwaway broker" PROPERTIES
  FIXTURES_SETUP rabbitmq TIMEOUT 200)
add_test(NAME "rabbitmq: stop the throwaway broker"
         COMMAND "${bus_rabbitmq_broker_script}" stop "${bus_rabbitmq_broker_dir}")
set_tests_properties("rabbitmq: stop the throwaway broker" PROPERTIES
  FIXTURES_CLEANUP rabbitmq TIMEOUT 60)

# The pure parts (URL parsing, delay-level arithmetic, envelopes from AMQP
# messages) need no broker.
bus_test_binary(rabbitmq_unit_tests
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/settings_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/delay_levels_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/amqp_message_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/ack_window_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/amqp_fields_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/reconnect_delay_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/stranded_levels_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/confirm_stall_test.cpp
  LIBS bus::rabbitmq rabbitmq::rabbitmq)
target_include_directories(rabbitmq_unit_tests PRIVATE "${PROJECT_SOURCE_DIR}/transports/rabbitmq/src")

# bus_rabbitmq_test_binary(NAME SOURCES...): like bus_test_binary, and each
# discovered test needs the broker fixture and finds the broker through
# BUS_TEST_BROKER_DIR.
function(bus_rabbitmq_test_binary name)
  cmake_parse_arguments(arg "" "" "SOURCES" ${ARGN})
  add_executable(${name} ${arg_SOURCES} $<TARGET_OBJECTS:bus_catch_main>)
  target_link_libraries(${name} PRIVATE Catch2::Catch2 bus_flags bus::rabbitmq bus::in_memory
                                        rabbitmq::rabbitmq)
  target_compile_definitions(${name} PRIVATE CATCH_CONFIG_ENABLE_CHRONO_STRINGMAKER)
  target_include_directories(${name} PRIVATE "${PROJECT_SOURCE_DIR}/tests"
                                             "${CMAKE_CURRENT_FUNCTION_LIST_DIR}")
  catch_discover_tests(${name} EXTRA_ARGS --warn NoTests TEST_PREFIX "${name}: "
    PROPERTIES FIXTURES_REQUIRED rabbitmq
               ENVIRONMENT "BUS_TEST_BROKER_DIR=${bus_rabbitmq_broker_dir}"
               TIMEOUT 90)
endfunction()

# The conformance suites, of queues and of streams, compiled again with the
# RabbitMQ fixture.
bus_rabbitmq_test_binary(rabbitmq_conformance
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/conformance_rabbitmq.cpp
          ${CMAKE_CURRENT_LIST_DIR}/stream_conformance_rabbitmq.cpp)

bus_rabbitmq_test_binary(rabbitmq_tests
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/transport_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/delayed_delivery_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/connection_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/async_send_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/batched_ack_test.cpp)
target_include_directories(rabbitmq_tests PRIVATE
  "${PROJECT_SOURCE_DIR}/transports/rabbitmq/src") # delay level names

# The bus's runtime on the broker: error and skipped queues with their headers.
bus_rabbitmq_test_binary(bus_on_rabbitmq_tests
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/bus_on_rabbitmq_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/trace_on_rabbitmq_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/dependency_pause_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/user_api_rabbitmq_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/free_workers_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/stream_reconnect_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/error_queues_on_rabbitmq_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/foreign_messages_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/servicecontrol_test.cpp)
target_link_libraries(bus_on_rabbitmq_tests PRIVATE bus::runtime)
target_include_directories(bus_on_rabbitmq_tests PRIVATE
  "${PROJECT_SOURCE_DIR}/transports/rabbitmq/src") # the error queues' read count
target_compile_definitions(bus_on_rabbitmq_tests PRIVATE
  BUS_INTEROP_GOLDEN_DIR="${PROJECT_SOURCE_DIR}/tests/interop/golden")
target_precompile_headers(bus_on_rabbitmq_tests REUSE_FROM bus_caf_pch)

# Faults across processes and of the broker itself (issue 6): kill -9 of a
# consumer process in the middle of retries, and a broker restart in the
# middle of a run.
#
# The worker process of the kill test: a bus endpoint on the broker whose
# handler fails as each message says, recording every step in a ledger.
add_executable(rabbitmq_fault_worker ${CMAKE_CURRENT_LIST_DIR}/fault_worker.cpp)
target_link_libraries(rabbitmq_fault_worker PRIVATE bus_flags bus::runtime bus::rabbitmq)

# The restart test restarts its broker, which would cut every connection of
# the tests running beside it on the shared node and, if the node failed to
# come back, fail every RabbitMQ test after it. So it gets a node of its
# own, started and stopped by a second fixture: it can run in parallel with
# the others and disturbs none of them. (RUN_SERIAL on the shared node would
# hold back the whole suite while the node restarts, and still leave the
# later tests on a node that had gone through a restart.)
set(bus_rabbitmq_restart_broker_dir "${CMAKE_CURRENT_BINARY_DIR}/rabbitmq-restart-broker")
add_test(NAME "rabbitmq_restart: start a throwaway broker to restart"
         COMMAND "${bus_rabbitmq_broker_script}" start "${bus_rabbitmq_restart_broker_dir}")
# Its boot holds the node's lock, as its restarts do: no stress run beside
# it (tools/bus-stress/tests.cmake).
set_tests_properties("rabbitmq_restart: start a throwaway broker to restart" PROPERTIES
  FIXTURES_SETUP rabbitmq_restart RESOURCE_LOCK rabbitmq_restart_node TIMEOUT 200)
add_test(NAME "rabbitmq_restart: stop the restarted broker"
         COMMAND "${bus_rabbitmq_broker_script}" stop "${bus_rabbitmq_restart_broker_dir}")
set_tests_properties("rabbitmq_restart: stop the restarted broker" PROPERTIES
  FIXTURES_CLEANUP rabbitmq_restart TIMEOUT 60)

add_executable(rabbitmq_fault_tests
  ${CMAKE_CURRENT_LIST_DIR}/consumer_kill_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/stream_kill_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/poison_message_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/broker_restart_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/readiness_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/consumer_timeout_test.cpp
  $<TARGET_OBJECTS:bus_catch_main>)
target_link_libraries(rabbitmq_fault_tests PRIVATE Catch2::Catch2 bus_flags bus::runtime
                                                   bus::rabbitmq)
target_compile_definitions(rabbitmq_fault_tests PRIVATE CATCH_CONFIG_ENABLE_CHRONO_STRINGMAKER
  BUS_FAULT_WORKER="$<TARGET_FILE:rabbitmq_fault_worker>")
target_include_directories(rabbitmq_fault_tests PRIVATE "${PROJECT_SOURCE_DIR}/tests"
  "${CMAKE_CURRENT_LIST_DIR}" "${PROJECT_SOURCE_DIR}/transports/rabbitmq/src") # delay level names
add_dependencies(rabbitmq_fault_tests rabbitmq_fault_worker)
# The kill test on the shared broker; the restart test on its own. A
# restart takes 10 s on an idle machine and can take a minute on a loaded
# one: hence the longer timeout.
catch_discover_tests(rabbitmq_fault_tests EXTRA_ARGS --warn NoTests TEST_SPEC "[kill],[poison]" TEST_PREFIX "rabbitmq_fault_tests: "
  PROPERTIES FIXTURES_REQUIRED rabbitmq
             ENVIRONMENT "BUS_TEST_BROKER_DIR=${bus_rabbitmq_broker_dir}"
             TIMEOUT 120)
catch_discover_tests(rabbitmq_fault_tests EXTRA_ARGS --warn NoTests TEST_SPEC "[restart],[consumer_timeout]"
  TEST_PREFIX "rabbitmq_fault_tests: "
  PROPERTIES FIXTURES_REQUIRED rabbitmq_restart
             ENVIRONMENT "BUS_TEST_BROKER_DIR=${bus_rabbitmq_restart_broker_dir}"
             # The restart test and the readiness test (readiness_test.cpp)
             # both stop this node, and the consumer-timeout test
             # (consumer_timeout_test.cpp) changes its settings: one at a time.
             RESOURCE_LOCK rabbitmq_restart_node
             TIMEOUT 300)

# Not under a sanitizer: the cluster's tests exercise the same transport
# code as the single-node ones, which do run there, and a cluster costs
# three Erlang nodes' start on CI's two cores for nothing new to judge; so
# their binary is not built either (about a minute of CI's compiling).
if(BUS_SANITIZER)
  return()
endif()

# The cluster (issue 15): three nodes on this machine, started and stopped
# by a fixture of their own (about 19 s to start, 4 s to stop, beside the
# other tests). Its tests kill -9 nodes and revive them, so they hold a
# lock on the cluster and run one after the other; no other test uses the
# cluster. Its start holds the lock too, and so do the stress runs, which
# would starve a booting node (tools/bus-stress/tests.cmake).
set(bus_rabbitmq_cluster_dir "${CMAKE_CURRENT_BINARY_DIR}/rabbitmq-cluster")
add_test(NAME "rabbitmq_cluster: start a three-node cluster"
         COMMAND "${bus_rabbitmq_broker_script}" cluster-start "${bus_rabbitmq_cluster_dir}")
set_tests_properties("rabbitmq_cluster: start a three-node cluster" PROPERTIES
  FIXTURES_SETUP rabbitmq_cluster RESOURCE_LOCK rabbitmq_cluster TIMEOUT 300)
add_test(NAME "rabbitmq_cluster: stop the cluster"
         COMMAND "${bus_rabbitmq_broker_script}" cluster-stop "${bus_rabbitmq_cluster_dir}")
set_tests_properties("rabbitmq_cluster: stop the cluster" PROPERTIES
  FIXTURES_CLEANUP rabbitmq_cluster TIMEOUT 120)

add_executable(rabbitmq_cluster_tests
  ${CMAKE_CURRENT_LIST_DIR}/cluster_failover_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/stranded_level_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/leader_move_test.cpp
  $<TARGET_OBJECTS:bus_catch_main>)
target_link_libraries(rabbitmq_cluster_tests PRIVATE Catch2::Catch2 bus_flags bus::runtime
                                                     bus::rabbitmq)
target_compile_definitions(rabbitmq_cluster_tests PRIVATE CATCH_CONFIG_ENABLE_CHRONO_STRINGMAKER)
# The stranded-level test runs busctl's remedy as an operator would.
if(NOT TARGET busctl)
  message(FATAL_ERROR "the RabbitMQ cluster tests run busctl: build with BUS_BUILD_TOOLS=ON")
endif()
target_compile_definitions(rabbitmq_cluster_tests PRIVATE BUS_BUSCTL="$<TARGET_FILE:busctl>")
add_dependencies(rabbitmq_cluster_tests busctl)
target_include_directories(rabbitmq_cluster_tests PRIVATE "${PROJECT_SOURCE_DIR}/tests"
  "${CMAKE_CURRENT_LIST_DIR}" "${PROJECT_SOURCE_DIR}/transports/rabbitmq/src") # delay level names
target_precompile_headers(rabbitmq_cluster_tests REUSE_FROM bus_caf_pch)
# TIMEOUT: above what a kill case may wait by its own deadlines (210 s
# for the flow, the carrying on, the ends and the error queue) plus a
# revive, which took up to 150 s on a loaded machine; below it a slow run
# was killed without saying which wait ran out.
catch_discover_tests(rabbitmq_cluster_tests EXTRA_ARGS --warn NoTests TEST_PREFIX "rabbitmq_cluster_tests: "
  PROPERTIES FIXTURES_REQUIRED rabbitmq_cluster
             RESOURCE_LOCK rabbitmq_cluster
             ENVIRONMENT "BUS_TEST_BROKER_DIR=${bus_rabbitmq_cluster_dir}"
             TIMEOUT 420)
