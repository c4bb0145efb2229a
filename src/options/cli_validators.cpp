#include "src/options/cli_validators.h"

#include <cmath>
#include <exception>
#include <limits>
#include <optional>
#include <string>
#include <utility>

namespace mlps {
namespace {

long long to_integer(const std::string& text, size_t* used) { return std::stoll(text, used); }
double to_real(const std::string& text, size_t* used) { return std::stod(text, used); }

// `text` converted by to_integer or to_real, or nullopt unless all of it is one number in range
// of the type.
template <typename Convert>
auto whole_number(const std::string& text, Convert convert)
    -> std::optional<decltype(convert(text, nullptr))> {
  size_t used = 0;
  try {
    const auto value = convert(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {  // no number at all, or out of range
  }
  return std::nullopt;
}

// An integer in [minimum, maximum]; `range` is the message's wording of it.
CLI::Validator integer_in(long long minimum, long long maximum, std::string range) {
  return CLI::Validator(
      [minimum, maximum, range](std::string& text) -> std::string {
        const std::optional<long long> value = whole_number(text, to_integer);
        if (!value) return "'" + text + "' is not an integer";
        if (*value < minimum || *value > maximum) return "must be " + range + ", not " + text;
        return "";
      },
      "INT>=" + std::to_string(minimum));
}

// A finite decimal number accepted by `in_range`, whose failure message is `range`.
CLI::Validator finite_real(bool (*in_range)(double), std::string range, std::string name) {
  return CLI::Validator(
      [in_range, range](std::string& text) -> std::string {
        // std::stod also reads hexadecimal ("0x10"), "inf" and "nan": none is a decimal number.
        const bool decimal = text.find_first_of("xXnN") == std::string::npos;
        const std::optional<double> value = whole_number(text, to_real);
        if (!value || !decimal || !std::isfinite(*value))
          return "'" + text + "' is not a finite decimal number";
        if (!in_range(*value)) return "must be " + range + ", not " + text;
        return "";
      },
      std::move(name));
}

}  // namespace

CLI::Validator integer_at_least(long long minimum) {
  return integer_in(minimum, std::numeric_limits<long long>::max(),
                    "at least " + std::to_string(minimum));
}

CLI::Validator integer_between(long long minimum, long long maximum) {
  return integer_in(minimum, maximum,
                    "between " + std::to_string(minimum) + " and " + std::to_string(maximum));
}

CLI::Validator positive_real() {
  return finite_real([](double v) { return v > 0; }, "positive", "REAL>0");
}

CLI::Validator non_negative_real() {
  return finite_real([](double v) { return v >= 0; }, "at least 0", "REAL>=0");
}

CLI::Validator positive_integer_item(std::string message) {
  return CLI::Validator(
      [message](std::string& text) -> std::string {
        const std::optional<long long> value = whole_number(text, to_integer);
        return value && *value >= 1 && *value <= std::numeric_limits<int>::max() ? "" : message;
      },
      "INT>=1");
}

CLI::Validator non_empty() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        return text.empty() ? "must not be empty (leave the option out for its default)" : "";
      },
      "TEXT");
}

}  // namespace mlps
