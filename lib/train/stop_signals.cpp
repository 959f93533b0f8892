#include "train/stop_signals.h"

#include <csignal>

namespace shapelaw {
namespace {

volatile std::sig_atomic_t g_received = 0;
constexpr int kSignals[] = {SIGTERM, SIGINT, SIGUSR1};
struct sigaction g_previous[3];

extern "C" void record_signal(int signal) {
  if (g_received == 0) g_received = signal;
}

}  // namespace

StopSignals::StopSignals() {
  g_received = 0;
  for (int i = 0; i < 3; ++i) {
    struct sigaction action {};
    action.sa_handler = record_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART | SA_RESETHAND;
    sigaction(kSignals[i], &action, &g_previous[i]);
  }
}

StopSignals::~StopSignals() {
  for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &g_previous[i], nullptr);
}

int StopSignals::received() const { return g_received; }

const char* StopSignals::name(int signal) {
  switch (signal) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGUSR1: return "SIGUSR1";
    default: return "a signal";
  }
}

}  // namespace shapelaw
