#include <blobstreaming/transporter/client/ConnectionPool.h>

#include <blobstreaming/common/Error.h>

#include <blobstreaming/transporter/Log.h>

#include <algorithm>
#include <utility>

namespace blobstreaming::dataplane {

ConnectionPool::ConnectionPool(EventLoop& loop, PoolOptions options) : loop_(loop), options_(std::move(options)) {}

ConnectionPool::~ConnectionPool() = default;

void ConnectionPool::retire(Endpoint& e, const DataConnection* c)
{
    auto it = std::find_if(e.connections.begin(), e.connections.end(), [c](const auto& p) { return p.get() == c; });
    if (it == e.connections.end()) return;
    retired_.push_back(std::move(*it));
    e.connections.erase(it);
    e.held.erase(c);
    e.leased.erase(c);
}

void ConnectionPool::submit(std::unique_ptr<TransferJob> job)
{
    if (job->named) {
        if (auto back = submit_named(std::move(job))) {
            JobOutcome outcome;
            outcome.error = make_error_code(Errc::unreachable);
            outcome.message =
                back->what + ": no idle data connection to " + back->ticket.endpoint() + " takes named requests";
            back->done(std::move(outcome));
        }
        return;
    }
    const std::string endpoint = job->ticket.endpoint();
    for (;;) {
        DataConnection* chosen = nullptr;
        bool fresh = false;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            Endpoint& e = endpoints_[endpoint];
            for (auto& c : e.connections) {
                if (e.held.count(c.get()) == 0) {
                    chosen = c.get();
                    break;
                }
            }
            if (!chosen && e.connections.size() >= std::max(1u, options_.max_connections_per_endpoint)) {
                e.waiting.push_back(std::move(job));
                return;
            }
            if (!chosen) {
                e.connections.push_back(std::make_unique<DataConnection>(
                    loop_, endpoint, options_.socket,
                    [this](DataConnection* c, bool reusable) { released(c, reusable); }, options_.tls.get()));
                ++opened_;
                library_log()->debug("data connection to {}: opening #{}", endpoint, e.connections.size());
                chosen = e.connections.back().get();
                fresh = true;
            }
            e.held.insert(chosen);
        }
        // An idle connection the store has closed meanwhile gives way to the next.
        if (fresh || chosen->still_open()) {
            if (!fresh) library_log()->debug("data connection to {}: reused", endpoint);
            chosen->start(std::move(job));
            return;
        }
        library_log()->debug("data connection to {}: closed by the store while idle", endpoint);
        std::lock_guard<std::mutex> lock(mutex_);
        retire(endpoints_[endpoint], chosen);
        loop_.post([this] { on_given_back(); });
    }
}

std::unique_ptr<TransferJob> ConnectionPool::submit_named(std::unique_ptr<TransferJob> job)
{
    DataConnection* c = claim_named(job->ticket.endpoint(), false);
    if (!c) return job;
    c->start(std::move(job));  // held until released()
    return nullptr;
}

bool ConnectionPool::can_run_named(const std::string& endpoint) const
{
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = endpoints_.find(endpoint);
    if (it == endpoints_.end()) return false;
    const Endpoint& e = it->second;
    return std::any_of(e.connections.begin(), e.connections.end(),
                       [&e](const auto& c) { return e.held.count(c.get()) == 0 && c->accepts_named(); });
}

DataConnection* ConnectionPool::lease(const std::string& endpoint) { return claim_named(endpoint, true); }

DataConnection* ConnectionPool::claim_named(const std::string& endpoint, bool leased)
{
    for (;;) {
        DataConnection* chosen = nullptr;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            const auto it = endpoints_.find(endpoint);
            if (it == endpoints_.end()) return nullptr;
            Endpoint& e = it->second;
            for (auto& c : e.connections) {
                if (e.held.count(c.get()) == 0 && c->accepts_named()) {
                    chosen = c.get();
                    e.held.insert(chosen);
                    if (leased) e.leased.insert(chosen);
                    break;
                }
            }
        }
        if (!chosen) return nullptr;
        if (chosen->still_open()) return chosen;
        library_log()->debug("data connection to {}: closed by the store while idle", endpoint);
        give_back(chosen);  // closed now: discarded
    }
}

void ConnectionPool::give_back(DataConnection* connection)
{
    bool tell_loop = false;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        Endpoint& e = endpoints_[connection->endpoint()];
        e.leased.erase(connection);
        if (connection->closed()) {
            retire(e, connection);
            tell_loop = true;
        } else {
            e.held.erase(connection);
            tell_loop = !e.waiting.empty();
        }
    }
    if (tell_loop) loop_.post([this] { on_given_back(); });
}

bool ConnectionPool::run_leased(const std::string& endpoint, std::chrono::milliseconds limit,
                                const std::function<std::unique_ptr<TransferJob>()>& make)
{
    DataConnection* connection = lease(endpoint);
    if (!connection) return false;
    struct GiveBack {
        ConnectionPool& pool;
        DataConnection* connection;
        ~GiveBack() { pool.give_back(connection); }
    } give_back_at_exit{*this, connection};
    if (auto job = make()) connection->run_here(std::move(job), limit);
    return true;
}

void ConnectionPool::on_given_back()
{
    std::vector<std::unique_ptr<DataConnection>> retired;
    std::vector<std::unique_ptr<TransferJob>> ready;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        // Those on the stack when they were retired have returned by now.
        retired.swap(retired_);
        const std::size_t limit = std::max(1u, options_.max_connections_per_endpoint);
        for (auto& [endpoint, e] : endpoints_) {
            std::size_t free = e.connections.size() - e.held.size();
            if (e.connections.size() < limit) free += limit - e.connections.size();
            for (; free > 0 && !e.waiting.empty(); --free) {
                ready.push_back(std::move(e.waiting.front()));
                e.waiting.pop_front();
            }
        }
    }
    retired.clear();
    for (auto& job : ready) submit(std::move(job));  // in their order
}

void ConnectionPool::released(DataConnection* connection, bool reusable)
{
    std::unique_ptr<TransferJob> next;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        Endpoint& e = endpoints_[connection->endpoint()];
        if (!reusable) {
            retire(e, connection);  // on the stack: destroyed by on_given_back()
            loop_.post([this] { on_given_back(); });
        }
        if (!e.waiting.empty()) {
            next = std::move(e.waiting.front());
            e.waiting.pop_front();
        }
    }
    if (next) {
        if (reusable) connection->start(std::move(next));  // still held, still watched
        else submit(std::move(next));
        return;
    }
    if (!reusable) return;
    // Idle: out of the loop before anyone may lease it.
    connection->park();
    std::lock_guard<std::mutex> lock(mutex_);
    endpoints_[connection->endpoint()].held.erase(connection);
}

void ConnectionPool::tick()
{
    const auto now = std::chrono::steady_clock::now();
    std::vector<DataConnection*> running;
    std::vector<DataConnection*> idle;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto& [endpoint, e] : endpoints_) {
            for (auto& c : e.connections) {
                if (e.leased.count(c.get()) > 0) continue;  // its caller watches the time
                if (e.held.count(c.get()) > 0) {
                    if (c->busy()) running.push_back(c.get());
                } else {
                    idle.push_back(c.get());
                    e.held.insert(c.get());  // while it is checked
                }
            }
        }
    }
    for (auto* c : running) c->check_progress(now, options_.timeout);
    // Idle ones the store has closed are discarded.
    for (auto* c : idle) {
        c->still_open();
        give_back(c);
    }
}

void ConnectionPool::cancel_all()
{
    std::vector<std::unique_ptr<TransferJob>> waiting;
    std::vector<DataConnection*> running;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto& [endpoint, e] : endpoints_) {
            for (auto& job : e.waiting) waiting.push_back(std::move(job));
            e.waiting.clear();
            for (auto& c : e.connections)
                if (e.leased.count(c.get()) == 0 && e.held.count(c.get()) > 0 && c->busy()) running.push_back(c.get());
        }
    }
    for (auto& job : waiting) {
        JobOutcome outcome;
        outcome.error = make_error_code(Errc::cancelled);
        outcome.message = job->what + ": cancelled (the session is closing)";
        job->done(std::move(outcome));
    }
    for (auto* c : running) c->fail(Errc::cancelled, "cancelled (the session is closing)");
}

}  // namespace blobstreaming::dataplane
