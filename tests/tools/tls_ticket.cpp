/// tls_ticket: obtains a pull ticket for a Blob through a TLS control plane
/// (with the given client certificate) and prints it, so that a test can
/// present it on a data connection made with another certificate.
///
///   tls_ticket NAMING STORE BLOB CERT KEY CA
///
/// Prints one JSON line {"ticket","host","port","offset","length"}. Exit 0
/// on success, 1 on usage errors, 2 with the error on stderr otherwise.

#include <blobstreaming/blobstore/Error.h>
#include <blobstreaming/transporter/Tls.h>
#include <blobstreaming/transporter/corba/Exceptions.h>
#include <blobstreaming/transporter/corba/Orb.h>
#include <blobstreaming/transporter/corba/Security.h>

#include <BlobStreaming.hh>

#include <iostream>
#include <string>

int main(int argc, char** argv)
{
    using namespace blobstreaming;
    if (argc != 7) {
        std::cerr << "usage: tls_ticket NAMING STORE BLOB CERT KEY CA" << std::endl;
        return 1;
    }
    const std::string naming = argv[1], store_name = argv[2], blob = argv[3];
    try {
        corba::configure_ssl(TlsFiles{argv[4], argv[5], argv[6]});
        CORBA::ORB_var orb = corba::init_orb({{"clientCallTimeOutPeriod", "20000"}});
        CosNaming::NamingContext_var root = corba::naming_context(orb, naming);
        BlobStreaming::BlobStore_var store = corba::resolve_store(root, store_name, naming);
        BlobStreaming::TransferTicket_var ticket;
        try {
            BlobStreaming::BlobTransporter_var transporter = store->openTransporter();
            const BlobStreaming::TimeValue no_timeout{0, 0};
            ticket = transporter->send(blob.c_str(), 0, 0, false, no_timeout, BlobStreaming::IGNORE_NOTIFICATIONS);
        } catch (...) {
            corba::rethrow_as_error("ticket for pull \"" + blob + "\"", store_name, corba::endpoint_of(store));
        }
        static const char kHex[] = "0123456789abcdef";
        std::string hex;
        for (CORBA::ULong i = 0; i < 16; ++i) {
            const auto b = static_cast<unsigned char>(ticket->id[i]);
            hex += kHex[b >> 4];
            hex += kHex[b & 0xf];
        }
        std::cout << "{\"ticket\":\"" << hex << "\",\"host\":\"" << ticket->endpoint.host.in()
                  << "\",\"port\":" << ticket->endpoint.port << ",\"offset\":" << ticket->offset
                  << ",\"length\":" << ticket->length << "}" << std::endl;
        orb->destroy();
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "tls_ticket: " << e.what() << std::endl;
        return 2;
    } catch (const CORBA::Exception& e) {
        std::cerr << "tls_ticket: CORBA " << e._name() << std::endl;
        return 2;
    }
}
