#pragma once
/// The data plane's few threads for work that waits for the disk. A
/// FileStore commit (fdatasync of the Blob, rename, directory fsync) takes
/// milliseconds to seconds: on the reactor thread it would stall every other
/// connection meanwhile and would run commits one after another, so that
/// they could never share a directory fsync. Here each runs on a pool
/// thread, concurrent commits into one directory share its fsync (the
/// store's DirectorySync: group commit), and each completion then runs on
/// the reactor thread, woken through an eventfd registered with the reactor.

#include <blobstreaming/common/UniqueFd.h>

#include <ace/Event_Handler.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

class ACE_Reactor;

namespace blobstreaming::server {

class CommitPool final : public ACE_Event_Handler {
public:
    using Work = std::function<void()>;
    using Done = std::function<void()>;

    /// fdatasyncs of different files proceed in parallel on one device; more
    /// threads than commits in flight would only sleep.
    static constexpr std::size_t kThreads = 4;

    /// Registers with `reactor` and starts `threads` threads; throws
    /// Error(io_error) when either fails.
    CommitPool(ACE_Reactor& reactor, std::size_t threads = kThreads);
    ~CommitPool() override;
    CommitPool(const CommitPool&) = delete;
    CommitPool& operator=(const CommitPool&) = delete;

    /// Runs `work` on a pool thread, then `done` on the reactor thread.
    /// Neither may throw. Reactor thread; during stop(), from a completion
    /// (the work then runs at once, its completion within stop()).
    void submit(Work work, Done done);

    /// Any thread: runs `done` on the reactor thread soon (a pull following a
    /// Blob in flight, woken as bytes land). Must not throw. Dropped once
    /// stop() has begun: the connections it could wake are gone.
    void wake(Done done);

    /// Lets every submitted work finish, joins the threads, leaves the
    /// reactor and runs the completions not yet run on the calling thread:
    /// call it once the reactor thread has ended. Idempotent.
    void stop() noexcept;

    /// Works submitted whose completion has not run yet.
    std::size_t pending() const;

    ACE_HANDLE get_handle() const override;
    /// The eventfd: runs the completions that are ready.
    int handle_input(ACE_HANDLE) override;

private:
    struct Job {
        Work work;
        Done done;
    };

    void run_worker() noexcept;
    /// Runs the completions ready now; how many.
    std::size_t run_completions() noexcept;

    ACE_Reactor& reactor_;
    UniqueFd wakeup_;  ///< eventfd: completions are ready
    mutable std::mutex mutex_;
    std::condition_variable work_ready_;
    std::deque<Job> queued_;       ///< not started
    std::vector<Done> completed_;  ///< work done, completion not run
    std::size_t pending_ = 0;      ///< submitted, completion not run
    bool stopping_ = false;
    bool registered_ = false;
    std::vector<std::thread> threads_;
};

}  // namespace blobstreaming::server
