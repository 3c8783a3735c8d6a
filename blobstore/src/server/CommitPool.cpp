/// The data plane's threads for commits (CommitPool.h).
#include "CommitPool.h"

#include <blobstreaming/common/Error.h>

#include <ace/Reactor.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include <sys/eventfd.h>
#include <unistd.h>

namespace blobstreaming::server {

CommitPool::CommitPool(ACE_Reactor& reactor, std::size_t threads)
    : reactor_(reactor), wakeup_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC))
{
    if (!wakeup_) throw_io_error("data plane: eventfd for the commit threads", errno);
    if (reactor_.register_handler(this, ACE_Event_Handler::READ_MASK) == -1)
        throw_io_error("data plane: registering the commit threads' eventfd with the reactor", errno);
    registered_ = true;
    try {
        for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { run_worker(); });
    } catch (const std::system_error& e) {
        stop();
        throw Error(Errc::io_error, std::string("data plane: cannot start the commit threads: ") + e.what());
    }
}

CommitPool::~CommitPool() { stop(); }

void CommitPool::submit(Work work, Done done)
{
    std::unique_lock lock(mutex_);
    ++pending_;
    if (stopping_) {
        // stop() runs the completions (a connection it completed began
        // another push): the work here, its completion there.
        lock.unlock();
        work();
        lock.lock();
        completed_.push_back(std::move(done));
        return;
    }
    queued_.push_back(Job{std::move(work), std::move(done)});
    lock.unlock();
    work_ready_.notify_one();
}

void CommitPool::wake(Done done)
{
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    ++pending_;
    completed_.push_back(std::move(done));
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t w = ::write(wakeup_.get(), &one, sizeof one);
}

void CommitPool::run_worker() noexcept
{
    std::unique_lock lock(mutex_);
    for (;;) {
        work_ready_.wait(lock, [this] { return stopping_ || !queued_.empty(); });
        if (queued_.empty()) return;  // stopping, and nothing left to do
        Job job = std::move(queued_.front());
        queued_.pop_front();
        lock.unlock();
        job.work();
        lock.lock();
        completed_.push_back(std::move(job.done));
        const std::uint64_t one = 1;
        // Cannot fail short of the counter's overflow (2^64 - 2 wakeups).
        [[maybe_unused]] const ssize_t w = ::write(wakeup_.get(), &one, sizeof one);
    }
}

ACE_HANDLE CommitPool::get_handle() const { return wakeup_.get(); }

int CommitPool::handle_input(ACE_HANDLE)
{
    std::uint64_t count = 0;
    [[maybe_unused]] const ssize_t r = ::read(wakeup_.get(), &count, sizeof count);  // EAGAIN: a late wakeup
    run_completions();
    return 0;
}

std::size_t CommitPool::run_completions() noexcept
{
    std::vector<Done> ready;
    {
        std::lock_guard lock(mutex_);
        ready.swap(completed_);
        pending_ -= ready.size();
    }
    for (Done& done : ready) done();
    return ready.size();
}

void CommitPool::stop() noexcept
{
    {
        std::lock_guard lock(mutex_);
        if (stopping_ && threads_.empty() && !registered_) return;
        stopping_ = true;
    }
    work_ready_.notify_all();
    for (std::thread& t : threads_)
        if (t.joinable()) t.join();
    threads_.clear();
    if (registered_) {
        reactor_.remove_handler(this, ACE_Event_Handler::READ_MASK | ACE_Event_Handler::DONT_CALL);
        registered_ = false;
    }
    while (run_completions() > 0) {}
    if (pending() != 0) spdlog::error("data plane: {} commit(s) never ran", pending());
}

std::size_t CommitPool::pending() const
{
    std::lock_guard lock(mutex_);
    return pending_;
}

}  // namespace blobstreaming::server
