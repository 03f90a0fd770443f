#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "bus/delay_queue.hpp"

using queue = bus::delay_queue<int, std::string>;

namespace {
std::vector<std::string> pop_all_due(queue& q, int now) {
  std::vector<std::string> out;
  q.pop_due(now, [&](std::string v) { out.push_back(std::move(v)); });
  return out;
}
} // namespace

TEST_CASE("values come out when due, earliest first, whatever the order they went in") {
  queue q;
  q.push(30, "c");
  q.push(10, "a");
  q.push(20, "b");
  CHECK(q.next_due() == 10);
  CHECK(pop_all_due(q, 9).empty());
  CHECK(pop_all_due(q, 20) == std::vector<std::string>{"a", "b"});
  CHECK(q.next_due() == 30);
  CHECK(pop_all_due(q, 100) == std::vector<std::string>{"c"});
  CHECK(q.empty());
  CHECK_FALSE(q.next_due().has_value());
}

TEST_CASE("values due at the same time keep their arrival order") {
  queue q;
  for (int i = 0; i < 50; ++i)
    q.push(i % 2 == 0 ? 5 : 7, std::to_string(i));
  auto out = pop_all_due(q, 7);
  REQUIRE(out.size() == 50);
  for (int i = 0; i < 25; ++i) {
    CHECK(out[i] == std::to_string(2 * i));
    CHECK(out[25 + i] == std::to_string(2 * i + 1));
  }
}

TEST_CASE("a shorter delay scheduled later overtakes a longer one") {
  queue q;
  q.push(1000, "long");
  q.push(200, "short");
  CHECK(pop_all_due(q, 1000) == std::vector<std::string>{"short", "long"});
}

TEST_CASE("draining returns everything pending, earliest first") {
  queue q;
  std::mt19937 gen(7);
  std::vector<int> dues;
  for (int i = 0; i < 1000; ++i) {
    int due = static_cast<int>(gen() % 100);
    dues.push_back(due);
    q.push(due, std::to_string(due));
  }
  auto out = q.drain();
  std::sort(dues.begin(), dues.end());
  REQUIRE(out.size() == dues.size());
  for (std::size_t i = 0; i < dues.size(); ++i)
    CHECK(out[i] == std::to_string(dues[i]));
  CHECK(q.empty());
}

TEST_CASE("a limited pop takes the earliest due values and leaves the rest due") {
  queue q;
  for (int i = 0; i < 10; ++i)
    q.push(i, std::to_string(i));
  std::vector<std::string> out;
  auto take = [&](std::string v) { out.push_back(std::move(v)); };
  CHECK(q.pop_due(6, take, 3) == 3);
  CHECK(out == std::vector<std::string>{"0", "1", "2"});
  CHECK(q.due_at(6));
  CHECK(q.pop_due(6, take, 3) == 3);
  CHECK(q.pop_due(6, take, 3) == 1); // only 6 was due still
  CHECK_FALSE(q.due_at(6));
  CHECK(q.due_at(7));
  CHECK(out.size() == 7);
  CHECK(out.back() == "6");
}
