#pragma once
/// The client's event loop: an ACE Reactor (ACE's default, select-based:
/// a client has few descriptors) with file-descriptor handlers, tasks posted from any thread
/// (woken through an eventfd), and a periodic tick for inactivity checks.
/// Driven by one thread at a time through run_once(), which becomes the
/// reactor's owner. Handlers see poll(2)-style events: POLLIN when ACE
/// reports the descriptor readable (which includes errors and hang-ups),
/// POLLOUT when writable.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include <blobstreaming/common/UniqueFd.h>

#include <memory>
#include <vector>

class ACE_Reactor;

namespace blobstreaming::dataplane {

class EventLoop {
public:
    using Task = std::function<void()>;
    /// Called with poll's revents (POLLIN, POLLOUT, POLLERR, POLLHUP).
    using IoHandler = std::function<void(short revents)>;

    /// `tick` runs on the loop thread about every `tick_period`.
    EventLoop(Task tick, std::chrono::milliseconds tick_period);
    ~EventLoop();
    EventLoop(const EventLoop&) = delete;
    EventLoop& operator=(const EventLoop&) = delete;

    /// Thread-safe: `task` runs on the loop thread in a later run_once(), in
    /// posting order.
    void post(Task task);

    // Loop thread only. A handler may unwatch any descriptor, including its own.
    void watch(int fd, short events, IoHandler handler);
    void modify(int fd, short events);
    void unwatch(int fd);

    /// Handles ready descriptors and posted tasks, waiting up to `timeout` for
    /// the first. Returns how many were handled.
    std::size_t run_once(std::chrono::milliseconds timeout);

    /// A level-triggered epoll descriptor that is readable while run_once()
    /// has work: a watched descriptor is ready (for the events it is
    /// watched for) or a task is posted. For an application's own event
    /// loop (Session::descriptor()); only to be polled, never read or
    /// closed. Thread-safe.
    int descriptor() const noexcept { return ready_.get(); }
    /// How long until run_once() must run although descriptor() stays
    /// quiet: 0 with tasks posted, else until the next tick (at most the
    /// tick period). Thread-safe.
    std::chrono::milliseconds next_timeout();

    /// Whether the caller is the thread that last ran run_once().
    bool in_loop_thread() const noexcept { return std::this_thread::get_id() == owner_.load(); }
    /// Whether the caller is inside run_once() (a handler, task or tick).
    bool dispatching() const noexcept { return in_loop_thread() && depth_.load() > 0; }

private:
    std::size_t run_tasks();
    /// Puts `fd` into the readiness set (descriptor()) for `events`.
    void mirror(int fd, short events);
    void drain_wake() noexcept;

    class FdHandler;
    class TickHandler;

    std::unique_ptr<ACE_Reactor> reactor_;
    UniqueFd wake_;
    UniqueFd ready_;  ///< epoll set of wake_ and every watched descriptor (descriptor())
    std::mutex mutex_;
    std::deque<Task> tasks_;
    std::map<int, std::unique_ptr<FdHandler>> watches_;
    /// Handlers unwatched during a dispatch: deleted after it returns.
    std::vector<std::unique_ptr<FdHandler>> retired_;
    Task tick_;
    std::unique_ptr<TickHandler> tick_handler_;
    std::chrono::milliseconds tick_period_;
    std::atomic<std::thread::id> owner_{};
    std::atomic<int> depth_{0};
};

}  // namespace blobstreaming::dataplane
