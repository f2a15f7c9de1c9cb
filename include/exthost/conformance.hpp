// exthost/conformance.hpp — does a plugin's extension speak the protocol? A checker for
// extension authors (`exthost conformance PLUGIN_DIR`).
//
// It spawns the extension the way the host does (same environment, folder, containment)
// and talks to it at the byte level, so it can see what a host would forgive or never
// notice: bytes that are not frames, a reply with the wrong id, a frame over the cap.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace exthost {

struct ConformanceCheck {
  std::string name;    // "framing", "id-echo", …
  std::string what;    // what it asks of the extension, in one line
  bool passed = false;
  std::string detail;  // why it failed, or what was seen
};

struct ConformanceReport {
  std::string plugin;
  std::vector<ConformanceCheck> checks;  // always every check, in a fixed order
  std::string stderr_tail;               // the extension's last stderr lines
  bool passed() const;
};

// Runs every check against the plugin in `plugin_dir`; each wait is bounded by `step`.
// Checks, in order: spawn, framing (host to extension: a request written in pieces;
// extension to host: well-formed Content-Length frames), stdout-clean (nothing but frames
// on stdout), id-echo (string and numeric ids answered verbatim), initialize-shape,
// tool-specs, concurrency (capabilities.concurrency, when declared, an integer 1..64),
// unknown-method (an error reply), pipelining (four requests in one write, each answered
// with its id, in any order), cancel-unknown (after a $/cancelRequest for an id never sent,
// the next request is answered; only for an extension that declared cancellation),
// invalid-utf8 (a request holding bytes that are not UTF-8 gets an error reply or none, and
// the next request is answered), frame-cap (no frame over 4 MiB), shutdown (answered, then
// the process exits within 2 s, its stdin still open), exit-status (that exit is status 0,
// not a signal).
// `stop_fd`, when not -1, is watched during every wait: once it is readable the
// extension's process group is killed at once and the checks not yet decided fail as
// "stopped" (the command's answer to SIGINT).
ConformanceReport check_conformance(const std::filesystem::path& plugin_dir,
                                    std::chrono::milliseconds step = std::chrono::seconds(5), int stop_fd = -1);

}  // namespace exthost
