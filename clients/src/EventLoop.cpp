#include "EventLoop.h"

#include <blobstreaming/blobstore/Error.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <vector>

namespace blobstreaming::client {

EventLoop::EventLoop(Task tick, std::chrono::milliseconds tick_period)
    : wake_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)), tick_(std::move(tick)), tick_period_(tick_period),
      next_tick_(std::chrono::steady_clock::now() + tick_period)
{
    if (!wake_) throw_io_error("event loop: eventfd", errno);
}

EventLoop::~EventLoop() = default;

void EventLoop::post(Task task)
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        tasks_.push_back(std::move(task));
    }
    const std::uint64_t one = 1;
    // A full counter (impossible in practice) still leaves the eventfd readable.
    [[maybe_unused]] const auto n = ::write(wake_.get(), &one, sizeof one);
}

void EventLoop::watch(int fd, short events, IoHandler handler)
{
    watches_[fd] = Watch{events, next_id_++, std::move(handler)};
}

void EventLoop::modify(int fd, short events)
{
    auto it = watches_.find(fd);
    if (it != watches_.end()) it->second.events = events;
}

void EventLoop::unwatch(int fd) { watches_.erase(fd); }

std::size_t EventLoop::run_tasks()
{
    std::deque<Task> batch;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        batch.swap(tasks_);
    }
    for (auto& task : batch) task();
    return batch.size();
}

std::size_t EventLoop::run_once(std::chrono::milliseconds timeout)
{
    owner_.store(std::this_thread::get_id());
    struct Depth {
        std::atomic<int>& depth;
        explicit Depth(std::atomic<int>& d) : depth(d) { ++depth; }
        ~Depth() { --depth; }
    } depth(depth_);
    std::size_t handled = 0;

    std::vector<pollfd> fds;
    std::vector<std::uint64_t> ids;
    fds.push_back(pollfd{wake_.get(), POLLIN, 0});
    ids.push_back(0);
    for (const auto& [fd, w] : watches_) {
        fds.push_back(pollfd{fd, w.events, 0});
        ids.push_back(w.id);
    }
    bool queued = false;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        queued = !tasks_.empty();
    }
    const auto now = std::chrono::steady_clock::now();
    auto wait = queued ? std::chrono::milliseconds(0) : timeout;
    // Rounded up: waking a fraction of a millisecond early would spin.
    const auto to_tick = std::chrono::ceil<std::chrono::milliseconds>(next_tick_ - now);
    if (to_tick < wait) wait = std::max(to_tick, std::chrono::milliseconds(0));

    const int ready = ::poll(fds.data(), fds.size(), static_cast<int>(wait.count()));
    if (ready < 0 && errno != EINTR) throw_io_error("event loop: poll", errno);

    if (ready > 0) {
        if (fds[0].revents & POLLIN) {
            std::uint64_t count = 0;
            [[maybe_unused]] const auto n = ::read(wake_.get(), &count, sizeof count);
        }
        for (std::size_t i = 1; i < fds.size(); ++i) {
            if (fds[i].revents == 0) continue;
            auto it = watches_.find(fds[i].fd);
            if (it == watches_.end() || it->second.id != ids[i]) continue;  // unwatched meanwhile
            IoHandler handler = it->second.handler;  // may unwatch itself while running
            handler(fds[i].revents);
            ++handled;
        }
    }
    handled += run_tasks();
    if (std::chrono::steady_clock::now() >= next_tick_) {
        next_tick_ = std::chrono::steady_clock::now() + tick_period_;
        if (tick_) tick_();
    }
    return handled;
}

}  // namespace blobstreaming::client
