#include <blobstreaming/transporter/client/ConnectionPool.h>

#include <blobstreaming/common/Error.h>

#include <blobstreaming/transporter/Log.h>

#include <algorithm>
#include <utility>

namespace blobstreaming::dataplane {

ConnectionPool::ConnectionPool(EventLoop& loop, PoolOptions options) : loop_(loop), options_(std::move(options)) {}

ConnectionPool::~ConnectionPool() = default;

void ConnectionPool::submit(std::unique_ptr<TransferJob> job)
{
    const std::string endpoint = job->ticket.endpoint();
    Endpoint& e = endpoints_[endpoint];
    for (auto& c : e.connections) {
        if (!c->busy() && (!job->named || c->accepts_named())) {
            library_log()->debug("data connection to {}: reused", endpoint);
            c->start(std::move(job));
            return;
        }
    }
    if (job->named) {
        JobOutcome outcome;
        outcome.error = make_error_code(Errc::unreachable);
        outcome.message = job->what + ": no idle data connection to " + endpoint + " takes named requests";
        job->done(std::move(outcome));
        return;
    }
    if (e.connections.size() < std::max(1u, options_.max_connections_per_endpoint)) {
        e.connections.push_back(std::make_unique<DataConnection>(
            loop_, endpoint, options_.socket, [this](DataConnection* c, bool reusable) { released(c, reusable); },
            options_.tls.get()));
        ++opened_;
        library_log()->debug("data connection to {}: opening #{}", endpoint, e.connections.size());
        e.connections.back()->start(std::move(job));
        return;
    }
    e.waiting.push_back(std::move(job));
}

bool ConnectionPool::can_run_named(const std::string& endpoint) const
{
    const auto it = endpoints_.find(endpoint);
    if (it == endpoints_.end()) return false;
    return std::any_of(it->second.connections.begin(), it->second.connections.end(),
                       [](const auto& c) { return !c->busy() && c->accepts_named(); });
}

void ConnectionPool::released(DataConnection* connection, bool reusable)
{
    const std::string endpoint = connection->endpoint();
    Endpoint& e = endpoints_[endpoint];
    if (!reusable) {
        auto it = std::find_if(e.connections.begin(), e.connections.end(),
                               [connection](const auto& c) { return c.get() == connection; });
        if (it != e.connections.end()) {
            // It may be on the stack: destroy it after the current event.
            retired_.push_back(std::move(*it));
            e.connections.erase(it);
            loop_.post([this] { retired_.clear(); });
        }
    }
    if (e.waiting.empty()) return;
    auto next = std::move(e.waiting.front());
    e.waiting.pop_front();
    if (reusable) connection->start(std::move(next));
    else submit(std::move(next));
}

void ConnectionPool::tick()
{
    const auto now = std::chrono::steady_clock::now();
    std::vector<DataConnection*> running;
    for (auto& [endpoint, e] : endpoints_)
        for (auto& c : e.connections)
            if (c->busy()) running.push_back(c.get());
    for (auto* c : running) c->check_progress(now, options_.timeout);
}

void ConnectionPool::cancel_all()
{
    for (auto& [endpoint, e] : endpoints_) {
        auto waiting = std::move(e.waiting);
        for (auto& job : waiting) {
            JobOutcome outcome;
            outcome.error = make_error_code(Errc::cancelled);
            outcome.message = job->what + ": cancelled (the session is closing)";
            job->done(std::move(outcome));
        }
    }
    std::vector<DataConnection*> running;
    for (auto& [endpoint, e] : endpoints_)
        for (auto& c : e.connections)
            if (c->busy()) running.push_back(c.get());
    for (auto* c : running) c->fail(Errc::cancelled, "cancelled (the session is closing)");
}

}  // namespace blobstreaming::dataplane
