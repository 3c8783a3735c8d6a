// Session against the control plane without any store: the Naming Service
// missing, then a real omniNames with no store registered. Transfers
// themselves are covered by DataPlaneTest and the system tests.
#include <blobstreaming/client/Session.h>

#include "ErrorOf.h"

#include <blobstreaming/common/Error.h>

#define BOOST_TEST_MODULE SessionTest
#include <boost/test/unit_test.hpp>

#include "TestProcesses.h"

#include <arpa/inet.h>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <netinet/in.h>
#include <optional>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace blobstreaming;
using namespace blobstreaming::client;
using namespace blobstreaming::client::test;

BOOST_AUTO_TEST_CASE(naming_service_not_running_is_unreachable)
{
    const std::string url = "corbaname::127.0.0.1:" + std::to_string(free_port());
    for (int round = 0; round < 2; ++round) {  // the ORB is initialised again after the last Session
        const auto e = error_of([&] { Session s(options_for(url)); });
        BOOST_REQUIRE(e.has_value());
        BOOST_TEST(static_cast<int>(e->code()) == static_cast<int>(Errc::unreachable));
        BOOST_TEST(std::string(e->what()).find("cannot contact the naming service at " + url) == 0u, e->what());
    }
}

BOOST_AUTO_TEST_CASE(malformed_naming_url_is_invalid_argument)
{
    const auto e = error_of([] { Session s(options_for("nonsense")); });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(static_cast<int>(e->code()) == static_cast<int>(Errc::invalid_argument));
}

BOOST_AUTO_TEST_CASE(control_plane_errors_without_stores)
{
    NameServer ns;
    for (ReactorMode mode : {ReactorMode::Thread, ReactorMode::Caller}) {
        auto o = options_for(ns.url());
        o.reactor = mode;
        Session session(o);

        BOOST_TEST(session.stores().empty());
        BOOST_TEST(session.list().empty());

        auto e = error_of([&] { session.stat("CT.1", "ws1"); });
        BOOST_REQUIRE(e.has_value());
        BOOST_TEST(static_cast<int>(e->code()) == static_cast<int>(Errc::unknown_store));
        BOOST_TEST(std::string(e->what()) ==
                       "stat \"CT.1\": no store named \"ws1\" is registered in the naming service at " + ns.url() +
                           " (registered: none)",
                   e->what());

        e = error_of([&] { session.stat("CT.1"); });
        BOOST_REQUIRE(e.has_value());
        BOOST_TEST(static_cast<int>(e->code()) == static_cast<int>(Errc::no_such_blob));

        e = error_of([&] {
            session.push_memory("x", 1, "bad/name", PushOptions{"ws1", false, {}, false, std::nullopt});
        });
        BOOST_REQUIRE(e.has_value());
        BOOST_TEST(static_cast<int>(e->code()) == static_cast<int>(Errc::invalid_name));

        // No store given and none registered: placement finds none.
        e = error_of([&] { session.push_memory("x", 1, "CT.1"); });
        BOOST_REQUIRE(e.has_value());
        BOOST_TEST(static_cast<int>(e->code()) == static_cast<int>(Errc::unknown_store), e->what());

        // Async: exactly one completion, never inside the starting call; a
        // Sync call from inside a completion is refused.
        // (Thread mode: the completion runs on the Session's thread, maybe
        // before locate() has returned here, never on this one; Caller
        // mode: on this thread, in run_once() after locate() returned.)
        std::atomic<int> completions{0};
        std::atomic<bool> inside_start{true};
        const auto caller = std::this_thread::get_id();
        std::optional<Error> nested;
        session.locate("CT.1", Mode::Async, [&](const Result& r) {
            ++completions;
            if (mode == ReactorMode::Thread) BOOST_TEST((std::this_thread::get_id() != caller));
            else BOOST_TEST(!inside_start.load());
            BOOST_TEST(r.ok());
            nested = error_of([&] { session.stores(); });
        });
        inside_start = false;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (session.pending() > 0 && std::chrono::steady_clock::now() < deadline) {
            if (mode == ReactorMode::Caller) session.run_once(std::chrono::milliseconds(100));
            else std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        BOOST_TEST(completions.load() == 1);
        BOOST_REQUIRE(nested.has_value());
        BOOST_TEST(static_cast<int>(nested->code()) == static_cast<int>(Errc::invalid_argument));
    }
}
