// env_file_value: one reader of KEY=VALUE files written for a shell, so the
// tests, the tools and scripts that find a broker through broker.env see
// its values as `source broker.env` would, quotes removed.
#include <fstream>
#include <optional>

#include "bus/rabbitmq_settings.hpp"

namespace bus {

namespace {

// The shell's reading of `text` (what follows KEY=), or nothing if a quote
// is never closed. Only what rabbitmq-test-broker.sh and people write:
// plain words, '...' and "..." pieces side by side ('a'\''b' is a'b).
std::optional<std::string> unquote(const std::string& text) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c == '\'') {
      auto end = text.find('\'', i + 1);
      if (end == std::string::npos)
        return std::nullopt;
      out.append(text, i + 1, end - i - 1);
      i = end + 1;
    } else if (c == '"') {
      ++i;
      bool closed = false;
      while (i < text.size()) {
        if (text[i] == '"') {
          closed = true;
          ++i;
          break;
        }
        if (text[i] == '\\' && i + 1 < text.size()
            && (text[i + 1] == '"' || text[i + 1] == '\\' || text[i + 1] == '$'
                || text[i + 1] == '`'))
          ++i;
        out += text[i++];
      }
      if (!closed)
        return std::nullopt;
    } else if (c == '\\' && i + 1 < text.size()) {
      out += text[i + 1];
      i += 2;
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

} // namespace

result<std::string> env_file_value(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  if (!in)
    return error{errc::invalid_configuration, "cannot read '" + path + "'"};
  std::optional<std::string> found;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    auto start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] == '#')
      continue;
    if (line.compare(start, 7, "export ") == 0)
      start = line.find_first_not_of(" \t", start + 7);
    auto eq = line.find('=', start);
    if (eq == std::string::npos || line.compare(start, eq - start, key) != 0
        || eq - start != key.size())
      continue;
    auto value = unquote(line.substr(eq + 1));
    if (!value)
      return error{errc::invalid_configuration, path + ":" + std::to_string(number) + ": " + key
                                                    + " has a quote that is never closed"};
    found = std::move(*value);
  }
  if (!found)
    return error{errc::invalid_configuration, path + " sets no " + key};
  return *found;
}

} // namespace bus
