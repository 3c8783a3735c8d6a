#include <blobstreaming/transporter/client/EventLoop.h>

#include <blobstreaming/common/Error.h>

#include <ace/Dev_Poll_Reactor.h>
#include <ace/Event_Handler.h>
#include <ace/Init_ACE.h>
#include <ace/Reactor.h>
#include <ace/Timer_Queue.h>

#include <sys/resource.h>

#include <ace/Thread.h>
#include <ace/Time_Value.h>
#include <algorithm>

#include <cerrno>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

namespace blobstreaming::dataplane {

/// Adapts one watched descriptor to ACE's handler interface.
class EventLoop::FdHandler final : public ACE_Event_Handler {
public:
    FdHandler(int fd, IoHandler handler) : fd_(fd), handler_(std::move(handler)) {}
    ACE_HANDLE get_handle() const override { return fd_; }
    int handle_input(ACE_HANDLE) override { return dispatch(POLLIN); }
    int handle_output(ACE_HANDLE) override { return dispatch(POLLOUT); }

private:
    int dispatch(short revents)
    {
        IoHandler handler = handler_;  // the handler may unwatch (retire) us
        handler(revents);
        return 0;
    }
    int fd_;
    IoHandler handler_;
};

/// Runs the periodic tick and drains the wake-up eventfd.
class EventLoop::TickHandler final : public ACE_Event_Handler {
public:
    TickHandler(EventLoop& loop, int wake_fd) : loop_(loop), wake_fd_(wake_fd) {}
    ACE_HANDLE get_handle() const override { return wake_fd_; }
    int handle_input(ACE_HANDLE) override
    {
        loop_.drain_wake();
        return 0;
    }
    int handle_timeout(const ACE_Time_Value&, const void*) override
    {
        if (loop_.tick_) loop_.tick_();
        return 0;
    }

private:
    EventLoop& loop_;
    int wake_fd_;
};

namespace {

/// Descriptors the process may hold (the reactor's table covers them all).
std::size_t handle_limit() noexcept
{
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 65536;
    // Never past the limit: ACE's epoll reactor refuses a size it cannot
    // reach (a daemon run with a small descriptor limit).
    return std::max<std::size_t>(limit.rlim_cur, 1);
}

ACE_Time_Value to_ace(std::chrono::milliseconds ms)
{
    ACE_Time_Value tv;
    tv.msec(static_cast<long>(ms.count()));
    return tv;
}

}  // namespace

EventLoop::EventLoop(Task tick, std::chrono::milliseconds tick_period)
    : wake_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)), ready_(::epoll_create1(EPOLL_CLOEXEC)), tick_(std::move(tick)),
      tick_period_(tick_period)
{
    if (!wake_) throw_io_error("event loop: eventfd", errno);
    if (!ready_) throw_io_error("event loop: epoll_create1", errno);
    epoll_event wake{};
    wake.events = EPOLLIN;
    wake.data.fd = wake_.get();
    if (::epoll_ctl(ready_.get(), EPOLL_CTL_ADD, wake_.get(), &wake) != 0)
        throw_io_error("event loop: add the wake-up descriptor to the readiness set", errno);
    ACE::init();
    // epoll, as in the daemon: ACE's default (select) cannot watch a
    // descriptor past FD_SETSIZE, and an application (a PACS, a DICOM
    // gateway) may well hold more than 1024 before its Session connects.
    reactor_ = std::make_unique<ACE_Reactor>(new ACE_Dev_Poll_Reactor(handle_limit()), true);
    if (!reactor_->initialized()) throw_io_error("event loop: open the epoll reactor", errno);
    tick_handler_ = std::make_unique<TickHandler>(*this, wake_.get());
    if (reactor_->register_handler(tick_handler_.get(), ACE_Event_Handler::READ_MASK) == -1)
        throw_io_error("event loop: register the wake-up descriptor", errno);
    if (reactor_->schedule_timer(tick_handler_.get(), nullptr, to_ace(tick_period), to_ace(tick_period)) == -1)
        throw_io_error("event loop: schedule the tick", errno);
}

EventLoop::~EventLoop()
{
    reactor_->owner(ACE_Thread::self());
    reactor_->cancel_timer(tick_handler_.get());
    reactor_->remove_handler(tick_handler_.get(), ACE_Event_Handler::ALL_EVENTS_MASK | ACE_Event_Handler::DONT_CALL);
    for (auto& [fd, h] : watches_)
        reactor_->remove_handler(h.get(), ACE_Event_Handler::ALL_EVENTS_MASK | ACE_Event_Handler::DONT_CALL);
    reactor_.reset();
    ACE::fini();
}

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

void EventLoop::drain_wake() noexcept
{
    std::uint64_t count = 0;
    [[maybe_unused]] const auto n = ::read(wake_.get(), &count, sizeof count);
}

namespace {

std::uint32_t to_epoll(short events)
{
    std::uint32_t mask = 0;
    if (events & POLLIN) mask |= EPOLLIN;
    if (events & POLLOUT) mask |= EPOLLOUT;
    return mask;
}

ACE_Reactor_Mask to_mask(short events)
{
    ACE_Reactor_Mask mask = ACE_Event_Handler::NULL_MASK;
    if (events & POLLIN) mask |= ACE_Event_Handler::READ_MASK;
    if (events & POLLOUT) mask |= ACE_Event_Handler::WRITE_MASK;
    return mask;
}

}  // namespace

void EventLoop::watch(int fd, short events, IoHandler handler)
{
    unwatch(fd);
    auto h = std::make_unique<FdHandler>(fd, std::move(handler));
    if (reactor_->register_handler(h.get(), to_mask(events)) == -1)
        throw_io_error("event loop: watch descriptor " + std::to_string(fd), errno);
    watches_[fd] = std::move(h);
    mirror(fd, events);
}

void EventLoop::mirror(int fd, short events)
{
    // The readiness set holds what the reactor watches. epoll reports
    // errors and hang-ups whatever the mask, which the reactor dispatches
    // only to a descriptor watched for something: one watched for nothing
    // is left out, so that descriptor() is never readable for nothing.
    epoll_event e{};
    e.events = to_epoll(events);
    e.data.fd = fd;
    if (e.events == 0) {
        ::epoll_ctl(ready_.get(), EPOLL_CTL_DEL, fd, nullptr);
        return;
    }
    if (::epoll_ctl(ready_.get(), EPOLL_CTL_ADD, fd, &e) != 0 &&
        (errno != EEXIST || ::epoll_ctl(ready_.get(), EPOLL_CTL_MOD, fd, &e) != 0))
        throw_io_error("event loop: add descriptor " + std::to_string(fd) + " to the readiness set", errno);
}

void EventLoop::modify(int fd, short events)
{
    auto it = watches_.find(fd);
    if (it == watches_.end()) return;
    reactor_->mask_ops(it->second.get(), to_mask(events), ACE_Reactor::SET_MASK);
    mirror(fd, events);
}

void EventLoop::unwatch(int fd)
{
    auto it = watches_.find(fd);
    if (it == watches_.end()) return;
    reactor_->remove_handler(it->second.get(), ACE_Event_Handler::ALL_EVENTS_MASK | ACE_Event_Handler::DONT_CALL);
    // Fails harmlessly when the descriptor was closed first (epoll forgot it).
    ::epoll_ctl(ready_.get(), EPOLL_CTL_DEL, fd, nullptr);
    retired_.push_back(std::move(it->second));
    watches_.erase(it);
}

std::chrono::milliseconds EventLoop::next_timeout()
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!tasks_.empty()) return std::chrono::milliseconds(0);
    }
    ACE_Time_Value most = to_ace(tick_period_);
    const ACE_Time_Value* wait = reactor_->timer_queue()->calculate_timeout(&most);
    if (wait == nullptr) return tick_period_;
    // Rounded up: a wake-up a little early would find the tick not yet due.
    const auto us = static_cast<std::int64_t>(wait->sec()) * 1000000 + static_cast<std::int64_t>(wait->usec());
    return std::chrono::milliseconds((us + 999) / 1000);
}

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
    reactor_->owner(ACE_Thread::self());
    struct Depth {
        std::atomic<int>& depth;
        explicit Depth(std::atomic<int>& d) : depth(d) { ++depth; }
        ~Depth() { --depth; }
    } depth(depth_);

    bool queued = false;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        queued = !tasks_.empty();
    }
    ACE_Time_Value wait = queued ? ACE_Time_Value::zero : to_ace(timeout);
    const int dispatched = reactor_->handle_events(wait);
    if (dispatched < 0 && errno != EINTR && errno != ETIME) throw_io_error("event loop: reactor", errno);
    std::size_t handled = dispatched > 0 ? static_cast<std::size_t>(dispatched) : 0;
    handled += run_tasks();
    retired_.clear();
    return handled;
}

}  // namespace blobstreaming::dataplane
