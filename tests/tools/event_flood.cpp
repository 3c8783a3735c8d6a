/// event_flood: subscribes one EventSubscriber reference to a store's
/// events COUNT times, as one client (with the given TLS certificate, or
/// plaintext without one), as a subscriber flood would
/// (tests/test_event_fairness.py). The subscriptions stay after it exits.
///
///   event_flood --naming URL --store NAME [--cert FILE --key FILE --ca FILE] IOR COUNT
///
/// Prints one JSON line, {"subscribed": N, "refused": MESSAGE or null}: it
/// stops at the first LimitReached. Exit 0; 1 on usage errors, 2 when it
/// could not call the store.

#include <blobstreaming/transporter/Tls.h>
#include <blobstreaming/transporter/corba/Orb.h>
#include <blobstreaming/transporter/corba/References.h>
#include <blobstreaming/transporter/corba/Security.h>

#include <BlobStreaming.hh>

#include <nlohmann/json.hpp>

#include <iostream>
#include <map>
#include <string>

int main(int argc, char** argv)
{
    using namespace blobstreaming;
    std::string naming, store, cert, key, ca;
    const std::map<std::string, std::string*> options = {
        {"--naming", &naming}, {"--store", &store}, {"--cert", &cert}, {"--key", &key}, {"--ca", &ca}};
    int i = 1;
    for (; i + 1 < argc; i += 2) {
        auto it = options.find(argv[i]);
        if (it == options.end()) break;
        *it->second = argv[i + 1];
    }
    if (argc - i != 2 || naming.empty() || store.empty()) {
        std::cerr << "usage: event_flood --naming URL --store NAME [--cert FILE --key FILE --ca FILE] IOR COUNT"
                  << std::endl;
        return 1;
    }
    const std::string ior = argv[i];
    const unsigned long count = std::stoul(argv[i + 1]);
    try {
        const TlsFiles tls{cert, key, ca};
        tls.check("--tls-");
        if (tls.enabled()) corba::configure_ssl(tls);
        CORBA::ORB_var orb = corba::init_orb({{"clientCallTimeOutPeriod", "30000"}});
        CosNaming::NamingContext_var root = corba::naming_context(orb, naming);
        BlobStreaming::BlobStore_var target = corba::resolve_store(root, store, naming);
        CORBA::Object_var obj = orb->string_to_object(ior.c_str());
        BlobStreaming::EventSubscriber_var subscriber = BlobStreaming::EventSubscriber::_unchecked_narrow(obj);
        BlobStreaming::StoreEventKindSeq kinds;
        nlohmann::json out = {{"subscribed", 0}, {"refused", nullptr}};
        unsigned long done = 0;
        for (; done < count; ++done) {
            try {
                target->subscribe(subscriber, kinds);
            } catch (const BlobStreaming::LimitReached& e) {
                out["refused"] = e.message.in();
                break;
            }
        }
        out["subscribed"] = done;
        std::cout << out.dump() << std::endl;
        orb->destroy();
        return 0;
    } catch (const CORBA::Exception& e) {
        std::cerr << "event_flood: CORBA " << e._name() << std::endl;
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "event_flood: " << e.what() << std::endl;
        return 2;
    }
}
