#include <blobstreaming/cli/Values.h>

#define BOOST_TEST_MODULE Cli
#include "TestSupport.h"

#include <blobstreaming/cli/CommandLine.h>

#include <functional>

using namespace blobstreaming;
using namespace std::chrono_literals;
namespace po = boost::program_options;

namespace {

/// The message of the UsageError that `f` throws ("" when it throws none).
std::string usage_error_of(const std::function<void()>& f)
{
    try {
        f();
    } catch (const cli::UsageError& e) {
        BOOST_TEST(static_cast<int>(e.code()) == static_cast<int>(Errc::invalid_argument));
        return e.what();
    }
    return "";
}

po::variables_map parse(std::vector<std::string> args, po::options_description& options)
{
    po::variables_map vm;
    po::store(cli::command_line_parser(args).options(options).run(), vm);
    po::notify(vm);
    return vm;
}

}  // namespace

BOOST_AUTO_TEST_CASE(sizes_with_binary_suffixes)
{
    BOOST_TEST(cli::parse_size("--size", "0") == 0u);
    BOOST_TEST(cli::parse_size("--size", "1048576") == 1048576u);
    BOOST_TEST(cli::parse_size("--size", "1K") == 1024u);
    BOOST_TEST(cli::parse_size("--size", "64m") == 64u << 20);
    BOOST_TEST(cli::parse_size("--size", "2G") == 2ULL << 30);
    BOOST_TEST(cli::parse_size("--size", "3T") == 3ULL << 40);
    BOOST_TEST(cli::parse_size("--size", "16MiB") == 16u << 20);
    BOOST_TEST(cli::parse_size("--size", "18446744073709551615") == 18446744073709551615ULL);
    BOOST_TEST(cli::parse_size("--size", "16777215T") == 16777215ULL << 40);
}

BOOST_AUTO_TEST_CASE(bad_sizes_name_option_value_and_syntax)
{
    const std::string syntax = " is not a size (a number of bytes, optionally with K, M, G or T: x1024)";
    for (const char* bad : {"", "K", "12Q", "1.5G", "-1", " 1", "1 K", "1KB", "0x10", "1e3", "2Gi"})
        BOOST_TEST(usage_error_of([&] { cli::parse_size("--capacity", bad); }) ==
                   "--capacity: \"" + std::string(bad) + "\"" + syntax);
    BOOST_TEST(usage_error_of([] { cli::parse_size("--size", "18446744073709551616"); }) ==
               "--size: \"18446744073709551616\" is too large (at most 2^64-1 bytes)");
    BOOST_TEST(usage_error_of([] { cli::parse_size("--size", "16777216T"); }) ==
               "--size: \"16777216T\" is too large (at most 2^64-1 bytes)");
}

BOOST_AUTO_TEST_CASE(size_ranges)
{
    BOOST_TEST(cli::parse_size("--chunk", "1G", 1024, 1ULL << 30) == 1ULL << 30);
    BOOST_TEST(usage_error_of([] { cli::parse_size("--chunk", "2G", 1024, 1ULL << 30); }) ==
               "--chunk: \"2G\" is out of range (allowed: 1K to 1G)");
    BOOST_TEST(usage_error_of([] { cli::parse_size("--chunk", "1000", 1024, 1ULL << 30); }) ==
               "--chunk: \"1000\" is out of range (allowed: 1K to 1G)");
    BOOST_TEST(cli::format_size(0) == "0");
    BOOST_TEST(cli::format_size(1000) == "1000");
    BOOST_TEST(cli::format_size(1536 * 1024) == "1536K");
    BOOST_TEST(cli::format_size(1ULL << 40) == "1T");
}

BOOST_AUTO_TEST_CASE(durations_in_seconds_by_default)
{
    BOOST_TEST(cli::parse_duration("--timeout", "2", 1ms, 86400s).count() == 2000);
    BOOST_TEST(cli::parse_duration("--timeout", "0.25", 1ms, 86400s).count() == 250);
    BOOST_TEST(cli::parse_duration("--timeout", "500ms", 1ms, 86400s).count() == 500);
    BOOST_TEST(cli::parse_duration("--timeout", "3s", 1ms, 86400s).count() == 3000);
    BOOST_TEST(cli::parse_duration("--timeout", "1.5m", 1ms, 86400s).count() == 90000);
    BOOST_TEST(cli::parse_duration("--timeout", "24h", 1ms, 86400s).count() == 86400000);
    BOOST_TEST(cli::parse_duration("--wait", "2000", 1ms, 1h, cli::DefaultUnit::milliseconds).count() == 2000);
    BOOST_TEST(cli::parse_duration("--wait", "2s", 1ms, 1h, cli::DefaultUnit::milliseconds).count() == 2000);
}

BOOST_AUTO_TEST_CASE(bad_durations_name_option_value_and_range)
{
    for (const char* bad : {"", "s", "abc", "5x", "-1", "1e3", "2 s", "1.", ".5", "nan", "inf", "5sec"})
        BOOST_TEST(usage_error_of([&] { cli::parse_duration("--idle-timeout", bad, 100ms, 86400s); }) ==
                   "--idle-timeout: \"" + std::string(bad) +
                       "\" is not a duration (a number of seconds, or a number with ms, s, m or h)");
    BOOST_TEST(usage_error_of([] { cli::parse_duration("--wait", "x", 1ms, 1h, cli::DefaultUnit::milliseconds); }) ==
               "--wait: \"x\" is not a duration (a number of milliseconds, or a number with ms, s, m or h)");
    BOOST_TEST(usage_error_of([] { cli::parse_duration("--idle-timeout", "86401", 100ms, 86400s); }) ==
               "--idle-timeout: \"86401\" is out of range (allowed: 0.1 to 86400 seconds)");
    BOOST_TEST(usage_error_of([] { cli::parse_duration("--idle-timeout", "25h", 100ms, 86400s); }) ==
               "--idle-timeout: \"25h\" is out of range (allowed: 0.1 to 86400 seconds)");
    BOOST_TEST(usage_error_of([] { cli::parse_duration("--timeout", "0ms", 1ms, 604800s); }) ==
               "--timeout: \"0ms\" is out of range (allowed: 0.001 to 604800 seconds)");
    BOOST_TEST(usage_error_of([] { cli::parse_duration("--timeout", "99999999999999999999999h", 1ms, 1s); }) ==
               "--timeout: \"99999999999999999999999h\" is out of range (allowed: 0.001 to 1 seconds)");
}

BOOST_AUTO_TEST_CASE(logging_flags_and_their_precedence)
{
    const auto level_of = [](std::vector<std::string> args) {
        po::options_description options;
        cli::add_logging_options(options, spdlog::level::warn);
        return cli::log_level(parse(std::move(args), options), spdlog::level::warn);
    };
    BOOST_TEST(level_of({}) == spdlog::level::warn);
    BOOST_TEST(level_of({"-q"}) == spdlog::level::err);
    BOOST_TEST(level_of({"--verbose"}) == spdlog::level::info);
    BOOST_TEST(level_of({"-d"}) == spdlog::level::debug);
    BOOST_TEST(level_of({"-q", "-v"}) == spdlog::level::info);
    BOOST_TEST(level_of({"-d", "-q"}) == spdlog::level::debug);
    BOOST_TEST(level_of({"-d", "--log-level", "warning"}) == spdlog::level::warn);
    BOOST_TEST(level_of({"--log-level=warn"}) == spdlog::level::warn);
    BOOST_TEST(level_of({"--log-level", "off"}) == spdlog::level::off);
    BOOST_TEST(usage_error_of([&] {
                   level_of({"--log-level", "loud"});
               }) == "--log-level: \"loud\" is not one of trace, debug, info, warning (warn), error, critical, off");
}

BOOST_AUTO_TEST_CASE(abbreviated_options_are_refused)
{
    po::options_description options;
    options.add_options()("store", po::value<std::string>(), "")("socket-buffer", po::value<std::string>(), "");
    BOOST_TEST(parse({"--store", "a"}, options)["store"].as<std::string>() == "a");
    try {
        parse({"--stor", "a"}, options);
        BOOST_FAIL("--stor was accepted");
    } catch (const po::unknown_option& e) {
        BOOST_TEST(std::string(e.what()) == "unrecognised option '--stor'");
    }
}

BOOST_AUTO_TEST_CASE(version_names_program_and_libraries)
{
    const std::string text = cli::version_text("blob", {{"omniORB", "4.3.0"}});
    BOOST_TEST(text.rfind("blob (Blob Streaming) " PACKAGE_VERSION "\n  omniORB 4.3.0\n  Boost ", 0) == 0u);
    BOOST_TEST(text.find("\n  spdlog ") != std::string::npos);
    BOOST_TEST(text.back() == '\n');
}
