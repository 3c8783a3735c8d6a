// The control plane's worker thread and its queue (CallExecutor.h).
#include "CallExecutor.h"

namespace blobstreaming::client {

CallExecutor::CallExecutor() : worker_([this] { work(); }) {}

CallExecutor::~CallExecutor() { stop(); }

void CallExecutor::submit(std::function<void()> call)
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        calls_.push_back(std::move(call));
    }
    ready_.notify_one();
}

void CallExecutor::stop()
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    ready_.notify_all();
    if (worker_.joinable()) worker_.join();
}

void CallExecutor::work()
{
    for (;;) {
        std::function<void()> call;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            ready_.wait(lock, [this] { return stopping_ || !calls_.empty(); });
            if (calls_.empty()) return;  // stopping, nothing left
            call = std::move(calls_.front());
            calls_.pop_front();
        }
        call();
    }
}

}  // namespace blobstreaming::client
