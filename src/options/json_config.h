#pragma once
// CLI11 reads `--config FILE` through this formatter, so a JSON file sets exactly the keys the
// command line has (long option names without dashes), unknown keys are errors (the app sets
// allow_config_extras(false)), and the command line overrides the file.
#include <CLI/CLI.hpp>

namespace mlps {

class JsonConfig : public CLI::Config {
 public:
  // The resolved options (defaults included) as one JSON object: what results files record.
  std::string to_config(const CLI::App* app, bool default_also, bool write_description,
                        std::string prefix) const override;
  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override;
};

}  // namespace mlps
