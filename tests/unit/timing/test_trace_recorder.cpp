// rank_trace_json: one rank's timeline as trace-event JSON (src/timing/trace_recorder.h).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <vector>

#include "src/timing/trace_recorder.h"

namespace mlps {
namespace {

using nlohmann::json;

TraceEvent phase(const char* name, double start, double end, int64_t step = -1) {
  TraceEvent e;
  e.name = name;
  e.category = "phase";
  e.start = start;
  e.end = end;
  e.step = step;
  return e;
}

TraceEvent comm(const char* name, double start, double end, int peer = -1) {
  TraceEvent e = phase(name, start, end);
  e.category = "comm";
  e.group = "pipe";
  e.bytes = 4096;
  e.blocked = 0.5e-3;
  e.started = 0.125e-3;
  e.peer = peer;
  return e;
}

// The X events of `out` in file order.
std::vector<json> slices(const json& out) {
  std::vector<json> found;
  for (const auto& e : out)
    if (e["ph"] == "X") found.push_back(e);
  return found;
}

TEST(RankTraceJson, NamesTheRankAndTimesInMicrosecondsFromTheOrigin) {
  const std::vector<TraceEvent> events{phase("forward", 10.0015, 10.002),
                                       phase("step", 10.001, 10.01, 0)};
  const json out = json::parse(rank_trace_json(3, events, 10.0, 1));
  ASSERT_TRUE(out.is_array());
  EXPECT_EQ(out[0]["name"], "process_name");
  EXPECT_EQ(out[0]["args"]["name"], "rank 3");
  for (const auto& e : out) {
    EXPECT_EQ(e["pid"], 3);
    EXPECT_TRUE(e.contains("ts") && e.contains("tid") && e.contains("ph"));
  }
  const auto x = slices(out);
  ASSERT_EQ(x.size(), 2u);
  EXPECT_EQ(x[0]["name"], "step");  // the enclosing slice first
  EXPECT_DOUBLE_EQ(x[0]["ts"].get<double>(), 1000.0);
  EXPECT_DOUBLE_EQ(x[0]["dur"].get<double>(), 9000.0);
  EXPECT_EQ(x[0]["args"]["iteration"], 0);
  EXPECT_EQ(x[0]["args"]["warmup"], true);
  EXPECT_DOUBLE_EQ(x[1]["ts"].get<double>(), 1500.0);
  EXPECT_DOUBLE_EQ(x[1]["dur"].get<double>(), 500.0);
}

TEST(RankTraceJson, OverlappingCallsGoOnSeparateThreadsWithTheirDetails) {
  const std::vector<TraceEvent> events{comm("recv", 0.0, 3.0, 0), comm("send", 1.0, 2.0, 2),
                                       comm("recv", 3.5, 4.0, 0)};
  const auto x = slices(json::parse(rank_trace_json(1, events, 0.0, 0)));
  ASSERT_EQ(x.size(), 3u);
  EXPECT_EQ(x[0]["tid"], 1);  // recv, then the later recv on the same thread
  EXPECT_EQ(x[1]["tid"], 1);
  EXPECT_EQ(x[2]["tid"], 2);  // the send, in flight during the first recv
  EXPECT_EQ(x[2]["name"], "send");
  EXPECT_EQ(x[2]["args"]["kind"], "send");
  EXPECT_EQ(x[2]["args"]["group"], "pipe");
  EXPECT_EQ(x[2]["args"]["bytes"], 4096);
  EXPECT_EQ(x[2]["args"]["peer"], 2);
  EXPECT_DOUBLE_EQ(x[2]["args"]["blocked_us"].get<double>(), 500.0);
  EXPECT_DOUBLE_EQ(x[2]["args"]["started_us"].get<double>(), 125.0);
}

TEST(RankTraceJson, AnEventEndingBeforeItStartsHasZeroDuration) {
  const std::vector<TraceEvent> events{phase("data", 2.0, 1.0)};
  const auto x = slices(json::parse(rank_trace_json(0, events, 0.0, 0)));
  ASSERT_EQ(x.size(), 1u);
  EXPECT_EQ(x[0]["dur"].get<double>(), 0.0);
}

}  // namespace
}  // namespace mlps
