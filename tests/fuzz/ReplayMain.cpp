/// Replays fuzz inputs without libFuzzer, so that `make check` keeps every
/// crash the fuzzer once found fixed: feeds each file of the given
/// directories (default: the target's seed corpus and regression inputs
/// under $BS_SRCDIR/tests/fuzz) to LLVMFuzzerTestOneInput. A crash aborts
/// the program (the test fails, the file name is the last line printed).

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

#ifndef BLOBSTREAMING_FUZZ_TARGET
#error "define BLOBSTREAMING_FUZZ_TARGET to the name of the target's corpus directory"
#endif

namespace fs = std::filesystem;

int main(int argc, char** argv)
{
    std::vector<fs::path> dirs;
    for (int i = 1; i < argc; ++i) dirs.emplace_back(argv[i]);
    const bool defaults = dirs.empty();
    if (defaults) {
        const char* src = std::getenv("BS_SRCDIR");
        const fs::path top = src && *src ? fs::path(src) : fs::path(".");
        dirs.push_back(top / "tests/fuzz/corpus" / BLOBSTREAMING_FUZZ_TARGET);
        dirs.push_back(top / "tests/fuzz/regressions" / BLOBSTREAMING_FUZZ_TARGET);
    }
    std::size_t replayed = 0;
    for (const auto& dir : dirs) {
        std::error_code ec;
        if (!fs::is_directory(dir, ec)) {
            if (defaults && dir.parent_path().filename() == "regressions") continue;  // none yet
            std::fprintf(stderr, "replay: %s is not a directory\n", dir.c_str());
            return 1;
        }
        std::vector<fs::path> files;
        for (const auto& entry : fs::directory_iterator(dir))
            if (entry.is_regular_file()) files.push_back(entry.path());
        std::sort(files.begin(), files.end());
        for (const auto& file : files) {
            std::ifstream in(file, std::ios::binary);
            std::vector<char> bytes;
            char buf[4096];
            while (in.read(buf, sizeof buf) || in.gcount() > 0) bytes.insert(bytes.end(), buf, buf + in.gcount());
            std::printf("%s (%zu bytes)\n", file.c_str(), bytes.size());
            std::fflush(stdout);
            LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
            ++replayed;
        }
    }
    std::printf("replayed %zu inputs of %s: no crash\n", replayed, BLOBSTREAMING_FUZZ_TARGET);
    return replayed > 0 ? 0 : 1;
}
