#pragma once
/// Accepts data connections and hands each to a new DataConnection.

#include "DataConnection.h"

#include <ace/Acceptor.h>
#include <ace/SOCK_Acceptor.h>

namespace blobstreaming::server {

class DataAcceptor : public ACE_Acceptor<DataConnection, ACE_SOCK_Acceptor> {
public:
    explicit DataAcceptor(DataServer::Impl* server) : server_(server) {}

protected:
    /// Creates the connection with its server (the default would need a
    /// default-constructed handler without one).
    int make_svc_handler(DataConnection*& handler) override
    {
        if (handler == nullptr) handler = new DataConnection(server_);
        handler->reactor(reactor());
        return 0;
    }

private:
    DataServer::Impl* server_;
};

}  // namespace blobstreaming::server
