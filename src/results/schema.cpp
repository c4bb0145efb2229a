#include "src/results/schema.h"

#include <algorithm>

#include "src/base/errors.h"

namespace mlps {
namespace {

class RecordChecker {
 public:
  RecordChecker(const RunRecord& record, const std::string& path) : record_(record), path_(path) {}

  void check() const {
    check_attributes();
    const int64_t world_size = integer("world_size");
    const int64_t iterations = integer("iterations");
    const int64_t warmup = integer("warmup_iterations");
    if (world_size < 1) fail("root attribute world_size is " + std::to_string(world_size));
    if (iterations < 0) fail("root attribute iterations is " + std::to_string(iterations));
    if (warmup < 0 || warmup > iterations)
      fail("root attribute warmup_iterations is " + std::to_string(warmup) +
           ", outside [0, iterations = " + std::to_string(iterations) + "]");

    for (std::string_view phase : result_schema::kRequiredPhases)
      if (!record_.timing.contains(std::string(phase))) fail("missing /timing/" + std::string(phase));
    for (const auto& [phase, table] : record_.timing) {
      check_link_name(phase, "/timing");
      check_table(table, "/timing/" + phase, iterations, world_size);
    }
    for (const auto& [name, table] : record_.counters) {
      check_link_name(name, "/counters");
      check_table(table, "/counters/" + name, iterations, world_size);
    }
    for (const auto& [kind, comm] : record_.comm) {
      check_link_name(kind, "/comm");
      check_table(comm.time_seconds, "/comm/" + kind + "/time", iterations, world_size);
      check_table(comm.bytes, "/comm/" + kind + "/bytes", iterations, world_size);
    }

    if (static_cast<int64_t>(record_.loss.size()) != iterations)
      fail("/train/loss has " + std::to_string(record_.loss.size()) + " values, expected " +
           std::to_string(iterations) + " (root attribute iterations)");
    if (static_cast<int64_t>(record_.peak_bytes.size()) != world_size)
      fail("/memory/peak_bytes has " + std::to_string(record_.peak_bytes.size()) +
           " values, expected " + std::to_string(world_size) + " (root attribute world_size)");
    if (!record_.estimated_bytes.empty() &&
        static_cast<int64_t>(record_.estimated_bytes.size()) != world_size)
      fail("/memory/estimated_bytes has " + std::to_string(record_.estimated_bytes.size()) +
           " values, expected " + std::to_string(world_size) + " (root attribute world_size)");

    const auto& verdicts = result_schema::kVerdicts;
    if (std::find(verdicts.begin(), verdicts.end(), record_.verification.verdict) == verdicts.end())
      fail("/verification verdict is '" + record_.verification.verdict +
           "', expected PASS, FAIL or not run");
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw InputError(path_ + ": " + what); }

  void check_attributes() const {
    for (std::string_view name : result_schema::kRequiredStringAttributes)
      if (!record_.string_attributes.contains(std::string(name)))
        fail("missing root attribute " + std::string(name));
    for (std::string_view name : result_schema::kRequiredIntegerAttributes)
      if (!record_.integer_attributes.contains(std::string(name)))
        fail("missing root attribute " + std::string(name));
    const std::string reserved(result_schema::kVersionAttribute);
    for (const auto& [name, value] : record_.string_attributes) {
      if (name.empty()) fail("a root attribute has an empty name");
      if (name == reserved) fail("root attribute " + reserved + " is written by the writer itself");
      if (record_.integer_attributes.contains(name))
        fail("root attribute " + name + " is both a string and an integer");
      // Strings are stored as C strings, so a NUL would silently cut them short.
      if (value.find('\0') != std::string::npos)
        fail("root attribute " + name + " contains a NUL character");
    }
    for (const auto& [name, value] : record_.integer_attributes) {
      if (name.empty()) fail("a root attribute has an empty name");
      if (name == reserved) fail("root attribute " + reserved + " is written by the writer itself");
    }
  }

  int64_t integer(const char* name) const { return record_.integer_attributes.at(name); }

  void check_link_name(const std::string& name, const std::string& group) const {
    if (name.empty() || name == "." || name.find('/') != std::string::npos)
      fail("'" + name + "' cannot be a dataset name in " + group);
  }

  void check_table(const IterationRankTable& table, const std::string& where, int64_t iterations,
                   int64_t world_size) const {
    if (table.iterations < 0 || table.ranks < 0 ||
        static_cast<int64_t>(table.values.size()) != table.iterations * table.ranks)
      fail(where + " holds " + std::to_string(table.values.size()) + " values, not " +
           std::to_string(table.iterations) + " × " + std::to_string(table.ranks));
    if (table.iterations != iterations)
      fail(where + " has " + std::to_string(table.iterations) + " rows, expected " +
           std::to_string(iterations) + " (root attribute iterations, the length of /train/loss)");
    if (table.ranks != world_size)
      fail(where + " has " + std::to_string(table.ranks) + " columns, expected " +
           std::to_string(world_size) + " (root attribute world_size)");
  }

  const RunRecord& record_;
  const std::string& path_;
};

}  // namespace

void validate_run_record(const RunRecord& record, const std::string& path_for_messages) {
  RecordChecker(record, path_for_messages).check();
}

}  // namespace mlps
