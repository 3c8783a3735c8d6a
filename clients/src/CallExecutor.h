#pragma once
/// One worker thread that runs queued calls in order: the control plane's
/// CORBA calls block, so they run here and never on the reactor.

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace blobstreaming::client {

class CallExecutor {
public:
    /// Starts the worker.
    CallExecutor();
    /// As stop().
    ~CallExecutor();
    CallExecutor(const CallExecutor&) = delete;
    CallExecutor& operator=(const CallExecutor&) = delete;

    /// Any thread: `call` runs on the worker, after those submitted before.
    /// It must not throw.
    void submit(std::function<void()> call);
    /// Runs the calls already submitted, then stops the worker (idempotent).
    void stop();

private:
    void work();

    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<std::function<void()>> calls_;
    bool stopping_ = false;
    std::thread worker_;  ///< last: starts once the queue exists
};

}  // namespace blobstreaming::client
