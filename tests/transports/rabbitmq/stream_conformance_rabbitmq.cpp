// The stream conformance suite (tests/transports/stream_conformance_test.cpp),
// compiled once more with the RabbitMQ fixture: the contract of streams
// that the in-memory logs keep, held against RabbitMQ's stream queues.
#include "rabbitmq_fixture.hpp"

#define BUS_STREAM_TRANSPORTS bus::test::rabbitmq_fixture
#include "../stream_conformance_test.cpp"

#include <type_traits>

// As in conformance_rabbitmq.cpp: an unguarded #define in the suite would
// replace ours, and this would test the in-memory transport again.
static_assert(std::is_same_v<BUS_STREAM_TRANSPORTS, bus::test::rabbitmq_fixture>,
              "stream_conformance_test.cpp must wrap its #define BUS_STREAM_TRANSPORTS in "
              "#ifndef BUS_STREAM_TRANSPORTS");
