#pragma once
/// What the servants' unit tests share: an ORB of this process (no
/// endpoint is ever activated: the tests call the servants' C++ member
/// functions directly, as an in-process upcall) and a daemon's collaborators
/// around a MemoryStore: tables, access list, store service, servant
/// context.

#include "servants/ServantContext.h"
#include "service/StoreService.h"

#include <blobstreaming/blobstore/MemoryStore.h>

#include <boost/test/unit_test.hpp>

#include <omniORB4/CORBA.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace blobstreaming::corba::test {

/// One ORB for the test program, destroyed at its end.
struct Orb {
    Orb()
    {
        static char name[] = "servant-test";
        char* argv[] = {name, nullptr};
        int argc = 1;
        orb = CORBA::ORB_init(argc, argv);
    }
    ~Orb() { orb->destroy(); }
    CORBA::ORB_var orb;
};

/// A store of 1 MiB with its tables; `enforce`: an access list that permits
/// nothing (an in-process call has no subject: everything is refused).
struct Daemon {
    explicit Daemon(bool enforce = false) : access(list(enforce))
    {
        service::StoreServiceOptions options;
        options.store_name = "s1";
        options.access = &access;
        service = std::make_unique<service::StoreService>(store, reservations, tickets, options);
        context = std::make_unique<ServantContext>(*service);
        context->data_host = "127.0.0.1";
        context->data_port = 4242;
    }

    static server::AccessList list(bool enforce)
    {
        server::AccessList l;
        l.enforce(enforce);
        return l;
    }

    BlobInfo put(const std::string& name, std::size_t size)
    {
        std::vector<std::uint8_t> bytes(size, 0x5a);
        auto r = store.reserve(name, size);
        BOOST_REQUIRE(!r->write(bytes.data(), bytes.size()));
        return r->commit();
    }

    MemoryStore store{MemoryStore::Options{1u << 20}};
    server::ReservationTable reservations{std::chrono::seconds(60)};
    server::TicketRegistry tickets{std::chrono::seconds(30)};
    server::LiveAccessList access;
    std::unique_ptr<service::StoreService> service;
    std::unique_ptr<ServantContext> context;
};

/// The IDL exception of type E that `f` raises: its message, or "none"
/// (a check fails) when it raises none or another.
template <class E, class F>
std::string idl_message(F f)
{
    try {
        f();
    } catch (const E& e) {
        return e.message.in();
    } catch (const CORBA::Exception& e) {
        BOOST_ERROR("raised CORBA " << e._name());
        return "other";
    }
    BOOST_ERROR("raised nothing");
    return "none";
}

/// The minor code of the CORBA::NO_PERMISSION `f` raises; 0 when none.
template <class F>
CORBA::ULong no_permission_minor(F f)
{
    try {
        f();
    } catch (const CORBA::NO_PERMISSION& e) {
        return e.minor();
    } catch (const CORBA::Exception& e) {
        BOOST_ERROR("raised CORBA " << e._name());
    }
    return 0;
}

}  // namespace blobstreaming::corba::test
