// Ported from the reference's capture_validator_tests.
#include "host/capability.hpp"

#include <gtest/gtest.h>

namespace exthost::host {
namespace {

PermissionSet granted(std::vector<std::string> names) { return PermissionSet::try_from_strings(names).value(); }
std::string check(CapabilityDeclaration d, const PermissionSet& g) {
  auto r = validate_capability(d, g);
  return r.ok() ? "(ok)" : r.error().message;
}

TEST(CapabilityValidator, RejectsAnEmptyKind) {
  EXPECT_NE(check({"  ", "Local STT", {}, nullptr}, granted({})).find("kind"), std::string::npos);
}

TEST(CapabilityValidator, RejectsAnEmptyName) {
  EXPECT_EQ(check({"capture", " ", {}, nullptr}, granted({})), "capability 'name' must be non-empty");
}

TEST(CapabilityValidator, RejectsAnUnknownPermissionString) {
  const auto e = check({"capture", "Local STT", {"audio.telepathy"}, nullptr}, granted({}));
  EXPECT_NE(e.find("unknown permission"), std::string::npos);
  EXPECT_NE(e.find("audio.telepathy"), std::string::npos);
}

TEST(CapabilityValidator, RequiresEveryDeclaredPermission) {
  const auto e = check({"capture", "Local STT", {"audio.input"}, nullptr}, granted({"memory.read"}));
  EXPECT_EQ(e, "capability 'capture' requires permission 'audio.input' but it is not granted");
  EXPECT_EQ(check({"capture", "x", {"tools.override"}, nullptr}, granted({})),
            "capability 'capture' requires permission 'tools.override' but it is not granted")
      << "a reserved name parses, and is never granted";
}

TEST(CapabilityValidator, AcceptsWhenAllPermissionsAreGranted) {
  EXPECT_EQ(check({"capture", "Local STT", {"audio.input", "audio.output"}, nullptr}, granted({"audio.input", "audio.output"})),
            "(ok)");
}

TEST(CapabilityValidator, AcceptsNoPermissions) { EXPECT_EQ(check({"capture", "Local STT", {}, nullptr}, granted({})), "(ok)"); }

TEST(CapabilityValidator, DoesNotBranchOnKind) {
  for (const char* kind : {"capture", "ocr", "agent", "foot_pedal", "eeg"}) {
    EXPECT_EQ(check({kind, "Thing", {"audio.input"}, nullptr}, granted({"audio.input"})), "(ok)") << kind;
  }
}

}  // namespace
}  // namespace exthost::host
