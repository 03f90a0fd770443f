#include "bus/svg_drawing.hpp"

#include <algorithm>
#include <cmath>

namespace bus::detail::svg {

std::string escaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string short_duration(duration d) {
  auto ms = std::max<long long>(d.count(), 0);
  if (ms < 1000)
    return std::to_string(ms) + "ms";
  if (ms < 60'000) {
    auto text = std::to_string(ms / 1000);
    if (auto rest = ms % 1000; rest != 0) {
      auto fraction = std::to_string(1000 + rest).substr(1); // three digits
      fraction.erase(fraction.find_last_not_of('0') + 1);
      text += "." + fraction;
    }
    return text + "s";
  }
  auto join = [](long long big, const char* big_unit, long long small, const char* small_unit) {
    return std::to_string(big) + big_unit
           + (small ? " " + std::to_string(small) + small_unit : std::string());
  };
  auto seconds = ms / 1000;
  if (seconds < 3600)
    return join(seconds / 60, "m", seconds % 60, "s");
  if (seconds < 86'400)
    return join(seconds / 3600, "h", seconds / 60 % 60, "m");
  return join(seconds / 86'400, "d", seconds / 3600 % 24, "h");
}

std::vector<std::string> wrapped(std::string_view text) {
  std::vector<std::string> lines;
  std::string line;
  while (!text.empty()) {
    auto space = text.find(' ');
    auto word = text.substr(0, space);
    text = space == std::string_view::npos ? std::string_view() : text.substr(space + 1);
    if (!line.empty() && line.size() + 1 + word.size() > static_cast<std::size_t>(wrap_at)) {
      lines.push_back(std::move(line));
      line.clear();
    }
    if (!line.empty())
      line += ' ';
    line += word;
  }
  if (!line.empty())
    lines.push_back(std::move(line));
  return lines;
}

int gap_width(duration delay) {
  auto ms = static_cast<double>(std::max<long long>(delay.count(), 0));
  return 36 + static_cast<int>(std::lround(16.0 * std::log10(1.0 + ms)));
}

void canvas::text(int x, int y, std::string_view content, std::string_view attributes) {
  body_ += "<text x=\"" + std::to_string(x) + "\" y=\"" + std::to_string(y) + "\"";
  if (!attributes.empty())
    body_ += " " + std::string(attributes);
  body_ += ">" + escaped(content) + "</text>\n";
}

void canvas::line(int x1, int y, int x2, std::string_view colour, bool dashed) {
  body_ += "<line x1=\"" + std::to_string(x1) + "\" y1=\"" + std::to_string(y) + "\" x2=\""
           + std::to_string(x2) + "\" y2=\"" + std::to_string(y) + "\" stroke=\""
           + std::string(colour) + "\" stroke-width=\"2\""
           + (dashed ? " stroke-dasharray=\"6 4\"" : "") + "/>\n";
}

void canvas::dot(int x, int y, std::string_view colour) {
  body_ += "<circle cx=\"" + std::to_string(x) + "\" cy=\"" + std::to_string(y) + "\" r=\""
           + std::to_string(dot_radius) + "\" fill=\"" + std::string(colour) + "\"/>\n";
}

void canvas::box(int x, int y, int width, int height, std::string_view colour) {
  body_ += "<rect x=\"" + std::to_string(x) + "\" y=\"" + std::to_string(y) + "\" width=\""
           + std::to_string(width) + "\" height=\"" + std::to_string(height)
           + "\" rx=\"4\" fill=\"" + std::string(colour) + "\"/>\n";
}

int canvas::paragraph(int y, std::string_view content, std::string_view attributes) {
  for (const auto& l : wrapped(content)) {
    text(margin, y, l, attributes);
    y += line_height;
  }
  return y;
}

std::string canvas::document(int width, int height, std::string_view title) const {
  auto w = std::to_string(width);
  auto h = std::to_string(height);
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + w + "\" height=\"" + h
         + "\" viewBox=\"0 0 " + w + " " + h
         + "\" font-family=\"DejaVu Sans, Arial, sans-serif\" font-size=\"12\">\n<title>"
         + escaped(title) + "</title>\n<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n"
         + body_ + "</svg>\n";
}

} // namespace bus::detail::svg
