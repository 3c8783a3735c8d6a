#pragma once
/// A small pool of worker threads that run queued calls: the control plane's
/// CORBA calls block, so they run here and never on the reactor. The calls of
/// concurrent operations overlap (one round trip each, not one after the
/// other); the calls of one key (a Blob name) still run one at a time, in the
/// order they were submitted.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace blobstreaming::client {

class CallExecutor {
public:
    /// Workers at most, by default: a few round trips in flight cover a
    /// pipelined series (the data connections are the bound), and stay under
    /// omniORB's default of 5 connections per server (maxGIOPConnectionPerServer),
    /// beyond which its calls would queue anyway.
    static constexpr std::size_t kDefaultThreads = 4;

    /// No thread yet: a worker starts when a call finds none idle, up to
    /// `max_threads` (at least 1).
    explicit CallExecutor(std::size_t max_threads = kDefaultThreads);
    /// As stop().
    ~CallExecutor();
    CallExecutor(const CallExecutor&) = delete;
    CallExecutor& operator=(const CallExecutor&) = delete;

    /// Any thread: `call` runs on a worker. Calls with the same non-empty
    /// `key` run one at a time in submission order; calls with an empty key
    /// are ordered with nothing. It must not throw.
    void submit(std::function<void()> call, std::string key = {});
    /// Runs the calls already submitted (and those they submit), then stops
    /// the workers (idempotent).
    void stop();

    /// The most calls that ran at the same time so far.
    std::size_t max_in_flight() const;
    /// The workers started so far.
    std::size_t threads() const;

private:
    struct Call {
        std::string key;
        std::function<void()> run;
    };

    void work();
    /// The first queued call whose key is free, or calls_.end(). Holds mutex_.
    std::deque<Call>::iterator next_runnable();

    const std::size_t max_threads_;
    mutable std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<Call> calls_;
    std::set<std::string> busy_keys_;  ///< keys of the calls running now
    std::vector<std::thread> workers_;
    std::size_t idle_ = 0;     ///< workers waiting for a call
    std::size_t running_ = 0;  ///< calls running now
    std::size_t max_running_ = 0;
    bool stopping_ = false;
};

}  // namespace blobstreaming::client
