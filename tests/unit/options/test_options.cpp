// OptionParser: the tutorial's defaults, command-line parsing, JSON configs (and the command line
// overriding them), the inputs/tutorial.json preset, one-line InputErrors naming the bad option,
// key or file, the resolved JSON recorded in result files, and --help.
#include <cstdlib>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/base/errors.h"
#include "src/options/options.h"
#include "tests/temp_dir_test.h"

namespace mlps {
namespace {

namespace fs = std::filesystem;
using Args = std::vector<std::string>;

// Parses args as the command line after the program name.
bool parse(OptionParser& parser, Args args) {
  args.insert(args.begin(), "serial");
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  return parser.parse(static_cast<int>(args.size()), argv.data());
}

Options parsed(const Args& args) {
  OptionParser parser("serial", "options test");
  EXPECT_TRUE(parse(parser, args));
  return parser.options();
}

// The InputError message parsing args gives, or a note that none was thrown.
std::string error_of(const Args& args) {
  OptionParser parser("serial", "options test");
  try {
    parse(parser, args);
  } catch (const InputError& e) {
    return e.what();
  }
  return "<no InputError>";
}

// A fresh directory per test for config files.
class OptionParserTest : public TempDirTest {
 protected:
  OptionParserTest() : TempDirTest("mlps_options_") {}

  std::string write_config(const std::string& name, const std::string& text) const {
    const fs::path path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }
};

// The tutorial's model and training settings, which both the defaults and its preset give.
void expect_tutorial_model_and_training(const Options& o) {
  EXPECT_EQ(o.model.hidden, 2048);
  EXPECT_EQ(o.model.layers, 4);
  EXPECT_EQ(o.model.image_size, 64);
  EXPECT_EQ(o.model.ffn_mult, 4);
  EXPECT_EQ(o.model.block, BlockKind::residual_mlp);
  EXPECT_EQ(o.batch, 32);
  EXPECT_DOUBLE_EQ(o.optimizer.lr, 1e-3);
  EXPECT_EQ(o.optimizer.kind, OptimizerKind::adam);
}

TEST(OptionDefaults, MatchTheTutorial) {
  const Options o = parsed({});
  expect_tutorial_model_and_training(o);
  EXPECT_EQ(o.precision, Precision::fp32);
  EXPECT_EQ(o.data, "synthetic");
  EXPECT_EQ(o.device, "auto");
  EXPECT_EQ(o.comm, "auto");
  EXPECT_TRUE(o.out.empty());
  EXPECT_FALSE(o.verify);
}

// The watchdog is armed unless turned off: a stopped rank must not hold a job to its time limit.
TEST(OptionDefaults, TimeoutIsHalfAnHourUnlessTheEnvironmentSetsIt) {
  const char* saved = std::getenv("MLPSCALE_TIMEOUT");
  const std::string kept = saved ? saved : "";
  unsetenv("MLPSCALE_TIMEOUT");
  EXPECT_EQ(parsed({}).timeout, 1800);
  setenv("MLPSCALE_TIMEOUT", "0", 1);
  EXPECT_EQ(parsed({}).timeout, 0);
  EXPECT_EQ(parsed({"--timeout", "7"}).timeout, 7);
  if (saved) setenv("MLPSCALE_TIMEOUT", kept.c_str(), 1); else unsetenv("MLPSCALE_TIMEOUT");
}

TEST(OptionParsing, EveryOptionSetsItsField) {
  const Options o = parsed({"--layers", "3", "--hidden", "64", "--ffn-mult", "2", "--image-size",
                            "28", "--block", "plain", "--batch", "16", "--epochs", "5", "--iters",
                            "10", "--warmup", "1", "--lr", "0.25", "--optimizer", "sgd", "--seed",
                            "7", "--data", "idx:/some/dir", "--device", "cpu", "--comm", "mpi",
                            "--precision", "fp64", "--out", "r.h5", "--print-every", "5",
                            "--eval-samples", "100", "--verify"});
  EXPECT_EQ(o.model.layers, 3);
  EXPECT_EQ(o.model.hidden, 64);
  EXPECT_EQ(o.model.ffn_mult, 2);
  EXPECT_EQ(o.model.ffn_width, 0);
  EXPECT_EQ(parsed({"--hidden", "64", "--ffn-hidden", "150"}).model.ffn_hidden(), 150);
  EXPECT_EQ(o.model.image_size, 28);
  EXPECT_EQ(o.model.block, BlockKind::plain);
  EXPECT_EQ(o.batch, 16);
  EXPECT_EQ(o.epochs, 5);
  EXPECT_EQ(o.iters, 10);
  EXPECT_EQ(o.warmup, 1);
  EXPECT_DOUBLE_EQ(o.optimizer.lr, 0.25);
  EXPECT_EQ(o.optimizer.kind, OptimizerKind::sgd);
  EXPECT_EQ(o.seed, 7u);
  EXPECT_EQ(o.data, "idx:/some/dir");
  EXPECT_EQ(o.device, "cpu");
  EXPECT_EQ(o.comm, "mpi");
  EXPECT_EQ(o.precision, Precision::fp64);
  EXPECT_EQ(o.out, "r.h5");
  EXPECT_EQ(o.print_every, 5);
  EXPECT_EQ(o.eval_samples, 100);
  EXPECT_TRUE(o.verify);
}

TEST_F(OptionParserTest, ConfigSetsFieldsAndTheCommandLineOverridesIt) {
  const std::string config = write_config(
      "run.json", R"({"hidden": 256, "layers": 3, "optimizer": "sgd", "lr": 0.01,
                      "precision": "fp64", "verify": true, "data": "idx:/data"})");
  const Options o = parsed({"--config", config, "--hidden", "16", "--lr", "0.5"});
  EXPECT_EQ(o.model.hidden, 16);  // command line wins
  EXPECT_DOUBLE_EQ(o.optimizer.lr, 0.5);
  EXPECT_EQ(o.model.layers, 3);  // from the file
  EXPECT_EQ(o.optimizer.kind, OptimizerKind::sgd);
  EXPECT_EQ(o.precision, Precision::fp64);
  EXPECT_TRUE(o.verify);
  EXPECT_EQ(o.data, "idx:/data");
  EXPECT_EQ(o.batch, 32);  // in neither: the default
}

TEST(OptionPresets, TutorialJsonParses) {
  // The tests run from the repository root; fall back to the path beside this source file.
  fs::path preset = "inputs/tutorial.json";
  if (!fs::exists(preset)) preset = fs::path(__FILE__).parent_path().parent_path() / preset;
  ASSERT_TRUE(fs::exists(preset)) << "inputs/tutorial.json not found from " << fs::current_path();
  const Options o = parsed({"--config", preset.string()});
  EXPECT_EQ(o.epochs, 2);
  expect_tutorial_model_and_training(o);
}

struct BadInput {
  Args args;
  std::string named;  // what the message must contain
};

void expect_input_errors(const std::vector<BadInput>& cases) {
  for (const BadInput& bad : cases) {
    std::string command;
    for (const std::string& arg : bad.args) command += " " + arg;
    const std::string message = error_of(bad.args);
    EXPECT_NE(message.find(bad.named), std::string::npos)
        << "command line:" << command << "\nmessage: " << message << "\nshould name: " << bad.named;
    EXPECT_EQ(message.find('\n'), std::string::npos) << "not one line: " << message;
  }
}

TEST(OptionErrors, BadCommandLinesNameTheOption) {
  expect_input_errors({
      {{"--no-such-option"}, "--no-such-option"},
      {{"--hidden", "abc"}, "--hidden"},
      {{"--hidden", "-3"}, "--hidden"},
      {{"--hidden", "16.5"}, "--hidden"},
      {{"--batch", "0"}, "--batch"},
      {{"--layers", "-1"}, "--layers"},
      {{"--ffn-mult", "0"}, "--ffn-mult"},
      {{"--ffn-hidden", "-1"}, "--ffn-hidden"},
      {{"--ffn-hidden", "12.5"}, "--ffn-hidden"},
      {{"--image-size", "5000"}, "--image-size"},
      {{"--block", "conv"}, "--block"},
      {{"--optimizer", "rmsprop"}, "--optimizer"},
      {{"--precision", "fp8"}, "--precision"},
      {{"--device", "tpu"}, "--device"},
      {{"--comm", "gloo"}, "--comm"},
      {{"--lr", "0"}, "--lr"},
      {{"--lr", "-0.001"}, "--lr"},
      {{"--lr", "nan"}, "--lr"},
      {{"--lr", "fast"}, "--lr"},
      {{"--seed", "-1"}, "--seed"},
      {{"--print-every", "-1"}, "--print-every"},
      {{"--eval-samples", "x"}, "--eval-samples"},
      {{"--iters", "4", "--warmup", "4"}, "--warmup"},
      {{"--epochs", "0", "--iters", "0"}, "--epochs"},
      {{"--data", "bogus"}, "bogus"},
  });
}

TEST_F(OptionParserTest, BadConfigFilesNameTheFileOrKey) {
  const std::string not_json = write_config("not_json.json", R"({"hidden": 16,)");
  const std::string unknown = write_config("unknown.json", R"({"hiden": 16})");
  const std::string object = write_config("object.json", R"({"hidden": {"value": 16}})");
  const std::string null = write_config("null.json", R"({"layers": null})");
  const std::string list = write_config("list.json", R"({"batch": [16, 32]})");
  const std::string text = write_config("text.json", R"({"hidden": "sixteen"})");
  const std::string range = write_config("range.json", R"({"batch": 0})");
  const std::string array = write_config("array.json", R"([{"hidden": 16}])");
  const std::string missing = (dir_ / "missing.json").string();
  expect_input_errors({
      {{"--config", not_json}, not_json},
      {{"--config", unknown}, "hiden"},
      {{"--config", unknown}, unknown},
      {{"--config", object}, "hidden"},
      {{"--config", null}, "layers"},
      {{"--config", list}, "batch"},
      {{"--config", text}, "hidden"},
      {{"--config", range}, "batch"},
      {{"--config", array}, array},
      {{"--config", missing}, missing},
  });
}

TEST_F(OptionParserTest, ResolvedJsonHoldsEveryOptionsFinalValue) {
  const std::string config = write_config("run.json", R"({"layers": 3, "optimizer": "sgd"})");
  OptionParser parser("serial", "options test");
  ASSERT_TRUE(parse(parser, {"--config", config, "--hidden", "16", "--lr", "0.5"}));
  const nlohmann::json doc = nlohmann::json::parse(parser.options().resolved_json);
  ASSERT_TRUE(doc.is_object());
  for (const CLI::Option* option : parser.app().get_options()) {
    const std::string name = option->get_single_name();
    if (name.empty() || name == "help" || name == "config") continue;
    EXPECT_TRUE(doc.contains(name)) << "resolved_json lacks '" << name << "': " << doc.dump();
  }
  EXPECT_EQ(doc.value("hidden", -1), 16);                // command line
  EXPECT_DOUBLE_EQ(doc.value("lr", -1.0), 0.5);          // command line
  EXPECT_EQ(doc.value("layers", -1), 3);                 // config file
  EXPECT_EQ(doc.value("optimizer", std::string()), "sgd");
  EXPECT_EQ(doc.value("batch", -1), 32);                 // defaults
  EXPECT_EQ(doc.value("image-size", -1), 64);
  EXPECT_EQ(doc.value("precision", std::string()), "fp32");
  EXPECT_EQ(doc.value("data", std::string()), "synthetic");
  EXPECT_EQ(doc.value("out", std::string("<missing>")), "");
  EXPECT_EQ(doc.value("verify", nlohmann::json()), nlohmann::json(false));
  EXPECT_FALSE(doc.contains("config"));
  EXPECT_FALSE(doc.contains("help"));
}

TEST(OptionParsing, ResolvedJsonRecordsGivenFlagAndOut) {
  OptionParser parser("serial", "options test");
  ASSERT_TRUE(parse(parser, {"--verify", "--out", "results/x.h5", "--precision", "fp64"}));
  const nlohmann::json doc = nlohmann::json::parse(parser.options().resolved_json);
  EXPECT_EQ(doc.value("verify", nlohmann::json()), nlohmann::json(true)) << doc.dump();
  EXPECT_EQ(doc.value("out", std::string()), "results/x.h5");
  EXPECT_EQ(doc.value("precision", std::string()), "fp64");
}

TEST(OptionHelp, HelpReturnsFalseAndListsTheOptions) {
  for (const char* flag : {"--help", "-h"}) {
    OptionParser parser("serial", "options test");
    EXPECT_FALSE(parse(parser, {flag})) << flag;
    const std::string help = parser.help_text();
    for (const char* option : {"--config", "--layers", "--hidden", "--ffn-mult", "--image-size",
                               "--block", "--batch", "--epochs", "--iters", "--warmup", "--lr",
                               "--optimizer", "--seed", "--data", "--device", "--comm",
                               "--precision", "--out", "--print-every", "--eval-samples",
                               "--verify"})
      EXPECT_NE(help.find(option), std::string::npos) << "help lacks " << option;
  }
}

TEST(OptionParsing, SchemeFlagsJoinTheSameTable) {
  OptionParser parser("data", "options test");
  int64_t dp = 1;
  parser.app().add_option("--dp", dp, "data-parallel ranks");
  ASSERT_TRUE(parse(parser, {"--dp", "4", "--hidden", "32"}));
  EXPECT_EQ(dp, 4);
  EXPECT_EQ(parser.options().model.hidden, 32);
  EXPECT_EQ(nlohmann::json::parse(parser.options().resolved_json).value("dp", -1), 4);
  EXPECT_NE(parser.help_text().find("--dp"), std::string::npos);
}

}  // namespace
}  // namespace mlps
