#include "src/driver/startup_agreement.h"

#include <climits>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "src/comm/broadcast_refusal.h"
#include "src/base/errors.h"

namespace mlps {
namespace {

using Setting = std::pair<std::string, std::string>;

// Options a rank may have on its own: where rank 0 writes, and each rank's own watchdog.
bool rank_local(const std::string& name) {
  return name == "out" || name == "trace" || name == "timeout";
}

// The program, then every option of the resolved JSON object (in its sorted order) with its value
// as JSON text.
std::vector<Setting> settings_of(const std::string& program, const std::string& resolved) {
  std::vector<Setting> out{{"program", program}};
  const nlohmann::json options = nlohmann::json::parse(resolved, nullptr, false);
  if (options.is_object())
    for (const auto& [name, value] : options.items())
      if (!rank_local(name))
        out.emplace_back(name, value.is_string() ? value.get<std::string>() : value.dump());
  return out;
}

// How a setting reads in the message: the program, or the option as typed.
std::string shown(const Setting& s) {
  if (s.first == "program") return "bin/" + s.second;
  return "--" + s.first + " " + (s.second.empty() ? "''" : s.second);
}

}  // namespace

void agree_options_accepted(MPI_Comm comm, const std::string& refusal) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const int mine = refusal.empty() ? INT_MAX : rank;
  int first = INT_MAX;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (!refusal.empty()) throw AgreedError(refusal);
  if (first != INT_MAX)
    throw AgreedError("rank " + std::to_string(first) +
                     " refused its options (its own line says why), so this rank stops too");
}

void agree_configuration(MPI_Comm comm, const std::string& program, const std::string& resolved) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const std::vector<Setting> mine = settings_of(program, resolved);
  const std::string root_text = broadcast_string(comm, program + "\n" + resolved, 0);
  const size_t newline = root_text.find('\n');
  const std::vector<Setting> root =
      settings_of(root_text.substr(0, newline), root_text.substr(newline + 1));
  // This rank's first difference: the index of a setting of rank 0's it lacks or has otherwise,
  // else past rank 0's list for a setting only it has.
  int differs_at = INT_MAX;
  std::string my_value = "(none)";
  for (size_t i = 0; i < root.size() && differs_at == INT_MAX; ++i) {
    bool found = false;
    for (const Setting& s : mine)
      if (s.first == root[i].first) {
        found = true;
        if (s.second != root[i].second) {
          differs_at = static_cast<int>(i);
          my_value = shown(s);
        }
        break;
      }
    if (!found) {
      differs_at = static_cast<int>(i);
      my_value = "no --" + root[i].first;
    }
  }
  for (size_t j = 0; j < mine.size() && differs_at == INT_MAX; ++j) {
    bool found = false;
    for (const Setting& s : root) found = found || s.first == mine[j].first;
    if (!found) {
      differs_at = static_cast<int>(root.size() + j);
      my_value = shown(mine[j]);
    }
  }
  struct {
    int index, rank;
  } local{differs_at, rank}, first{};
  MPI_Allreduce(&local, &first, 1, MPI_2INT, MPI_MINLOC, comm);
  if (first.index == INT_MAX) return;
  const std::string theirs = broadcast_string(comm, my_value, first.rank);
  const std::string at_root = first.index < static_cast<int>(root.size())
                                  ? shown(root[static_cast<size_t>(first.index)])
                                  : "no such option";
  throw AgreedError("the ranks were given different configurations: rank " +
                   std::to_string(first.rank) + " has " + theirs + ", rank 0 has " + at_root +
                   " (every rank must run the same options)");
}

}  // namespace mlps
