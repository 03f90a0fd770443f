#include "explain_run.hpp"

#include <fstream>

#include <nlohmann/json.hpp>

#include "bus/policy/explain_svg.hpp"
#include "bus/policy/json.hpp"
#include "bus/testing/harness.hpp"
#include "exception_types.hpp"
#include "json_reader.hpp"
#include "outbox_stores.hpp"
#include "run.hpp"
#include "topology.hpp"

namespace bus::scenario {

namespace {

// The exception `spec` describes, built as a script's "throw" step builds
// it; nothing after reporting why not.
std::exception_ptr exception_of(const std::string& spec, std::ostream& err) {
  nlohmann::json document;
  if (!spec.empty() && spec.front() == '{') {
    try {
      document = nlohmann::json::parse(spec);
    } catch (const nlohmann::json::parse_error& e) {
      err << "bus-scenario: --exception is not valid JSON: " << e.what() << '\n';
      return nullptr;
    }
  } else {
    document = {{"throw", spec}};
  }
  diagnostics d;
  auto parsed = parse_step(node(document, "--exception", d));
  if (parsed && parsed->what != step::kind::raise)
    d.error("--exception", "expected a type name or a \"throw\" step");
  if (!d.empty() || !parsed) {
    for (const auto& e : d.errors())
      err << "bus-scenario: " << e << '\n';
    return nullptr;
  }
  return make_exception(*find_exception_type(parsed->exception), parsed->message, parsed->fields);
}

} // namespace

int explain_on_scenario(const scenario& s, const explain_request& request,
                        const std::string& file, std::ostream& out, std::ostream& err) {
  auto exception = exception_of(request.exception, err);
  if (!exception)
    return exit_invalid;
  // Opened as a run opens them: an endpoint with an outbox is validated
  // with its store (a throwaway file, or the one the scenario names).
  auto stores = outbox_stores::open(s);
  if (!stores) {
    err << file << ": " << stores.error().message << '\n';
    return exit_invalid;
  }
  bus::testing::harness h;
  auto book = std::make_shared<script_book>([&h] { return h.elapsed(); }, s);
  auto b = h.builder();
  auto actors = configure_bus(b, s, book, h.system(), **stores);
  auto built = b.build();
  actors->stop(); // nothing runs: the bus is only built
  h.run();
  if (!built) {
    err << file << ": " << built.error().message << '\n';
    return exit_invalid;
  }
  auto e = (*built)->explain(request.endpoint, request.message_type, exception);
  if (!e) {
    err << file << ": " << e.error().message << '\n';
    return exit_invalid;
  }
  if (request.svg_file) {
    std::ofstream svg(*request.svg_file, std::ios::binary | std::ios::trunc);
    svg << to_svg(*e);
    if (!svg.flush()) {
      err << "bus-scenario: cannot write " << *request.svg_file << '\n';
      return exit_failed;
    }
  }
  if (request.json)
    out << nlohmann::json(*e).dump(2) << '\n';
  else
    out << to_string(*e);
  return exit_ok;
}

} // namespace bus::scenario
