#include "Variant.h"

#include <cstdio>

namespace blobstreaming::bench {

void ClientTransport::push_series(const BlobSet& blobs, std::uint32_t& done)
{
    for (done = 0; done < blobs.count(); ++done) push(done, blobs.data(done), blobs.size());
}

void ClientTransport::pull_series(BlobSet& blobs, std::uint32_t& done)
{
    for (done = 0; done < blobs.count(); ++done) pull(done, 0, blobs.size(), blobs.data(done));
}

const Variant* find_variant(const std::string& name)
{
    static const Variant kVariants[] = {
        {"raw-c", make_raw_c_client, serve_raw_c},
        {"raw-c-durable", make_raw_c_client, serve_raw_c_durable},
        {"ace", make_ace_client, serve_ace},
        {"corba", make_corba_client, serve_corba},
        {"blobstreaming", make_blobstreaming_client, nullptr},
        {"memcpy", make_memcpy_client, nullptr},
    };
    for (const auto& v : kVariants)
        if (name == v.name) return &v;
    return nullptr;
}

void announce_ready(const char* variant, const std::string& host, unsigned port)
{
    std::printf("bsbench server ready variant=%s address=%s:%u\n", variant, host.c_str(), port);
    std::fflush(stdout);
}

}  // namespace blobstreaming::bench
