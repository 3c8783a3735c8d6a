// A single-threaded application: the Session's reactor is driven by main()
// through run_once() (ReactorMode::Caller), so every completion runs on this
// thread and no locking is needed. Pushes a few Blobs asynchronously (one
// from memory, one from a producer callback), then pulls them back, one into
// memory and one through a consumer that hashes bytes as they arrive.
//
//   single_threaded NAMING_URL STORE
#include <blobstreaming/client/Session.h>
#include <blobstreaming/common/Checksum.h>
#include <blobstreaming/common/Error.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

using namespace blobstreaming;
using namespace blobstreaming::client;

int main(int argc, char** argv)
{
    if (argc != 3) {
        std::fprintf(stderr, "usage: single_threaded NAMING_URL STORE\n");
        return 1;
    }
    Session::Options options;
    options.naming_url = argv[1];
    options.default_store = argv[2];
    options.reactor = ReactorMode::Caller;

    try {
        Session session(options);
        int failures = 0;
        auto check = [&failures](const char* what, const Result& r) {
            if (r.ok()) {
                std::printf("%s: ok, %llu bytes in %.4f s%s\n", what, static_cast<unsigned long long>(r.bytes),
                            r.seconds, r.local ? " (local)" : "");
            } else {
                std::printf("%s: %s\n", what, r.message.c_str());
                ++failures;
            }
        };

        // 1. Two pushes in flight at once.
        const std::vector<std::uint8_t> image(256 * 1024, 0x5a);
        const std::uint64_t generated_size = 3 * 1024 * 1024 + 17;
        std::uint64_t produced = 0;
        PushOptions replace;
        replace.replace = true;
        session.push(PushSource::memory(image.data(), image.size()), "example.memory", replace, Mode::Async,
                     [&](const Result& r) { check("push example.memory", r); });
        session.push(PushSource::producer(generated_size,
                                          [&produced](std::uint8_t* buffer, std::size_t capacity) {
                                              for (std::size_t i = 0; i < capacity; ++i)
                                                  buffer[i] = static_cast<std::uint8_t>((produced + i) % 251);
                                              produced += capacity;
                                              return capacity;
                                          }),
                     "example.generated", replace, Mode::Async,
                     [&](const Result& r) { check("push example.generated", r); });
        while (session.pending() > 0) session.run_once(std::chrono::milliseconds(1000));

        // 2. Pull both back: one into memory, one processed while receiving.
        std::vector<std::uint8_t> copy;
        // The consumer sees the bytes before the Blob's algorithm is known:
        // both are computed, the Blob's is compared.
        ChecksumState streamed_crc(ChecksumAlgorithm::crc32c), streamed_sha(ChecksumAlgorithm::sha256);
        std::uint64_t pieces = 0;
        session.pull("example.memory", PullSink::memory(&copy), PullOptions{}, Mode::Async, [&](const Result& r) {
            check("pull example.memory", r);
            if (r.ok() && copy != image) {
                std::printf("pull example.memory: bytes differ\n");
                ++failures;
            }
        });
        session.pull("example.generated",
                     PullSink::consumer([&](const std::uint8_t* data, std::size_t size, std::uint64_t) {
                         streamed_crc.update(data, size);
                         streamed_sha.update(data, size);
                         ++pieces;
                     }),
                     PullOptions{}, Mode::Async, [&](const Result& r) {
                         check("pull example.generated", r);
                         const bool sha = r.info.checksum.algorithm == ChecksumAlgorithm::sha256;
                         if (r.ok() && (sha ? streamed_sha : streamed_crc).finish() != r.info.checksum) {
                             std::printf("pull example.generated: checksum differs\n");
                             ++failures;
                         }
                     });
        while (session.pending() > 0) session.run_once(std::chrono::milliseconds(1000));
        std::printf("consumer saw %llu pieces; %llu data connection(s) opened\n",
                    static_cast<unsigned long long>(pieces),
                    static_cast<unsigned long long>(session.connections_opened()));
        return failures == 0 ? 0 : 1;
    } catch (const Error& e) {
        std::fprintf(stderr, "single_threaded: %s\n", e.what());
        return static_cast<int>(e.code());
    }
}
