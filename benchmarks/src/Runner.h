#pragma once
/// The client side of bsbench: open the variant's transport, one untimed
/// warm-up transaction, then `runs` timed runs of `count` transactions (the
/// transport's push_series/pull_series), each checked by SHA-256 outside the
/// timed interval. With --paced each run waits for a line on standard
/// input.

#include "Config.h"

namespace blobstreaming::bench {

/// Prints one line per run (JSON with -J). Returns 0 when every run moved
/// the right bytes, Errc::digest_mismatch when any did not. Throws Error
/// when a transfer fails (after printing that run's record).
int run_client(const Config& config);

}  // namespace blobstreaming::bench
