#include "src/options/json_config.h"

#include <nlohmann/json.hpp>

namespace mlps {

namespace {

// JSON scalars become the strings CLI11 would have read from the command line.
std::string scalar_to_input(const std::string& key, const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_number()) return value.dump();
  throw CLI::ConversionError("config file: key '" + key +
                             "' must be a string, number or boolean, not " + value.type_name());
}

// Typed JSON for a value string: numbers and booleans as such, everything else a string.
nlohmann::json typed(const std::string& text) {
  if (text == "true") return true;
  if (text == "false") return false;
  try {
    size_t used = 0;
    const long long i = std::stoll(text, &used);
    if (used == text.size()) return i;
    const double d = std::stod(text, &used);
    if (used == text.size()) return d;
  } catch (const std::exception&) {
  }
  return text;
}

}  // namespace

std::vector<CLI::ConfigItem> JsonConfig::from_config(std::istream& input) const {
  // Every option fits in a few KiB; reading no more than the limit keeps a huge file (or a
  // device) from costing every rank its parse before the refusal.
  constexpr std::streamsize kLimit = 1 << 20;
  std::string text(static_cast<size_t>(kLimit) + 1, '\0');
  input.read(text.data(), kLimit + 1);
  text.resize(static_cast<size_t>(input.gcount()));
  if (static_cast<std::streamsize>(text.size()) > kLimit)
    throw CLI::ConversionError("config file: larger than 1 MiB; a configuration holds a few "
                               "options");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // syntax, or a number out of range (1e400)
    throw CLI::ConversionError(std::string("config file: not valid JSON: ") + e.what());
  }
  if (!doc.is_object()) throw CLI::ConversionError("config file: must hold one JSON object");
  std::vector<CLI::ConfigItem> items;
  // Every option takes one value (lists are written as strings, e.g. "2,2").
  for (const auto& [key, value] : doc.items())
    items.push_back({{}, key, {scalar_to_input(key, value)}});
  return items;
}

std::string JsonConfig::to_config(const CLI::App* app, bool default_also, bool /*descriptions*/,
                                  std::string /*prefix*/) const {
  nlohmann::json doc = nlohmann::json::object();
  for (const CLI::Option* opt : app->get_options()) {
    const std::string name = opt->get_single_name();
    if (name.empty() || name == "help" || opt == app->get_config_ptr()) continue;
    // CLI11 reports a flag's type size as 1; a flag is an option that takes no value.
    const bool flag = opt->get_expected_max() == 0;
    std::vector<std::string> values = opt->reduced_results();
    if (values.empty()) {
      if (!default_also) continue;
      const std::string def = opt->get_default_str();
      values = {flag && def.empty() ? "false" : def};
    }
    if (flag && values.front() != "false" && values.front() != "true")
      values = {"true"};  // a counted flag records that it was given
    if (values.size() == 1) {
      doc[name] = typed(values.front());
    } else {
      nlohmann::json list = nlohmann::json::array();
      for (const auto& v : values) list.push_back(typed(v));
      doc[name] = list;
    }
  }
  return doc.dump();
}

}  // namespace mlps
