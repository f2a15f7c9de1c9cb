#include "exthost/json_text.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <cmath>

#include "wire/json.hpp"

namespace exthost {
namespace json = boost::json;
namespace {

json::value parsed(const std::string& text) {
  wire::JsonParser parser;
  auto v = parser.parse(text);
  return v ? std::move(v).value() : json::value(nullptr);
}

json::value optional_text(const std::optional<std::string>& s) { return s ? json::value(*s) : json::value(nullptr); }

json::object failure_object(const LoadFailure& f) {
  return json::object{{"plugin", f.plugin},
                      {"manifest_path", f.manifest_path ? json::value(f.manifest_path->string()) : json::value(nullptr)},
                      {"reason", f.reason},
                      {"hint", f.hint}};
}

json::object tool_object(const ToolInfo& t) {
  return json::object{{"name", t.name},
                      {"runtime_name", t.runtime_name},
                      {"api_name", t.api_name},
                      {"description", t.description},
                      {"input_schema", parsed(t.input_schema_json)},
                      {"api_input_schema", parsed(t.api_input_schema_json)},
                      {"idempotent", t.idempotent}};
}

}  // namespace

std::string to_json_text(const ToolInfo& tool) { return wire::to_json(tool_object(tool)); }

std::string to_json_text(const ExtensionInfo& info) {
  json::object o;
  o["id"] = info.id;
  o["health"] = std::string(to_string(info.health));
  o["generation"] = info.generation;
  o["restart_count"] = info.restart_count;
  json::array tools;
  for (const auto& t : info.tools) tools.push_back(tool_object(t));
  o["tools"] = std::move(tools);
  json::array providers;
  for (const auto& p : info.providers) {
    json::array models;
    for (const auto& m : p.models) {
      models.push_back(json::object{{"id", m.id},
                                    {"display_name", m.display_name},
                                    {"tool_use", m.tool_use},
                                    {"streaming", m.streaming},
                                    {"context_window", m.context_window ? json::value(*m.context_window) : nullptr}});
    }
    providers.push_back(json::object{{"id", p.id}, {"display_name", p.display_name}, {"models", std::move(models)}});
  }
  o["providers"] = std::move(providers);
  json::array hooks;
  for (const auto& h : info.hooks) hooks.push_back(json::object{{"kind", h.kind}, {"tool", optional_text(h.tool)}});
  o["hooks"] = std::move(hooks);
  json::array capabilities;
  for (const auto& c : info.capabilities) capabilities.push_back(json::object{{"kind", c.kind}, {"name", c.name}});
  o["capabilities"] = std::move(capabilities);
  o["plugin_info"] = info.plugin_info_json ? parsed(*info.plugin_info_json) : json::value(nullptr);
  // Whole microseconds: a JSON integer reads the same everywhere (no exponent notation).
  o["init_us"] = static_cast<std::uint64_t>(std::llround(info.init_ms * 1000.0));
  json::object limits;
  auto put = [&](const char* key, const std::optional<std::uint64_t>& v) { limits[key] = v ? json::value(*v) : nullptr; };
  put("address_space_mib", info.limits.address_space_mib);
  put("open_files", info.limits.open_files);
  put("processes", info.limits.processes);
  put("cpu_seconds", info.limits.cpu_seconds);
  o["limits"] = std::move(limits);
  o["contained_by_cgroup"] = info.contained_by_cgroup;
  o["concurrency"] = info.concurrency;
  o["cancellation"] = info.cancellation;
  return wire::to_json(o);
}

std::string to_json_text(const ExtensionStats& s) {
  json::object o{{"frames_in", s.frames_in},
                 {"bytes_in", s.bytes_in},
                 {"frames_out", s.frames_out},
                 {"bytes_out", s.bytes_out},
                 {"notifications_delivered", s.notifications_delivered},
                 {"notifications_dropped", s.notifications_dropped},
                 {"late_replies", s.late_replies},
                 {"discarded_frames", s.discarded_frames},
                 {"cancel_notifications", s.cancel_notifications},
                 {"inbound_requests", s.inbound_requests},
                 {"inbound_in_flight_peak", s.inbound_in_flight_peak},
                 {"queued_frames_peak", s.queued_frames_peak},
                 {"queued_bytes_peak", s.queued_bytes_peak},
                 {"queue_budget_waits", s.queue_budget_waits},
                 {"calls", json::object{{"ok", s.calls_ok},
                                        {"application_error", s.calls_application_error},
                                        {"transport_error", s.calls_transport_error},
                                        {"timeout", s.calls_timeout},
                                        {"cancelled", s.calls_cancelled}}},
                 {"restarts", s.restarts},
                 {"generation", s.generation},
                 {"health", std::string(to_string(s.health))},
                 {"stderr_tail", s.stderr_tail},
                 {"last_exit", s.last_exit}};
  return wire::to_json(o);
}

std::string to_json_text(const CommandOutput& out) {
  json::array events;
  for (const auto& e : out.events_json) events.push_back(parsed(e));
  const auto& c = out.counters;
  json::object o{{"result", parsed(out.result_json)},
                 {"events", std::move(events)},
                 {"counters", json::object{{"produced_events", c.produced_events},
                                           {"produced_bytes", c.produced_bytes},
                                           {"retained_events", c.retained_events},
                                           {"retained_bytes", c.retained_bytes},
                                           {"truncated_events", c.truncated_events},
                                           {"truncated_bytes", c.truncated_bytes},
                                           {"dropped_events", c.dropped_events},
                                           {"dropped_bytes", c.dropped_bytes},
                                           {"dropped_error_events", c.dropped_error_events},
                                           {"saw_done", c.saw_done}}},
                 {"notice", optional_text(out.limit_notice)},
                 {"notice_is_error", out.limit_notice_is_error}};
  return wire::to_json(o);
}

std::string to_json_text(const DiscoveryReport& report) {
  json::array loaded(report.loaded.begin(), report.loaded.end());
  json::array failed;
  for (const auto& f : report.failed) failed.push_back(failure_object(f));
  return wire::to_json(json::object{{"loaded", std::move(loaded)}, {"failed", std::move(failed)}});
}

std::string to_json_text(const LoadFailure& failure) { return wire::to_json(failure_object(failure)); }

}  // namespace exthost
