#include "Variant.h"

#include <cstdio>

namespace blobstreaming::bench {

const Variant* find_variant(const std::string& name)
{
    static const Variant kVariants[] = {
        {"raw-c", make_raw_c_client, serve_raw_c},
        {"raw-c-durable", make_raw_c_client, serve_raw_c_durable},
        {"ace", make_ace_client, serve_ace},
        {"corba", make_corba_client, serve_corba},
        {"blobstreaming", make_blobstreaming_client, nullptr},
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
