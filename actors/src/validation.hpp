// Checks an endpoint definition against the registry before anything is
// spawned, so a bad configuration is refused with every mistake named.
#pragma once

#include <string>
#include <vector>

#include "bus/endpoint_builder.hpp"
#include "bus/message_registry.hpp"

namespace bus::detail {

// Fills in defaults (the error and skipped queue names).
void complete(endpoint_definition& def);

// Every mistake in `def`, one sentence each; empty if there is none.
[[nodiscard]] std::vector<std::string> mistakes_in(const endpoint_definition& def,
                                                   const message_registry& registry);

// Resolves the recoverability of each handler of `def`: the shared host,
// bus and transport scopes, then the endpoint's and the handler's own;
// the shared options, then the endpoint's. Stores the result in each
// handler slot; returns every mistake, naming endpoint and handler.
[[nodiscard]] std::vector<std::string> resolve_recoverability(
  endpoint_definition& def, const recoverability_scopes& shared,
  const recoverability_options& shared_options, const message_registry& registry);

} // namespace bus::detail
