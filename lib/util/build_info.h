#pragma once
// Version and git revision of this build, for provenance records. Defined in a file
// generated at configure time, so a new commit recompiles one file, not the project.
#include <string>

namespace shapelaw {
const char* shapelaw_version();
const char* shapelaw_git_rev();
// "NAME (shapelaw VERSION, git REV)": the first line of every tool's --version.
std::string tool_version(const char* tool_name);
}  // namespace shapelaw
