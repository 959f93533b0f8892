#pragma once
// A minimal work-sharing loop over std::thread: fn(i) for i in [0, n), items handed
// out one at a time from an atomic counter. Results must not depend on which thread
// ran an item (callers seed per item, not per thread), so output is reproducible for
// any --threads. The first exception thrown by fn is rethrown in the caller.
#include <cstddef>
#include <functional>
#include <string>

namespace shapelaw::fit {

int default_threads();  // std::thread::hardware_concurrency(), at least 1
void parallel_for(size_t n, int threads, const std::function<void(size_t)>& fn);

}  // namespace shapelaw::fit

namespace shapelaw::fit {

// parallel_for with a progress line on stderr ("fit-law: LABEL: 120/1000 refits, 12%,
// ETA 40 s") every `interval` seconds once the loop has run that long: a short fit stays
// silent, a long one says where it is.
void parallel_for_progress(size_t n, int threads, const std::string& label, const std::function<void(size_t)>& fn,
                           double interval = 5.0);

}  // namespace shapelaw::fit
