#include "records/versioned_json.h"

#include "util/atomic_file.h"
#include "util/error.h"

namespace shapelaw::records {

void fail_field(const std::string& path, const std::string& field, const std::string& what) {
  throw Error(located(path, 0, "field '" + field + "': " + what));
}

nlohmann::json read_json_object(const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw Error(located(path, 0, std::string("not valid JSON: ") + e.what()));
  }
  if (!j.is_object()) throw Error(located(path, 0, "expected a JSON object"));
  return j;
}

void check_versioned(const nlohmann::json& j, const std::string& path, const std::string& format, int max_version,
                     bool format_required) {
  if (!j.is_object()) throw Error(located(path, 0, "expected a JSON object"));
  auto f = j.find("format");
  if (f == j.end()) {
    if (format_required) fail_field(path, "format", "missing (expected \"" + format + "\")");
  } else if (!f->is_string() || f->get<std::string>() != format) {
    fail_field(path, "format", "expected \"" + format + "\", got " + f->dump());
  }
  auto v = j.find("version");
  if (v == j.end()) return;
  if (!v->is_number()) fail_field(path, "version", "expected a number, got " + v->dump());
  if (v->get<double>() > max_version)
    fail_field(path, "version", v->dump() + " is newer than this tool understands (at most " +
                                    std::to_string(max_version) + ")");
}

nlohmann::json read_versioned_json(const std::string& path, const std::string& format, int max_version,
                                   bool format_required) {
  nlohmann::json j = read_json_object(path);
  check_versioned(j, path, format, max_version, format_required);
  return j;
}

}  // namespace shapelaw::records
