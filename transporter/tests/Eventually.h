#pragma once
/// A wait for a condition with a deadline, for the tests of threads that
/// deliver on their own time (NoticeDispatcher, EventHub, the daemon's
/// data plane).

#include <chrono>
#include <thread>

namespace blobstreaming::test {

/// Waits for a condition with a deadline (the machine may be loaded).
template <class Condition>
bool eventually(Condition condition, std::chrono::milliseconds deadline = std::chrono::seconds(20))
{
    const auto end = std::chrono::steady_clock::now() + deadline;
    while (!condition()) {
        if (std::chrono::steady_clock::now() >= end) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

}  // namespace blobstreaming::test
