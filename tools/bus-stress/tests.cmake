# The stress driver in short configurations, on real threads: each run
# checks every invariant and prints "every invariant held" only if all did
# (its exit code is then 0; a crash fails the test too). Sized to finish in
# seconds each in a Debug build on 2 cores. Seeds are drawn per run and
# printed, so a failure can be replayed with --seed.
#
# Included from tests/CMakeLists.txt when the bus-stress target exists.

set(_bus_stress_held "bus-stress: every invariant held")

# bus_stress_test(NAME ARGS...): runs bus-stress with ARGS and expects every
# invariant to hold.
# Under ThreadSanitizer every thread runs several times slower: the runs
# get four times the budget there, so that a loaded machine cuts none short.
if(BUS_SANITIZER STREQUAL "thread")
  set(_bus_stress_seconds 240)
  set(_bus_stress_timeout 300)
else()
  set(_bus_stress_seconds 60)
  set(_bus_stress_timeout 120)
endif()

function(bus_stress_test name)
  add_test(NAME "${name}" COMMAND $<TARGET_FILE:bus-stress> --max-seconds ${_bus_stress_seconds}
                                  ${ARGN})
  set_tests_properties("${name}" PROPERTIES
    PASS_REGULAR_EXPRESSION "${_bus_stress_held}"
    TIMEOUT ${_bus_stress_timeout}
    LABELS stress)
  if(TARGET bus::rabbitmq)
    # Not beside a test that boots a broker node while it runs: a run keeps
    # every core busy with up to 48 threads, the kernel shares the CPU per
    # thread, and a node booting beside it starved. A restart beside the
    # 48-thread run took 64 s instead of 12; in CI (stop 42, under ASan) it
    # ran past the restart's wait (then 60 s) twice, and the restart tests
    # failed, then every test after them on that node. The locks are the
    # ones those tests hold (tests/transports/rabbitmq/tests.cmake); the
    # runs also take them one after the other, so no two saturate the
    # machine at once.
    set_tests_properties("${name}" PROPERTIES
      RESOURCE_LOCK "rabbitmq_restart_node;rabbitmq_cluster")
  endif()
endfunction()

bus_stress_test("stress: 20 endpoints with random failures and consumer deaths keep every invariant"
  --endpoints 20 --slots 1-8 --messages 15000 --failure-rate 0.3 --death-rate 0.05)

bus_stress_test("stress: 40 endpoints drawing every policy at random keep every invariant"
  --endpoints 40 --slots 1-4 --messages 15000 --policies all --failure-rate 0.4 --death-rate 0.02
  --publish-share 0.05)

bus_stress_test("stress: endpoints with 16 slots and 48 threads never run more handlers than their slots"
  --endpoints 4 --slots 16 --threads 48 --messages 20000 --work-us 3000 --failure-rate 0.1
  --death-rate 0.02)

bus_stress_test("stress: an outage trips rate limiting on every busy endpoint and each recovers after it"
  --endpoints 10 --slots 2-6 --messages 10000 --outage-ms 400 --rate-limit 5,20
  --failure-rate 0.1 --death-rate 0.01)

bus_stress_test("stress: redelivery and max-attempt policies under consumer deaths keep every invariant"
  --endpoints 12 --slots 1-6 --messages 10000 --policies redeliver,max_attempts
  --failure-rate 0.5 --death-rate 0.1)

bus_stress_test("stress: a timed run publishing to every endpoint keeps every invariant"
  --endpoints 8 --slots 1-8 --duration-ms 2000 --messages 200000 --publish-share 0.2
  --failure-rate 0.2 --death-rate 0.02)

if(TARGET bus::rabbitmq)
  # On the throwaway broker of the RabbitMQ tests (the ctest fixture
  # "rabbitmq" of tests/transports/rabbitmq/tests.cmake, which keeps it in
  # <build>/tests/transports/rabbitmq-broker). Smaller: every send waits for
  # the broker's confirmation, and redeliveries wait in its delay levels.
  set(_bus_stress_broker_env "${CMAKE_BINARY_DIR}/tests/transports/rabbitmq-broker/broker.env")
  set(_name "stress: on a RabbitMQ broker 6 endpoints with failures, deaths, every policy and an outage keep every invariant")
  bus_stress_test("${_name}"
    --transport rabbitmq --broker-env "${_bus_stress_broker_env}" --endpoints 6 --slots 1-4
    --messages 2000 --window 200 --policies all --failure-rate 0.3 --death-rate 0.05
    --outage-ms 300)
  set_tests_properties("${_name}" PROPERTIES FIXTURES_REQUIRED rabbitmq)
else()
  # What it refuses, with the exit code for usage mistakes (2).
  add_test(NAME "stress: the rabbitmq transport is refused with a clear error when it is not built"
    COMMAND $<TARGET_FILE:bus-stress> --transport rabbitmq --url amqp://127.0.0.1:5672)
  set_tests_properties("stress: the rabbitmq transport is refused with a clear error when it is not built"
    PROPERTIES PASS_REGULAR_EXPRESSION "RabbitMQ transport is not built" LABELS stress)
endif()
add_test(NAME "stress: a mistaken option is named and the run refused"
  COMMAND $<TARGET_FILE:bus-stress> --failure-rate 1.5 --slots 0)
set_tests_properties("stress: a mistaken option is named and the run refused" PROPERTIES
  PASS_REGULAR_EXPRESSION "--failure-rate: invalid value '1.5'.*--slots: invalid value '0'"
  LABELS stress)
