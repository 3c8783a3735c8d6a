/// Fuzz target: Blob-name validation. A name that passes must be safe as a
/// file name under the store's directory; one that fails must be refused
/// with Errc::invalid_name and a message whose quoting of the name is
/// bounded and printable.

#include <blobstreaming/common/BlobName.h>

#include <blobstreaming/common/Error.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

void require(bool condition)
{
    if (!condition) std::abort();
}

bool printable(const std::string& s)
{
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u >= 0x7f) return false;
    }
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    using namespace blobstreaming;
    const std::string_view name(reinterpret_cast<const char*>(data), size);
    const auto problem = blob_name_problem(name);

    const std::string quoted = quote_name(name);
    require(printable(quoted) && quoted.size() <= 2 + 80 * 4 + 3);

    if (!problem) {
        require(!name.empty() && name.size() <= kMaxBlobNameLength && name.front() != '.');
        require(name.find('/') == std::string_view::npos && name.find('\0') == std::string_view::npos);
        require(name != "." && name != "..");
        validate_blob_name(name);  // must not throw
        return 0;
    }
    require(!problem->empty() && printable(*problem));
    try {
        validate_blob_name(name);
    } catch (const Error& e) {
        require(e.code() == Errc::invalid_name);
        require(printable(e.what()));
        return 0;
    }
    std::abort();  // a name with a problem was accepted
}
