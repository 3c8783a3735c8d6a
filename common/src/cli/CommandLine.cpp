#include <blobstreaming/cli/CommandLine.h>

#include <boost/version.hpp>
#include <spdlog/version.h>

#include <utility>

namespace po = boost::program_options;

namespace blobstreaming::cli {
namespace {

constexpr std::pair<const char*, spdlog::level::level_enum> kLevels[] = {
    {"trace", spdlog::level::trace},       {"debug", spdlog::level::debug}, {"info", spdlog::level::info},
    {"warning", spdlog::level::warn},      {"warn", spdlog::level::warn},   {"error", spdlog::level::err},
    {"critical", spdlog::level::critical}, {"off", spdlog::level::off}};

const char* level_name(spdlog::level::level_enum level)
{
    for (const auto& [name, value] : kLevels)
        if (value == level) return name;
    return "?";
}

bool given(const po::variables_map& vm, const char* name) { return vm.count(name) != 0 && vm[name].as<bool>(); }

}  // namespace

int command_line_style() noexcept
{
    return po::command_line_style::unix_style & ~po::command_line_style::allow_guessing;
}

po::command_line_parser command_line_parser(int argc, const char* const* argv)
{
    po::command_line_parser parser(argc, argv);
    parser.style(command_line_style());
    return parser;
}

po::command_line_parser command_line_parser(const std::vector<std::string>& args)
{
    po::command_line_parser parser(args);
    parser.style(command_line_style());
    return parser;
}

void add_logging_options(po::options_description& options, spdlog::level::level_enum default_level)
{
    const std::string levels = std::string("trace|debug|info|warning|error|critical|off (default: ") +
                               level_name(default_level) + "); wins over -q, -v, -d";
    // clang-format off
    options.add_options()
        ("quiet,q", po::bool_switch(), "log errors only")
        ("verbose,v", po::bool_switch(), "log information (level info)")
        ("debug,d", po::bool_switch(), "log debug detail (level debug)")
        ("log-level", po::value<std::string>()->value_name("LEVEL"), levels.c_str());
    // clang-format on
}

spdlog::level::level_enum log_level(const po::variables_map& vm, spdlog::level::level_enum default_level)
{
    if (vm.count("log-level")) {
        const std::string text = vm["log-level"].as<std::string>();
        for (const auto& [name, value] : kLevels)
            if (text == name) return value;
        throw UsageError("--log-level: \"" + text +
                         "\" is not one of trace, debug, info, warning (warn), error, critical, off");
    }
    if (given(vm, "debug")) return spdlog::level::debug;
    if (given(vm, "verbose")) return spdlog::level::info;
    if (given(vm, "quiet")) return spdlog::level::err;
    return default_level;
}

bool quiet(const po::variables_map& vm) { return given(vm, "quiet"); }

const char* package_version() noexcept { return PACKAGE_VERSION; }

std::string version_text(const std::string& program, const std::vector<LinkedLibrary>& libraries)
{
    std::string text = program + " (Blob Streaming) " PACKAGE_VERSION "\n";
    std::vector<LinkedLibrary> all = libraries;
    all.push_back({"Boost", std::to_string(BOOST_VERSION / 100000) + "." + std::to_string(BOOST_VERSION / 100 % 1000) +
                                "." + std::to_string(BOOST_VERSION % 100)});
    all.push_back({"spdlog", std::to_string(SPDLOG_VER_MAJOR) + "." + std::to_string(SPDLOG_VER_MINOR) + "." +
                                 std::to_string(SPDLOG_VER_PATCH)});
    for (const auto& library : all) text += "  " + library.name + " " + library.version + "\n";
    return text;
}

std::optional<std::string> help_or_version(const po::variables_map& vm, const po::options_description& options,
                                           const std::string& program, const std::vector<LinkedLibrary>& libraries,
                                           const std::string& epilogue)
{
    if (vm.count("help")) {
        std::ostringstream text;
        text << options << "\n" << epilogue;
        return text.str();
    }
    if (vm.count("version")) return version_text(program, libraries);
    return std::nullopt;
}

}  // namespace blobstreaming::cli
