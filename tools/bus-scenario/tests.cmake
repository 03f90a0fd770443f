# The scenario runner's tests, included by tests/CMakeLists.txt. Each sample
# scenario runs and its summary must be the one written beside it, which
# comes from the seed documents' arithmetic (docs/scenarios.md shows the
# working), not from an earlier run. Then the error paths.

set(_scenario_samples ${PROJECT_SOURCE_DIR}/samples/scenarios)
set(_scenario_tests ${CMAKE_CURRENT_LIST_DIR}/tests)

# bus_scenario_test(<sentence> <sample> [EVENTS] [LINES <file in tests/>] [ARGS ...] [REPEAT])
function(bus_scenario_test sentence sample)
  cmake_parse_arguments(arg "EVENTS;REPEAT" "LINES" "ARGS" ${ARGN})
  set(defines -DPROGRAM=$<TARGET_FILE:bus-scenario> -DSCENARIO=${_scenario_samples}/${sample}.json
              -DEXPECTED=${_scenario_samples}/${sample}.expected.json)
  if(arg_EVENTS)
    list(APPEND defines -DEXPECTED_EVENTS=${_scenario_samples}/${sample}.expected-events.jsonl)
  endif()
  if(arg_LINES)
    list(APPEND defines -DEXPECTED_LINES=${_scenario_tests}/${arg_LINES})
  endif()
  if(arg_REPEAT)
    list(APPEND defines -DREPEAT=ON)
  endif()
  if(arg_ARGS)
    list(APPEND defines "-DARGS=${arg_ARGS}")
  endif()
  add_test(NAME "scenario: ${sentence}"
           COMMAND ${CMAKE_COMMAND} ${defines} -P ${_scenario_tests}/check_scenario.cmake)
endfunction()

# bus_scenario_refused(<sentence> EXPECTED <texts...> ARGS <arguments...> [EXIT_CODE n])
function(bus_scenario_refused sentence)
  cmake_parse_arguments(arg "" "EXIT_CODE" "EXPECTED;ARGS" ${ARGN})
  set(exit_code 2)
  if(DEFINED arg_EXIT_CODE)
    set(exit_code ${arg_EXIT_CODE})
  endif()
  # A quoted argument keeps its semicolons: the lists arrive whole.
  add_test(NAME "scenario: ${sentence}"
           COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:bus-scenario> "-DARGS=${arg_ARGS}"
                   "-DEXPECTED=${arg_EXPECTED}" -DEXIT_CODE=${exit_code}
                   -P ${_scenario_tests}/check_refused.cmake)
endfunction()

# -- the seed documents' behaviours --------------------------------------------

bus_scenario_test("the 12-attempt example ends in the error queue after 12 attempts"
                  twelve_attempts EVENTS)
bus_scenario_test("every chain of Mocha's chain table makes its number of attempts" chain_table)
bus_scenario_test("n immediate and m delayed retries make (n + 1)(m + 1) attempts"
                  attempt_arithmetic)
bus_scenario_test("unrecoverable exceptions and their subtypes go to the error queue at once"
                  unrecoverable)
bus_scenario_test("rate limiting during an outage keeps most messages out of the error queue"
                  rate_limiting)
bus_scenario_test("the most specific scope replaces the others as a whole" scopes)
bus_scenario_test("transport rules replace the bus's and endpoint rules replace the transport's"
                  transport_scope)
bus_scenario_test("conditional rules match by type, then predicate in order, then fallback"
                  predicates)
bus_scenario_test("a consumer's death is a failed attempt, and one that always kills ends in the error queue"
                  consumer_death)
bus_scenario_test("skipped, discarded and faulted messages each end in their place"
                  error_and_skipped_queues)
bus_scenario_test("a dependency breaker shared by two endpoints pauses both through an outage, one probe at a time"
                  dependency_breaker)
bus_scenario_test("a skipped event says why, as the skipped copy's bus-skipped-reason header does"
                  error_and_skipped_queues LINES skipped_reason.lines.jsonl)

# -- what the runner can express ------------------------------------------------

bus_scenario_test("a body that does not decode goes to the error queue at once, without its handler or a fault"
                  malformed_body)
bus_scenario_test("an exception not derived from std::exception is matched by any and by its type, not by exception"
                  foreign_exception)
bus_scenario_test("a handler that takes time keeps its slot busy, and one slower than its timeout fails"
                  slow_handlers LINES slow_handlers.lines.jsonl)
bus_scenario_test("each fault event says what failed, and none is raised for a handled or discarded message"
                  fault_events)
bus_scenario_refused("expectations on fault events that do not hold are each reported, with exit code 3"
  ARGS ${_scenario_tests}/unmet_expectations.json
  EXIT_CODE 3
  EXPECTED "expect.faults.declined.exception: expected \"timeout_error\", the fault says \"http_error\""
           "expect.faults.declined.reason_contains: \"no such words\" is not in the fault's reason"
           "expect.faults.declined.immediate_retries: expected 3, the fault says 1"
           "expect.faults.also-declined: expected no fault, but fault<charge_card> was raised"
           "expect.faults.handled: no fault was raised for \"handled\"")

# -- how it runs ---------------------------------------------------------------

bus_scenario_test("output on virtual time is the same on every run, jitter included"
                  chain_table REPEAT)
bus_scenario_test("a scenario on the wall clock ends as it does on virtual time"
                  consumer_death ARGS --real-time)
add_test(NAME "scenario: the check fails when a summary differs from the expected one"
         COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:bus-scenario>
                 -DSCENARIO=${_scenario_samples}/twelve_attempts.json
                 -DEXPECTED=${_scenario_tests}/twelve_attempts.wrong.expected.json
                 -DCHECK=${_scenario_tests}/check_scenario.cmake
                 "-DMUST_SAY=by_message:"
                 -P ${_scenario_tests}/check_fails.cmake)

# -- error paths: exit code 2 and the path of the bad field --------------------

set(_scenario_invalid ${_scenario_tests}/invalid)
bus_scenario_refused("a negative retry count is refused with the path of the field"
  ARGS ${_scenario_invalid}/negative_retry_count.json
  EXPECTED "negative_retry_count.json: endpoints[1].policy.rules[0].retry.count: expected a non-negative integer")
bus_scenario_refused("unknown fields are refused, every one, with the likely intended name"
  ARGS ${_scenario_invalid}/typos.json
  EXPECTED "endpoints[0].slot: unknown field (did you mean \"slots\"?)"
           "endpoints[0].policy.rules[0].retry.dealy: unknown field (did you mean \"delay\"?)")
bus_scenario_refused("unknown exception types, endpoints and message types are refused"
  ARGS ${_scenario_invalid}/unknown_names.json
  EXPECTED "endpoints[0].handlers[0].script[0].throw: unknown exception type \"http_eror\" (did you mean \"http_error\"?)"
           "send[0].to: unknown endpoint \"biling\" (did you mean \"billing\"?)"
           "send[1].type: unknown message type \"order_place\"")
bus_scenario_refused("a condition on a field the exception lacks or of the wrong kind is refused"
  ARGS ${_scenario_invalid}/bad_predicate.json
  EXPECTED "bus.policy.rules[0].when.field: unknown field of http_error \"code\""
           "bus.policy.rules[1].when.equals: expected an integer"
           "bus.policy.rules[2].when: on_any() takes no condition")
bus_scenario_refused("dependency breakers' settings and names out of range are refused with the path of the field"
  ARGS ${_scenario_invalid}/bad_dependencies.json
  EXPECTED "bus.policy.rules[0].trips: expected the name of a dependency, not an empty string"
           "bus.dependencies.inventory-db.consecutive_failure: unknown field (did you mean \"consecutive_failures\"?)"
           "bus.dependencies.inventory-db.failure_rate: expected a number from 0 (off) to 1"
           "bus.dependencies.inventory-db.open_wait: expected a positive duration"
           "bus.dependencies.pricing-api: consecutive_failures and failure_rate are both off"
           "endpoints[0].depends_on: expected an array")
bus_scenario_refused("a dependency the bus does not declare is refused by the bus, named"
  ARGS ${_scenario_invalid}/undeclared_dependency.json
  EXPECTED "endpoint 'billing' depends on 'inventroy-db', which the bus does not declare")
bus_scenario_refused("values of the wrong kind and impossible chains are refused"
  ARGS ${_scenario_invalid}/bad_values.json
  EXPECTED "endpoints[0].slots: expected a non-negative integer"
           "endpoints[0].rate_limit.wait: expected a duration"
           "endpoints[0].policy.rules[0].redeliver.delay: required with count"
           "endpoints[0].policy.rules[0].action: dead_letter and discard are the whole chain")
bus_scenario_refused("malformed bodies, foreign exceptions and step durations are checked"
  ARGS ${_scenario_invalid}/new_step_fields.json
  EXPECTED "bus.policy.rules[0].when: foreign_error does not derive from std::exception"
           "endpoints[0].handlers[0].script[0].message: foreign_error does not derive from std::exception: it has no message"
           "endpoints[0].handlers[0].script[1].takes: expected a duration"
           "send[0].malformed_body: this body decodes as a message"
           "send[1].script: a message with a malformed body never reaches a handler"
           "send[2].malformed_body: expected a string")
bus_scenario_refused("fault expectations, handler timeouts and slow actor scripts are checked"
  ARGS ${_scenario_invalid}/bad_expectations.json
  EXPECTED "expect.faults.billed: expected true (a fault is raised), false (none is) or an object"
           "expect.faults.declined.exceptoin: unknown field (did you mean \"exception\"?)"
           "expect.faults.declined.endpoint: unknown endpoint \"biling\" (did you mean \"billing\"?)"
           "expect.faults.declined.immediate_retries: expected a non-negative integer"
           "expect.faults.declned: unknown message \"declned\" (did you mean \"declined\"?)"
           "endpoints[0].handlers[0].timeout: only a handler served by an actor"
           "endpoints[1].handlers[0].script[0].throw: a handler with \"die\" or \"takes\" in a script runs in an actor")
bus_scenario_refused("a policy the bus refuses is reported in the bus's own words"
  ARGS ${_scenario_invalid}/bus_refuses.json
  EXPECTED "the bus was refused: invalid_configuration"
           "retry max delay 100ms is below its base delay 1s"
           "rule #2 on<bus::samples::timeout_error>(): no action")
bus_scenario_refused("a file that is not JSON is refused with the line of the mistake"
  ARGS ${_scenario_invalid}/invalid_json.json
  EXPECTED "invalid_json.json: invalid JSON: parse error at line 4")
bus_scenario_refused("a file that cannot be read is refused"
  ARGS ${_scenario_invalid}/no_such_file.json
  EXPECTED "no_such_file.json: cannot read")
bus_scenario_refused("an unknown option is refused"
  ARGS --fast ${_scenario_samples}/twelve_attempts.json
  EXPECTED "unknown option --fast")
if(NOT TARGET bus::rabbitmq)
  bus_scenario_refused("the RabbitMQ transport is refused when the program was built without it"
    ARGS --transport rabbitmq --url amqp://localhost ${_scenario_samples}/twelve_attempts.json
    EXPECTED "not built with RabbitMQ")
else()
  # On the test suite's throwaway broker (the "rabbitmq" fixture): the URL
  # comes from its broker.env, sourced when the test runs.
  set(_scenario_broker_env "${CMAKE_BINARY_DIR}/tests/transports/rabbitmq-broker/broker.env")
  function(bus_scenario_on_rabbitmq sentence sample)
    add_test(NAME "scenario: ${sentence}"
      COMMAND bash -c "set -eu; source \"$0\"; exec \"$@\" \"-DARGS=--real-time;--transport;rabbitmq;--url;$BUS_RABBITMQ_URL\" -P \"${_scenario_tests}/check_scenario.cmake\""
              ${_scenario_broker_env} ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:bus-scenario>
              -DSCENARIO=${_scenario_samples}/${sample}.json
              -DEXPECTED=${_scenario_samples}/${sample}.expected.json)
    set_tests_properties("scenario: ${sentence}" PROPERTIES FIXTURES_REQUIRED rabbitmq)
  endfunction()
  bus_scenario_on_rabbitmq("a scenario on RabbitMQ ends as it does on virtual time" consumer_death)
  # A broker delivers bodies as text: the path a malformed body really takes.
  bus_scenario_on_rabbitmq("malformed bodies on RabbitMQ end as they do on virtual time"
                           malformed_body)
endif()

# The broker.env that the RabbitMQ test above sources, as
# scripts/rabbitmq-test-broker.sh writes it: sourced in bash, every value
# comes back exactly, for a plain folder and for one with spaces and quotes
# in its name. No broker needed.
add_test(NAME "broker.env: the test broker's file sources in bash and its values round-trip"
  COMMAND bash ${_scenario_tests}/broker_env_test.sh ${PROJECT_SOURCE_DIR}/scripts/rabbitmq-test-broker.sh
          ${CMAKE_CURRENT_BINARY_DIR}/broker-env-test)

# -- issue 14: retry budgets and deadlines ---------------------------------------

bus_scenario_test("a retry budget bounds retries to a share of first attempts and loses no message"
                  retry_budget)
bus_scenario_test("redeliveries end at the last one in time, and an expired message never runs"
                  deadlines)
bus_scenario_refused("retry budget and deadline fields are checked, each mistake naming its field"
  ARGS ${_scenario_invalid}/resilience_fields.json
  EXPECTED "bus.retry_budget.min_retries_per_second: expected a non-negative integer"
           "bus.retry_budget.windw: unknown field (did you mean \"window\"?)"
           "bus.expired_messages: unknown action \"drop\"; expected discard or dead_letter"
           "endpoints[0].retry_budget.ratio: expected a number of retries per first attempt between 0 and 1000"
           "endpoints[0].retry_budget.window: expected a window between 1s and 24h"
           "endpoints[0].retry_budget.fallback: unknown fallback \"later\"; expected terminal, next_tier or longest_delay"
           "endpoints[0].inherit_deadline: expected"
           "send[0].time_to_live: expected a duration")

# -- issue 21: the outbox and inbox on SQLite ------------------------------------

bus_scenario_test("with an outbox a handler that fails once and a copy delivered again send onward once; without, twice"
                  outbox)
bus_scenario_test("an outbox on the wall clock ends as it does on virtual time"
                  outbox ARGS --real-time)
bus_scenario_refused("outbox values, handler sends and copies are checked, each mistake naming its field"
  ARGS ${_scenario_invalid}/outbox_fields.json
  EXPECTED "endpoints[0].outbox: endpoint \"billing\": unknown store \"postgresql\"; expected \"sqlite\""
           "endpoints[1].outbox.sqlite: endpoint \"invoicing\": expected the path of the database file"
           "endpoints[2].outbox.sqlit: unknown field (did you mean \"sqlite\"?)"
           "endpoints[3].outbox: endpoint \"stock\": expected \"sqlite\""
           "endpoints[4].handlers[0].sends[0].to: unknown endpoint \"shiping\" (did you mean \"shipping\"?)"
           "endpoints[4].handlers[0].sends[2]: the handler sends invoice_created already"
           "send[0].name: '/' is kept for the messages handlers send"
           "send[1].copies: expected a positive integer")
bus_scenario_refused("a handler served by an actor cannot send"
  ARGS ${_scenario_invalid}/actor_sends.json
  EXPECTED "endpoints[0].handlers[0].sends: a handler with \"die\" or \"takes\" in a script runs in an actor")
bus_scenario_refused("an outbox the bus refuses is reported in the bus's words, naming the endpoint"
  ARGS ${_scenario_invalid}/outbox_refused.json
  EXPECTED "the bus was refused: invalid_configuration"
           "endpoint 'billing': a handler served by an actor cannot write in the outbox's transaction"
           "endpoint 'billing': its outbox keeps inbox records for 168:00:00, but the handler of 'order_placed' may retry a message for 720:00:00")
bus_scenario_refused("an outbox file that cannot be opened is refused, naming the endpoint and the file"
  ARGS ${_scenario_invalid}/outbox_no_file.json
  EXPECTED "endpoint 'billing': its outbox's store did not open: sqlite '"
           "no-such-directory/billing.db': cannot open the database")

# -- issue 24: a policy you can look at ------------------------------------------

# bus_scenario_explained(<sentence> <sample> <expected name> ARGS <arguments...>):
# bus-scenario --explain ARGS samples/scenarios/<sample>.json prints
# tests/<expected name>.explain.txt and draws docs/images/<expected
# name>.explain.svg, the documentation's picture (scripts/doc-pictures.sh
# draws it again after a change of the drawing).
function(bus_scenario_explained sentence sample expected)
  cmake_parse_arguments(arg "" "" "ARGS" ${ARGN})
  add_test(NAME "scenario: ${sentence}"
           COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:bus-scenario>
                   "-DARGS=${arg_ARGS};${_scenario_samples}/${sample}.json"
                   -DEXPECTED=${_scenario_tests}/${expected}.explain.txt
                   -DEXPECTED_SVG=${PROJECT_SOURCE_DIR}/docs/images/${expected}.explain.svg
                   -DXMLLINT=${BUS_XMLLINT} -DOUT_DIR=${CMAKE_CURRENT_BINARY_DIR}
                   -P ${_scenario_tests}/check_explain.cmake)
endfunction()

bus_scenario_explained("explained, the 12-attempt example shows its 12 attempts and their times before it runs"
  twelve_attempts twelve_attempts ARGS --explain sales --exception runtime_error)
bus_scenario_explained("explained, a predicate rule is chosen by the thrown exception's fields"
  predicates predicates_429
  ARGS --explain inventory --exception "{\"throw\": \"http_error\", \"fields\": {\"status\": 429}}")
add_test(NAME "scenario: explained as JSON, the 12-attempt example's plan ends at attempt 12"
         COMMAND bus-scenario --explain sales --exception runtime_error --json
                 ${_scenario_samples}/twelve_attempts.json)
set_tests_properties("scenario: explained as JSON, the 12-attempt example's plan ends at attempt 12"
  PROPERTIES PASS_REGULAR_EXPRESSION "\"attempt\": 12,[^}]*\"then\": {[^}]*\"move_to_error\"")
bus_scenario_refused("--explain names the endpoints there are when asked for one there is not"
  ARGS --explain shiping --exception runtime_error ${_scenario_samples}/twelve_attempts.json
  EXPECTED "no endpoint 'shiping' (the endpoints: sales)")
bus_scenario_refused("--explain needs an exception, and the options of --explain go with it"
  ARGS --explain sales ${_scenario_samples}/twelve_attempts.json
  EXPECTED "--explain needs --exception")
bus_scenario_refused("--svg without --explain is refused"
  ARGS --svg out.svg ${_scenario_samples}/twelve_attempts.json
  EXPECTED "go with --explain")
bus_scenario_refused("--explain with an exception type there is not names the likely one"
  ARGS --explain sales --exception http_eror ${_scenario_samples}/twelve_attempts.json
  EXPECTED "--exception.throw: unknown exception type \"http_eror\"")

# bus_scenario_drawn(<sentence> <sample>): bus-scenario --timeline draws the
# run of samples/scenarios/<sample>.json as docs/images/<sample>.run.svg,
# the documentation's picture (scripts/doc-pictures.sh draws it again).
function(bus_scenario_drawn sentence sample)
  add_test(NAME "scenario: ${sentence}"
           COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:bus-scenario>
                   -DSCENARIO=${_scenario_samples}/${sample}.json
                   -DEXPECTED_SVG=${PROJECT_SOURCE_DIR}/docs/images/${sample}.run.svg
                   -DXMLLINT=${BUS_XMLLINT} -DOUT_DIR=${CMAKE_CURRENT_BINARY_DIR}
                   -P ${_scenario_tests}/check_timeline.cmake)
endfunction()

bus_scenario_drawn("drawn, the 12-attempt example's run: three deliveries of four attempts, then the error queue"
  twelve_attempts)
bus_scenario_drawn("drawn, a dependency breaker's run: held-back attempts in grey, every message handled in the end"
  dependency_breaker)
bus_scenario_refused("--timeline goes with a run, not with --explain"
  ARGS --explain sales --exception runtime_error --timeline out.svg
       ${_scenario_samples}/twelve_attempts.json
  EXPECTED "no --real-time, --transport or --timeline")
bus_scenario_refused("a timeline that cannot be written fails the run, and says where"
  ARGS --timeline ${CMAKE_CURRENT_BINARY_DIR}/no-such-directory/run.svg
       ${_scenario_samples}/twelve_attempts.json
  EXIT_CODE 1
  EXPECTED "cannot write the timeline to")
