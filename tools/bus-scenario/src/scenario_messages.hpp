// The messages of a scenario. The bus binds a handler to a C++ type and a C++
// type to one name on the wire, so each message type a file declares gets a
// C++ type of its own: scenario_message<0> for the first, and so on, up to
// max_message_types. The body carries the scenario's name for the message,
// which is how handlers find their script.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "scenario.hpp"

namespace bus::scenario {

template <std::size_t Slot>
struct scenario_message {
  std::string name;
};

template <std::size_t Slot>
void to_json(nlohmann::json& j, const scenario_message<Slot>& m) {
  j = nlohmann::json{{"name", m.name}};
}

template <std::size_t Slot>
void from_json(const nlohmann::json& j, scenario_message<Slot>& m) {
  j.at("name").get_to(m.name);
}

// CAF needs it to put the message in a request to an actor-served handler.
template <class Inspector, std::size_t Slot>
typename Inspector::result_type inspect(Inspector& f, scenario_message<Slot>& m) {
  return f(m.name);
}

namespace detail {

template <class F, std::size_t... Slots>
void with_message_slot(std::size_t slot, F&& f, std::index_sequence<Slots...>) {
  ((slot == Slots ? (f(type_tag<scenario_message<Slots>>{}), 0) : 0), ...);
}

} // namespace detail

// Calls f(type_tag<scenario_message<slot>>{}); slot < max_message_types.
template <class F>
void with_message_slot(std::size_t slot, F&& f) {
  detail::with_message_slot(slot, std::forward<F>(f),
                            std::make_index_sequence<max_message_types>{});
}

} // namespace bus::scenario
