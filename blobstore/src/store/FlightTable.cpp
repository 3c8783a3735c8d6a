#include <blobstreaming/blobstore/FlightTable.h>

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>

#include <spdlog/spdlog.h>

#include <system_error>
#include <thread>
#include <utility>

namespace blobstreaming {

namespace {

/// How long the failure of a flight that pulls followed is the answer to a
/// pull of that Blob: long enough for such a pull to ask why its data
/// connection broke off (PullOperation asks once, at once).
constexpr std::chrono::seconds kFailureMemory{3};
/// Flights running on threads of their own (read-through, beginFetch) at
/// once, at most.
constexpr std::size_t kMaxThreads = 128;
/// How long await() finds the outcome of a flight a client began.
constexpr std::chrono::seconds kOutcomeMemory{60};
/// At most this many such failures, and as many outcomes, are remembered
/// (the oldest forgotten first).
constexpr std::size_t kMaxRemembered = 4096;

}  // namespace

FlightTable::FlightTable() : failures_(kFailureMemory, kMaxRemembered), outcomes_(kOutcomeMemory, kMaxRemembered) {}

std::shared_ptr<FlightTable::Flight> FlightTable::join(const std::string& name, bool& first)
{
    std::lock_guard lock(mutex_);
    auto& slot = flights_[name];
    first = !slot;
    if (first) {
        if (stopping_) {
            flights_.erase(name);
            throw Error(Errc::cancelled, "fetch " + quote_name(name) + ": the store is shutting down");
        }
        slot = std::make_shared<Flight>();
    }
    return slot;
}

void FlightTable::begun(Flight& flight, std::shared_ptr<BlobInFlight> progress)
{
    {
        std::lock_guard lock(mutex_);
        flight.progress_ = std::move(progress);
    }
    landed_.notify_all();
}

void FlightTable::land(const std::string& name, Flight& flight, std::optional<BlobInfo> info,
                       std::exception_ptr error)
{
    {
        std::lock_guard lock(mutex_);
        flight.done_ = true;
        flight.info_ = std::move(info);
        flight.error_ = std::move(error);
        flights_.erase(name);
        for (const std::string& client : flight.keepers_)  // for their await()
            outcomes_.record(client + '\n' + name, {flight.info_, flight.error_});
        // Pulls may have followed it and nobody awaits it: they may ask why.
        if (flight.error_ && flight.progress_ && flight.keepers_.empty()) failures_.record(name, flight.error_);
    }
    landed_.notify_all();
}

BlobInfo FlightTable::landed(Flight& flight)
{
    std::unique_lock lock(mutex_);
    landed_.wait(lock, [&] { return flight.done_; });
    if (flight.error_) std::rethrow_exception(flight.error_);
    return *flight.info_;
}

std::shared_ptr<BlobInFlight> FlightTable::wait_begun(Flight& flight, std::optional<BlobInfo>* info)
{
    std::unique_lock lock(mutex_);
    landed_.wait(lock, [&] { return flight.done_ || flight.progress_; });
    if (!flight.done_) return flight.progress_;
    if (flight.error_) std::rethrow_exception(flight.error_);
    if (info) *info = flight.info_;
    return nullptr;
}

std::optional<BlobInfo> FlightTable::wait_landed(const std::string& name)
{
    std::unique_lock lock(mutex_);
    const auto it = flights_.find(name);
    if (it == flights_.end()) return std::nullopt;
    const std::shared_ptr<Flight> flight = it->second;
    landed_.wait(lock, [&] { return flight->done_; });
    if (flight->error_) std::rethrow_exception(flight->error_);
    return flight->info_;
}

void FlightTable::keep_for(Flight& flight, const std::string& client)
{
    std::lock_guard lock(mutex_);
    flight.keepers_.insert(client);
}

BlobInfo FlightTable::await(const std::string& name, const std::string& store_name, const std::string& client)
{
    std::unique_lock lock(mutex_);
    if (const auto it = flights_.find(name); it != flights_.end() && it->second->keepers_.count(client) != 0) {
        const std::shared_ptr<Flight> flight = it->second;
        landed_.wait(lock, [&] { return flight->done_; });
        if (flight->error_) std::rethrow_exception(flight->error_);
        return *flight->info_;
    }
    const Outcome* outcome = outcomes_.find(client + '\n' + name);
    if (!outcome)
        throw Error(Errc::no_such_blob, "await fetch " + quote_name(name) +
                                            ": this client began no fetch of it at store \"" + store_name +
                                            "\" within the last " + std::to_string(kOutcomeMemory.count()) + " s");
    if (outcome->error) std::rethrow_exception(outcome->error);
    return *outcome->info;
}

std::shared_ptr<BlobInFlight> FlightTable::in_flight(const std::string& name) const
{
    std::lock_guard lock(mutex_);
    const auto it = flights_.find(name);
    if (it == flights_.end() || it->second->done_ || !it->second->progress_) return nullptr;
    return it->second->progress_->receiving() ? it->second->progress_ : nullptr;
}

void FlightTable::rethrow_recent_failure(const std::string& name)
{
    std::lock_guard lock(mutex_);
    if (const std::exception_ptr* failed = failures_.find(name)) std::rethrow_exception(*failed);
}

void FlightTable::spawn(const std::string& name, std::shared_ptr<Flight> flight, const char* what,
                        std::function<BlobInfo()> work)
{
    std::size_t running = 0;
    {
        std::lock_guard lock(mutex_);
        running = threads_;
        if (running < kMaxThreads) ++threads_;
    }
    if (running >= kMaxThreads) {
        const Error busy(Errc::limit_reached, std::string(what) + " " + quote_name(name) + ": " +
                                                  std::to_string(running) +
                                                  " fetches are running at this store, the limit; try again");
        land(name, *flight, std::nullopt, std::make_exception_ptr(busy));  // and whoever joined it meanwhile
        throw busy;
    }
    try {
        std::thread([this, name, flight, what, work = std::move(work)] { run(name, flight, what, work); }).detach();
    } catch (const std::system_error& e) {
        const Error failed(Errc::limit_reached,
                           std::string(what) + " " + quote_name(name) + ": cannot start a fetch thread: " + e.what());
        land(name, *flight, std::nullopt, std::make_exception_ptr(failed));
        {
            std::lock_guard lock(mutex_);
            --threads_;
        }
        threads_ended_.notify_all();
        throw failed;
    }
}

void FlightTable::run(const std::string& name, const std::shared_ptr<Flight>& flight, const char* what,
                      const std::function<BlobInfo()>& work) noexcept
{
    std::optional<BlobInfo> info;
    std::exception_ptr error;
    try {
        info = work();
    } catch (const std::exception& e) {
        error = std::current_exception();
        spdlog::warn("{} {}: {}", what, quote_name(name), e.what());
    } catch (...) {
        error = std::current_exception();
    }
    land(name, *flight, info, error);
    std::unique_lock lock(mutex_);
    --threads_;
    // Wakes stop() only once this thread no longer touches the table.
    std::notify_all_at_thread_exit(threads_ended_, std::move(lock));
}

void FlightTable::stop() noexcept
{
    std::unique_lock lock(mutex_);
    stopping_ = true;
    threads_ended_.wait(lock, [&] { return threads_ == 0; });
}

}  // namespace blobstreaming
