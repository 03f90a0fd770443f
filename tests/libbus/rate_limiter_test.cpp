#include <catch2/catch.hpp>

#include "bus/rate_limiter.hpp"

using transition = bus::rate_limiter::transition;

TEST_CASE("the rate limiter starts at the threshold of consecutive failures, once") {
  bus::rate_limiter r({3, std::chrono::seconds(5)});
  CHECK(r.record_failure() == transition::none);
  CHECK(r.record_failure() == transition::none);
  CHECK(r.record_failure() == transition::started);
  CHECK(r.limited());
  CHECK(r.record_failure() == transition::none);
  CHECK(r.streak() == 4);
}

TEST_CASE("the first success ends rate limiting and any success resets the streak") {
  bus::rate_limiter r({2, std::chrono::seconds(5)});
  CHECK(r.record_failure() == transition::none);
  CHECK(r.record_success() == transition::none);
  CHECK(r.record_failure() == transition::none); // the streak started over
  CHECK(r.record_failure() == transition::started);
  CHECK(r.record_success() == transition::ended);
  CHECK_FALSE(r.limited());
  CHECK(r.streak() == 0);
}

TEST_CASE("alternating success and failure never trips the limiter") {
  bus::rate_limiter r({2, std::chrono::seconds(5)});
  for (int i = 0; i < 100; ++i) {
    CHECK(r.record_failure() == transition::none);
    CHECK(r.record_success() == transition::none);
  }
}

TEST_CASE("a threshold of zero turns rate limiting off") {
  bus::rate_limiter r({0, std::chrono::seconds(5)});
  for (int i = 0; i < 1000; ++i)
    CHECK(r.record_failure() == transition::none);
  CHECK_FALSE(r.limited());
}
