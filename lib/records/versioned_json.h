#pragma once
// The one check of shapelaw's versioned JSON records ({"format": "shapelaw.X", "version": N}):
// every reader of summary.json, fit.json and the other records goes through it, so a file
// of another kind or a newer version is refused with the same message everywhere:
//   FILE: not valid JSON: …
//   FILE: field 'format': expected "shapelaw.fit", got "shapelaw.summary"
//   FILE: field 'version': 2 is newer than this tool understands (at most 1)
#include <string>

#include <nlohmann/json.hpp>

namespace shapelaw::records {

// `format_required` false: a record without a "format" key is accepted (hand-written or
// third-party files); one with another format is still refused.
nlohmann::json read_versioned_json(const std::string& path, const std::string& format, int max_version,
                                   bool format_required = true);
// The same checks on an already parsed object.
void check_versioned(const nlohmann::json& j, const std::string& path, const std::string& format, int max_version,
                     bool format_required = true);
// Parses a file as a JSON object ("FILE: not valid JSON: …", "FILE: expected a JSON object").
nlohmann::json read_json_object(const std::string& path);

// "FILE: field 'NAME': what" (line 0: a whole-file record).
[[noreturn]] void fail_field(const std::string& path, const std::string& field, const std::string& what);

}  // namespace shapelaw::records
