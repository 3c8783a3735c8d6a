#pragma once
/// The data port's listening socket: accepts connections, applies the caps
/// of ConnectionLimits and hands each admitted one to a new ServerConnection
/// (docs/PROTOCOL.md, "Connections").

#include "DataServerImpl.h"

#include <blobstreaming/common/DescriptorReserve.h>
#include <blobstreaming/common/UniqueFd.h>

#include <ace/Event_Handler.h>
#include <ace/INET_Addr.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace blobstreaming::server {

/// Life cycle: open() binds, listens and registers with the reactor;
/// close() (after the reactor thread has ended, or on it) stops listening.
/// Runs on the reactor thread.
///
/// Never spins: a dispatch accepts at most a bounded number of connections;
/// when the process is out of descriptors (EMFILE, ENFILE, ENOBUFS, ENOMEM)
/// it spends a descriptor kept in reserve to accept-and-close the pending
/// connections, then stops watching the port for a short pause. Every such
/// event is logged through a LogThrottle.
class DataAcceptor final : public ACE_Event_Handler {
public:
    explicit DataAcceptor(DataServer::Impl& server);
    ~DataAcceptor() override;
    DataAcceptor(const DataAcceptor&) = delete;
    DataAcceptor& operator=(const DataAcceptor&) = delete;

    /// Binds `addr`, listens (backlog SOMAXCONN) and registers with
    /// `reactor`. False, with errno set, when that fails.
    bool open(const ACE_INET_Addr& addr, ACE_Reactor* reactor);
    /// Stops listening; idempotent.
    void close() noexcept;
    /// The bound port (after open()).
    std::uint16_t port() const;

    ACE_HANDLE get_handle() const override { return listener_.get(); }
    int handle_input(ACE_HANDLE) override;
    int handle_timeout(const ACE_Time_Value&, const void*) override;
    /// The acceptor resumes itself: after each dispatch, or after a pause.
    int resume_handler() override { return ACE_Event_Handler::ACE_APPLICATION_RESUMES_HANDLER; }

private:
    void admit(UniqueFd fd, const std::string& ip);
    void shed_pending(int err);  ///< out of descriptors: closes pending connections, pauses
    void pause(std::chrono::milliseconds how_long);
    void resume();

    DataServer::Impl& server_;
    UniqueFd listener_;
    DescriptorReserve reserve_;  ///< given up to accept-and-close when out of descriptors
    long pause_timer_ = -1;
    bool registered_ = false;
};

}  // namespace blobstreaming::server
