// exit_codes.hpp — the documented exit codes of the exthost command.
#pragma once

#include "exthost/result.hpp"

namespace exthost::cli {

enum ExitCode : int {
  k_exit_ok = 0,
  k_exit_internal = 1,   // a bug or an environment failure in exthost itself
  k_exit_usage = 2,      // bad arguments or input
  k_exit_manifest = 3,   // plugin.json missing, unreadable or invalid
  k_exit_extension = 4,  // the extension failed: spawn, transport, protocol or its own error
  k_exit_timeout = 5,    // the extension did not answer in time
  k_exit_cancelled = 130,    // the operation was cancelled (SIGINT's path): as a shell reports SIGINT
  k_exit_signal_base = 128,  // interrupted: 128 + the signal, as a shell reports it
};

inline int exit_code_for_signal(int signo) { return k_exit_signal_base + signo; }

inline int exit_code_for(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::usage: return k_exit_usage;
    case ErrorKind::manifest: return k_exit_manifest;
    case ErrorKind::extension: return k_exit_extension;
    case ErrorKind::timeout: return k_exit_timeout;
    case ErrorKind::internal: return k_exit_internal;
    case ErrorKind::cancelled: return k_exit_cancelled;
  }
  return k_exit_internal;
}

inline constexpr const char* k_exit_code_table =
    "Exit codes:\n"
    "  0  success\n"
    "  1  internal error\n"
    "  2  usage error (bad arguments or input JSON)\n"
    "  3  manifest error (plugin.json missing or invalid)\n"
    "  4  extension failed (spawn, transport, protocol or its own error)\n"
    "  5  timeout (the extension did not answer in time)\n"
    "  129, 130, 143  interrupted by SIGHUP, SIGINT or SIGTERM; the operation under way cancelled and every\n"
    "                 extension stopped first\n";

}  // namespace exthost::cli
