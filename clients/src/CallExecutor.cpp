// The control plane's worker pool and its queue (CallExecutor.h).
#include "CallExecutor.h"

#include <algorithm>

#include <pthread.h>

namespace blobstreaming::client {

CallExecutor::CallExecutor(std::size_t max_threads) : max_threads_(std::max<std::size_t>(1, max_threads)) {}

CallExecutor::~CallExecutor() { stop(); }

void CallExecutor::submit(std::function<void()> call, std::string key)
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        calls_.push_back(Call{std::move(key), std::move(call)});
        if (calls_.size() > idle_ && workers_.size() < max_threads_) workers_.emplace_back([this] {
                // Named, so that `top -H` and /proc/PID/task/*/comm tell the control workers apart.
                ::pthread_setname_np(::pthread_self(), "blob-control");
                work();
            });
    }
    ready_.notify_one();
}

void CallExecutor::stop()
{
    std::vector<std::thread> workers;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    ready_.notify_all();
    // A call may still submit another while the workers finish: join until
    // none is left (no worker starts once stopping_ and the queue is empty).
    for (;;) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (workers_.empty()) return;
            workers.swap(workers_);
        }
        for (auto& w : workers)
            if (w.joinable()) w.join();
        workers.clear();
    }
}

std::size_t CallExecutor::max_in_flight() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return max_running_;
}

std::size_t CallExecutor::threads() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return workers_.size();
}

std::deque<CallExecutor::Call>::iterator CallExecutor::next_runnable()
{
    return std::find_if(calls_.begin(), calls_.end(),
                        [this](const Call& c) { return c.key.empty() || busy_keys_.count(c.key) == 0; });
}

void CallExecutor::work()
{
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
        ++idle_;
        ready_.wait(lock, [this] { return (stopping_ && calls_.empty()) || next_runnable() != calls_.end(); });
        --idle_;
        const auto it = next_runnable();
        if (it == calls_.end()) return;  // stopping, nothing left
        Call call = std::move(*it);
        calls_.erase(it);
        if (!call.key.empty()) busy_keys_.insert(call.key);
        max_running_ = std::max(max_running_, ++running_);
        lock.unlock();
        call.run();
        lock.lock();
        --running_;
        if (!call.key.empty()) {
            busy_keys_.erase(call.key);
            // A call of this key may be waiting; wake every worker.
            ready_.notify_all();
        }
    }
}

}  // namespace blobstreaming::client
