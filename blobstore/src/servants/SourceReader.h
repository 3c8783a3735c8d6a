#pragma once
/// The daemon's data connections to other stores: the data plane's client
/// (transporter/client: EventLoop, ConnectionPool, DataConnection), the
/// same one the client library runs, on a thread of its own. A fetch hands
/// it a pull job and waits for the outcome on its own thread (an ORB
/// thread, or a read-through thread); the bytes go straight from the
/// socket into the job's sink (a reservation). Connections to a source's
/// data port are kept and reused from one fetch to the next.

#include <blobstreaming/transporter/client/ConnectionPool.h>
#include <blobstreaming/transporter/client/DataConnection.h>
#include <blobstreaming/transporter/client/EventLoop.h>

#include <atomic>
#include <memory>
#include <thread>

namespace blobstreaming::corba {

class SourceReader {
public:
    explicit SourceReader(dataplane::PoolOptions options);
    /// stop(), then ends the loop's thread.
    ~SourceReader();
    SourceReader(const SourceReader&) = delete;
    SourceReader& operator=(const SourceReader&) = delete;

    /// Runs `job` (its `done` is replaced) and returns its outcome: ok, or
    /// the failure with its code and message (Errc::timeout when nothing
    /// moved for the pool's timeout, Errc::cancelled once stop() ran).
    /// Blocking; never call it on the loop's thread.
    dataplane::JobOutcome run(std::unique_ptr<dataplane::TransferJob> job);

    /// Fails every running and waiting job (cancelled) and every later one.
    /// Thread-safe, idempotent.
    void stop() noexcept;

private:
    dataplane::EventLoop loop_;
    dataplane::ConnectionPool pool_;
    std::atomic<bool> stopping_{false};
    std::atomic<bool> quit_{false};
    std::thread thread_;
};

}  // namespace blobstreaming::corba
