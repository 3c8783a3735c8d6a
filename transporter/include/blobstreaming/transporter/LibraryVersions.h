#pragma once
/// The versions of the libraries the transporter brings into a program
/// (omniORB, ACE, OpenSSL), for its `--version` (cli::version_text). Kept
/// here so that common/ stays free of omniORB and ACE headers.

#include <blobstreaming/cli/CommandLine.h>

#include <vector>

namespace blobstreaming {

/// omniORB and OpenSSL as loaded at run time, ACE as compiled against.
std::vector<cli::LinkedLibrary> transporter_library_versions();

}  // namespace blobstreaming
