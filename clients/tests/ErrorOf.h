#pragma once
/// The Error `f` throws, if any (for tests that assert the exact code and message).

#include <blobstreaming/common/Error.h>

#include <optional>

namespace blobstreaming::client::test {

template <class F>
std::optional<Error> error_of(F f)
{
    try {
        f();
    } catch (const Error& e) {
        return e;
    }
    return std::nullopt;
}

}  // namespace blobstreaming::client::test
