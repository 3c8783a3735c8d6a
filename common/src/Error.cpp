#include <blobstreaming/common/Error.h>

#include <cstring>

namespace blobstreaming {
namespace {

class Category final : public std::error_category {
public:
    const char* name() const noexcept override { return "blobstreaming"; }
    std::string message(int value) const override
    {
        switch (static_cast<Errc>(value)) {
        case Errc::ok: return "success";
        case Errc::invalid_argument: return "invalid argument";
        case Errc::invalid_name: return "invalid blob name";
        case Errc::invalid_range: return "invalid range";
        case Errc::invalid_mdib: return "invalid MDIB";
        case Errc::unknown_handle: return "unknown handle";
        case Errc::not_a_metric: return "not a metric";
        case Errc::no_such_blob: return "no such blob";
        case Errc::already_exists: return "blob already exists";
        case Errc::reservation_closed: return "reservation already committed or aborted";
        case Errc::incomplete: return "blob incomplete";
        case Errc::digest_mismatch: return "digest mismatch";
        case Errc::no_such_reservation: return "no such reservation";
        case Errc::unknown_store: return "unknown store";
        case Errc::blob_changed: return "blob changed since the transfer was granted";
        case Errc::out_of_space: return "out of space";
        case Errc::store_busy: return "store in use";
        case Errc::limit_reached: return "limit reached";
        case Errc::io_error: return "I/O error";
        case Errc::corrupt: return "corrupt blob file";
        case Errc::transfer_failed: return "transfer failed";
        case Errc::timeout: return "timed out";
        case Errc::unreachable: return "unreachable";
        case Errc::refused: return "refused";
        case Errc::protocol_error: return "protocol error";
        case Errc::cancelled: return "cancelled";
        case Errc::peer_fault: return "the peer answered with a fault";
        case Errc::no_provider: return "no provider found";
        case Errc::partial: return "partial result: some stores did not answer";
        }
        return "unknown blobstreaming error " + std::to_string(value);
    }
};

}  // namespace

const std::error_category& error_category() noexcept
{
    static const Category category;
    return category;
}

void throw_io_error(const std::string& what, int err) { throw Error(Errc::io_error, what + ": " + std::strerror(err)); }

}  // namespace blobstreaming
