#pragma once
// Version and git revision of this build, for provenance records. Defined in a file
// generated at configure time, so a new commit recompiles one file, not the project.
namespace shapelaw {
const char* shapelaw_version();
const char* shapelaw_git_rev();
}  // namespace shapelaw
