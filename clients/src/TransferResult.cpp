// Results of pushes and pulls (TransferResult.h).
#include "TransferResult.h"

#include <blobstreaming/common/BlobName.h>

#include <blobstreaming/transporter/Log.h>

namespace blobstreaming::client {

Result failure(const Error& e, const std::string& store)
{
    Result r;
    r.error = e.error_code();
    r.message = e.what();
    r.store = store;
    return r;
}

Result result_of(const JobOutcome& outcome, const std::string& store, const Ticket& ticket)
{
    Result r;
    r.store = store;
    r.offset = ticket.offset;
    r.length = ticket.length;
    r.bytes = outcome.bytes;
    r.seconds = outcome.seconds;
    r.error = outcome.error;
    r.message = outcome.message;
    r.compressed = outcome.compressed;
    r.wire_bytes = outcome.wire_bytes;
    return r;
}

void log_transfer(const char* verb, const char* dir, const std::string& name, const std::string& store, const Result& r,
                  const std::string& peer, spdlog::level::level_enum level)
{
    if (!library_log()->should_log(level)) return;  // its text costs a small transfer's microseconds
    const double mbps = r.seconds > 0 ? static_cast<double>(r.bytes) / r.seconds / 1e6 : 0.0;
    library_log()->log(level, "{} {} {} store \"{}\": {} bytes in {:.3f} s ({:.2f} MB/s) via {}{}", verb,
                       quote_name(name), dir, store, r.bytes, r.seconds, mbps, peer,
                       r.compressed ? ", zstd: " + std::to_string(r.wire_bytes) + " bytes on the wire" : std::string());
}

}  // namespace blobstreaming::client
