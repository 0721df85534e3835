// A writer for the driver's one-line JSON result. Non-finite numbers become null (JSON has none).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace burtorch::driver {

class JsonLine {
 public:
  JsonLine() { out_ += '{'; }

  JsonLine& field(std::string_view name, std::string_view text) {
    key(name);
    quoted(text);
    return *this;
  }
  // A C string, or null where there is none.
  JsonLine& field(std::string_view name, const char* text) {
    return text ? field(name, std::string_view(text)) : null(name);
  }
  JsonLine& field(std::string_view name, double number) {
    key(name);
    appendNumber(number);
    return *this;
  }
  JsonLine& field(std::string_view name, std::int64_t number) {
    key(name);
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%lld", static_cast<long long>(number));
    out_ += buffer;
    return *this;
  }
  JsonLine& field(std::string_view name, std::optional<std::uint64_t> bytes) {
    key(name);
    if (!bytes) {
      out_ += "null";
      return *this;
    }
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%llu", static_cast<unsigned long long>(*bytes));
    out_ += buffer;
    return *this;
  }
  JsonLine& field(std::string_view name, std::optional<double> number) {
    key(name);
    if (number) appendNumber(*number);
    else out_ += "null";
    return *this;
  }
  JsonLine& null(std::string_view name) {
    key(name);
    out_ += "null";
    return *this;
  }
  JsonLine& array(std::string_view name, std::span<const double> numbers) {
    key(name);
    out_ += '[';
    for (std::size_t k = 0; k < numbers.size(); ++k) {
      if (k) out_ += ',';
      appendNumber(numbers[k]);
    }
    out_ += ']';
    return *this;
  }
  JsonLine& beginObject(std::string_view name) {
    key(name);
    out_ += '{';
    needComma_ = false;
    return *this;
  }
  JsonLine& endObject() {
    out_ += '}';
    needComma_ = true;
    return *this;
  }

  // The finished line, newline included.
  std::string finish() const { return out_ + "}\n"; }

 private:
  void key(std::string_view name) {
    if (needComma_) out_ += ',';
    quoted(name);
    out_ += ':';
    needComma_ = true;
  }

  void quoted(std::string_view text) {
    out_ += '"';
    for (const char c : text) {
      if (c == '"' || c == '\\') {
        out_ += '\\';
        out_ += c;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        char buffer[8];
        std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(c));
        out_ += buffer;
      } else {
        out_ += c;
      }
    }
    out_ += '"';
  }

  void appendNumber(double number) {
    if (!std::isfinite(number)) {
      out_ += "null";
      return;
    }
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.17g", number);
    out_ += buffer;
  }

  std::string out_;
  bool needComma_ = false;
};

}  // namespace burtorch::driver
