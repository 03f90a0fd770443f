// The transport conformance suite (tests/transports/conformance_test.cpp),
// compiled once more with the RabbitMQ fixture as its only transport: every
// contract the in-memory transport keeps, held against a real broker.
#include "rabbitmq_fixture.hpp"

#define BUS_TRANSPORTS bus::test::rabbitmq_fixture
#include "../conformance_test.cpp"

#include <type_traits>

// Were the #define in conformance_test.cpp not guarded by #ifndef, it would
// have replaced ours, and this binary would test the in-memory transport
// again without a word.
static_assert(
    std::is_same_v<BUS_TRANSPORTS, bus::test::rabbitmq_fixture>,
    "conformance_test.cpp must wrap its #define BUS_TRANSPORTS in #ifndef BUS_TRANSPORTS");
