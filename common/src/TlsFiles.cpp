#include <blobstreaming/common/TlsFiles.h>

#include <blobstreaming/common/Error.h>

namespace blobstreaming {

void TlsFiles::check(const std::string& prefix) const
{
    if (!enabled()) return;
    const char* names[] = {"cert", "key", "ca"};
    const std::string* values[] = {&cert, &key, &ca};
    std::string given;
    for (int i = 0; i < 3; ++i)
        if (!values[i]->empty()) given += (given.empty() ? "" : ", ") + prefix + names[i];
    for (int i = 0; i < 3; ++i)
        if (values[i]->empty())
            throw Error(Errc::invalid_argument, prefix + names[i] + " is required with " + given + " (TLS needs " +
                                                    prefix + "cert, " + prefix + "key and " + prefix + "ca)");
}

}  // namespace blobstreaming
