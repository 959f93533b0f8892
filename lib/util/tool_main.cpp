#include "util/tool_main.h"

#include <cstdio>
#include <exception>
#include <new>

#include "util/error.h"

namespace shapelaw {

int tool_main(const char* tool_name, const std::function<int()>& body) {
  try {
    return body();
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: error: %s\n", tool_name, e.what());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: error: out of memory\n", tool_name);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", tool_name, e.what());
  }
  return 1;
}

}  // namespace shapelaw
